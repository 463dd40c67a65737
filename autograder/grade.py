"""Grade a class of submissions with nbgrader, one student at a time in parallel.

    python autograder/grade.py --submissions DIR --out DIR [--assignment lab]
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
  4. runs each kernel (only the kernel: nbgrader, the gradebook and the
     masters stay outside) under bubblewrap with resource limits
     (kernel_sandbox.py): it sees the Python environment, ragkit/ and data/
     read-only and its own size-limited scratch folders, nothing else, and
     has no network; as root, a cgroup caps the whole sandbox's memory and
     tasks (where the machine has one: the first line printed says); a
     kernel that dies, floods its output (per cell or per notebook) or
     ignores the interrupt at its time limit fails its own cells only
     (rag_feedback.GuardedExecute). One sandbox serves all of a
     student's notebooks: its zygote imports what the masters import once
     and forks a clean kernel per notebook (--kernel-start fork).

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
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import pandas as pd

from kernel_sandbox import THREAD_VARS
from nbgrader_cli import (STUDENT_OWN, course_folder, die_with_parent, nbgrader_command,
                          nbgrader_env)
from safe_csv import read_text_csv, write_csv

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
MARKER = ".rag-grading-output"  # an --out folder we made and may rebuild
DONE = ".students"  # --out/.students/<student>/: one finished student each
PARTIAL = ".partial"  # --out/.partial/<student>/: an entry being written
# A student id is a folder name under --submissions. Only these are graded:
# ASCII letters, digits, `_`, `.` and `-`, starting with a letter or digit,
# at most 64 characters. So an id is never a path (`..`, `/`), never hidden
# (`.students`), never a glob for nbgrader (`*`), and never markup, a quote, a
# formula or a terminal escape in what the grader writes and prints.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_FILES = 500  # files and folders in one student's assignment folder
MB = 2 ** 20
# the sandbox's cgroup, beyond --memory and the two scratch folders: room for
# the zygote's imports, so one process meets --memory (a MemoryError) first
SANDBOX_EXTRA = 1024 * MB
SANDBOX_TASKS = 16  # tasks beyond --processes in the cgroup: bwrap's own
HIDDEN_MARK = "BEGIN HIDDEN TESTS"
FAILED_MARK = "There was an error processing"  # nbgrader's words when a step fails
IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", re.M)


# notebook -> grade_id -> (cell type, is it a graded cell), read from the release
# (and the nbgrader metadata a student might edit: points, grade, solution)
ReleaseCells = dict[str, dict[str, tuple[str, bool, dict]]]


@dataclass
class Outcome:
    student: str
    graded: bool = False
    problems: list[str] = field(default_factory=list)
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    cells: dict[str, tuple[float, float]] = field(default_factory=dict)
    seconds: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)  # seconds per nbgrader step
    reused: bool = False
    refused: bool = False  # not run at all (a link, too many files): every notebook 0
    to_mark: list[str] = field(default_factory=list)  # "name.ipynb:grade_id" awaiting a person


@dataclass
class Limits:
    """What one student's kernel may use (grade.py's flags, in bytes)."""
    sandbox: bool = True
    uid: int | None = None        # the kernel's own uid when grading as root
    memory_bytes: int = 4096 * MB  # address space of each kernel process
    processes: int = 128           # processes and threads of the kernel
    file_bytes: int = 100 * MB     # largest file the kernel may write
    scratch_bytes: int = 256 * MB  # size of its working folder and its /tmp
    output_bytes: int = 2 * MB     # output kept per cell; the cell fails past it
    notebook_output_bytes: int = 20 * MB  # output of all a notebook's cells together
    notebook_bytes: int = 50 * MB  # larger submitted notebooks are not run
    max_cells: int = 1000          # notebooks with more cells are not run
    # the whole sandbox (every process and its tmpfs files), when a cgroup can
    # cap it (root); None: --memory + both scratch folders + SANDBOX_EXTRA
    sandbox_memory_bytes: int | None = None
    timeout: int | None = None     # seconds per cell (None: nbgrader_config)
    student_seconds: int = 3600    # then the student's grading is stopped
    kernel_start: str = "fork"     # from one zygote per student, or "exec"
    tests_in: str = "judge"        # where graded test cells run (judge.py), or "kernel"
    threads: int | None = None     # BLAS/OpenMP threads per kernel (None: as set)

    def __post_init__(self):
        if self.sandbox_memory_bytes is None:
            self.sandbox_memory_bytes = (self.memory_bytes + 2 * self.scratch_bytes
                                         + SANDBOX_EXTRA)

    def key(self) -> dict:
        """The settings a grade depends on (the uid and the thread count
        are only bookkeeping: grades must not depend on them)."""
        return {k: v for k, v in asdict(self).items() if k not in ("uid", "threads")}


def readonly_paths() -> list[str]:
    """What a kernel may read besides the system: the Python installation,
    the environment, and the package and data the notebooks import."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix),
             ROOT / "ragkit", ROOT / "data"}
    return sorted(str(p) for p in paths if p.exists())


