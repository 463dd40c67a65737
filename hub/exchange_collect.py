"""Collect an assignment from the hub's exchange through the intake gate.

nbgrader's own `collect` trusts what a student can write: the name of an
inbound folder says whose it is and when it came (`alice+quiz+<time>+<random>`),
and `timestamp.txt` in it says the same again. On a machine the class shares,
anyone can hand in a folder named after a class-mate, date it 2099 so that it
wins over the class-mate's own, or rewrite both after the due date. This
collect trusts only what the student cannot write:

* whose: the folder's owner, which only root can change. A folder whose
  owner is not the student it names is refused with a problem line and never
  graded as theirs; so is one dated in the future, one that is not a plain
  folder, or one that other accounts may write into.
* when: the newest ctime of the folder and of everything in it, read after
  the copy (so a change made while it ran counts too). No account but root
  can set a ctime back; renaming a folder or rewriting a file moves it
  forward. The newest such submission of each student is the one graded, and
  its time goes into the copy's `timestamp.txt`, which nbgrader and the late
  policy read. The student's own claim (the `timestamp.txt` they handed in)
  is listed beside it in `exchange_collected.csv`, flagged when it is earlier.
* the course folder: the exchange's folders are opened once, without
  following a link, owned by root, and their identity (device and inode) is
  checked again around every student's copy; a swapped folder stops the
  collect.

The copy itself is the intake gate's (autograder/intake/gate.py): read as
the student's own uid, no link followed, plain files only, written 0640 and
0750 in the grader reader's group (see `take`), within caps, and put in
place only when complete.
"""
from __future__ import annotations

import contextlib
import csv
import io
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.intake.deadlines import claim_is_earlier, parse_stamp
from autograder.intake.gate import GATE_GID, Caps, take_folder
from autograder.intake.intake import plain

# nbgrader's inbound names: student+assignment+timestamp+random
NAME = re.compile(r"^(?P<student>[^+]+)\+(?P<assignment>[^+]+)\+(?P<stamp>[^+]+)"
                  r"\+(?P<random>[^+]+)$")
SLACK = timedelta(minutes=5)   # clocks of one machine: a name dated later is refused
ENTRIES = 10_000               # the most entries the time walk looks at
COLUMNS = ["student", "submission", "status", "received", "claimed", "note"]

# started as root, run as the student from its first line (so that no
# interpreter under a closed folder needs to be reachable by the student):
# the newest ctime of a folder and all below it, links not followed
# (lstat), at most ENTRIES entries
NEWEST_CTIME = r"""
import os, sys
os.setgroups([])
os.setgid(int(sys.argv[4]))
os.setuid(int(sys.argv[3]))
top, most = sys.argv[1], int(sys.argv[2])
newest, seen = os.lstat(top).st_ctime_ns, 0
for folder, dirs, files in os.walk(top):
    for name in dirs + files:
        seen += 1
        if seen > most:
            sys.exit("more than %d entries" % most)
        newest = max(newest, os.lstat(os.path.join(folder, name)).st_ctime_ns)
print(newest)
"""


class Swapped(Exception):
    """A folder of the exchange changed under the collect; nothing more is read."""


@dataclass
class Row:
    student: str
    submission: str
    status: str = "refused"
    received: str = ""
    claimed: str = ""
    note: str = ""


@dataclass
class Collected:
    rows: list[Row] = field(default_factory=list)
    # collected, but without some entries (links, pipes, devices): the
    # student sees a different submission graded than the one handed in
    partly: list[Row] = field(default_factory=list)

    @property
    def refused(self) -> list[Row]:
        return [r for r in self.rows if r.status == "refused"]


