"""Run the nbgrader of this interpreter's environment in a throwaway course folder.

tools/build.py, grade.py and validate.py all go through here, so there is one
place that knows where nbgrader lives and which settings it runs with.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
# the folder that holds the autograder package (the repository, or the
# grader's sandboxed copy of it)
TOP = HERE.parents[1]
BIN = Path(sys.executable).parent
# Folders of a master that hold the master's own copy of something every
# student makes for themselves (the project's corpus/). They stay out of the
# course's source/, so nbgrader neither releases them nor, at autograde,
# overwrites the student's own files with them.
STUDENT_OWN = ("corpus",)
# A check cell (`nbNN_check_<what>`, `proj_check_<what>`: locked, ungraded,
# its first line a comment quoting a claim, then asserts) is the pack's proof
# that a number its prose states is what the cells compute. It is for CI, not
# for the student: it stays in the masters and in the reading edition, whose
# every cell CI re-executes, and the course's source/ leaves it out, so
# nbgrader's gradebook never knows it and no release holds it.
CHECK_ID = re.compile(r"^[A-Za-z0-9]+_check_")
# copied into every course folder nbgrader runs in, as autograder/run/ there
# (nbgrader_config.py loads them from there): the feedback and execute
# steps, the judge that decides graded test cells outside the kernel (with
# what it loads into the kernel, and the twins it forbids), the parser they
# share and the per-cell time limit
GRADER_FILES = [HERE / n for n in ("rag_feedback.py", "judge.py", "judge_kernel.py",
                                   "ragkit_watch.py", "python_tree.py", "twins.py",
                                   "cell_limit.py")]


def nbgrader_command(*args: str) -> list[str]:
    """The argv for `nbgrader ARGS` from the venv, even when it is not
    activated, through nbgrader_main.py (a new gradebook's revision read
    without starting `alembic`)."""
    return [sys.executable, str(HERE / "nbgrader_main.py"), *args]


def nbgrader_env() -> dict[str, str]:
    """This process's environment with the venv's scripts first on PATH.

    The nbgrader commands of nbgrader_command read a new gradebook's
    revision in-process (nbgrader_main.py), but a process that makes a
    gradebook through nbgrader.api without use_alembic_head still shells out
    to `alembic`: with the venv's scripts first it finds this environment's
    even when the venv was never activated.
    """
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


def nbgrader_settings():
    """autograder/run/nbgrader_config.py as a traitlets config, for the kernels a
    script starts itself (encrypted transport, nbgrader's time limit)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()


def course_folder(where: Path, source: Path | None = None, *extras: Path) -> Path:
    """Make `where` an nbgrader course folder: our config, a copy of `source`
    (if given, without the STUDENT_OWN folders) as its source/, and any
    `extras` (modules of the autograder package) at their places in a copy
    of the package beside the config."""
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "nbgrader_config.py", where / "nbgrader_config.py")
    if source is not None:
        copy_masters(source, where / "source")
    for extra in extras:
        copy_module(extra, where)
    return where


def grader_modules() -> list[Path]:
    """Every module of the autograder package, its rooms' `__init__.py`
    files included, never the testbed's."""
    package = TOP / "autograder"
    return sorted(p for p in package.rglob("*.py")
                  if p.relative_to(package).parts[0] != "testbed")


def copy_module(module: Path, top: Path) -> Path:
    """`module` (a file of the autograder package) copied to its place
    under `top`, with the package's `__init__.py` files on the way; the
    copy."""
    rel = module.resolve().relative_to(TOP)
    for package in (p for p in rel.parents if p.name):  # autograder/run, autograder
        (top / package).mkdir(parents=True, exist_ok=True)
        shutil.copy(TOP / package / "__init__.py", top / package / "__init__.py")
    shutil.copy(module, top / rel)
    return top / rel


def is_check_cell(cell) -> bool:
    """Whether `cell` is one of the masters' check cells (see CHECK_ID)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (cell.get("cell_type") == "code" and bool(meta.get("locked"))
            and not meta.get("grade") and not meta.get("solution")
            and bool(CHECK_ID.match(meta.get("grade_id", ""))))


def copy_masters(source: Path, target: Path) -> None:
    """`source` copied to `target` (which must not exist) without the
    STUDENT_OWN folders, and every notebook there without its check cells:
    what nbgrader releases and grades is the student's edition."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*STUDENT_OWN))
    for path in sorted(target.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        kept = [cell for cell in nb.cells if not is_check_cell(cell)]
        if len(kept) < len(nb.cells):
            nb.cells = kept
            nbformat.write(nb, path)


def run_nbgrader_checked(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run one nbgrader command in course root `cwd`; raise with its log on failure."""
    proc = subprocess.run(nbgrader_command(*args), cwd=cwd, env=nbgrader_env(),
                          capture_output=True, text=True)
    # note: nbgrader can exit 0 after logging an error, so read the log as well
    if proc.returncode != 0 or "| ERROR]" in proc.stderr:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed in {cwd}:\n{proc.stderr}")
    return proc


def die_with_parent() -> None:
    """In a child process: die when its parent dies, even by SIGKILL, so a
    killed grader leaves no nbgrader (and so no kernel) running."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