def sandbox(cmd: list[str], course: Path, limits: Limits | None = None) -> list[str]:
    """Wrap `cmd` in the sandbox a student's kernel gets (kernel_sandbox.py),
    with `course` as its working folder. Used by the tests; grading starts
    kernels through the kernelspec that `install_kernel` writes."""
    from kernel_sandbox import bwrap_command, kernel_env

    limits = limits or Limits()
    return bwrap_command(cmd, course, readonly_paths(), [], limits.scratch_bytes,
                         kernel_env())


def master_imports(masters: Path) -> list[str]:
    """The modules the masters' code cells import, which a student's zygote
    loads once for all their kernels (kernel_sandbox.py)."""
    names: set[str] = set()
    for nb in sorted(masters.glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                names.update(IMPORT.findall("".join(cell["source"])))
    return sorted(names)


def install_kernel(course: Path, limits: Limits, assignment: str) -> dict[str, str]:
    """Give `course` a `python3` kernelspec that starts kernels sandboxed;
    returns the environment variables nbgrader must run with to use it.

    The student's runtime folder is root's own (0700): jupyter_client writes
    the connection files into CONNECTIONS/ and the zygote's socket lies
    beside it; only SOCKETS/, where the kernels bind their sockets, is the
    sandbox's (kernel_sandbox.py: a small tmpfs when run as root). As root,
    the student's sandbox also gets a cgroup (`cgroup` in the settings)."""
    from kernel_sandbox import CONNECTIONS, SOCKETS, make_cgroup

    # a short local path: Unix socket paths are limited to ~100 characters
    runtime = Path(tempfile.mkdtemp(prefix="rag-kernel-"))  # 0700, the grader's
    (course / "runtime").write_text(str(runtime))  # removed with the course
    (runtime / CONNECTIONS).mkdir(mode=0o700)
    (runtime / SOCKETS).mkdir(mode=0o700)
    env = {"JUPYTER_RUNTIME_DIR": str(runtime / CONNECTIONS)}
    if limits.threads is not None:  # unless the grader's environment says otherwise
        env.update({name: str(limits.threads) for name in THREAD_VARS
                    if name not in os.environ})
    if not limits.sandbox:
        return env
    if limits.uid is not None:  # made just now, in a folder only root can write
        os.chown(runtime / SOCKETS, limits.uid, limits.uid)
    settings = course / "kernel_sandbox.json"
    settings.write_text(json.dumps({
        "uid": limits.uid, "memory_bytes": limits.memory_bytes,
        "processes": limits.processes, "file_bytes": limits.file_bytes,
        "scratch_bytes": limits.scratch_bytes, "readonly": readonly_paths(),
        "runtime": str(runtime), "sockets": str(runtime / SOCKETS),
        "cgroup": make_cgroup(f"student-{limits.uid}", limits.sandbox_memory_bytes,
                              limits.processes + SANDBOX_TASKS)
        if limits.uid is not None else None,
        "preload": master_imports(course / "source" / assignment)
        if limits.kernel_start == "fork" else []}))
    spec = course / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(HERE / "kernel_sandbox.py"), str(settings),
                 "{connection_file}"],
        "display_name": "Python 3 (sandboxed for grading)", "language": "python",
        # bwrap does not pass signals on: interrupt through the control channel
        "interrupt_mode": "message",
        "metadata": {"supported_encryption": ["curve"]}}, indent=1))
    env["JUPYTER_PATH"] = str(course / "jupyter")
    return env


def sandbox_settings(course: Path) -> dict:
    """What install_kernel wrote for `course`'s kernels ({} unsandboxed)."""
    settings = course / "kernel_sandbox.json"
    return json.loads(settings.read_text()) if settings.exists() else {}


def release_kernel(course: Path) -> None:
    """Remove the student's runtime folder and cgroup (install_kernel)."""
    from kernel_sandbox import remove_cgroup

    remove_cgroup(sandbox_settings(course).get("cgroup"))
    shutil.rmtree(Path((course / "runtime").read_text()), ignore_errors=True)


