"""The intake gate: the one way a student's hand-in becomes the grader's
copy, whichever road it came by (an LMS download's archives, a folder
copied in by hand, the hub's exchange).

    take_folder(src, dest, *, reader_uid, reader_gid, owner_uid=None,
                owner_gid=None, caps=HAND_IN, reader_groups=(),
                readable_by="owner") -> Taken
    take_archive(archive, dest, ...the same...) -> Taken

Both read the hand-in in a child process (gate_reader.py) that gives up
root for `reader_uid`:`reader_gid` (the student's own uid for an exchange
folder, a sandbox uid otherwise; ignored when not run as root) before it
reads a byte, never follows a link, and streams what it finds to this
process over a pipe. This process trusts none of it: it checks every name
(no `..`, no absolute path, no clash such as `x` beside `x/y`) and every
cap while the bytes arrive, and writes only files and folders it creates
itself in a staging folder beside `dest`: files 0600, folders 0700, owned
by `owner_uid`:`owner_gid` (when root), whatever modes the hand-in had, so
never a setuid, setgid, sticky or exec bit, and never a link, a pipe or a
device. Links, pipes, devices and sockets are refused and listed; so is a
name that clashes or would leave the folder. Past a cap (members, bytes of
one file, bytes in all, folder depth, seconds) or with an archive that
cannot be read, nothing is taken. Only a complete take is renamed into
place at `dest` (replacing what was there); a refused or interrupted one
leaves `dest` as it was.

`readable_by` chooses the modes: "owner" (files 0600, folders 0700),
"group" (0640, 0750: the owner's group may read) or "all" (0644, 0755, only
for a copy inside a folder no one else may enter). A copy that grade.py will
grade later must be readable by its reader (the grader sandbox's uid,
holding the group GATE_GID): take it with `owner_gid=GATE_GID,
readable_by="group"`, as `make collect` does.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake.intake import MAX_FILES, plain

MB = 2 ** 20
READER = Path(__file__).resolve().with_name("gate_reader.py")
READ_BYTES = 4 * MB    # the most read from the reader's pipe at once
FRAME_BYTES = 1 * MB   # the largest frame the reader may send (it sends 256 KiB)
NAME_BYTES = 4096      # the longest path it may name
# the modes of the copy's files and folders, by who may read it
MODES = {"owner": (0o600, 0o700), "group": (0o640, 0o750), "all": (0o644, 0o755)}


@dataclass(frozen=True)
class Caps:
    """What one hand-in may hold. A complete submission of the sample class
    (autograder/testbed/sample_class) has 19 files and folders, 1 MB in all,
    its largest file 127 KB, 3 folders deep."""
    members: int = MAX_FILES     # files, folders and refused entries
    file_bytes: int = 50 * MB    # any one file (grade.py's notebook cap)
    total_bytes: int = 200 * MB  # all files together, unpacked
    depth: int = 8               # folders deep
    seconds: float = 60          # the whole take, reading included

    def __post_init__(self):
        for name in ("members", "file_bytes", "total_bytes", "depth", "seconds"):
            value = getattr(self, name)
            if type(value) not in (int, float) or (name != "seconds" and type(value) is not int):
                raise TypeError(f"caps.{name} must be a number (got {value!r})")
            if value <= 0:
                raise ValueError(f"caps.{name} must be positive (got {value!r})")


HAND_IN = Caps()
GB = 1024 * MB
# A folder copied in by hand is already on the instructor's disk, and
# grade.py's own limits (--max-files, --max-notebook) come before and after
# it with finer words: these caps only bound what copying it may cost.
HAND_COPIED = Caps(members=100_000, file_bytes=GB, total_bytes=2 * GB, depth=32, seconds=600)
# The uid that reads an archive, or a folder when grading runs as root
# without a kernel sandbox: below grade.py's kernel uids (--sandbox-uid,
# 61000 on) and the uid its similarity report runs as (60999).
SANDBOX_UID = 60998
# The group of what `make collect` writes (root's, files 0640 and folders
# 0750): grade.py's reader holds it as an extra group to read those copies;
# no student does.
GATE_GID = 60997


@dataclass
class Taken:
    """What a take did: the files it took (paths below `dest`, as named in
    the hand-in: data, to escape with intake.plain before showing), what it
    refused (the name, escaped, and why), and, when nothing was taken, why
    (`failed`)."""
    files: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed is None

    def problems(self) -> list[str]:
        """The lines a student's problems get: the reason nothing was taken,
        then each refused entry."""
        head = [f"(hand-in): {self.failed}; nothing was taken"] if self.failed else []
        return head + [f"{name}: {why}; refused" for name, why in self.refused]


@dataclass(frozen=True)
class Who:
    """Who reads a hand-in (uid, gid and extra groups of the reader) and
    who owns the copy (when root; else whoever runs this)."""
    reader_uid: int
    reader_gid: int
    reader_groups: tuple[int, ...] = ()
    owner_uid: int | None = None
    owner_gid: int | None = None
    readable_by: str = "owner"

    def __post_init__(self):
        for name in ("reader_uid", "reader_gid"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 0:
                raise TypeError(f"{name} must be an int >= 0 (got {getattr(self, name)!r})")
        if any(type(g) is not int or g < 0 for g in self.reader_groups):
            raise TypeError(f"reader_groups must be ints >= 0 (got {self.reader_groups!r})")
        if os.geteuid() == 0 and 0 in (self.reader_uid, self.reader_gid, *self.reader_groups):
            raise ValueError("reader_uid, reader_gid and reader_groups must not be root's "
                             "(0): the reader gives up root")
        if (self.owner_uid is None) != (self.owner_gid is None):
            raise ValueError("owner_uid and owner_gid go together: give both or neither")
        if self.readable_by not in MODES:
            raise ValueError(f"readable_by must be one of {sorted(MODES)} "
                             f"(got {self.readable_by!r})")

    def owner(self) -> tuple[int, int] | None:
        if self.owner_uid is None or os.geteuid() != 0:
            return None
        return self.owner_uid, self.owner_gid


class Refused(Exception):
    """The whole hand-in is refused; the message says why."""


class Reader:
    """The frames the reader sends, read within the time left."""

    def __init__(self, fd: int, deadline: float, seconds: float):
        self.fd, self.deadline, self.seconds = fd, deadline, seconds
        self.buffer, self.start = bytearray(), 0

    def take(self, n: int) -> bytes:
        while len(self.buffer) - self.start < n:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise Refused(f"reading it took longer than {self.seconds:g} s")
            chunk = os.read(self.fd, READ_BYTES)
            if not chunk:
                raise Refused("the reader stopped before the end")
            del self.buffer[:self.start]  # what was taken goes only now, at once
            self.buffer += chunk
            self.start = 0
        out = bytes(self.buffer[self.start:self.start + n])
        self.start += n
        return out

    def frame(self) -> tuple[bytes, bytes]:
        head = self.take(5)
        (size,) = struct.unpack(">I", head[1:])
        if size > FRAME_BYTES:
            raise Refused("the reader sent a frame too large")
        return head[:1], self.take(size)


def parts_of(name: bytes) -> tuple[str, ...] | None:
    """The folders and name of a path from the hand-in, or None when it is
    not a plain relative path (absolute, `..`, a NUL, too long). `.` and
    empty parts (`./lab//x`) are dropped."""
    if len(name) > NAME_BYTES or b"\0" in name or name.startswith(b"/"):
        return None
    parts = tuple(p for p in name.split(b"/") if p not in (b"", b"."))
    if any(p == b".." or len(p) > 255 for p in parts):
        return None
    return tuple(os.fsdecode(p) for p in parts)


class Staging:
    """A folder beside `dest` that only this process writes: everything in
    it is created here, with this process's modes and owner."""

    def __init__(self, dest: Path, who: Who):
        self.path = Path(tempfile.mkdtemp(prefix=f".{dest.name}.taking-", dir=dest.parent))
        self.owner = who.owner()
        self.file_mode, self.folder_mode = MODES[who.readable_by]
        self.top = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.settle(self.top, self.folder_mode)
        self.kinds: dict[tuple[str, ...], str] = {(): "folder"}
        self.open_folders: dict[tuple[str, ...], int] = {(): self.top}

    def settle(self, fd: int, mode: int) -> None:
        os.fchmod(fd, mode)
        if self.owner is not None:
            os.fchown(fd, *self.owner)

    def clash(self, parts: tuple[str, ...], kind: str) -> str | None:
        """Why `parts` cannot be a `kind` here, or None."""
        for i in range(1, len(parts)):
            if self.kinds.get(parts[:i], "folder") != "folder":
                return f"its folder {plain('/'.join(parts[:i]))} is a file"
        have = self.kinds.get(parts)
        if have is not None and (kind == "file" or have == "file"):
            return f"a {have} of the same name came first"
        return None

    def folder(self, parts: tuple[str, ...]) -> int:
        """The folder `parts`, made (with those above it) if missing."""
        if parts in self.open_folders:
            return self.open_folders[parts]
        above = self.folder(parts[:-1])
        os.mkdir(parts[-1], 0o700, dir_fd=above)
        fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=above)
        self.settle(fd, self.folder_mode)
        self.kinds[parts] = "folder"
        self.open_folders[parts] = fd
        return fd

    def file(self, parts: tuple[str, ...]) -> int:
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o600, dir_fd=self.folder(parts[:-1]))
        self.settle(fd, self.file_mode)
        self.kinds[parts] = "file"
        return fd

    def close(self) -> None:
        for fd in self.open_folders.values():
            os.close(fd)
        self.open_folders = {}

    def place(self, dest: Path) -> None:
        """Put the finished copy at `dest`, the earlier one (a folder, not a
        link to one) away."""
        self.close()
        old = None
        if os.path.lexists(dest):
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            os.rename(dest, old / "copy")
        os.rename(self.path, dest)
        if old is not None:
            shutil.rmtree(old)

    def discard(self) -> None:
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)


