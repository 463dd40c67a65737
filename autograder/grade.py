"""Grade a class of submissions with nbgrader, one student at a time in parallel.

    python autograder/grade.py --submissions DIR --out DIR [--assignment lab]
                               [--jobs N] [--timeout SECONDS] [--sandbox bwrap|none]

DIR/<student>/<assignment>/*.ipynb is the layout nbgrader's `collect` and
`zip_collect` produce. For every student this script

  1. checks the submission against the release (missing or unknown notebooks,
     unreadable JSON, duplicated, deleted or retyped graded cells) and writes
     down what it found instead of stopping the batch (nbgrader issue 1941);
     an unreadable notebook is graded as the blank release, so it scores 0
     while the student's other notebooks still count;
  2. grades it with the real `nbgrader autograde`, `generate_feedback` and
     `export`, in a course folder of its own with its own gradebook, so that
     students run in parallel without sharing a database (nbgrader issue 174);
  3. keeps hidden tests out of the feedback (issues 917 and 1363);
  4. runs the student's code under bubblewrap: no network, nothing writable
     outside that student's own course folder.

The submissions are only read: they are copied before grading, and their bytes
are compared before and after. Results land in --out: grades.csv (nbgrader's
export), scores.csv (one row per student and notebook), feedback/<student>/,
problems.csv and the nbgrader logs. The exit status is 0 only when every
student was graded and no feedback shows a hidden test.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pandas as pd

from nbgrader_cli import course_folder, nbgrader_command, nbgrader_env

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MARKER = ".rag-grading-output"  # an --out folder we made and may rebuild
HIDDEN_MARK = "BEGIN HIDDEN TESTS"
FAILED_MARK = "There was an error processing"  # nbgrader's words when a step fails


# notebook -> grade_id -> (cell type, is it a graded cell), read from the release
ReleaseCells = dict[str, dict[str, tuple[str, bool]]]


@dataclass
class Outcome:
    student: str
    graded: bool = False
    problems: list[str] = field(default_factory=list)
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)


def sandbox(cmd: list[str], course: Path) -> list[str]:
    """Wrap `cmd` in bubblewrap: no network, and only `course` is writable.

    Student code runs inside nbgrader's kernel. Under the sandbox the file
    system is read-only except this student's own course folder, the folder
    holding the other students' copies is hidden behind an empty tmpfs, there
    is no network, and the grader's other processes are out of sight.
    """
    scratch = course / ".sandbox"
    scratch.mkdir(exist_ok=True)
    return ["bwrap", "--ro-bind", "/", "/", "--tmpfs", str(course.parent),
            "--bind", str(course), str(course), "--dev", "/dev", "--proc", "/proc",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
            "--setenv", "HOME", str(scratch), "--setenv", "TMPDIR", str(scratch),
            "--setenv", "JUPYTER_RUNTIME_DIR", str(scratch / "runtime"),
            "--setenv", "IPYTHONDIR", str(scratch / "ipython"),
            "--setenv", "MPLCONFIGDIR", str(scratch / "mpl"),
            "--chdir", str(course), *cmd]


def run_nbgrader(args: list[str], course: Path, log: Path, sandboxed: bool = False) -> bool:
    """Run nbgrader in `course`, append its log to `log`; True when it went well."""
    cmd = nbgrader_command(*args)
    if sandboxed:
        cmd = sandbox(cmd, course)
    proc = subprocess.run(cmd, cwd=course, env=nbgrader_env(), capture_output=True, text=True)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ nbgrader {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")
    # note: nbgrader may exit 0 after failing a notebook, so read the log too;
    # a timed-out cell is logged as an ERROR as well, but that is a grade, not a failure
    return proc.returncode == 0 and FAILED_MARK not in proc.stderr


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def check_submission(folder: Path, release: ReleaseCells) -> tuple[list[str], list[str]]:
    """What is wrong with one student's assignment folder, in plain words,
    and the names of the notebooks that cannot be read at all."""
    problems, unreadable = [], []
    present = {p.name for p in folder.glob("*.ipynb")}
    for name in sorted(set(release) - present):
        problems.append(f"{name}: missing, scored 0")
    for name in sorted(present - set(release)):
        problems.append(f"{name}: not part of the assignment, ignored")
    for name in sorted(present & set(release)):
        try:
            nb = nbformat.read(folder / name, as_version=4)
        except Exception as err:  # noqa: BLE001 (any parse failure is the same problem)
            problems.append(f"{name}: not a readable notebook ({type(err).__name__}), scored 0")
            unreadable.append(name)
            continue
        cells = [(c.metadata.get("nbgrader", {}).get("grade_id"), c.cell_type) for c in nb.cells]
        ids = [gid for gid, _ in cells if gid]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            problems.append(f"{name}: cell {dup!r} appears more than once")
        for gid, kind in cells:
            if gid in release[name] and kind != release[name][gid][0]:
                problems.append(f"{name}: cell {gid!r} was turned into {kind}; "
                                f"graded as {release[name][gid][0]}")
        graded = {gid for gid, (_, is_grade) in release[name].items() if is_grade}
        for gone in sorted(graded - set(ids)):
            problems.append(f"{name}: graded cell {gone!r} was deleted; restored from the master")
    return problems, unreadable


def release_cells(release_dir: Path) -> ReleaseCells:
    """Every nbgrader cell of the release: its type and whether it is graded."""
    out = {}
    for path in sorted(release_dir.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        out[path.name] = {c.metadata["nbgrader"]["grade_id"]:
                          (c.cell_type, bool(c.metadata["nbgrader"].get("grade")))
                          for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}
    return out


def prepare_template(work: Path, assignment: str) -> Path:
    """One course folder with the gradebook filled in; each student gets a copy."""
    template = course_folder(work / "_template", ROOT / "source", HERE / "rag_feedback.py")
    if not run_nbgrader(["generate_assignment", assignment, "--force"], template,
                        work / "_template.log"):
        raise RuntimeError(f"nbgrader generate_assignment failed; see {work / '_template.log'}")
    return template


def notebook_scores(course: Path, assignment: str, student: str) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(assignment, student)
        return {f"{nb.name}.ipynb": (float(nb.score), float(nb.max_score)) for nb in sub.notebooks}


def grade_one(student_dir: Path, assignment: str, template: Path, work: Path,
              release: ReleaseCells, sandboxed: bool, timeout: int | None) -> Outcome:
    student = student_dir.name
    outcome = Outcome(student)
    course = work / student
    log = work / f"{student}.log"
    shutil.copytree(template, course)
    copy = course / "submitted" / student / assignment
    shutil.copytree(student_dir / assignment, copy)
    problems, unreadable = check_submission(copy, release)
    outcome.problems += problems
    for name in unreadable:
        # nbgrader gives up on the whole student over one unreadable file; grade
        # the blank release in its place so the other notebooks still count
        shutil.copy(template / "release" / assignment / name, copy / name)
    limit = [] if timeout is None else [f"--Execute.timeout={timeout}"]
    steps = [["autograde", assignment, "--student", student, "--force", *limit],
             ["generate_feedback", assignment, "--student", student, "--force"],
             ["export", "--to", str(course / "grades.csv")]]
    for step in steps:
        # only autograde runs student code; it alone goes in the sandbox
        if not run_nbgrader(step, course, log, sandboxed and step[0] == "autograde"):
            outcome.problems.append(f"nbgrader {step[0]} failed; see {log.name}")
            return outcome
    outcome.scores = notebook_scores(course, assignment, student)
    outcome.graded = True
    for html in (course / "feedback").rglob("*.html"):
        if HIDDEN_MARK in html.read_text(encoding="utf-8"):
            outcome.problems.append(f"{html.name}: feedback shows hidden tests")
    return outcome


def prepare_out(out: Path, submissions: Path) -> None:
    """Refuse an --out that could hold anything but our own earlier results."""
    if out == submissions or submissions in out.parents or out in submissions.parents:
        raise SystemExit(f"--out must lie outside --submissions (got out={out}, "
                         f"submissions={submissions})")
    if out.exists():
        if not (out / MARKER).exists():
            if any(out.iterdir()):
                raise SystemExit(f"--out {out} exists and was not made by this script; "
                                 "choose an empty or new folder")
        else:
            shutil.rmtree(out)  # our own derived results: rebuilt from the submissions
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by autograder/grade.py; safe to delete\n")


def write_results(out: Path, outcomes: list[Outcome], work: Path, assignment: str) -> pd.DataFrame:
    rows, problems = [], []
    for o in outcomes:
        for nb_name, (score, max_score) in sorted(o.scores.items()):
            rows.append({"student": o.student, "notebook": nb_name,
                         "score": score, "max_score": max_score})
        problems += [{"student": o.student, "problem": p} for p in o.problems]
        course = work / o.student
        if (course / "feedback" / o.student).exists():
            shutil.copytree(course / "feedback" / o.student, out / "feedback" / o.student)
    scores = pd.DataFrame(rows, columns=["student", "notebook", "score", "max_score"])
    scores.to_csv(out / "scores.csv", index=False)
    pd.DataFrame(problems, columns=["student", "problem"]).to_csv(out / "problems.csv", index=False)
    exports = [pd.read_csv(work / o.student / "grades.csv") for o in outcomes if o.graded]
    if exports:
        grades = pd.concat(exports, ignore_index=True).sort_values("student_id")
        grades.to_csv(out / "grades.csv", index=False)
    for log in work.glob("*.log"):
        (out / "logs").mkdir(exist_ok=True)
        shutil.copy(log, out / "logs" / log.name)
    return scores


def grade_table(scores: pd.DataFrame) -> pd.DataFrame:
    table = scores.pivot(index="student", columns="notebook", values="score")
    table["total"] = table.sum(axis=1)
    table["out of"] = scores.groupby("student")["max_score"].sum()
    return table


def where_results_went(out: Path, n_problems: int) -> str:
    """A few closing lines: what each result file holds and where it is."""
    try:
        shown = out.relative_to(Path.cwd())
    except ValueError:
        shown = out
    found = f"{n_problems} listed above" if n_problems else "none"
    rows = [("grades.csv", "nbgrader's export: one row per student, total score"),
            ("scores.csv", "one row per student and notebook: score, max_score"),
            ("feedback/", "<student>/<assignment>/*.html: points per part, then "
                          "every cell"),
            ("problems.csv", f"what was wrong with a submission ({found})"),
            ("logs/", "nbgrader's log for each student")]
    return "\n".join([f"results in {shown}/"]
                     + [f"  {name:<13} {what}" for name, what in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade submissions with nbgrader.")
    parser.add_argument("--submissions", type=Path, required=True,
                        help="folder of <student>/<assignment>/*.ipynb")
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--assignment", default="lab")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="students graded at once (default: one per core)")
    parser.add_argument("--sandbox", choices=["bwrap", "none"], default="bwrap",
                        help="run student code under bubblewrap (default) or as is")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds a cell may run before it is stopped and fails "
                             "(default: nbgrader_config.py's Execute.timeout)")
    args = parser.parse_args(argv)
    if args.timeout is not None and args.timeout < 1:
        parser.error(f"--timeout must be at least 1 second (got {args.timeout})")
    if args.sandbox == "bwrap" and shutil.which("bwrap") is None:
        parser.error("--sandbox bwrap needs bubblewrap (apt-get install bubblewrap); "
                     "pass --sandbox none to grade without it")
    submissions, out = args.submissions.resolve(), args.out.resolve()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1 (got {args.jobs})")
    if not submissions.is_dir():
        parser.error(f"--submissions is not a folder: {submissions}")
    if not (ROOT / "source" / args.assignment).is_dir():
        parser.error(f"--assignment {args.assignment!r} has no folder in source/")
    students = sorted(p for p in submissions.iterdir() if (p / args.assignment).is_dir())
    if not students:
        parser.error(f"--submissions has no <student>/{args.assignment}/ folders: {submissions}")

    prepare_out(out, submissions)
    before = {s.name: digest(s) for s in students}
    with tempfile.TemporaryDirectory(prefix="rag-grade-") as tmp:
        work = Path(tmp)
        template = prepare_template(work, args.assignment)
        release = release_cells(template / "release" / args.assignment)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(
                lambda s: grade_one(s, args.assignment, template, work, release,
                                   args.sandbox == "bwrap", args.timeout), students))
        scores = write_results(out, outcomes, work, args.assignment)
    for s in students:
        if digest(s) != before[s.name]:  # never expected; loud if it ever happens
            raise SystemExit(f"submission of {s.name} changed during grading")

    print(f"graded {sum(o.graded for o in outcomes)} of {len(outcomes)} students "
          f"-> {out}")
    if not scores.empty:
        print(grade_table(scores).to_string(float_format=lambda v: f"{v:g}"))
    trouble = [(o.student, p) for o in outcomes for p in o.problems]
    for student, problem in trouble:
        print(f"  ! {student}: {problem}")
    print(where_results_went(out, len(trouble)))
    failed = [o.student for o in outcomes if not o.graded]
    leaked = [p for _, p in trouble if "feedback shows hidden tests" in p]
    return 1 if failed or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
