"""Grade a class of submissions with nbgrader, one student at a time in parallel.

    python autograder/commands/grade.py --submissions DIR --out DIR [--assignment lab]
                               [--jobs N | --scheduler ADDRESS]
                               [--timeout SECONDS] [--sandbox bwrap|none]
                               [--memory MB] [--processes N] [--file-size MB]
                               [--scratch MB] [--sandbox-memory MB]
                               [--max-output KB] [--max-notebook-output MB]
                               [--max-notebook MB] [--max-cells N] [--max-files N]

DIR/<student>/<assignment>/*.ipynb is the layout nbgrader's `collect` and
`zip_collect` produce. A folder whose name is not a valid student id
(STUDENT_ID below) is not graded; one that is a symbolic link, or whose
assignment folder is, or that holds more than --max-files files and folders,
is not run and scores 0; each gets a line in problems.csv. For every other
student this script

  1. checks the submission against the release (missing or unknown notebooks,
     unreadable JSON, duplicated, deleted or retyped graded cells) and writes
     down what it found instead of stopping the batch (nbgrader issue 1941);
     an unreadable notebook is graded as the blank release, so it scores 0
     while the student's other notebooks still count;
  2. grades it with the real `nbgrader autograde`, `generate_feedback` and
     `export`, in a course folder of its own with its own gradebook, so that
     students run in parallel without sharing a database (nbgrader issue 174);
  3. keeps hidden tests out of the feedback (issues 917 and 1363);
  4. as root, runs the student's grading (nbgrader, the judge, feedback) in
     a sandbox of its own as an unprivileged user (grader_sandbox.py), and
     each kernel in another, as another user, under bubblewrap with
     resource limits (kernel_sandbox.py): it sees the Python environment, ragkit/ and data/
     read-only and its own size-limited scratch folders, nothing else, and
     has no network; as root, a cgroup caps the whole sandbox's memory and
     tasks (where the machine has one: the first line printed says); a
     kernel that dies, floods its output (per cell or per notebook) or
     ignores the interrupt at its time limit fails its own cells only
     (rag_feedback.GuardedExecute). One sandbox serves all of a
     student's notebooks: its zygote imports what the masters import once
     and forks a clean kernel per notebook (--kernel-start fork).

After grading, answers close to ragkit's source or to another student's
are listed for a person (similarity.py; OUT/similarity.csv, report.html;
--no-report skips both).

A finished student is kept in --out/.students/ under a key made of the
submission's bytes, the masters and the grading settings, so running the same
command again after a crash or a kill grades only the students not yet done.

The submissions are only read: they are copied before grading, and their bytes
are compared before and after. Results land in --out: grades.csv (nbgrader's
export), scores.csv (one row per student and notebook), feedback/<student>/,
problems.csv and the nbgrader logs (logs/<student>.log). Every CSV goes
through safe_csv: no cell starts a spreadsheet formula. The exit status is 0
only when every student got a score (a refused submission's is 0), none was
refused for their id or failed to grade, and no feedback shows a hidden test.
SIGINT (Ctrl-C) or SIGTERM ends every sandbox this script started and keeps
no student it cut short; the exit status is then 128 + the signal's number.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path

from autograder.scoring.editions import (
    CORE, EDITIONS, edition_of, path_of_cells, write_core_masters)
from autograder.intake.intake import (
    MAX_FILES, MB, crash_line, digest, find_students, plain)
from autograder.intake.gate import GATE_GID, HAND_COPIED, SANDBOX_UID, take_folder
from autograder.run.nbgrader_cli import GRADER_FILES, course_folder
from autograder.pipeline.run_student import (
    Limits, SANDBOX_EXTRA, SANDBOX_TASKS, check_stop, end_sandboxes, install_kernel,
    release_kernel, run_nbgrader, run_steps, sandbox_settings)
from autograder.scoring import similarity
from autograder.run import template_cache
from autograder.run.grader_sandbox import (
    code_folder, grader_uid, read_results, run_unprivileged, scrub)
from autograder.intake.grading_outcome import DONE, Outcome
from autograder.scoring.release_check import (
    ReleaseCells, check_submission, copied_from_master, own_files, release_cells)
from autograder.scoring.results import print_results, write_results, zero_scores
from autograder.pipeline.keep_results import (
    grading_key, kept, prepare_out, store, student_key, student_work)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def prepare_template(work: Path, assignment: str, only: list[str] | None = None,
                     source: Path = ROOT / "source") -> Path:
    """One course folder with the gradebook filled in; each student gets a copy.
    With `only` (notebook names without .ipynb) the assignment is just those."""
    template = course_folder(work / "_template", source, *GRADER_FILES)
    for master in (template / "source" / assignment).glob("*.ipynb"):
        if only and master.stem not in only:
            master.unlink()
    def generate() -> None:
        if not run_nbgrader(["generate_assignment", assignment, "--force"], template,
                            work / "_template.log"):
            raise RuntimeError(
                f"nbgrader generate_assignment failed; see {work / '_template.log'}")

    if template_cache.made(template, assignment, generate):  # from these very files before
        (work / "_template.log").write_text("template reused (template_cache.py)\n")
    return template


def grade_one(student_dir: Path, assignment: str, template: Path, work: Path,
              release: ReleaseCells, limits: Limits, keep: Path,
              master_own: dict[str, str] | None = None) -> Outcome:
    """Grade one student in a course folder of their own under `work`, and
    store everything kept about them in `keep` (their --out/.students/ entry).
    Runs in a thread of this process or as a task on a Dask worker."""
    start = time.monotonic()
    student = student_dir.name
    outcome = Outcome(student)
    course, log = student_work(work, student)
    course.parent.mkdir(parents=True)
    shutil.copytree(template, course)
    copy = course / "submitted" / student / assignment
    # through the intake gate, read as the grader sandbox's user (in the
    # group of what `make collect` wrote): plain files only, no link
    # followed; 0644 in 0755 folders, for the student's kernel reads its
    # corpus, inside `work`, which only root may enter
    reader = grader_uid(limits.uid) if limits.uid is not None else SANDBOX_UID
    copy.parent.mkdir(parents=True, exist_ok=True)
    taken = take_folder(student_dir / assignment, copy, reader_uid=reader, reader_gid=reader,
                        reader_groups=(GATE_GID,), caps=HAND_COPIED, readable_by="all")
    outcome.problems += taken.problems()
    copy.mkdir(parents=True, exist_ok=True)  # nothing taken: graded as blank
    problems, unreadable = check_submission(copy, release, limits.notebook_bytes,
                                            limits.max_cells, template / "source" / assignment)
    outcome.problems += problems + copied_from_master(copy, master_own or {})
    present = {p.name for p in copy.glob("*.ipynb")} & set(release)
    # nbgrader gives up on the whole student over one unreadable file, and on
    # a submission without any of the assignment's notebooks; grade the blank
    # release in their place so the other notebooks still count (nbgrader
    # itself scores any other missing notebook 0)
    for name in unreadable or ([] if present else [min(release)]):
        shutil.copy(template / "release" / assignment / name, copy / name)
    env = install_kernel(course, limits, assignment, code_folder(work))
    cgroup = sandbox_settings(course).get("cgroup") or {}
    settings: dict = {"GuardedExecute": {
        "max_output_bytes": limits.output_bytes,
        "judge": limits.tests_in == "judge",
        "max_notebook_output_bytes": limits.notebook_output_bytes,
        "memory_events": cgroup.get("events", ""),
        "sandbox_memory_bytes": cgroup.get("memory_bytes", 0)}}
    if limits.timeout is not None:
        settings["Execute"] = {"timeout": limits.timeout}
    if limits.sandbox:  # the kernel has no network: Unix sockets instead of TCP
        settings["KernelManager"] = {"transport": "ipc",
                                     "ip": sandbox_settings(course)["sockets"] + "/k"}
    # autograde and generate_feedback in one nbgrader process (autograde_steps.py);
    # only autograde runs student code, and only its kernels are sandboxed
    failed = run_steps(course, assignment, student, settings, log, env,
                       limits.student_seconds)
    with contextlib.suppress(OSError, ValueError):  # written in the sandbox: data or nothing
        steps = json.loads((course / "steps.json").read_text()[:4096])
        outcome.steps = {str(k)[:40]: float(v) for k, v in steps.items()
                         if type(v) in (int, float)}
    release_kernel(course)  # every process of the student's sandboxes ends here
    check_stop()  # (cut short by an interrupt: not stored, graded again next time)
    scrub(course)  # what root copies out next: files and folders, no link
    if not failed:
        try:
            results = read_results(course)
        except ValueError as err:
            failed = f"grading step left no results ({err})"
    if failed:
        outcome.problems.append(f"nbgrader {failed}; see logs/{student}.log")
    else:
        outcome.scores, outcome.cells = results["scores"], results["cells"]
        outcome.to_mark = results["to_mark"]
        outcome.graded = True
        outcome.problems += results["problems"]
    outcome.seconds = round(time.monotonic() - start, 1)
    store(outcome, course, log, keep)
    shutil.rmtree(course, ignore_errors=True)
    return outcome


def similar_answers(out: Path, release: Path, code: Path, uid: int | None) -> list[dict]:
    """Answers close to ragkit's source or to another student's (similarity.py,
    run unprivileged in a sandbox: it reads the students' notebooks); [] with
    a warning when it cannot run."""
    if not release.is_dir() or shutil.which("bwrap") is None:
        return []
    try:
        text = run_unprivileged(
            [sys.executable, str(code / "autograder" / "scoring" / "similarity.py"),
             str(out / DONE), str(release),
             release.name, str(ROOT / "ragkit")], [out / DONE, release], code, uid)
        rows = json.loads(text)
        keys = ("notebook", "cell", "student", "other", "share", "other_share",
                "code", "other_code")
        return [{k: row.get(k) for k in keys} for row in rows
                if type(row) is dict and all(type(row.get(k)) is str for k in keys[:4])]
    except Exception as err:  # noqa: BLE001 (the grades stand without it)
        print(f"similarity report not made: {err}", file=sys.stderr)
        return []


def progress(total: int, done: int):
    """A tqdm bar with an ETA on a terminal; nothing in CI or a pipe."""
    quiet = not sys.stderr.isatty() or bool(os.environ.get("CI"))
    try:
        from tqdm import tqdm
    except ImportError:
        quiet, tqdm = True, None
    if quiet:
        class Silent:
            def update(self, n=1): pass
            def set_postfix_str(self, s): pass
            def close(self): pass
        return Silent()
    return tqdm(total=total, initial=done, unit="student", desc="grading",
                dynamic_ncols=True)


def result_of(future, student: Path) -> Outcome:
    """The future's Outcome, or the student's problem line if it raised."""
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 (one student, not the class)
        return Outcome(student.name, problems=[crash_line(err)])


def run_local(todo, jobs: int, grade, bar) -> list[Outcome]:
    outcomes = []
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {pool.submit(grade, s): s for s in todo}
    try:
        for future in as_completed(futures):
            outcomes.append(result_of(future, futures[future]))
            bar.set_postfix_str(outcomes[-1].student)
            bar.update()
    except BaseException:  # an interrupt (Interrupted) or a bug: end every sandbox
        pool.shutdown(wait=False, cancel_futures=True)
        end_sandboxes(busy=lambda: not all(f.done() for f in futures))
        raise
    pool.shutdown()
    return outcomes


def run_dask(todo, address: str, grade, bar) -> list[Outcome]:
    """Each student is one task on the Dask cluster at `address`; the workers
    must see the same paths (a shared file system) and this environment,
    whose venv has the pack's packages installed (`make`)."""
    from distributed import Client, as_completed as dask_completed

    outcomes = []
    with Client(address) as client:
        futures = {client.submit(grade, s, key=f"grade-{s.name}", pure=False): s
                   for s in todo}
        for future in dask_completed(list(futures)):
            outcomes.append(result_of(future, futures[future]))
            bar.set_postfix_str(outcomes[-1].student)
            bar.update()
    return outcomes


def build_parser() -> argparse.ArgumentParser:
    """grade.py's options; main checks what argparse cannot."""
    parser = argparse.ArgumentParser(description="Grade submissions with nbgrader.")
    parser.add_argument("--submissions", type=Path, required=True,
                        help="folder of <student>/<assignment>/*.ipynb")
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--assignment", default="lab")
    parser.add_argument("--source", type=Path, default=ROOT / "source",
                        help="the masters: SOURCE/<assignment>/*.ipynb (default: "
                             "the repository's source/)")
    parser.add_argument("--edition", choices=EDITIONS, default=None,
                        help="grade the full lab or its core path (extensions "
                             "worked, not graded; autograder/scoring/editions.py); "
                             "default: the edition of the release built beside "
                             "SOURCE (SOURCE/../release/ASSIGNMENT), full when "
                             "there is none")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="students graded at once (default: one per core)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="grade each student as a task on this Dask "
                             "scheduler (tcp://host:8786) instead of --jobs threads")
    parser.add_argument("--sandbox", choices=["bwrap", "none"], default="bwrap",
                        help="run student code under bubblewrap (default) or as is")
    parser.add_argument("--kernel-start", choices=["fork", "exec"], default="fork",
                        help="fork: one sandbox per student whose zygote imports "
                             "what the masters import once, then forks a clean "
                             "kernel per notebook (default); exec: one sandbox and "
                             "one new interpreter per notebook")
    parser.add_argument("--tests-in", choices=["judge", "kernel"], default="judge",
                        help="judge: graded test cells run outside the student's "
                             "kernel, on answers that cross as plain data (default; "
                             "see autograder/README.md); kernel: in the student's "
                             "kernel, as plain nbgrader runs them (for comparison "
                             "only: its verdicts can be forged)")
    parser.add_argument("--kernel-threads", type=int, default=None, metavar="N",
                        help="BLAS and OpenMP threads of each kernel (default: "
                             "cores / --jobs, so that parallel kernels do not "
                             "fight over the cores; with --scheduler, as the "
                             "workers' environment says); OMP_NUM_THREADS and "
                             "the like, when set, win")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds a cell may run before it is stopped and fails "
                             "(default: nbgrader_config.py's Execute.timeout)")
    d = Limits()
    parser.add_argument("--memory", type=int, default=d.memory_bytes // MB, metavar="MB",
                        help="address space of each kernel process (default %(default)s)")
    parser.add_argument("--processes", type=int, default=d.processes, metavar="N",
                        help="processes and threads a kernel may run (default %(default)s)")
    parser.add_argument("--file-size", type=int, default=d.file_bytes // MB, metavar="MB",
                        help="largest file a kernel may write (default %(default)s)")
    parser.add_argument("--scratch", type=int, default=d.scratch_bytes // MB, metavar="MB",
                        help="size of a kernel's working folder and of its /tmp "
                             "(default %(default)s)")
    parser.add_argument("--sandbox-memory", type=int, default=None, metavar="MB",
                        help="memory of a student's whole sandbox: all its processes "
                             "and the files of its scratch folders together, capped "
                             "by a cgroup when run as root on a machine that has "
                             "one (default: --memory + 2 x --scratch + "
                             f"{SANDBOX_EXTRA // MB})")
    parser.add_argument("--max-output", type=int, default=d.output_bytes // 1024,
                        metavar="KB", help="output kept per cell; past it the kernel "
                                           "is stopped, this cell and the later ones "
                                           "fail (default %(default)s)")
    parser.add_argument("--max-notebook-output", type=int,
                        default=d.notebook_output_bytes // MB, metavar="MB",
                        help="output kept for all the cells of one notebook; past it "
                             "the kernel is stopped and the later cells fail "
                             "(default %(default)s)")
    parser.add_argument("--max-notebook", type=int, default=d.notebook_bytes // MB,
                        metavar="MB", help="larger notebooks are not run and score 0 "
                                           "(default %(default)s)")
    parser.add_argument("--max-cells", type=int, default=d.max_cells, metavar="N",
                        help="notebooks with more cells are not run and score 0 "
                             "(default %(default)s)")
    parser.add_argument("--student-timeout", type=int, default=d.student_seconds,
                        metavar="S", help="seconds before one student's grading is "
                                          "stopped (default %(default)s)")
    parser.add_argument("--sandbox-uid", type=int, default=61000, metavar="UID",
                        help="when run as root, student i's kernel runs as UID+i "
                             "(default %(default)s)")
    parser.add_argument("--max-files", type=int, default=MAX_FILES, metavar="N",
                        help="files and folders one student's assignment folder "
                             "may hold, counted at any depth (the project's "
                             "corpus/ too); a larger one is not graded and scores "
                             "0 (default %(default)s)")
    parser.add_argument("--notebook", action="append", metavar="NAME",
                        help="grade only this notebook of the assignment (name "
                             "without .ipynb; repeat for more); the others are "
                             "then reported as not part of it")
    parser.add_argument("--no-report", action="store_true",
                        help="skip report.html, its figures and the similarity "
                             "report (similarity.csv)")
    return parser