def receive(reader: Reader, staging: Staging, caps: Caps, taken: Taken) -> None:
    """Write what the reader sends into `staging`, checking as it comes."""
    members = total = 0
    while True:
        kind, payload = reader.frame()
        if kind == b"Z":
            return
        if kind == b"X":
            raise Refused(f"it cannot be read ({plain(payload.decode('utf-8', 'replace'), 300)})")
        if kind not in (b"D", b"F", b"R"):
            raise Refused("the reader sent something unexpected")
        members += 1
        if members > caps.members:
            raise Refused(f"more than {caps.members} files and folders")
        name, _, why = payload.partition(b"\0")
        shown = plain(os.fsdecode(name), 200)
        parts = parts_of(name)
        if kind == b"R":
            taken.refused.append((shown, plain(why.decode("utf-8", "replace"), 200)))
            continue
        if parts is not None and len(parts) - (kind == b"F") > caps.depth:
            raise Refused(f"{shown} is more than {caps.depth} folders deep")
        problem = ("its name leaves its folder or is not a plain path" if parts is None
                   else None if not parts and kind == b"D"
                   else "an empty name" if not parts
                   else staging.clash(parts, "folder" if kind == b"D" else "file"))
        if kind == b"D":
            if problem:
                taken.refused.append((shown, problem))
            elif parts:
                staging.folder(parts)
            continue
        fd = staging.file(parts) if problem is None else None
        size = 0
        try:
            while (frame := reader.frame())[0] == b"C":
                size += len(frame[1])
                total += len(frame[1])
                if size > caps.file_bytes:
                    raise Refused(f"{shown} is larger than {caps.file_bytes // MB} MiB")
                if total > caps.total_bytes:
                    raise Refused(f"more than {caps.total_bytes // MB} MiB in all")
                if fd is not None:
                    os.write(fd, frame[1])
            if frame[0] != b"E":
                raise Refused("the reader sent something unexpected")
        finally:
            if fd is not None:
                os.close(fd)
        if problem:
            taken.refused.append((shown, problem))
        else:
            taken.files.append("/".join(parts))


