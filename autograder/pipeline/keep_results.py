"""What is kept of each finished student in --out, and the key that says
whether it is still valid, so a rerun after a crash grades only the
students not yet done."""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict
from pathlib import Path

from autograder.intake.intake import digest
from autograder.run.nbgrader_cli import GRADER_FILES, grader_modules
from autograder.pipeline.run_student import Limits
from autograder.intake.grading_outcome import DONE, Outcome

# the grader's own modules: a change to any of them grades every student again
GRADING_CODE = ("grade", "intake", "release_check", "run_student", "keep_results", "results",
                "grading_outcome", "autograde_steps", "kernel_sandbox", "nbgrader_config",
                "nbgrader_cli", "editions", "grader_sandbox")


MARKER = ".rag-grading-output"  # an --out folder we made and may rebuild


PARTIAL = ".partial"  # --out/.partial/<student>/: an entry being written


def student_work(work: Path, student: str) -> tuple[Path, Path]:
    """A student's course folder and nbgrader log while they are graded: both
    inside work/students/<student>/, under names of the grader's own, so
    no student id (`vic.log`, `template`) can land on another's files."""
    return work / "students" / student / "course", work / "students" / student / "log.txt"


def store(outcome: Outcome, course: Path, log: Path, keep: Path) -> None:
    """Write `keep` (--out/.students/<student>) atomically: a half-written
    entry never looks finished. It is written in --out/.partial/<student>,
    a folder of its own, so `vic.partial` stays a student's name."""
    part = keep.parent.with_name(PARTIAL) / keep.name
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    if (course / "feedback" / outcome.student).exists():
        shutil.copytree(course / "feedback" / outcome.student, part / "feedback")
    if outcome.graded:
        shutil.copy(course / "grades.csv", part / "grades.csv")
        # what course.py gathers into one gradebook for manual grading
        shutil.copy(course / "gradebook.db", part / "gradebook.db")
        shutil.copytree(course / "autograded" / outcome.student, part / "autograded")
    if log.exists():
        shutil.copy(log, part / "log.txt")
    (part / "outcome.json").write_text(json.dumps(asdict(outcome), indent=1))
    shutil.rmtree(keep, ignore_errors=True)
    part.rename(keep)


def load(keep: Path) -> Outcome:
    data = json.loads((keep / "outcome.json").read_text())
    for name in ("scores", "cells"):
        data[name] = {k: tuple(v) for k, v in data[name].items()}
    return Outcome(**{**data, "reused": True})


def file_hash(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        for p in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if p.is_file():
                h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def grading_key(source: Path, assignment: str, limits: Limits,
                only: list[str] | None) -> str:
    """Everything a grade depends on besides the submission itself."""
    code = [p for p in grader_modules() if p.stem in GRADING_CODE] + GRADER_FILES
    return hashlib.sha256(json.dumps({
        "masters": file_hash(source / assignment),
        "code": file_hash(*code), "assignment": assignment,
        "notebooks": sorted(only or []),
        "limits": limits.key()}, sort_keys=True).encode()).hexdigest()


def student_key(student_dir: Path, key: str) -> str:
    return hashlib.sha256(json.dumps([key, digest(student_dir)]).encode()).hexdigest()


def finished(keep: Path, key: str) -> bool:
    return (keep / "key").exists() and (keep / "key").read_text() == key


def prepare_out(out: Path, submissions: Path) -> None:
    """Refuse an --out that could hold anything but our own earlier results;
    keep the finished students of an earlier run of ours, drop the rest."""
    if out == submissions or submissions in out.parents or out in submissions.parents:
        raise SystemExit(f"--out must lie outside --submissions (got out={out}, "
                         f"submissions={submissions})")
    if out.exists():
        if not (out / MARKER).exists():
            if any(out.iterdir()):
                raise SystemExit(f"--out {out} exists and was not made by this script; "
                                 "choose an empty or new folder")
        else:
            for item in out.iterdir():  # derived results: rebuilt below
                if item.name not in (MARKER, DONE):
                    shutil.rmtree(item) if item.is_dir() else item.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / DONE).mkdir(exist_ok=True)
    (out / MARKER).write_text("made by autograder/commands/grade.py; safe to delete\n")


def kept(done: Path, students: list[Path], keys: dict[str, str]) -> dict[str, Outcome]:
    """The Outcomes of `students` already graded under their current key in
    `done`; every other entry there (a student gone, changed or graded with
    other settings, or a damaged entry) is removed, to be graded again."""
    for old in done.iterdir():
        if old.name not in keys or not finished(old, keys[old.name]):
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    reused = {}
    for s in students:
        if finished(done / s.name, keys[s.name]):
            try:
                reused[s.name] = load(done / s.name)
            except Exception:  # noqa: BLE001 (a damaged entry: grade again)
                shutil.rmtree(done / s.name)
    return reused
