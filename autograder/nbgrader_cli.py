"""Run the nbgrader of this interpreter's environment in a throwaway course folder.

tools/build.py, grade.py and validate.py all go through here, so there is one
place that knows where nbgrader lives and which settings it runs with.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
# Folders of a master that hold the master's own copy of something every
# student makes for themselves (the project's corpus/). They stay out of the
# course's source/, so nbgrader neither releases them nor, at autograde,
# overwrites the student's own files with them.
STUDENT_OWN = ("corpus",)


def nbgrader_command(*args: str) -> list[str]:
    """The argv for `nbgrader ARGS` from the venv, even when it is not activated."""
    return [str(BIN / "nbgrader"), *args]


def nbgrader_env() -> dict[str, str]:
    """This process's environment with the venv's scripts first on PATH.

    nbgrader shells out to `alembic` to set up its gradebook, so the venv's
    scripts must be found even when the venv was never activated.
    """
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


def nbgrader_settings():
    """autograder/nbgrader_config.py as a traitlets config, for the kernels a
    script starts itself (encrypted transport, nbgrader's time limit)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()


def course_folder(where: Path, source: Path | None = None, *extras: Path) -> Path:
    """Make `where` an nbgrader course folder: our config, a copy of `source`
    (if given, without the STUDENT_OWN folders) as its source/, and any
    `extras` files beside the config."""
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "nbgrader_config.py", where / "nbgrader_config.py")
    if source is not None:
        shutil.copytree(source, where / "source",
                        ignore=shutil.ignore_patterns(*STUDENT_OWN))
    for extra in extras:
        shutil.copy(extra, where / extra.name)
    return where
