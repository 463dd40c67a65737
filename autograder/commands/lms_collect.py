"""Turn an LMS's bulk download into the submissions folder grade.py reads.

An LMS hands the instructor one zip of flat files, each named by the LMS.
Canvas names every file `<login>_[LATE_]<user id>_<submission id>_<name>`,
where `<name>` is the file as the student uploaded it; a second upload of the
same name gets a counter before its extension (`07_measuring-1.ipynb`,
`hand-in-2.zip`). Students upload either the notebooks and corpus files one
by one, or the single `hand-in.zip` that the student bundle's `make hand-in`
writes (`lab/`, `quiz/`, `project/` with `project/corpus/`).

nbgrader's own `zip_collect` does the work, once per assignment, in a
throwaway course folder: its extractor unpacks the zip (and every zip inside
it, each into its own folder), and its file-name collector reads the student
and the file from each name with the documented pattern CANVAS below. The
collector here (`LmsFileCollector`, an nbgrader collector plugin) adds what
Canvas's names need and nbgrader cannot express: it routes each file to its
assignment and its place there (a flat `documents.json` goes to
`project/corpus/`), and keeps only the newest upload of each file (the
highest counter), because nbgrader compares resubmissions by timestamp and
Canvas names carry none.

Nothing in the zip is changed: it is only read. Every file in it is listed in
SUBMISSIONS/lms_collected.csv (student, assignment, where it went), with a
reason when it was not collected: a newer upload replaced it, or it matched
no pattern (a stray file). A student folder that already exists in
SUBMISSIONS with different content is never overwritten: collect stops and
says which.

usage: python autograder/commands/lms_collect.py --zip canvas.zip --submissions submitted
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from traitlets import Unicode

from nbgrader.plugins import FileNameCollectorPlugin

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the folder that holds autograder/
from autograder.run.nbgrader_cli import course_folder, nbgrader_env, nbgrader_command  # noqa: E402
from autograder.scoring.safe_csv import write_csv  # noqa: E402

# Canvas's name for a submitted file; `file_id` is the name the student gave
# it, maybe with Canvas's resubmission counter. Matched (by nbgrader's
# collector) against the path below the extracted zip's own folder, so a
# hand-in zip's files read `<prefix>hand-in/lab/07_measuring.ipynb`.
CANVAS = (r"(?P<student_id>[A-Za-z0-9]+)_(?:LATE_)?(?P<user_id>[0-9]+)_"
          r"(?P<submission_id>[0-9]+)_(?P<file_id>[^/]+(?:/.+)?)$")
PATTERNS = {"canvas": CANVAS}
# Canvas's counter for a second, third... upload of one name
COUNTER = re.compile(r"^(?P<stem>.+?)-(?P<n>[0-9]+)$")
HAND_IN = "hand-in"  # the student bundle's zip, unpacked into its own folder
CORPUS_EXT = ".json"  # a flat upload with this extension is a corpus file
COLLECTED = "lms_collected.csv"


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
        if (base != HAND_IN or assignment not in released or not inner
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


class LmsFileCollector(FileNameCollectorPlugin):
    """nbgrader's file-name collector for an LMS's names: nbgrader's own
    pattern matching (`named_regexp`, e.g. CANVAS), then the file's place in
    the assignment being collected, newest upload only."""

    extracted_root = Unicode(help="the folder zip_collect extracts into").tag(config=True)
    assignment = Unicode(help="the assignment being collected").tag(config=True)
    release_root = Unicode(help="the released assignments, one folder each").tag(config=True)

    def collect(self, submitted_file: str) -> dict | None:
        root = Path(self.extracted_root)
        if not hasattr(self, "_survey"):
            self._survey = survey(root, self.named_regexp,
                                  released_notebooks(Path(self.release_root)))
        placed, replaced = self._survey
        rel = os.path.relpath(submitted_file, root)
        if rel in replaced:
            return None
        p = placed.get(rel)
        if p is None or p.assignment != self.assignment:
            return None
        return {"student_id": p.student, "file_id": p.path}


def zip_collect(archive: Path, course: Path, assignments: list[str], pattern: str) -> None:
    """`nbgrader zip_collect ASSIGNMENT` on `archive` in `course`, for each
    of `assignments` at once (each reads its own copy of the zip)."""
    env = nbgrader_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    procs = {}
    for assignment in assignments:
        folder = course / "downloaded" / assignment / "archive"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(archive, folder / archive.name)
        extracted = course / "downloaded" / assignment / "extracted" / archive.stem
        procs[assignment] = subprocess.Popen(
            nbgrader_command(
                "zip_collect", assignment,
                "--ZipCollectApp.collector_plugin="
                "autograder.commands.lms_collect.LmsFileCollector",
                f"--LmsFileCollector.named_regexp={pattern}",
                f"--LmsFileCollector.extracted_root={extracted}",
                f"--LmsFileCollector.assignment={assignment}",
                f"--LmsFileCollector.release_root={course / 'release'}"),
            cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    failed = []
    for assignment, proc in procs.items():
        _, err = proc.communicate()
        if proc.returncode != 0 or "| ERROR]" in err:
            failed.append(f"nbgrader zip_collect {assignment} failed:\n{err}")
    if failed:
        raise RuntimeError("\n".join(failed))


def same_tree(a: Path, b: Path) -> bool:
    """Whether folders `a` and `b` hold the same files with the same bytes."""
    def files(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    names = files(a)
    return names == files(b) and all(
        filecmp.cmp(a / n, b / n, shallow=False) for n in names)


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
    with tempfile.TemporaryDirectory(prefix="lms-collect-") as tmp:
        course = course_folder(Path(tmp) / "course")
        shutil.copytree(release, course / "release")
        zip_collect(archive, course, list(released), pattern)
        extracted = course / "downloaded" / next(iter(released)) / "extracted" / archive.stem
        placed, replaced = survey(extracted, pattern, released)
        collected = course / "submitted"
        pairs = sorted((s.name, a.name) for s in collected.iterdir() if s.is_dir()
                       for a in s.iterdir() if a.is_dir()) if collected.is_dir() else []
        clashes = [f"{s}/{a}" for s, a in pairs if (submissions / s / a).exists()
                   and not same_tree(collected / s / a, submissions / s / a)]
        if clashes:
            raise FileExistsError(
                f"{submissions} already holds different work for {', '.join(clashes)}; "
                "nothing was copied (collect into a new folder, or move those away)")
        for s, a in pairs:
            target = submissions / s / a
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(collected / s / a, target)
        rows = []
        for rel in sorted(placed):
            p = placed[rel]
            if p is None:
                unpacked = rel.endswith(".zip") and (extracted / rel[:-4]).is_dir()
                rows.append({"file": rel, "student": "", "assignment": "", "collected_as": "",
                             "note": "unpacked; its files are listed by name" if unpacked
                             else "matched no pattern; not collected"})
            elif rel in replaced:
                rows.append({"file": rel, "student": p.student, "assignment": p.assignment,
                             "collected_as": "", "note": f"replaced by {replaced[rel]}"})
            else:
                rows.append({"file": rel, "student": p.student, "assignment": p.assignment,
                             "collected_as": f"{p.student}/{p.assignment}/{p.path}", "note": ""})
    submissions.mkdir(parents=True, exist_ok=True)
    write_csv(pd.DataFrame(rows, columns=["file", "student", "assignment",
                                          "collected_as", "note"]), submissions / COLLECTED)
    return rows


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
        print(f"error: {err}", file=sys.stderr)
        return 2
    students = sorted({r["student"] for r in rows if r["collected_as"]})
    print(f"{len(students)} student(s) collected into {args.submissions}: {', '.join(students)}")
    for r in rows:
        if r["note"]:
            print(f"  {r['file']}: {r['note']}")
    print(f"every file of the zip and what became of it: {args.submissions / COLLECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
