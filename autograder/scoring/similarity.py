"""Answers that look copied, for a person to judge: never a penalty.

A student who pastes ragkit's own version of a piece into the cell that
asks them to build it, or who hands in a classmate's cell with the names
changed, gets the points the tests give; only a person can tell copying
from two people writing the same few lines. This module lists the answer
cells that share most of their code with ragkit's source or with another
student's answer to the same cell, side by side, for that person.

It fingerprints code with copydetect (winnowing, as MOSS does: Schleimer,
Wilkerson and Aiken 2003): identifiers and literals are normalised by
pygments first, so renaming variables does not hide a copy, and the code
every student got from the release (the cell's stub) is left out as
boilerplate. A pair is listed when at least FLAG of the answer's
fingerprints are found in the other text (for two students: of each
one's), and the answer has at least MIN_PRINTS fingerprints (a three-line
function looks like every other one). FLAG was set on this pack's own
answers: the masters' solutions share at most 0.86 of their fingerprints
with ragkit (08's triage, a teaching twin), the testbed's independently
written alternatives at most 0.57 with ragkit or the masters, while a pasted
twin shares about 0.99 and a renamed copy 1.0 (tests/test_similarity.py).

It also lists every answer cell that names something an answer never
needs (`reaches`): ragkit's files, loaders and private copies, code
objects, `exec`, the kernel's module table, the grader's modules in the
kernel. Such a cell may run ragkit's own code by a route that the counting
of ragkit's calls in the grading kernel does not see (copying its files out
of its folder, running their text); the row says which names it used.

    python similarity.py STUDENTS_DIR RELEASE_DIR ASSIGNMENT PACKAGE_DIR

prints one JSON list of pairs. grade.py runs it after grading, as an
unprivileged user in a sandbox of its own (grader_sandbox.run_sandboxed):
it reads the students' autograded notebooks.
"""
from __future__ import annotations

import ast
import io
import itertools
import json
import sys
from pathlib import Path

# run as a script in the grader's sandbox, from the sandbox's own copy of
# the package (grade.similar_answers): that copy, not an installed one, is
# what must be imported, so the folder that holds it goes first
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

NOISE, GUARANTEE = 25, 30  # copydetect's k-gram and guarantee, in filtered characters
FLAG = 0.9
MIN_PRINTS = 12


# what `reaches` looks for: attributes, called names, imported modules and
# words inside strings that no answer of this pack needs
REACH_ATTRIBUTES = frozenset({"__file__", "__path__", "__spec__", "__loader__", "__code__",
                              "__globals__", "__builtins__", "fresh"})
REACH_CALLS = frozenset({"exec", "eval", "compile", "__import__"})
REACH_MODULES = frozenset({"importlib", "imp", "marshal", "py_compile", "runpy", "inspect",
                           "gc", "ctypes", "ragkit.reference"})
REACH_WORDS = ("_rag_judge", "ragkit_watch", "_ragkit_note", "_reference_function",
               "ragkit_reference", "site-packages", "__pycache__")


def reaches(code: str) -> list[str]:
    """The names in `code` that reach into ragkit's files or the grader, sorted."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in REACH_ATTRIBUTES:
                found.add(node.attr)
            elif (node.attr == "modules" and isinstance(node.value, ast.Name)
                  and node.value.id == "sys"):
                found.add("sys.modules")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in REACH_CALLS):
            found.add(node.func.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            for name in names:
                if name in REACH_MODULES or name.split(".")[0] in REACH_MODULES:
                    found.add(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(w for w in REACH_WORDS if w in node.value)
    return sorted(found)


def fingerprint(code: str, boilerplate=()):
    from copydetect import CodeFingerprint

    return CodeFingerprint("cell.py", NOISE, GUARANTEE - NOISE + 1, list(boilerplate),
                           language="python", fp=io.StringIO(code))


def prints_of(code: str) -> list:
    """The fingerprints of `code` (as boilerplate for others)."""
    try:
        return list(fingerprint(code).hashes)
    except Exception:  # noqa: BLE001 (code pygments cannot read: nothing)
        return []


def share(a, b) -> tuple[float, float]:
    """The share of a's fingerprints found in b, and of b's in a."""
    from copydetect import compare_files

    _, (in_a, in_b), _ = compare_files(a, b)
    return float(in_a), float(in_b)


def answers(notebook: Path) -> dict[str, str]:
    """grade_id -> code of each solution cell of an autograded notebook."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
            and c.metadata["nbgrader"].get("grade_id")}