def stamp(moment: datetime) -> str:
    """A time as nbgrader writes timestamp.txt."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


class Pinned:
    """The exchange's folders down to inbound, opened once without
    following a link and checked to be root's; `check()` says whether any
    of them is no longer the folder opened (renamed, replaced)."""

    def __init__(self, root: Path, course: str):
        self.paths = [root, root / course, root / course / "inbound"]
        self.ids = []
        for path in self.paths:
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or (path != root and info.st_uid != 0):
                raise Swapped(f"{path} is not a folder of root's")
            self.ids.append((info.st_dev, info.st_ino))
        self.fd = os.open(self.paths[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        if (os.fstat(self.fd).st_dev, os.fstat(self.fd).st_ino) != self.ids[-1]:
            raise Swapped(f"{self.paths[-1]} changed while it was opened")

    def check(self) -> None:
        for path, known in zip(self.paths, self.ids):
            try:
                info = os.lstat(path)
            except OSError:
                raise Swapped(f"{path} is gone") from None
            if (info.st_dev, info.st_ino) != known or not stat.S_ISDIR(info.st_mode):
                raise Swapped(f"{path} was replaced during the collect (by whom: see its "
                              "owner and the inbound folders' owners)")

    def close(self) -> None:
        os.close(self.fd)


def newest_ctime(folder: Path, account: pwd.struct_passwd) -> datetime:
    """The newest ctime under `folder`, read as `account` (never as root)."""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", NEWEST_CTIME, str(folder),
                           str(ENTRIES), str(account.pw_uid), str(account.pw_gid)],
                          capture_output=True, text=True, timeout=60, cwd="/",
                          env={"PATH": "/usr/bin:/bin"})
    if done.returncode:
        raise ValueError(f"its times cannot be read: {plain(done.stderr.strip()[-200:])}")
    return datetime.fromtimestamp(int(done.stdout) / 1e9, timezone.utc)


def look(pinned: Pinned, name: str, assignment: str, now: datetime) -> tuple[Row, object]:
    """The row of one inbound entry, still "refused" with a note when it is
    not a submission that can be graded as the student it names; and its
    owner's account when it can."""
    found = NAME.match(name)
    row = Row(plain(found["student"] if found else "(unknown)"), plain(name))
    if not found:
        row.note = "not a submission's name (student+assignment+time+random)"
        return row, None
    try:
        info = os.lstat(name, dir_fd=pinned.fd)
    except OSError:
        row.note = "gone before it could be read"
        return row, None
    try:
        account = pwd.getpwnam(found["student"])
    except KeyError:
        row.note = "names no account on this machine"
        return row, None
    claimed = parse_stamp(found["stamp"])
    row.claimed = stamp(claimed) if claimed else plain(found["stamp"])
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = f"uid {info.st_uid}"
    if not stat.S_ISDIR(info.st_mode):
        row.note = "not a plain folder (a link or a file)"
    elif info.st_uid != account.pw_uid:
        row.note = (f"handed in by {plain(owner)}, not by {row.student}: "
                    f"not graded as {row.student}'s")
    elif claimed is None:
        row.note = "its name's time cannot be read"
    elif claimed > now + SLACK:
        row.note = f"dated in the future ({row.claimed})"
    elif stat.S_IMODE(info.st_mode) & 0o022:
        row.note = "other accounts may write into it: it may not be the student's own work"
    else:
        return row, account
    return row, None


def take(pinned: Pinned, name: str, account: pwd.struct_passwd, dest: Path, caps: Caps):
    """Copy the inbound submission `name` to `dest` through the intake gate,
    read as the student's own uid; the gate's Taken (`failed` set when
    nothing was taken). The copy is root's, 0640 in 0750 folders of the
    group grade.py's unprivileged reader holds (GATE_GID, which no student
    account has), inside COURSE/submitted/<student>/ (0700): as an LMS
    download's copy is, so that `make grade` can read it."""
    before = os.lstat(name, dir_fd=pinned.fd)
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    taken = take_folder(Path(pinned.paths[-1], name), dest, reader_uid=account.pw_uid,
                        reader_gid=account.pw_gid, owner_uid=0, owner_gid=GATE_GID, caps=caps,
                        readable_by="group")
    pinned.check()
    after = os.lstat(name, dir_fd=pinned.fd)
    if taken.ok and (after.st_ino, after.st_uid) != (before.st_ino, before.st_uid):
        shutil.rmtree(dest)
        taken.failed = "the folder was replaced while it was copied"
    return taken