def opened(mode: str, source: Path) -> int:
    """`source` opened without following a link (nor waiting, should it be
    a pipe): a folder for "folder", a regular file for "archive"."""
    argument = "src" if mode == "folder" else "archive"
    kind = "a folder" if mode == "folder" else "a regular file"
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ValueError(f"{argument} cannot be opened (got {argument}={str(source)!r}: "
                         f"{err.strerror})") from None
    is_folder = stat.S_ISDIR(os.fstat(fd).st_mode)
    if is_folder != (mode == "folder") or not (is_folder or stat.S_ISREG(os.fstat(fd).st_mode)):
        os.close(fd)
        raise ValueError(f"{argument} must be {kind} (got {argument}={str(source)!r})")
    os.set_blocking(fd, True)
    return fd


def take(mode: str, source: Path, dest: Path, who: Who, caps: Caps) -> Taken:
    """Run the reader on `source` (a folder or an archive) and, when all
    went well, put what it sent at `dest`."""
    if not isinstance(caps, Caps):
        raise TypeError(f"caps must be a Caps (got {type(caps).__name__})")
    if not dest.parent.is_dir():
        raise ValueError(f"dest's folder does not exist (got dest={str(dest)!r})")
    if os.path.lexists(dest) and not stat.S_ISDIR(os.lstat(dest).st_mode):
        raise ValueError(f"dest is there already and is not a folder (got dest={str(dest)!r})")
    fd = opened(mode, source)
    try:
        return read_into(mode, fd, dest, who, caps)
    finally:
        os.close(fd)