def package_prints(package: Path) -> dict[str, object]:
    """module file -> its fingerprint, for every module of ragkit."""
    found = {}
    for path in sorted(package.glob("*.py")):
        try:
            found[f"ragkit/{path.name}"] = fingerprint(path.read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001
            continue
    return found


def pairs(students: dict[str, Path], release: Path, package: Path) -> list[dict]:
    """Each answer close to ragkit's source or to another student's answer
    to the same cell. `students`: student -> folder of their autograded
    notebooks; `release`: the assignment's release (the boilerplate)."""
    stubs: dict[tuple[str, str], list] = {}
    for notebook in sorted(release.glob("*.ipynb")):
        for gid, code in answers(notebook).items():
            stubs[(notebook.name, gid)] = prints_of(code)
    cells: dict[tuple[str, str], dict[str, object]] = {}
    texts: dict[tuple[str, str, str], str] = {}  # (student, notebook, cell) -> code
    reached: list[dict] = []
    for student, folder in sorted(students.items()):
        for notebook in sorted(folder.glob("*.ipynb")):
            try:
                found = answers(notebook)
            except Exception:  # noqa: BLE001 (an unreadable notebook scored 0 anyway)
                continue
            for gid, code in found.items():
                key = (notebook.name, gid)
                if key not in stubs:
                    continue
                used = reaches(code)
                if used:
                    reached.append({"notebook": notebook.name, "cell": gid,
                                    "student": student, "other": "reaches " + ", ".join(used),
                                    "share": None, "other_share": None,
                                    "code": code[:4000], "other_code": ""})
                try:
                    fp = fingerprint(code, stubs[key])
                except Exception:  # noqa: BLE001
                    continue
                if len(fp.hashes) >= MIN_PRINTS:
                    cells.setdefault(key, {})[student] = fp
                    texts[(student, *key)] = code[:4000]
    rows = []
    modules = package_prints(package)
    for (notebook, gid), by_student in sorted(cells.items()):
        for student, fp in sorted(by_student.items()):
            best = max(((share(fp, m)[0], name) for name, m in modules.items()),
                       default=(0.0, ""))
            if best[0] >= FLAG:
                rows.append({"notebook": notebook, "cell": gid, "student": student,
                             "other": best[1], "share": round(best[0], 3),
                             "other_share": None,
                             "code": texts[(student, notebook, gid)], "other_code": ""})
        for (a, fa), (b, fb) in itertools.combinations(sorted(by_student.items()), 2):
            in_a, in_b = share(fa, fb)
            if min(in_a, in_b) >= FLAG:
                rows.append({"notebook": notebook, "cell": gid, "student": a, "other": b,
                             "share": round(in_a, 3), "other_share": round(in_b, 3),
                             "code": texts[(a, notebook, gid)],
                             "other_code": texts[(b, notebook, gid)]})
    return rows + reached


def main(argv: list[str]) -> int:
    done, release, assignment, package = (Path(a) for a in argv[:4])
    students = {d.name: d / "autograded" / str(assignment) for d in sorted(done.iterdir())
                if (d / "autograded" / str(assignment)).is_dir()
                and not (d / "autograded").is_symlink()}
    print(json.dumps(pairs(students, release, package)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def write(out: Path, rows: list[dict]) -> None:
    """OUT/similarity.csv: one row per pair (no cell a spreadsheet runs)."""
    import pandas as pd

    from autograder.scoring.safe_csv import write_csv

    columns = ["notebook", "cell", "student", "other", "share", "other_share"]
    write_csv(pd.DataFrame([{c: r[c] for c in columns} for r in rows], columns=columns),
              out / "similarity.csv")


def notes(out: Path) -> dict[str, str]:
    """student -> one note for the grade sheet, from OUT/similarity.csv."""
    import pandas as pd

    path = out / "similarity.csv"
    if not path.is_file():
        return {}
    found: dict[str, list[str]] = {}
    for row in pd.read_csv(path, dtype=str).fillna("").itertuples():
        if row.other.startswith("reaches "):
            found.setdefault(row.student, []).append(f"{row.notebook} {row.cell} {row.other}")
            continue
        what = (f"{row.notebook} {row.cell} close to {row.other}")
        found.setdefault(row.student, []).append(what)
        if not row.other.startswith("ragkit/"):
            found.setdefault(row.other, []).append(
                f"{row.notebook} {row.cell} close to {row.student}")
    return {s: "looks copied, for a person to judge: " + "; ".join(w)
            for s, w in found.items()}