def collect(assignment: str, course: Path, exchange: Path, course_id: str,
            max_bytes: int, now: datetime | None = None) -> Collected:
    """Every student's newest acceptable submission of `assignment` into
    COURSE/submitted/<student>/<assignment>/ (an earlier collected copy is
    kept in COURSE/earlier-submissions/), and COURSE/exchange_collected.csv
    with one row per inbound folder of the assignment. A submission over
    `max_bytes` (any file, or all together) is refused."""
    if not isinstance(assignment, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", assignment):
        raise ValueError(f"assignment must be a plain name (got assignment={assignment!r})")
    now = now or datetime.now(timezone.utc)
    result = Collected()
    for folder in (course / "submitted", course / "earlier-submissions"):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)  # the class's work: the instructor's alone
    pinned = Pinned(exchange, course_id)
    try:
        accepted: dict[str, list[tuple[datetime, str, Row, pwd.struct_passwd]]] = {}
        for name in sorted(os.listdir(pinned.fd)):
            found = NAME.match(name)
            if found and found["assignment"] != assignment:
                continue  # another assignment's
            row, account = look(pinned, name, assignment, now)
            result.rows.append(row)
            if account is None:
                continue
            try:
                received = newest_ctime(Path(pinned.paths[-1], name), account)
            except (ValueError, subprocess.TimeoutExpired) as err:
                row.note = str(err)
                continue
            accepted.setdefault(found["student"], []).append((received, name, row, account))
        for student, tries in sorted(accepted.items()):
            tries.sort()
            for _, _, row, _ in tries[:-1]:
                row.status, row.note = "earlier", "a later submission of the student counts"
            received, name, row, account = tries[-1]
            dest = course / "submitted" / student / assignment
            staging = dest.with_name(f".{assignment}.new")
            pinned.check()
            taken = take(pinned, name, account, staging,
                         Caps(file_bytes=max_bytes, total_bytes=max_bytes))
            if not taken.ok:
                row.note = "; ".join(plain(line) for line in taken.problems())
                with contextlib.suppress(OSError):
                    staging.parent.rmdir()  # made for this student, left empty
                continue
            # the time the student cannot write: after the copy, so that a
            # change made while it ran is counted too
            received = max(received, newest_ctime(Path(pinned.paths[-1], name), account))
            claim = parse_stamp(read_claim(staging))
            (staging / "timestamp.txt").write_text(stamp(received))
            keep_earlier(dest, course / "earlier-submissions" / student, assignment)
            os.rename(staging, dest)
            row.status, row.received = "collected", stamp(received)
            row.claimed = stamp(claim) if claim else row.claimed
            notes = [plain(line) for line in taken.problems()]
            if taken.refused:
                result.partly.append(row)
            if claim_is_earlier(claim, received):
                notes.insert(0, "its timestamp.txt claims an earlier time than it was "
                                "received: the received time counts")
            row.note = "; ".join(notes)
    finally:
        pinned.close()
    listing = course / "exchange_collected.csv"
    write_rows(listing, other_assignments(listing, assignment) + result.rows)
    return result


def other_assignments(listing: Path, assignment: str) -> list[Row]:
    """The rows of an earlier listing that belong to other assignments,
    kept: one listing holds the newest collect of each assignment, so
    that grading them all at once finds every row (refusals, claims)."""
    if not listing.is_file():
        return []
    with listing.open(newline="", encoding="utf-8") as handle:
        rows = [Row(**{c: r.get(c) or "" for c in COLUMNS}) for r in csv.DictReader(handle)]
    return [r for r in rows if (found := NAME.match(r.submission))
            and found["assignment"] != assignment]


def read_claim(dest: Path) -> str:
    """The timestamp.txt the student handed in (the gate's copy), or ''."""
    try:
        return (dest / "timestamp.txt").read_text(errors="replace")[:200]
    except OSError:
        return ""


def keep_earlier(dest: Path, earlier: Path, assignment: str) -> None:
    """Move an earlier collected copy of `dest` aside, named by its time,
    to make room for the new one."""
    claim = read_claim(dest)
    if dest.is_dir() and not claim:
        shutil.rmtree(dest)
    if not dest.is_dir():
        return
    label = re.sub(r"[^0-9A-Za-z]+", "-", claim.strip()).strip("-")
    target = earlier / f"{assignment}-{label}"
    if target.exists():
        shutil.rmtree(dest)  # collected again: that copy is kept already
    else:
        earlier.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.rename(dest, target)


def write_rows(path: Path, rows: list[Row]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(vars(row))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(out.getvalue())