def read_into(mode: str, source: int, dest: Path, who: Who, caps: Caps) -> Taken:
    """The reader on the open `source`, what it sends staged, then placed."""
    taken = Taken()
    staging = Staging(dest, who)
    start = time.monotonic()
    groups = ",".join(map(str, who.reader_groups)) or "-"
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(READER), mode, str(who.reader_uid),
         str(who.reader_gid), groups, str(caps.depth), str(source)],
        pass_fds=(source,), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd="/", env={}, start_new_session=True)
    placed = False
    try:
        receive(Reader(proc.stdout.fileno(), start + caps.seconds, caps.seconds),
                staging, caps, taken)
        try:
            status = proc.wait(timeout=max(caps.seconds - (time.monotonic() - start), 0.1))
        except subprocess.TimeoutExpired:
            raise Refused(f"reading it took longer than {caps.seconds:g} s") from None
        if status != 0:
            raise Refused(f"the reader failed (exit status {status})")
        staging.place(dest)
        placed = True
    except Refused as why:
        taken = Taken(failed=str(why), refused=taken.refused)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if not placed:
            staging.discard()
    taken.files.sort()
    taken.refused.sort()
    return taken


def take_folder(src: Path, dest: Path, *, reader_uid: int, reader_gid: int,
                owner_uid: int | None = None, owner_gid: int | None = None,
                caps: Caps = HAND_IN, reader_groups: tuple[int, ...] = (),
                readable_by: str = "owner") -> Taken:
    """Copy the folder `src` to `dest` through the gate (see the module's
    docstring). `src` itself must be a folder, not a link to one: it is
    opened here without following a link, and everything below it by the
    reader as `reader_uid` (with `reader_groups`), which must be allowed to
    read it. `readable_by`: see the module's docstring."""
    who = Who(reader_uid, reader_gid, tuple(reader_groups), owner_uid, owner_gid, readable_by)
    return take("folder", Path(src), Path(dest), who, caps)


def take_archive(archive: Path, dest: Path, *, reader_uid: int, reader_gid: int,
                 owner_uid: int | None = None, owner_gid: int | None = None,
                 caps: Caps = HAND_IN, reader_groups: tuple[int, ...] = (),
                 readable_by: str = "owner") -> Taken:
    """Unpack the zip or tar `archive` (plain, gzip, bzip2 or xz) to `dest`
    through the gate (see the module's docstring; the other arguments are
    take_folder's). `archive` is opened here, without following a link, and
    read by the reader. An archive inside it stays a file."""
    who = Who(reader_uid, reader_gid, tuple(reader_groups), owner_uid, owner_gid, readable_by)
    return take("archive", Path(archive), Path(dest), who, caps)