def run_nbgrader(args: list[str], course: Path, log: Path,
                 env: dict[str, str] | None = None,
                 seconds: float | None = None) -> bool:
    """Run nbgrader in `course`, append its log to `log`; True when it went well.

    After `seconds` the command and every process it started are killed (a
    kernel that ignores interrupts must not hold up the class)."""
    cmd = nbgrader_command(*args)
    proc = subprocess.Popen(cmd, cwd=course, env={**nbgrader_env(), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=die_with_parent)
    try:
        stdout, stderr = proc.communicate(timeout=seconds)
        stopped = False
    except subprocess.TimeoutExpired:
        proc.kill()  # its sandboxed kernels die with it (bwrap --die-with-parent)
        stdout, stderr = proc.communicate()
        stopped = True
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ nbgrader {' '.join(args)}\n{stdout}{stderr}\n")
        if stopped:
            fh.write(f"stopped after {seconds} s\n")
    # note: nbgrader may exit 0 after failing a notebook, so read the log too;
    # a timed-out cell is logged as an ERROR as well, but that is a grade, not a failure
    return not stopped and proc.returncode == 0 and FAILED_MARK not in stderr


def fork_server():
    """A multiprocessing context whose processes fork from one server that
    imported nbgrader once, or None where that cannot work (a daemonic
    process, such as a Dask worker, may not start processes)."""
    import multiprocessing

    if multiprocessing.current_process().daemon or \
            "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["nbgrader_steps"])
    return ctx


def run_steps(course: Path, assignment: str, student: str, settings: dict,
              log: Path, env: dict[str, str], seconds: float) -> str | None:
    """Autograde `student` and write their feedback (nbgrader_steps.py), all
    killed after `seconds`; None when both went well, else what failed."""
    args = [str(course), assignment, student, json.dumps(settings)]
    full_env = {**nbgrader_env(), **env}
    ctx = fork_server()
    if ctx is not None:
        import nbgrader_steps

        log.touch()
        proc = ctx.Process(target=nbgrader_steps.child, args=(*args, str(log), full_env))
        proc.start()
        proc.join(seconds)
        if proc.is_alive():
            proc.kill()  # its sandboxed kernels die with it (bwrap --die-with-parent)
            proc.join()
            code = None
        else:
            code = proc.exitcode
    else:
        with log.open("a", encoding="utf-8") as fh:
            child = subprocess.Popen([sys.executable, str(HERE / "nbgrader_steps.py"), *args],
                                     cwd=course, env=full_env, stdout=fh,
                                     stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            try:
                code = child.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                code = None
    if code is None:
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"stopped after {seconds} s\n")
        return f"autograde stopped after {seconds} s"
    text = log.read_text(encoding="utf-8", errors="replace")
    before, _, after = text.partition("$ nbgrader generate_feedback")
    # note: nbgrader may report success after failing a notebook, so read the
    # log too; a timed-out cell is logged as an ERROR as well, but that is a
    # grade, not a failure
    if code == 1 or (code == 0 and FAILED_MARK in before):
        return "autograde failed"
    if code != 0 or FAILED_MARK in after:
        return "generate_feedback failed"
    return None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(MB):
            h.update(chunk)
    return h.hexdigest()


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`; a symlink counts as its target's
    path, never its content (it may point at anything)."""
    out = {}
    for p in sorted(folder.rglob("*")):  # never descends into a linked folder
        if p.is_symlink():
            out[str(p.relative_to(folder))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(folder))] = sha256_of(p)
    return out


# --- what is refused before grading ------------------------------------------

def valid_id(name: str) -> bool:
    return STUDENT_ID.fullmatch(name) is not None


def escaped(ch: str) -> str:
    code = ord(ch)
    return (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
            else f"\\U{code:08x}")


def shown_id(name: str, longest: int = 80) -> str:
    """A refused folder name as problems.csv and the summary show it: every
    character a student id may not hold (and a first `_`, `.` or `-`) as a
    Python-style escape (`bad"id` -> `bad\\x22id`), cut after `longest`
    characters. It is plain ASCII, never a valid id, never a formula."""
    out = "".join(ch if ch.isascii() and (ch.isalnum() or (i and ch in "_.-"))
                  else escaped(ch) for i, ch in enumerate(name[:longest]))
    return out + (f"[+{len(name) - longest} more]" if len(name) > longest else "")


def plain(text: str, longest: int = 2000) -> str:
    """`text` safe to print and to store: control and format characters
    (newlines, terminal escapes, bidirectional overrides) and undecodable
    bytes of a file name as escapes, and at most `longest` characters."""
    out = "".join(escaped(ch) if unicodedata.category(ch).startswith("C")
                  or unicodedata.category(ch) in ("Zl", "Zp") else ch
                  for ch in text[:longest])
    return out + ("..." if len(text) > longest else "")


ID_REFUSED = ("(student id): not a valid student id (ASCII letters, digits, _ . -; "
              "first a letter or digit; at most 64); not graded")
LINK_REFUSED = "(submission): the folder is a symbolic link; refused, scored 0"


def crash_line(err: BaseException) -> str:
    return plain(f"(grader): grading failed: {type(err).__name__}: {err}", 500)


def count_entries(folder: Path) -> int:
    """Files and folders below `folder`, at any depth, links not followed."""
    total = 0
    for _, dirs, files in os.walk(folder, followlinks=False):
        total += len(dirs) + len(files)
    return total


def refusal(student_dir: Path, assignment: str, max_files: int) -> str | None:
    """Why a student's assignment folder is not graded at all, or None. Links
    are seen with lstat, before anything follows them."""
    folder = student_dir / assignment
    if student_dir.is_symlink() or folder.is_symlink():
        return LINK_REFUSED
    if (n := count_entries(folder)) > max_files:
        return (f"(submission): {n} files and folders, more than the {max_files} "
                "allowed; not graded, scored 0")
    return None


def find_students(submissions: Path, assignment: str, max_files: int
                  ) -> tuple[list[Path], list[Outcome]]:
    """The student folders of `submissions` holding `assignment` that can be
    graded, and an Outcome for each that cannot: a folder name that is not a
    valid student id (shown escaped, not graded), a folder or assignment
    folder that is a symbolic link, or too many files (refused, scored 0)."""
    students, refused = [], []
    for entry in sorted(os.scandir(submissions), key=lambda e: e.name):
        path = Path(entry.path)
        if entry.is_symlink():  # a link's target is only looked at, never read
            if not os.path.lexists(path / assignment):
                continue
        elif not entry.is_dir(follow_symlinks=False) or not (
                (path / assignment).is_symlink() or (path / assignment).is_dir()):
            continue
        if not valid_id(entry.name):
            refused.append(Outcome(shown_id(entry.name), problems=[ID_REFUSED]))
        elif why := refusal(path, assignment, max_files):
            refused.append(Outcome(entry.name, refused=True, problems=[why]))
        else:
            students.append(path)
    return students, refused


def special(path: str) -> str | None:
    """What a submission may not hold, seen with lstat: a symbolic link, or a
    file that is not a regular file or folder (a named pipe, a socket, a
    device): copying one could hang, read outside the submission, or hand
    the kernel a device."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a regular file or folder"
    return None


def copy_submission(src: Path, dst: Path) -> list[str]:
    """Copy a student's folder without following symlinks: a link (one could
    point at a file the student's kernel must not read, or at the masters),
    like a named pipe or a device, is not copied and gets a problem line."""
    if src.is_symlink() or src.parent.is_symlink():  # find_students refuses these
        raise ValueError(f"{src} is a symbolic link; not copied")
    refused = []

    def ignore(folder: str, names: list[str]) -> list[str]:
        found = [(n, why) for n in names
                 if (why := special(os.path.join(folder, n)))]
        refused.extend((os.path.relpath(os.path.join(folder, n), src), why)
                       for n, why in found)
        return [n for n, _ in found]

    shutil.copytree(src, dst, ignore=ignore, symlinks=True)
    return [f"{name}: {why}; refused" for name, why in sorted(refused)]


GRADED_KEYS = ("grade", "solution", "points", "locked", "task")
# what a failing cell's error says about a limit it hit (autograded notebook)
LIMIT_ERRORS = [
    (lambda e: e["ename"] == "CellTimeoutError", "ran past the time limit"),
    (lambda e: e["ename"] == "KernelDied" and "while running" in e["evalue"],
     "killed the kernel; later cells scored 0"),
    (lambda e: e["ename"] == "MemoryError", "hit the memory limit"),
    (lambda e: "[Errno 28]" in e["evalue"], "filled its scratch space"),
    (lambda e: "[Errno 27]" in e["evalue"], "wrote a file over the size limit"),
    (lambda e: e["ename"] == "BlockingIOError" or "[Errno 11]" in e["evalue"],
     "hit the process limit"),
    (lambda e: e["ename"] == "KernelStopped" and e["evalue"].startswith(
        "the cell ignored the interrupt"),
     "ignored the interrupt at its time limit; the kernel was stopped, later "
     "cells scored 0"),
    # the judge's verdicts (judge.py) that are about how, not what
    (lambda e: e["ename"] == "DelegatedToPackage",
     "tests a function that runs ragkit's own twin of the piece it builds; scored 0"),
    (lambda e: e["ename"] == "TracingTurnedOff",
     "tests a function that turned off the grader's call tracing; scored 0"),
]
OUTPUT_STOPPED = "[output stopped:"  # rag_feedback.GuardedExecute's notes
NOTEBOOK_OUTPUT_STOPPED = "[notebook output stopped:"
# copied into every course folder nbgrader runs in: the feedback and execute
# steps, and the judge that decides graded test cells outside the kernel
GRADER_FILES = [HERE / n for n in ("rag_feedback.py", "judge.py", "judge_kernel.py")]


def setup_failed(gid: str | None, out: dict) -> str | None:
    """What to report when a notebook's locked setup cell failed (for the
    project: usually the student's corpus files), else None."""
    if not (gid or "").endswith("_setup") or out.get("output_type") != "error":
        return None
    first = (str(out.get("evalue", "")).strip().splitlines() or [""])[0][:300]
    return (f"the setup cell failed ({out.get('ename', '')}: {first}); "
            "every cell that needs what it defines fails")


def limits_hit(autograded: Path) -> list[str]:
    """One line per cell of the graded notebooks that ran into a limit, and
    one for a setup cell that failed."""
    found = []
    for path in sorted(autograded.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for index, c in enumerate(nb.cells):
            if c.cell_type != "code":
                continue
            gid = c.metadata.get("nbgrader", {}).get("grade_id")
            label = repr(gid) if gid else f"{index}"
            whats = []
            for out in c.get("outputs", []):
                if failed := setup_failed(gid, out):
                    found.append(f"{path.name}: {failed}")
                elif out.get("output_type") == "error":
                    whats += [what for test, what in LIMIT_ERRORS
                              if test({"ename": out.get("ename", ""),
                                       "evalue": out.get("evalue", "")})]
                elif OUTPUT_STOPPED in str(out.get("text", "")):
                    whats.append("printed more than the output limit")
                elif NOTEBOOK_OUTPUT_STOPPED in str(out.get("text", "")):
                    whats.append("printed past the notebook's output limit")
            found += [f"{path.name}: cell {label} {what}" for what in dict.fromkeys(whats)]
    return found


def check_submission(folder: Path, release: ReleaseCells, max_bytes: int | None = None,
                     max_cells: int | None = None) -> tuple[list[str], list[str]]:
    """What is wrong with one student's assignment folder, in plain words,
    and the names of the notebooks that cannot be read at all (or are too
    large, or hold more than `max_cells` cells: those are not run)."""
    problems, unreadable = [], []
    present = {p.name for p in folder.glob("*.ipynb")}
    for name in sorted(set(release) - present):
        problems.append(f"{name}: missing, scored 0")
    for name in sorted(present - set(release)):
        problems.append(f"{name}: not part of the assignment, ignored")
    for name in sorted(present & set(release)):
        size = (folder / name).stat().st_size
        if max_bytes is not None and size > max_bytes:
            problems.append(f"{name}: {size / MB:.0f} MB, more than the "
                            f"{max_bytes / MB:.0f} MB allowed; not run, scored 0")
            unreadable.append(name)
            continue
        try:
            nb = nbformat.read(folder / name, as_version=4)
        except Exception as err:  # noqa: BLE001 (any parse failure is the same problem)
            problems.append(f"{name}: not a readable notebook ({type(err).__name__}), scored 0")
            unreadable.append(name)
            continue
        if max_cells is not None and len(nb.cells) > max_cells:
            problems.append(f"{name}: {len(nb.cells)} cells, more than the {max_cells} "
                            "allowed; not run, scored 0")
            unreadable.append(name)
            continue
        cells = [(c.metadata.get("nbgrader", {}).get("grade_id"), c.cell_type,
                  c.metadata.get("nbgrader", {}), c.source) for c in nb.cells]
        ids = [gid for gid, _, _, _ in cells if gid]
        repaired = False
        twins = sorted({i for i in ids if ids.count(i) > 1})
        for dup in twins:
            problems.append(f"{name}: cell {dup!r} appears more than once; "
                            "graded once")

        for index, (gid, kind, meta, source) in enumerate(cells):
            known = release[name].get(gid)
            if known is None:
                continue
            if kind != known[0]:
                problems.append(f"{name}: cell {gid!r} was turned into {kind}; "
                                f"graded as {known[0]}")
            elif known[2]["source"] is not None and source != known[2]["source"]:
                problems.append(f"{name}: cell {gid!r} was edited; graded with "
                                "the master's")
            if {k: meta.get(k) for k in GRADED_KEYS} != {
                    k: known[2][k] for k in GRADED_KEYS}:
                problems.append(f"{name}: nbgrader metadata of cell {gid!r} was "
                                "edited; graded with the master's")
                # nbgrader stops on a graded cell relabelled as an answer
                # ("Inconsistent checksums"): give it the release's labels
                nb.cells[index].metadata["nbgrader"] = dict(known[2]["meta"])
                repaired = True
        graded = {gid for gid, (_, is_grade, _) in release[name].items() if is_grade}
        for gone in sorted(graded - set(ids)):
            problems.append(f"{name}: graded cell {gone!r} was deleted; restored from the master")
        if twins:
            # nbgrader stops on a repeated grade_id (KeyError); keep the first
            seen: set[str] = set()
            kept = []
            for c in nb.cells:
                gid = c.metadata.get("nbgrader", {}).get("grade_id")
                if gid not in seen:
                    kept.append(c)
                if gid:
                    seen.add(gid)
            nb.cells = kept
        if twins or repaired:
            nbformat.write(nb, folder / name)  # the grader's copy, never the original
    return problems, unreadable


def release_cells(release_dir: Path) -> ReleaseCells:
    """Every nbgrader cell of the release: its type, whether it is graded,
    and the metadata that decides how."""
    out = {}
    for path in sorted(release_dir.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        out[path.name] = {}
        for c in nb.cells:
            meta = c.metadata.get("nbgrader", {})
            if meta.get("grade_id"):
                out[path.name][meta["grade_id"]] = (
                    c.cell_type, bool(meta.get("grade")),
                    {**{k: meta.get(k) for k in GRADED_KEYS},
                     "source": c.source if meta.get("locked") else None,
                     "meta": dict(meta)})
    return out


def prepare_template(work: Path, assignment: str, only: list[str] | None = None,
                     source: Path = ROOT / "source") -> Path:
    """One course folder with the gradebook filled in; each student gets a copy.
    With `only` (notebook names without .ipynb) the assignment is just those."""
    template = course_folder(work / "_template", source, *GRADER_FILES)
    for master in (template / "source" / assignment).glob("*.ipynb"):
        if only and master.stem not in only:
            master.unlink()
    if not run_nbgrader(["generate_assignment", assignment, "--force"], template,
                        work / "_template.log"):
        raise RuntimeError(f"nbgrader generate_assignment failed; see {work / '_template.log'}")
    return template


def notebook_scores(course: Path, assignment: str, student: str):
    """Scores per notebook and per graded cell ("name.ipynb:grade_id") from
    the student's gradebook; also writes
    course/grades.csv with nbgrader's CSV export plugin (what `nbgrader
    export` runs, without starting another nbgrader)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(course / "grades.csv")).export(gb)
        sub = gb.find_submission(assignment, student)
        return ({f"{nb.name}.ipynb": (float(nb.score), float(nb.max_score))
                 for nb in sub.notebooks},
                {f"{nb.name}.ipynb:{g.name}": (float(g.score), float(g.max_score))
                 for nb in sub.notebooks for g in nb.grades},
                [f"{nb.name}.ipynb:{g.name}" for nb in sub.notebooks for g in nb.grades
                 if g.needs_manual_grade and g.manual_score is None])


MISSING = re.compile(r"^(.+\.ipynb): missing, scored 0$")


def missing_notebooks(problems: list[str]) -> list[str]:
    """The notebooks a student did not hand in, from their problem lines."""
    return [m.group(1) for m in map(MISSING.match, problems) if m]


def summary_lines(outcomes: list[Outcome], assignment: str) -> list[tuple[str, str]]:
    """(student, line) for the printed summary: a student's missing notebooks
    make one line ("7 of 9 lab notebooks not handed in"), in the place of the
    first; problems.csv keeps one line per notebook."""
    lines = []
    for o in outcomes:
        missing = missing_notebooks(o.problems)
        said = False
        for p in o.problems:
            if not MISSING.match(p):
                lines.append((o.student, p))
            elif not said:
                said = True
                of = len(o.scores) or len(missing)
                what = "notebook" if of == 1 else "notebooks"
                lines.append((o.student, f"{len(missing)} of {of} {assignment} {what} "
                                         "not handed in"))
    return lines


def zero_scores(template: Path, assignment: str, outcomes: list[Outcome]) -> None:
    """Give each refused outcome 0 points of the maximum for every notebook
    and graded cell of the assignment (from the template's gradebook), so it
    counts in scores.csv and the report as a submission that scored 0."""
    from nbgrader.api import Gradebook

    if not outcomes:
        return
    with Gradebook(f"sqlite:///{template / 'gradebook.db'}") as gb:
        notebooks = gb.find_assignment(assignment).notebooks
        scores = {f"{nb.name}.ipynb": (0.0, float(nb.max_score)) for nb in notebooks}
        cells = {f"{nb.name}.ipynb:{c.name}": (0.0, float(c.max_score))
                 for nb in notebooks for c in nb.grade_cells}
    for o in outcomes:
        o.scores, o.cells = dict(scores), dict(cells)


def own_files(folder: Path) -> dict[str, str]:
    """sha256 of the files of the STUDENT_OWN folders (the project's
    corpus/) under `folder`, by path."""
    out = {}
    for name in STUDENT_OWN:
        if (folder / name).is_dir():
            out.update({f"{name}/{k}": v for k, v in digest(folder / name).items()})
    return out


def copied_from_master(copy: Path, master_own: dict[str, str]) -> list[str]:
    """A problem line for each STUDENT_OWN folder handed in as the master's."""
    found = []
    for name in STUDENT_OWN:
        masters = {h for path, h in master_own.items() if path.startswith(f"{name}/")}
        same = sum(h in masters for path, h in own_files(copy).items()
                   if path.startswith(f"{name}/"))
        if same:
            found.append(f"{name}/: {same} file(s) identical to the master's own; it "
                         "should be the student's; check it by hand")
    return found


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
    outcome.problems += copy_submission(student_dir / assignment, copy)
    problems, unreadable = check_submission(copy, release, limits.notebook_bytes,
                                            limits.max_cells)
    outcome.problems += problems + copied_from_master(copy, master_own or {})
    present = {p.name for p in copy.glob("*.ipynb")} & set(release)
    # nbgrader gives up on the whole student over one unreadable file, and on
    # a submission without any of the assignment's notebooks; grade the blank
    # release in their place so the other notebooks still count (nbgrader
    # itself scores any other missing notebook 0)
    for name in unreadable or ([] if present else [min(release)]):
        shutil.copy(template / "release" / assignment / name, copy / name)
    env = install_kernel(course, limits, assignment)
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
    # autograde and generate_feedback in one nbgrader process (nbgrader_steps.py);
    # only autograde runs student code, and only its kernels are sandboxed
    failed = run_steps(course, assignment, student, settings, log, env,
                       limits.student_seconds)
    if (course / "steps.json").exists():
        outcome.steps = json.loads((course / "steps.json").read_text())
    if failed:
        outcome.problems.append(f"nbgrader {failed}; see logs/{student}.log")
    else:
        outcome.scores, outcome.cells, outcome.to_mark = notebook_scores(
            course, assignment, student)
        outcome.graded = True
        outcome.problems += limits_hit(course / "autograded" / student / assignment)
        outcome.problems += hidden_code_shown(course / "feedback",
                                              course / "source" / assignment)
    outcome.seconds = round(time.monotonic() - start, 1)
    store(outcome, course, log, keep)
    release_kernel(course)
    shutil.rmtree(course, ignore_errors=True)
    return outcome


def hidden_code_shown(feedback: Path, masters: Path) -> list[str]:
    """A line for each feedback page that shows a line of its master's hidden
    tests (the marker, or any line that only a hidden test holds)."""
    from html import unescape

    from rag_feedback import secret_lines
    found = []
    for page in sorted(feedback.rglob("*.html")):
        text = unescape(page.read_text(encoding="utf-8"))
        master = masters / f"{page.stem}.ipynb"
        secret = secret_lines(nbformat.read(master, as_version=4)) if master.exists() else set()
        if HIDDEN_MARK in text or any(line in text for line in secret):
            found.append(f"{page.name}: feedback shows hidden tests")
    return found


# --- what is kept of each finished student, so a rerun can skip them -------

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
    code = [HERE / n for n in ("grade.py", "nbgrader_steps.py", "kernel_sandbox.py",
                               "nbgrader_config.py", "nbgrader_cli.py")] + GRADER_FILES
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
    (out / MARKER).write_text("made by autograder/grade.py; safe to delete\n")


def write_results(out: Path, outcomes: list[Outcome]) -> pd.DataFrame:
    """scores.csv, problems.csv, grades.csv, feedback/<student>/ and
    logs/<student>.log. Paths are built from valid student ids only (a
    refused folder name is only ever shown, escaped); every CSV goes
    through safe_csv."""
    rows, problems, exports = [], [], []
    for o in outcomes:
        for nb_name, (score, max_score) in sorted(o.scores.items()):
            rows.append({"student": o.student, "notebook": nb_name,
                         "score": score, "max_score": max_score})
        problems += [{"student": o.student, "problem": p} for p in o.problems]
        if o.refused or not valid_id(o.student):
            continue
        keep = out / DONE / o.student
        if (keep / "feedback").is_dir():
            shutil.copytree(keep / "feedback", out / "feedback" / o.student)
        if (keep / "log.txt").is_file():
            (out / "logs").mkdir(exist_ok=True)
            shutil.copy(keep / "log.txt", out / "logs" / f"{o.student}.log")
        if o.graded and (keep / "grades.csv").is_file():
            exports.append(read_text_csv(keep / "grades.csv"))
    scores = pd.DataFrame(rows, columns=["student", "notebook", "score", "max_score"])
    write_csv(scores, out / "scores.csv")
    write_csv(pd.DataFrame(problems, columns=["student", "problem"]), out / "problems.csv")
    if exports:
        grades = pd.concat(exports, ignore_index=True).sort_values("student_id")
        write_csv(grades, out / "grades.csv")
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
            ("report.html", "the class at a glance: totals, share passing each "
                            "test, problems (PNGs and CSVs in report/)"),
            ("logs/", "nbgrader's log for each student")]
    return "\n".join([f"results in {shown}/"]
                     + [f"  {name:<13} {what}" for name, what in rows])


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
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grade, s): s for s in todo}
        for future in as_completed(futures):
            outcomes.append(result_of(future, futures[future]))
            bar.set_postfix_str(outcomes[-1].student)
            bar.update()
    return outcomes


def add_to_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.insert(0, folder)


def run_dask(todo, address: str, grade, bar) -> list[Outcome]:
    """Each student is one task on the Dask cluster at `address`; the workers
    must see the same paths (a shared file system) and this environment."""
    from distributed import Client, as_completed as dask_completed

    outcomes = []
    with Client(address) as client:
        client.run(add_to_path, str(HERE))  # nbgrader_cli and kernel_sandbox
        futures = {client.submit(grade, s, key=f"grade-{s.name}", pure=False): s
                   for s in todo}
        for future in dask_completed(list(futures)):
            outcomes.append(result_of(future, futures[future]))
            bar.set_postfix_str(outcomes[-1].student)
            bar.update()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade submissions with nbgrader.")
    parser.add_argument("--submissions", type=Path, required=True,
                        help="folder of <student>/<assignment>/*.ipynb")
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument("--assignment", default="lab")
    parser.add_argument("--source", type=Path, default=ROOT / "source",
                        help="the masters: SOURCE/<assignment>/*.ipynb (default: "
                             "the repository's source/)")
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
                        help="skip report.html and its figures")
    args = parser.parse_args(argv)
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
    students, refused = find_students(submissions, args.assignment, args.max_files)
    if not students and not refused:
        parser.error(f"--submissions has no <student>/{args.assignment}/ folders: {submissions}")
    masters = {p.stem for p in (source / args.assignment).glob("*.ipynb")}
    for name in args.notebook or []:
        if name not in masters:
            parser.error(f"--notebook {name!r} is not in source/{args.assignment}/")

    limits = Limits(sandbox=args.sandbox == "bwrap", memory_bytes=args.memory * MB,
                    processes=args.processes, file_bytes=args.file_size * MB,
                    scratch_bytes=args.scratch * MB, output_bytes=args.max_output * 1024,
                    notebook_bytes=args.max_notebook * MB, timeout=args.timeout,
                    student_seconds=args.student_timeout, kernel_start=args.kernel_start,
                    tests_in=args.tests_in, threads=threads,
                    notebook_output_bytes=args.max_notebook_output * MB,
                    max_cells=args.max_cells,
                    sandbox_memory_bytes=args.sandbox_memory * MB
                    if args.sandbox_memory else None)
    if limits.sandbox:  # once: how much of the sandbox a cgroup caps here
        from kernel_sandbox import cgroup_note

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
    for old in done_dir.iterdir():  # students gone or changed since: forget them
        if old.name not in keys or not finished(old, keys[old.name]):
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    reused = {}
    for s in students:
        if finished(done_dir / s.name, keys[s.name]):
            try:
                reused[s.name] = load(done_dir / s.name)
            except Exception:  # noqa: BLE001 (a damaged entry: grade again)
                shutil.rmtree(done_dir / s.name)
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
                        if (course / "runtime").exists():  # its kernel's folder was made
                            release_kernel(course)
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
    bar.close()
    outcomes = sorted([*reused.values(), *fresh, *refused], key=lambda o: o.student)
    for o in outcomes:  # file names and messages a student chose: printable
        o.problems = [plain(p) for p in o.problems]
    scores = write_results(out, outcomes)
    for s in students:
        if digest(s) != before[s.name]:  # never expected; loud if it ever happens
            raise SystemExit(f"submission of {s.name} changed during grading")
    if not args.no_report:
        import report

        try:
            report.write(out, scores, outcomes)
        except Exception as err:  # noqa: BLE001 (the grades are written already)
            print(f"report.html not written: {err!r}", file=sys.stderr)

    print(f"graded {sum(o.graded or o.refused for o in outcomes)} of {len(outcomes)} "
          f"students -> {out}"
          + (f" ({len(reused)} kept from an earlier run)" if reused else "")
          + (f"; {len(blocked)} submission(s) refused and scored 0" if blocked else ""))
    if not scores.empty:
        print(grade_table(scores).to_string(float_format=lambda v: f"{v:g}"))
    trouble = [(o.student, p) for o in outcomes for p in o.problems]
    for student, problem in summary_lines(outcomes, args.assignment):
        print(f"  ! {student}: {problem}")
    print(where_results_went(out, len(trouble)))
    failed = [o.student for o in outcomes if not (o.graded or o.refused)]
    leaked = [p for _, p in trouble if "feedback shows hidden tests" in p]
    return 1 if failed or leaked else 0


if __name__ == "__main__":
    sys.exit(main())
