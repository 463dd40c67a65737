"""Grade the whole course (lab, quiz, project) and keep one grade sheet.

    python autograder/commands/course.py grade --submissions DIR --out DIR [grade.py options]
    python autograder/commands/course.py sheet --out DIR [--lms canvas [--roster CSV]]
    python autograder/commands/course.py formgrader --out DIR [--port 8890]
    python autograder/commands/course.py feedback --out DIR

`grade` runs grade.py once per assignment that the class handed in
(DIR/<student>/<assignment>/), each into OUT/<assignment>/ with its own
feedback, problems and report, and then gathers every student's autograded
notebooks and scores into one nbgrader course, OUT/formgrader/, with one
gradebook. That is where manual grading happens: `formgrader` opens
nbgrader's formgrader on it, and a grader scores the project's written
answers there with the mark scheme beside each one. The gathered notebooks
are sanitised copies (safe_notebook.py) and formgrader's pages are served
with a strict Content-Security-Policy (formgrader_csp.py), so nothing a
student wrote runs in the grader's browser.

`sheet` (run by `grade` too) reads that gradebook, runs the real
`nbgrader export` into OUT/formgrader/grades.csv, and writes
OUT/grade_sheet.csv: one row per student, with each assignment's score, each
lab notebook, each project part, the project's autograded and manual points,
the lab's core and extension points, the total and the project's band from
the rubric (90-100 excellent, 75-89
good, 60-74 needs work, under 60 redo), or "to grade" while any written
answer is still unmarked. Then it writes OUT/class_report/ (class_report.py):
the whole class on one page, for the instructor alone.

A term whose release/ is the core edition (`make build CORE=1`; or
--edition core) is graded against the core masters, kept in
OUT/core-source/ so that `sheet`, `formgrader` and `feedback` use them too.

Grading again never loses a manual grade: a score a person entered stays,
and only the autograded scores are refreshed from the new run.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pandas as pd

from autograder.scoring.editions import CORE, EDITIONS, FULL, edition_of, make_core
from autograder.intake.intake import plain, valid_id
from autograder.commands.lms_collect import COLLECTED, refusals
from autograder.intake.grading_outcome import DONE
from autograder.reports.grade_sheet import (
    CHANGED, CHANGED_FILE, COURSE, EXCHANGE_LISTING, assignments, canvas_sheet, changed_answers,
    keep_deadlines, late_summary, read_roster, sheet, still_to_check, summary)
from autograder.run.nbgrader_cli import (GRADER_FILES, copy_masters, course_folder, nbgrader_env,
                          run_nbgrader_checked)
from autograder.run.nbgrader_main import use_alembic_head
from autograder.scoring.safe_csv import read_text_csv, write_csv
from autograder.reports.safe_notebook import sanitize_folder
from autograder.run import template_cache

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CORE_SOURCE = "core-source"  # OUT/core-source/: the masters of a core-edition term


# --- gathering every student into one course --------------------------------

def gather(out: Path, source: Path) -> Path:
    """Make or refresh OUT/formgrader/ from the graded assignments in OUT/."""
    course = out / COURSE
    new = not (course / "gradebook.db").exists()
    if new:
        shutil.rmtree(course, ignore_errors=True)
        course_folder(course, source, *GRADER_FILES)
    else:  # the masters may have changed; the gradebook and grades stay
        shutil.rmtree(course / "source")
        copy_masters(source, course / "source")
    from sqlalchemy.exc import SAWarning

    # nbgrader's own API warns about its session on every new submission
    warnings.filterwarnings("ignore", category=SAWarning)
    migrate_layout(course)
    done = [a for a in assignments(source) if (out / a / DONE).is_dir()]
    # a new course's gradebook before any student is the same for the same
    # masters: kept by template_cache.py, like grade.py's templates
    def generate() -> None:
        for assignment in done:
            run_nbgrader_checked(["generate_assignment", assignment, "--force"], course)

    if new and done:
        template_cache.made(course, "course-" + "-".join(done), generate)
    else:
        generate()
    found: dict[str, list] = {}
    for assignment in done:
        for keep in sorted((out / assignment / DONE).iterdir()):
            # grade.py keeps only valid student ids; anything else is not a student
            if not (valid_id(keep.name) and keep.is_dir() and not keep.is_symlink()
                    and (keep / "gradebook.db").is_file()):
                continue
            try:
                changed = merge_student(course, assignment, keep)
                found.setdefault(assignment, []).extend(
                    (keep.name, *c) for c in changed)
            except Exception as err:  # noqa: BLE001 (one student, not the class)
                print(f"  ! {keep.name}: {assignment} not gathered for the formgrader "
                      f"({type(err).__name__}: {err})", file=sys.stderr)
    mark_submitted(course)
    record_changed(out, course, {a: lines for a, lines in found.items() if lines})
    return course


def copy_files(source: Path, target: Path) -> None:
    """`source` copied to `target`: folders and regular files only; a link
    is neither followed nor copied (formgrader serves these files)."""
    def skipped(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if os.path.islink(os.path.join(folder, n))
                or not (os.path.isfile(os.path.join(folder, n))
                        or os.path.isdir(os.path.join(folder, n)))}

    shutil.copytree(source, target, symlinks=True, ignore=skipped)


def sanitize(folder: Path, what: str) -> None:
    """Sanitise the notebooks of one gathered submission (safe_notebook.py)
    and say how many cells formgrader shows cleaned."""
    changed = sanitize_folder(folder)
    # a pandas table's <style> is routine; anything else is worth a look
    notable = {name: [line for line in lines if not line.endswith("text/html: <style> removed")]
               for name, lines in changed.items()}
    notable = {name: lines for name, lines in notable.items() if lines}
    if notable:
        cells = sum(len(lines) for lines in notable.values())
        print(f"  {what}: {cells} cell(s) or output(s) of {', '.join(sorted(notable))} "
              "held markup outside the safe list (script, event handlers, ...): the "
              "formgrader shows them cleaned; the submission itself is unchanged", flush=True)


def migrate_layout(course: Path) -> None:
    """Move notebooks gathered by an older course.py, one folder too deep
    (autograded/<student>/<assignment>/<assignment>/), to where nbgrader
    looks (autograded/<student>/<assignment>/), and sanitise them."""
    for outer in sorted(course.glob("autograded/*/*")):
        nested = outer / outer.name
        if (outer.is_symlink() or not outer.is_dir() or nested.is_symlink()
                or not nested.is_dir() or any(outer.glob("*.ipynb"))):
            continue
        moving = outer.with_name(f".{outer.name}.migrating")
        shutil.rmtree(moving, ignore_errors=True)
        nested.rename(moving)  # a child called like the assignment cannot clash
        for item in sorted(moving.iterdir()):
            if not (outer / item.name).exists():
                item.rename(outer / item.name)
        shutil.rmtree(moving)
        print(f"  {outer.parent.name}/{outer.name}: moved up from the older, too deep "
              "layout", flush=True)
        sanitize(outer, f"{outer.parent.name}/{outer.name}")


def mark_submitted(course: Path) -> None:
    """An empty submitted/<student>/<assignment>/ for every gathered
    submission: formgrader counts submissions by these folders ("Manage
    Assignments"). They hold no notebook, so nothing in the course can run
    a student's code again; grade.py keeps the submissions."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                if not (course / "autograded" / sub.student.id / assignment.name).is_dir():
                    continue
                folder = course / "submitted" / sub.student.id / assignment.name
                folder.mkdir(parents=True, exist_ok=True)
                stamp = folder / "timestamp.txt"
                if sub.timestamp is not None:  # what nbgrader compares with the gradebook
                    stamp.write_text(sub.timestamp.isoformat())
                elif stamp.exists():
                    stamp.unlink()


def merge_student(course: Path, assignment: str, keep: Path) -> list[tuple]:
    """Copy one student's autograded notebooks and scores into the course;
    return (notebook, grade id, mark) for each marked written answer whose
    text differs from the one that was marked (the mark stays)."""
    from nbgrader.api import Gradebook

    student = keep.name
    # grade.py keeps the student's whole autograded/<student>/ folder, so the
    # notebooks sit in keep/autograded/<assignment>/
    notebooks = keep / "autograded" / assignment
    if not notebooks.is_dir() or notebooks.is_symlink():
        raise FileNotFoundError(f"no autograded notebooks in {notebooks}")
    target = course / "autograded" / student / assignment
    before = written_answers(target)  # what a person may have marked
    shutil.rmtree(target, ignore_errors=True)
    copy_files(notebooks, target)
    sanitize(target, f"{student}/{assignment}")
    after = written_answers(target)  # compared sanitised with sanitised
    changed = []
    with Gradebook(f"sqlite:///{keep / 'gradebook.db'}") as own, \
            Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        theirs = own.find_submission(assignment, student)
        gb.update_or_create_student(student)
        try:
            gb.find_submission(assignment, student)
        except Exception:  # noqa: BLE001 (nbgrader's MissingEntry: first time)
            gb.add_submission(assignment, student, timestamp=theirs.timestamp)
        for nb in theirs.notebooks:
            for grade in nb.grades:
                mine = gb.find_grade(grade.name, nb.name, assignment, student)
                mine.auto_score = grade.auto_score
                key = (nb.name, grade.name)
                if (mine.manual_score is not None and key in before and key in after
                        and before[key] != after[key]):
                    changed.append((nb.name, grade.name, mine.manual_score))
                if mine.manual_score is None:  # a person's grade is never replaced
                    mine.needs_manual_grade = grade.needs_manual_grade
            for comment in nb.comments:
                mine = gb.find_comment(comment.name, nb.name, assignment, student)
                if mine.manual_comment is None:
                    mine.auto_comment = comment.auto_comment
        gb.db.commit()
    return changed


# --- a written answer that changed after it was marked ----------------------

def written_answers(folder: Path) -> dict[tuple[str, str], str]:
    """(notebook, grade id) -> source of each cell a person marks (a written
    answer or a task) in the gathered notebooks of `folder`."""
    found = {}
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 (no notebook, nothing marked in it)
            continue
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            # nbgrader's manually graded cells: answers (grade and solution), tasks
            if meta.get("grade_id") and (meta.get("task") or (
                    meta.get("grade") and meta.get("solution"))):
                found[path.stem, meta["grade_id"]] = cell.source
    return found


def add_problems(problems: Path, rows: list[dict]) -> None:
    """Add `rows` (student, problem) to the problems.csv at `problems`."""
    old = read_text_csv(problems) if problems.is_file() else pd.DataFrame(
        columns=["student", "problem"])
    write_csv(pd.concat([old, pd.DataFrame(rows, columns=["student", "problem"])],
                        ignore_index=True), problems)




def exchange_refusals(listing: Path, assignment: str) -> list[dict]:
    """The problems.csv rows (student, problem) of `assignment` from the
    exchange_collected.csv at `listing`: each submission refused whole, and
    each one collected with a note (entries refused in it, an earlier time
    claimed than received). Student and assignment are read from the
    inbound folder's name (student+assignment+time+random), escaped again."""
    if not listing.is_file():
        return []
    rows = read_text_csv(listing)
    if not {"student", "submission", "status", "note"} <= set(rows.columns):
        return []
    out = []
    for _, r in rows.iterrows():
        named = r["submission"].split("+")
        if (len(named) != 4 or named[:2] != [r["student"], assignment]
                or not (r["status"] == "refused" or r["status"] == "collected" and r["note"])):
            continue
        out.append({"student": plain(r["student"]), "problem": plain(
            f"(exchange) {r['submission']}: {r['status']}: {r['note']}")})
    return out


def carry_refusals(out: Path, submissions: Path, assignment: str) -> int:
    """Add what `make collect` refused of `assignment` (the refused rows of
    SUBMISSIONS/lms_collected.csv, lms_collect.refusals) and what `make
    collect-exchange` refused or noted (SUBMISSIONS/../exchange_collected.csv,
    exchange_refusals) to its problems.csv in OUT; how many."""
    rows = (refusals(submissions / COLLECTED, assignment)
            + exchange_refusals(submissions.parent / EXCHANGE_LISTING, assignment))
    if rows:
        (out / assignment).mkdir(parents=True, exist_ok=True)
        add_problems(out / assignment / "problems.csv", rows)
    return len(rows)


def record_changed(out: Path, course: Path, found: dict[str, list]) -> None:
    """Keep the changed answers in OUT/formgrader/changed_answers.json, drop
    those whose mark a person has changed since, and add a problems.csv line
    for each answer found changed in this run."""
    import json

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        kept = still_to_check(gb, changed_answers(course))
    for assignment, lines in found.items():
        rows = []
        for student, notebook, grade_id, mark in lines:
            kept[f"{student}/{assignment}/{notebook}/{grade_id}"] = float(mark)
            rows.append({"student": student, "problem": f"{notebook}.ipynb: {grade_id}: {CHANGED}"
                         f" (marked {float(mark):g} before)"})
            print(f"  ! {student}/{assignment}: {notebook}.ipynb {grade_id}: {CHANGED}; "
                  f"the mark ({float(mark):g}) is kept", flush=True)
        add_problems(out / assignment / "problems.csv", rows)
    (course / CHANGED_FILE).write_text(json.dumps(kept, indent=1, sort_keys=True),
                                       encoding="utf-8")


# --- feedback with the manual marks ------------------------------------------

def feedback(out: Path, source: Path) -> dict[str, list[str]]:
    """Regenerate the feedback pages of the project and of every assignment
    that has a manual mark or comment, with nbgrader's own generate_feedback
    in OUT/formgrader/ (rag_feedback's preprocessors: hidden tests cut, a
    summary per part), and put them where the autograde-time pages were,
    OUT/<assignment>/feedback/<student>/<assignment>/. Returns assignment ->
    the students whose pages were replaced."""
    from nbgrader.api import Gradebook

    course = out / COURSE
    # the course's config and feedback preprocessors as this pack has them now
    course_folder(course, None, *GRADER_FILES)
    migrate_layout(course)
    wanted = []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for assignment in gb.assignments:
            marked = any(g.manual_score is not None for sub in assignment.submissions
                         for nb in sub.notebooks for g in nb.grades) or any(
                c.manual_comment for sub in assignment.submissions
                for nb in sub.notebooks for c in nb.comments)
            if assignment.name == "project" or marked:
                wanted.append(assignment.name)
    done: dict[str, list[str]] = {}
    for a in [a for a in assignments(source) if a in wanted] + sorted(
            set(wanted) - set(assignments(source))):
        shutil.rmtree(course / "feedback", ignore_errors=True)  # only this run's pages
        run_nbgrader_checked(["generate_feedback", a, "--force"], course)
        for folder in sorted((course / "feedback").glob(f"*/{a}")):
            student = folder.parent.name
            if not valid_id(student) or folder.is_symlink() or not folder.is_dir():
                continue
            target = out / a / "feedback" / student / a
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_files(folder, target)
            done.setdefault(a, []).append(student)
    return done


# --- the command line --------------------------------------------------------

def edition_source(out: Path, source: Path, args: argparse.Namespace) -> Path:
    """The masters a `grade` run uses: `source`, or for a core-edition term
    its core edition, written to OUT/core-source/ (replacing an older one)."""
    edition = args.edition or edition_of(source.parent / "release" / "lab")
    shutil.rmtree(out / CORE_SOURCE, ignore_errors=True)
    if edition != CORE:
        return source
    print("grading the core edition of the lab: extension parts score nothing "
          "(autograder/scoring/editions.py)", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    copy_masters(source, out / CORE_SOURCE)
    return make_core(out / CORE_SOURCE)


def close_out(out: Path, command: str) -> None:
    """Everything this command and grade.py write is the instructor's
    alone from its first byte: files 0600 and folders 0700 (the umask). On
    a shared machine (the hub) students' work, grades and feedback before
    release would be other students' to read otherwise. `grade` also makes
    an existing OUT 0700 before anything goes in, even when an earlier `hubctl.py
    grader-access` opened it to 0711 for the hub's formgrader (run that
    again after grading), so files of an older run are closed too."""
    os.umask(0o077)  # a new OUT is made 0700 by it
    if command == "grade" and out.is_dir():
        out.chmod(0o700)


def close_tree(out: Path) -> None:
    """Group and other bits off everything under OUT: copies of the
    masters and pages made in a sandbox keep their 0644 through a copy,
    and stay closed only while OUT is; after `grader-access` opens OUT to
    0711 for the hub's grader, they are closed themselves."""
    for folder, dirs, files in os.walk(out):
        for path in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                os.chmod(path, stat.S_IMODE(mode) & 0o700)


def run_grade(cmd: list[str]) -> int:
    """grade.py's exit status. A SIGINT or SIGTERM that reaches this process
    while it runs is passed on to it, and its end is waited for: grade.py
    ends every sandbox it started before it exits, and a grade.py killed at
    once (subprocess.call's answer to Ctrl-C) could not."""
    child = subprocess.Popen(cmd)

    def pass_on(signum, frame):
        if child.poll() is None:
            child.send_signal(signum)

    kept = {signum: signal.signal(signum, pass_on)
            for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return child.wait()
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["grade", "sheet", "formgrader", "feedback"])
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for every assignment's results and the sheet")
    parser.add_argument("--submissions", type=Path,
                        help="folder of <student>/<assignment>/ (grade only)")
    parser.add_argument("--source", type=Path, default=ROOT / "source",
                        help="the masters, one folder per assignment")
    parser.add_argument("--edition", choices=EDITIONS, default=None,
                        help="grade: the lab's full or core edition (default: the "
                             "edition release/lab holds beside --source)")
    parser.add_argument("--lms", choices=["canvas"],
                        help="sheet: also write OUT/grade_sheet_<lms>.csv in the "
                             "layout that LMS's gradebook import reads")
    parser.add_argument("--roster", type=Path,
                        help="sheet --lms: CSV with columns student,name,sis_id,section "
                             "(student = the submission folder's name); without it "
                             "names and SIS ids are the folder names")
    parser.add_argument("--deadlines", type=Path,
                        help="grade, sheet: a TOML file of due dates, extensions and the "
                             "late policy (autograder/intake/deadlines.py); kept as "
                             "OUT/deadlines.toml for later runs")
    parser.add_argument("--no-report", action="store_true",
                        help="grade, sheet: no class report (OUT/class_report/); grade "
                             "passes it on to grade.py too (no report.html)")
    parser.add_argument("--port", type=int, default=8890,
                        help="formgrader's port on 127.0.0.1 (the server's token: "
                             "JUPYTER_TOKEN, or the one it prints)")
    args, extra = parser.parse_known_args(argv)
    use_alembic_head()  # the gradebooks this process makes (nbgrader_main.py)
    out, source = args.out.resolve(), args.source.resolve()
    close_out(out, args.command)
    if extra and args.command != "grade":
        parser.error(f"unknown options for {args.command}: {' '.join(extra)}")
    if args.deadlines is not None and args.command not in ("grade", "sheet"):
        parser.error("--deadlines is for grade and sheet")
    if args.edition and args.command != "grade":
        parser.error("--edition is for grade (later commands use the graded edition)")
    source = edition_source(out, source, args) if args.command == "grade" else (
        out / CORE_SOURCE if (out / CORE_SOURCE).is_dir() else source)
    if args.command == "grade":
        if args.submissions is None:
            parser.error("grade needs --submissions")
        submissions = args.submissions.resolve()
        if not submissions.is_dir():
            parser.error(f"--submissions is not a folder: {submissions}")
        try:
            keep_deadlines(out, args.deadlines, submissions)
        except ValueError as err:
            parser.error(str(err))
        out.mkdir(parents=True, exist_ok=True)
        failed = []
        for a in assignments(source):
            if not any((s / a).is_dir() for s in submissions.iterdir()):
                continue
            print(f"\n=== {a} ===", flush=True)
            code = run_grade([sys.executable, str(HERE / "grade.py"),
                              "--submissions", str(submissions), "--assignment", a,
                              "--source", str(source), "--edition", FULL,
                              "--out", str(out / a), *extra,
                              *(["--no-report"] if args.no_report else [])])
            if code in (128 + signal.SIGINT, 128 + signal.SIGTERM):
                return code  # (grade.py has said what it stopped and kept)
            if code:
                failed.append(a)
            if carried := carry_refusals(out, submissions, a):
                print(f"  {carried} refused at collect: see {out / a / 'problems.csv'}")
        gather(out, source)
        frame = sheet(out, source, report=not args.no_report)
        print(f"\n=== the course ===\n{summary(frame)}")
        if late_summary(out):
            print(f"\n=== late work ({out / 'late_work.html'}) ===\n{late_summary(out)}")
        close_tree(out)
        print(f"grade sheet: {out / 'grade_sheet.csv'}; manual grading: "
              f"python autograder/commands/course.py formgrader --out {args.out}")
        return 1 if failed else 0
    if not (out / COURSE / "gradebook.db").exists():
        parser.error(f"no graded course in {out}: run `course.py grade` first")
    if args.command == "sheet":
        if args.roster is not None and args.lms is None:
            parser.error("--roster is for --lms")
        roster = read_roster(args.roster) if args.roster is not None else None
        try:
            keep_deadlines(out, args.deadlines, None)
        except ValueError as err:
            parser.error(str(err))
        frame = sheet(out, source, report=not args.no_report)
        print(summary(frame))
        if args.lms == "canvas":
            print(f"Canvas grade sheet: {canvas_sheet(out, source, frame, roster)}")
        return 0
    if args.command == "feedback":
        done = feedback(out, source)
        for a, students in done.items():
            print(f"{a}: feedback with the manual marks and comments for {len(students)} "
                  f"student(s) in {out / a / 'feedback'}/<student>/{a}/; it replaces the "
                  "pages written at autograding")
        if not done:
            print("no feedback written: no project and no manual mark in the gradebook")
        close_tree(out)
        return 0
    # formgrader: nbgrader's own web app on the gathered course, with its
    # pages under a strict Content-Security-Policy (formgrader_csp.py)
    migrate_layout(out / COURSE)  # a course gathered by an older course.py
    mark_submitted(out / COURSE)
    jupyter = Path(sys.executable).parent / "jupyter"
    print(f"formgrader on {out / COURSE}: open the address below and go to /formgrader; "
          "stop with Ctrl-C, then `course.py sheet` for the grade sheet", flush=True)
    return subprocess.call([str(jupyter), "lab", "--no-browser",
                            f"--config={HERE.parent / 'reports' / 'formgrader_server_config.py'}",
                            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={args.port}",
                            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={out / COURSE}",
                            *(["--allow-root"] if os.geteuid() == 0 else [])],
                           cwd=out / COURSE, env=nbgrader_env())


if __name__ == "__main__":
    sys.exit(main())