def limits_of(args: argparse.Namespace, threads: int | None) -> Limits:
    """The Limits grade.py's flags ask for."""
    return Limits(sandbox=args.sandbox == "bwrap", memory_bytes=args.memory * MB,
                    processes=args.processes, file_bytes=args.file_size * MB,
                    scratch_bytes=args.scratch * MB, output_bytes=args.max_output * 1024,
                    notebook_bytes=args.max_notebook * MB, timeout=args.timeout,
                    student_seconds=args.student_timeout, kernel_start=args.kernel_start,
                    tests_in=args.tests_in, threads=threads,
                    notebook_output_bytes=args.max_notebook_output * MB,
                    max_cells=args.max_cells,
                    sandbox_memory_bytes=args.sandbox_memory * MB
                    if args.sandbox_memory else None)


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace
            ) -> tuple[Path, Path, Path, int | None]:
    """What argparse cannot check about `args` (a failure exits through
    parser.error); the submissions, out and source folders, resolved, and
    the BLAS threads per kernel."""
    if args.timeout is not None and args.timeout < 1:
        parser.error(f"--timeout must be at least 1 second (got {args.timeout})")
    if args.sandbox == "bwrap" and shutil.which("bwrap") is None:
        parser.error("--sandbox bwrap needs bubblewrap (apt-get install bubblewrap); "
                     "pass --sandbox none to grade without it")
    for name in ("memory", "processes", "file_size", "scratch", "max_output",
                 "max_notebook", "student_timeout", "max_files", "max_notebook_output",
                 "max_cells", "sandbox_memory"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    submissions, out = args.submissions.resolve(), args.out.resolve()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1 (got {args.jobs})")
    if args.kernel_threads is not None and args.kernel_threads < 1:
        parser.error(f"--kernel-threads must be at least 1 (got {args.kernel_threads})")
    threads = args.kernel_threads
    if threads is None and not args.scheduler:
        threads = max(1, (os.cpu_count() or 1) // args.jobs)
    if not submissions.is_dir():
        parser.error(f"--submissions is not a folder: {submissions}")
    source = args.source.resolve()
    if not (source / args.assignment).is_dir():
        parser.error(f"--assignment {args.assignment!r} has no folder in {source}")
    masters = {p.stem for p in (source / args.assignment).glob("*.ipynb")}
    for name in args.notebook or []:
        if name not in masters:
            parser.error(f"--notebook {name!r} is not in source/{args.assignment}/")
    return submissions, out, source, threads


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached grade.py (raised in its main thread)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def interrupted(signum: int, frame) -> None:
    """The handler of SIGINT and SIGTERM: the first one ends every sandbox
    at once (before anything unwinds, such as a temporary folder an
    nbgrader still writes in) and stops the grading; later ones wait for
    that."""
    if not getattr(interrupted, "seen", False):
        interrupted.seen = True
        end_sandboxes()
        raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    submissions, out, source, threads = checked(parser, args)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
    try:
        return edition_and_grade(parser, args, submissions, out, source, threads)
    except Interrupted as stop:
        end_sandboxes()  # (whatever a grading thread started meanwhile)
        name = signal.Signals(stop.signum).name
        print(f"grade.py stopped by {name}: every sandbox it started has ended. Each "
              f"student finished before it is kept in {out / DONE}; run the same "
              "command again to grade the rest.", file=sys.stderr, flush=True)
        return 128 + stop.signum


def edition_and_grade(parser: argparse.ArgumentParser, args: argparse.Namespace,
                      submissions: Path, out: Path, source: Path, threads: int | None) -> int:
    """grade_class on the masters of the edition asked for (the core
    edition's written to a temporary folder first)."""
    edition = args.edition or edition_of(source.parent / "release" / args.assignment)
    with contextlib.ExitStack() as stack:
        if edition == CORE:
            masters = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rag-core-")))
            source = write_core_masters(source, masters / "source")
            print(f"grading the core edition of {args.assignment}: extension parts "
                  "score nothing (autograder/scoring/editions.py)", flush=True)
        return grade_class(parser, args, submissions, out, source, threads)


def grade_class(parser: argparse.ArgumentParser, args: argparse.Namespace,
                submissions: Path, out: Path, source: Path, threads: int | None) -> int:
    """Grade every student of `submissions` against the masters in `source`."""
    students, refused = find_students(submissions, args.assignment, args.max_files)
    if not students and not refused:
        parser.error(f"--submissions has no <student>/{args.assignment}/ folders: {submissions}")

    limits = limits_of(args, threads)
    if limits.sandbox:  # once: how much of the sandbox a cgroup caps here
        from autograder.run.kernel_sandbox import cgroup_note

        print(cgroup_note(limits.sandbox_memory_bytes, limits.processes + SANDBOX_TASKS)
              + (" (on this machine; the Dask workers decide for themselves)"
                 if args.scheduler else ""), flush=True)
    prepare_out(out, submissions)
    key = grading_key(source, args.assignment, limits, args.notebook)
    before, keys = {}, {}
    for s in list(students):  # a student whose files cannot be read: their problem
        try:
            before[s.name] = digest(s)
            keys[s.name] = student_key(s, key)
        except Exception as err:  # noqa: BLE001 (one student, not the class)
            students.remove(s)
            refused.append(Outcome(s.name, problems=[crash_line(err)]))
    done_dir = out / DONE
    reused = kept(done_dir, students, keys)
    todo = [s for s in students if s.name not in reused]
    blocked = [o for o in refused if o.refused]  # scored 0 for every notebook
    uid = {s.name: args.sandbox_uid + i for i, s in enumerate(students)}
    bar = progress(len(students), len(reused))
    # Dask workers elsewhere must see the template: keep it beside the results
    with tempfile.TemporaryDirectory(prefix="rag-grade-",
                                     dir=out if args.scheduler else None) as tmp:
        work = Path(tmp)
        fresh: list[Outcome] = []
        if todo or blocked:
            template = prepare_template(work, args.assignment, args.notebook, source)
            code_folder(work)  # the grader's modules, as its sandbox sees them
            zero_scores(template, args.assignment, blocked)
        if todo:
            release = release_cells(template / "release" / args.assignment)
            master_own = own_files(source / args.assignment)

            def grade(s: Path) -> Outcome:
                try:
                    mine = Limits(**{**asdict(limits), "uid": uid[s.name]
                                     if limits.sandbox and os.geteuid() == 0 else None})
                    o = grade_one(s, args.assignment, template, work, release,
                                  mine, done_dir / s.name, master_own)
                    (done_dir / s.name / "key").write_text(keys[s.name])
                    return o
                except Exception as err:  # noqa: BLE001 (one student, not the class)
                    o = Outcome(s.name, problems=[crash_line(err)])
                    course, log = student_work(work, s.name)
                    try:
                        release_kernel(course)  # if its kernel's folder was made
                    except Exception:  # noqa: BLE001 (the problem line says enough)
                        pass
                    try:  # stored without a key (for its log): the next run tries again
                        store(o, course, log, done_dir / s.name)
                    except Exception:  # noqa: BLE001 (the problem line says enough)
                        pass
                    return o

            if args.scheduler:
                fresh = run_dask(todo, args.scheduler, grade, bar)
            else:
                fresh = run_local(todo, args.jobs, grade, bar)
        release = (work / "_template" if todo or blocked else source.parent) \
            / "release" / args.assignment
        # the similarity report is for a person, like report.html: --no-report
        # skips both (and drops an older run's, which would no longer match)
        similar = None if args.no_report else similar_answers(
            out, release, code_folder(work), args.sandbox_uid - 1 if os.geteuid() == 0 else None)
    bar.close()
    outcomes = sorted([*reused.values(), *fresh, *refused], key=lambda o: o.student)
    for o in outcomes:  # file names and messages a student chose: printable
        o.problems = [plain(p) for p in o.problems]
    scores = write_results(out, outcomes, path_of_cells(source / args.assignment))
    if similar is None:
        (out / "similarity.csv").unlink(missing_ok=True)
    else:
        similarity.write(out, similar)
    for s in students:
        if digest(s) != before[s.name]:  # never expected; loud if it ever happens
            raise SystemExit(f"submission of {s.name} changed during grading")
    if not args.no_report:
        from autograder.reports import report

        try:
            report.write(out, scores, outcomes, similar)
        except Exception as err:  # noqa: BLE001 (the grades are written already)
            print(f"report.html not written: {err!r}", file=sys.stderr)

    print_results(out, outcomes, scores, args.assignment, len(reused), len(blocked))
    failed = [o.student for o in outcomes if not (o.graded or o.refused)]
    leaked = [p for o in outcomes for p in o.problems if "feedback shows hidden tests" in p]
    return 1 if failed or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
