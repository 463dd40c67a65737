"""Course templates kept between runs of grade.py, found by their content.

Every run of grade.py starts with a course folder whose gradebook nbgrader's
`generate_assignment` filled in from the masters (grade.prepare_template).
That step is a process of its own that imports nbgrader: about 3 s of CPU,
the same 3 s for every run on the same masters. This module keeps each
finished template under a key made of everything that decides it (the bytes
of every file in the folder before the step, the grader's own modules, and
the versions of nbgrader and Python) and copies it back when the key comes
again. A master edited by one byte is a new key; nothing is ever looked up
by a name or a date. course.py keeps the gathered course the same way
before the first student is merged into it (`gather`: one
`generate_assignment` per assignment, about 10 s a class).

The store is a folder of the grader's user: RAG_TEMPLATE_CACHE, else
$XDG_CACHE_HOME/rag-course/templates, else ~/.cache/rag-course/templates,
made 0700 (it holds the masters' hidden tests); a store that another
user owns, or that others may write to, is not used. A template lands there
under a temporary name first and is then renamed into place, so two runs
at once never see half of one; the KEEP most recently used are kept.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from autograder.run.nbgrader_cli import TOP, grader_modules

KEEP = 40  # templates kept; each is a few hundred KB to a few MB
VERSION = "1"  # bumped when the layout of a stored template changes


def store() -> Path | None:
    """The folder templates are kept in (made 0700 if it is new), or None
    when it cannot be made or is not this user's alone."""
    chosen = os.environ.get("RAG_TEMPLATE_CACHE")
    if chosen:
        folder = Path(chosen)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "rag-course" / "templates"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if folder.is_symlink() or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return None
    return folder


def key(folder: Path) -> str:
    """What decides the template made in `folder`: every file's path and
    bytes there, the grader's modules, nbgrader's and Python's versions."""
    from importlib.metadata import version

    digest = hashlib.sha256(f"{VERSION}\0{sys.version}\0{version('nbgrader')}\0".encode())
    files = [(p.relative_to(folder).as_posix(), p) for p in folder.rglob("*") if p.is_file()]
    files += [(f"<grader>/{p.relative_to(TOP).as_posix()}", p) for p in grader_modules()]
    for name, path in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def made(folder: Path, label: str, make: Callable[[], None]) -> bool:
    """Fill `folder` with what `make()` would make of it: copied back when
    the same files were made before (True), else made and kept (False).
    `label` tells the kinds of template apart (the assignments in it)."""
    name = f"{key(folder)}-{label}"
    if fetch(folder, name):
        return True
    make()
    keep(folder, name)
    return False


def fetch(folder: Path, name: str) -> bool:
    """Replace `folder` with the kept template `name`; False if there is none."""
    root = store()
    if root is None or not (root / name).is_dir():
        return False
    kept = root / name
    shutil.rmtree(folder)
    shutil.copytree(kept, folder, symlinks=True)
    os.utime(kept)  # recently used: kept longest
    return True


def keep(folder: Path, name: str) -> None:
    """Keep a copy of the finished template `folder` under `name`, then drop
    the least recently used beyond KEEP."""
    root = store()
    if root is None or (root / name).is_dir():
        return
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
    try:
        shutil.copytree(folder, partial / "t", symlinks=True)
        try:
            (partial / "t").rename(root / name)
        except OSError:  # another run kept the same template first
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    kept = sorted((p for p in folders if not p.name.startswith(".")),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    # and what a run killed while it copied left behind, after a day
    stale = [p for p in folders if p.name.startswith(".partial-")
             and time.time() - p.stat().st_mtime > 86400]
    for old in kept[KEEP:] + stale:
        shutil.rmtree(old, ignore_errors=True)
