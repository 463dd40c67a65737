"""Which submissions are graded at all, and how they are read: valid
student ids, folders refused before grading (links, too many files), names
shown escaped, and the digest that proves the originals were not touched.
The copy that grading reads is made by the intake gate (gate.py)."""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

from autograder.intake.grading_outcome import Outcome


# A student id is a folder name under --submissions. Only these are graded:
# ASCII letters, digits, `_`, `.` and `-`, starting with a letter or digit,
# at most 64 characters. So an id is never a path (`..`, `/`), never hidden
# (`.students`), never a glob for nbgrader (`*`), and never markup, a quote, a
# formula or a terminal escape in what the grader writes and prints.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


MAX_FILES = 500  # files and folders in one student's assignment folder


MB = 2 ** 20


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
