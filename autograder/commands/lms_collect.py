"""Turn an LMS's bulk download into the submissions folder grade.py reads.

An LMS hands the instructor one zip of flat files, each named by the LMS.
Canvas names every file `<login>_[LATE_]<user id>_<submission id>_<name>`,
where `<name>` is the file as the student uploaded it; a second upload of the
same name gets a counter before its extension (`07_measuring-1.ipynb`,
`hand-in-2.zip`). Students upload either the notebooks and corpus files one
by one, or the single `hand-in.zip` that the student bundle's `make hand-in`
writes (`lab/`, `quiz/`, `project/` with `project/corpus/`).

Everything goes through the intake gate (autograder/intake/gate.py): the
download is unpacked by a reader that runs as an unprivileged uid, within
the caps DOWNLOAD, and each student's `hand-in.zip` (zip or tar) in turn,
within the caps of one hand-in (gate.HAND_IN), into a working folder only
root can enter. Only plain files come out, 0600 in 0700 folders. Each file
is routed by its name (the pattern CANVAS: its student, its assignment, its
place there; a flat `documents.json` goes to `project/corpus/`), and only
the newest upload of each file is kept (the highest counter).

One student's bad hand-in fails alone: a hand-in that cannot be read or
passes a cap (a truncated zip, a bomb, too many files) is not collected, and
a link, pipe or device in it, a name that clashes (`x` beside `x/y`) or a
file over a cap is left out; each gets a row in
SUBMISSIONS/lms_collected.csv whose note starts with "refused: ", the
exit status is 1, and `course.py grade` carries those rows into the
assignment's problems.csv. Every other student is collected.

Nothing in the zip is changed: it is only read. Every file in it is listed in
SUBMISSIONS/lms_collected.csv (student, assignment, where it went), with a
reason when it was not collected: a newer upload replaced it, it matched no
pattern (a stray file), or it was refused. Names from the download are shown
escaped (intake.plain). A student folder that already exists in
SUBMISSIONS with different content is never overwritten: collect stops
and says which.

usage: python autograder/commands/lms_collect.py --zip canvas.zip --submissions submitted
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
from autograder.intake.gate import GATE_GID, GB, HAND_IN, SANDBOX_UID, Caps, take_archive  # noqa: E402
from autograder.intake.intake import plain  # noqa: E402
from autograder.scoring.safe_csv import write_csv  # noqa: E402

# Canvas's name for a submitted file; `file_id` is the name the student gave
# it, maybe with Canvas's resubmission counter. Matched against the path
# below the unpacked download's own folder, so a
# hand-in zip's files read `<prefix>hand-in/lab/07_measuring.ipynb`.
CANVAS = (r"(?P<student_id>[A-Za-z0-9]+)_(?:LATE_)?(?P<user_id>[0-9]+)_"
          r"(?P<submission_id>[0-9]+)_(?P<file_id>[^/]+(?:/.+)?)$")
PATTERNS = {"canvas": CANVAS}
# Canvas's counter for a second, third... upload of one name
COUNTER = re.compile(r"^(?P<stem>.+?)-(?P<n>[0-9]+)$")
HAND_IN_NAME = "hand-in"  # the student bundle's zip, unpacked into its own folder
CORPUS_EXT = ".json"  # a flat upload with this extension is a corpus file
COLLECTED = "lms_collected.csv"
REFUSED = "refused: "  # how the note of a refused file starts
# The LMS's own zip: every student's uploads, each within a hand-in's caps
# (checked after), so room for a large class; a broken download stops all.
DOWNLOAD = Caps(members=100_000, file_bytes=GB, total_bytes=16 * GB, depth=4, seconds=1800)


@dataclass(frozen=True)
class Placed:
    """Where one file of the zip goes: `student`'s `assignment` folder at
    `path`, as upload number `attempt` (0 for the first)."""
    student: str
    assignment: str
    path: str
    attempt: int


def split_counter(name: str) -> tuple[str, int]:
    """`07_measuring-1.ipynb` -> (`07_measuring.ipynb`, 1); no counter -> 0.
    Canvas puts the counter before the last extension."""
    stem, ext = os.path.splitext(name)
    if m := COUNTER.match(stem):
        return m["stem"] + ext, int(m["n"])
    return name, 0


def route(file_id: str, released: dict[str, set[str]]) -> tuple[str, str, int] | None:
    """(assignment, path inside it, attempt) for a file the student named
    `file_id`, or None when it belongs nowhere. `released` maps each
    assignment to its released notebook names."""
    first, _, rest = file_id.partition("/")
    base, attempt = split_counter(first)
    if rest:  # a file inside an unpacked hand-in zip
        assignment, _, inner = rest.partition("/")
        parts = inner.split("/")
        if (base != HAND_IN_NAME or assignment not in released or not inner
                or any(p.startswith(".") for p in parts)):
            return None
        return assignment, inner, attempt
    for assignment, names in released.items():
        if base in names:
            return assignment, base, attempt
    if base.endswith(CORPUS_EXT) and "project" in released:
        return "project", f"corpus/{base}", attempt
    return None


def place(relative: str, pattern: str, released: dict[str, set[str]]) -> Placed | None:
    """Where the file at `relative` (below the extracted zip's folder) goes,
    or None when its name fits no pattern."""
    match = re.match(pattern, relative)
    if match is None:
        return None
    routed = route(match["file_id"], released)
    if routed is None:
        return None
    return Placed(match["student_id"], *routed)


def released_notebooks(release: Path) -> dict[str, set[str]]:
    """Each assignment of `release` and the notebook names it hands out."""
    return {a.name: {nb.name for nb in a.glob("*.ipynb")}
            for a in sorted(release.iterdir()) if a.is_dir()}


def choose(placed: dict[str, Placed | None]) -> dict[str, str]:
    """The files that lose to a newer upload of the same file (the highest
    counter; a tie goes to the name that sorts last): {relative: the one
    kept}."""
    best: dict[tuple, str] = {}
    for rel in sorted(placed):
        if (p := placed[rel]) is None:
            continue
        key = (p.student, p.assignment, p.path)
        if key not in best or placed[best[key]].attempt <= p.attempt:
            best[key] = rel
    return {rel: best[(p.student, p.assignment, p.path)] for rel, p in placed.items()
            if p is not None and best[(p.student, p.assignment, p.path)] != rel}


def survey(extracted: Path, pattern: str, released: dict[str, set[str]]
           ) -> tuple[dict[str, Placed | None], dict[str, str]]:
    """Every file below `extracted` with its place (or None), and the files a
    newer upload replaces."""
    placed = {}
    for folder, _, files in os.walk(extracted):
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), extracted)
            placed[rel] = place(rel, pattern, released)
    return placed, choose(placed)


def same_tree(a: Path, b: Path) -> bool:
    """Whether folders `a` and `b` hold the same files with the same bytes."""
    def files(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    names = files(a)
    return names == files(b) and all(
        filecmp.cmp(a / n, b / n, shallow=False) for n in names)



def is_hand_in(rel: str, pattern: str) -> bool:
    """Whether the file at `rel` is a student's upload of `hand-in.zip`."""
    match = re.match(pattern, rel)
    return match is not None and "/" not in match["file_id"] and (
        split_counter(match["file_id"])[0] == HAND_IN_NAME + ".zip")


def refused_row(file: str, student: str, assignment: str, why: str) -> dict:
    return {"file": file, "student": student, "assignment": assignment,
            "collected_as": "", "note": REFUSED + why}


def unpack(archive: Path, work: Path, pattern: str, released: dict[str, set[str]]
           ) -> tuple[Path, list[dict], set[str]]:
    """The download unpacked into `work`/download, each hand-in.zip in it
    into a folder beside it (its name without .zip), both through the
    gate; the rows of what the gate refused, and the hand-ins it refused
    whole."""
    reader = {"reader_uid": SANDBOX_UID, "reader_gid": SANDBOX_UID, "readable_by": "group",
              "owner_uid": os.getuid(), "owner_gid": GATE_GID}
    extracted = work / "download"
    outer = take_archive(archive, extracted, **reader, caps=DOWNLOAD)
    if not outer.ok:
        raise ValueError(f"the download cannot be collected: {outer.failed}")
    rows = [refused_row(name, "", "", why) for name, why in outer.refused]
    failed = set()
    for rel in outer.files:
        student = (re.match(pattern, rel) or {"student_id": ""})["student_id"]
        if not is_hand_in(rel, pattern):
            if (extracted / rel).stat().st_size > HAND_IN.file_bytes:
                failed.add(rel)
                rows.append(refused_row(plain(rel), student, "", f"larger than "
                                        f"{HAND_IN.file_bytes // 2 ** 20} MiB; not collected"))
            continue
        folder = rel[:-len(".zip")]
        if os.path.lexists(extracted / folder):
            taken = None
        else:
            taken = take_archive(extracted / rel, extracted / folder, **reader, caps=HAND_IN)
        if taken is None or not taken.ok:
            failed.add(rel)
            why = taken.failed if taken else "another upload has the name of its folder"
            rows.append(refused_row(plain(rel), student, "", f"{why}; nothing in it "
                                    "was collected"))
            continue
        for name, why in taken.refused:
            routed = place(f"{folder}/{name}", pattern, released)
            rows.append(refused_row(f"{plain(folder)}/{name}", student,
                                    routed.assignment if routed else "", why))
    return extracted, rows, failed


def shared_folder(folder: Path) -> None:
    """Make `folder` and those above it that are missing, 0750 and (as
    root) in the group grade.py's reader holds (gate.GATE_GID)."""
    if folder.is_dir():
        return
    shared_folder(folder.parent)
    folder.mkdir(mode=0o750)
    if os.geteuid() == 0:
        os.chown(folder, -1, GATE_GID)


def assemble(extracted: Path, students: Path, placed: dict[str, Placed | None],
             replaced: dict[str, str]) -> dict[str, str]:
    """Move each file that is kept to `students`/<student>/<assignment>/<path>; {file: why} for those whose place clashes with another
    file's (`x` from one upload, `x/y` from another). The files stay as
    the gate wrote them: 0640, in the group of shared_folder."""
    clashes = {}
    for rel in sorted(placed):
        p = placed[rel]
        if p is None or rel in replaced:
            continue
        target = students / p.student / p.assignment / p.path
        try:
            shared_folder(target.parent)
            if os.path.lexists(target):
                raise FileExistsError(target)
            os.rename(extracted / rel, target)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            clashes[rel] = (f"{p.assignment}/{plain(p.path)} clashes with another "
                            "upload's file or folder; not collected")
    return clashes


def collect(archive: Path, submissions: Path, release: Path = ROOT / "release",
            lms: str = "canvas") -> list[dict]:
    """Collect `archive` into `submissions`/<student>/<assignment>/ and
    return one row per file of the zip (what became of it)."""
    if lms not in PATTERNS:
        raise ValueError(f"lms must be one of {sorted(PATTERNS)} (got lms={lms!r})")
    if not archive.is_file():
        raise ValueError(f"zip not found (got zip={str(archive)!r})")
    released = released_notebooks(release)
    pattern = PATTERNS[lms]
    submissions.mkdir(parents=True, exist_ok=True)
    # in SUBMISSIONS, so that each finished folder is renamed into place
    with tempfile.TemporaryDirectory(prefix=".lms-collect-", dir=submissions) as tmp:
        work = Path(tmp)
        extracted, rows, failed = unpack(archive, work, pattern, released)
        placed, replaced = survey(extracted, pattern, released)
        for rel in failed:
            placed[rel] = None
        clashes = assemble(extracted, work / "students", placed, replaced)
        pairs = sorted((s.name, a.name) for s in (work / "students").iterdir()
                       for a in s.iterdir()) if (work / "students").is_dir() else []
        different = [f"{s}/{a}" for s, a in pairs if (submissions / s / a).exists()
                     and not same_tree(work / "students" / s / a, submissions / s / a)]
        if different:
            raise FileExistsError(
                f"{submissions} already holds different work for {', '.join(different)}; "
                "nothing was copied (collect into a new folder, or move those away)")
        for s, a in pairs:
            if not (submissions / s / a).exists():
                shared_folder(submissions / s)
                os.rename(work / "students" / s / a, submissions / s / a)
        for rel in sorted(placed):
            p, shown = placed[rel], plain(rel)
            if rel in failed:
                continue  # its row is in `rows` already
            if p is None:
                unpacked = is_hand_in(rel, pattern)
                rows.append({"file": shown, "student": "", "assignment": "", "collected_as": "",
                             "note": "unpacked; its files are listed by name" if unpacked
                             else "matched no pattern; not collected"})
            elif rel in replaced or rel in clashes:
                rows.append({"file": shown, "student": p.student, "assignment": p.assignment,
                             "collected_as": "", "note": REFUSED + clashes[rel]
                             if rel in clashes else f"replaced by {plain(replaced[rel])}"})
            else:
                rows.append({"file": shown, "student": p.student, "assignment": p.assignment,
                             "collected_as": f"{p.student}/{p.assignment}/{plain(p.path)}",
                             "note": ""})
    rows.sort(key=lambda r: (r["file"], r["note"]))
    write_csv(pd.DataFrame(rows, columns=["file", "student", "assignment",
                                          "collected_as", "note"]), submissions / COLLECTED)
    return rows


def refusals(listing: Path, assignment: str) -> list[dict]:
    """The problems.csv rows (student, problem) of `assignment` from the
    refused files of lms_collected.csv at `listing`: those of the
    assignment, and those of no one assignment (a whole hand-in)."""
    if not listing.is_file():
        return []
    files = pd.read_csv(listing, dtype=str, keep_default_na=False)
    if not {"file", "student", "assignment", "note"} <= set(files.columns):
        return []  # a listing from before refusals were written
    files = files[files["note"].str.startswith(REFUSED)
                  & files["assignment"].isin(["", assignment]) & (files["student"] != "")]
    return [{"student": r["student"], "problem": f"(LMS download) {r['file']}: {r['note']}"}
            for _, r in files.iterrows()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", type=Path, required=True, help="the LMS's bulk download")
    parser.add_argument("--submissions", type=Path, required=True,
                        help="the folder make grade reads (created if missing)")
    parser.add_argument("--lms", choices=sorted(PATTERNS), default="canvas")
    args = parser.parse_args(argv)
    try:
        rows = collect(args.zip.resolve(), args.submissions.resolve(), lms=args.lms)
    except (ValueError, FileExistsError) as err:
        print(f"error: {plain(str(err))}", file=sys.stderr)
        return 2
    students = sorted({r["student"] for r in rows if r["collected_as"]})
    print(f"{len(students)} student(s) collected into {args.submissions}: {', '.join(students)}")
    for r in rows:
        if r["note"]:
            print(f"  {r['file']}: {r['note']}")
    print(f"every file of the zip and what became of it: {args.submissions / COLLECTED}")
    refused = sorted({r["student"] or r["file"] for r in rows if r["note"].startswith(REFUSED)})
    if refused:
        print(f"refused in part or whole, for: {', '.join(refused)} (see the rows above; "
              "the exit status is 1)")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
