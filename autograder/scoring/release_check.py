"""A submission read against the release before grading (missing,
unknown, unreadable notebooks; deleted, duplicated or retyped graded cells),
and the autograded notebooks read afterwards (limits hit, a setup cell that
failed, hidden tests in the feedback, files copied from the masters)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import nbformat

from autograder.intake.intake import MB, digest
from autograder.run.nbgrader_cli import STUDENT_OWN
from autograder.run.python_tree import parse, transform


HIDDEN_MARK = "BEGIN HIDDEN TESTS"


# notebook -> grade_id -> (cell type, is it a graded cell), read from the release
# (and the nbgrader metadata a student might edit: points, grade, solution)
ReleaseCells = dict[str, dict[str, tuple[str, bool, dict]]]


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
    (lambda e: e["ename"] == "CountingTurnedOff",
     "tests a function that ran with the counting of ragkit's calls switched off; "
     "scored 0"),
    (lambda e: e["ename"] == "NotData",
     "answered with something that is not plain data; scored 0"),
    (lambda e: e["ename"] == "TooLarge",
     "needed a value too large to send between the kernel and the judge (more "
     "than 32 MB of JSON); scored 0"),
    (lambda e: e["ename"] == "LoopEnded",
     "the kernel stopped answering the judge before the test ended; scored 0"),
    (lambda e: e["ename"] == "GraderFault",
     "the grader itself failed on this test (see the student's log); scored 0 "
     "until an instructor grades it again"),
]


OUTPUT_STOPPED = "[output stopped:"  # rag_feedback.GuardedExecute's notes


NOTEBOOK_OUTPUT_STOPPED = "[notebook output stopped:"


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
                     max_cells: int | None = None, masters: Path | None = None
                     ) -> tuple[list[str], list[str]]:
    """What is wrong with one student's assignment folder, in plain words,
    and the names of the notebooks that cannot be read at all (or are too
    large, or hold more than `max_cells` cells: those are not run). With
    `masters`, a cell of the student's that redefines a name the tests take
    from the master's locked cells is named too."""
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
                if meta and (gid is not None or any(
                        meta.get(k) for k in ("grade", "solution", "locked", "task"))):
                    # a cell copied from another notebook, or labelled by hand:
                    # nbgrader would stop on it (KeyError 'grade_id') and fail
                    # the student's whole assignment; it is the student's own cell
                    label = f"{gid!r}" if gid is not None else str(index)
                    problems.append(f"{name}: cell {label} carries nbgrader labels of "
                                    "no cell of this notebook; graded as your own cell")
                    del nb.cells[index].metadata["nbgrader"]
                    repaired = True
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
        if masters is not None and (masters / name).exists():
            for where, helper in redefined(nb, test_helpers(masters / name)):
                shown = f"{where!r}" if not where.isdigit() else where
                problems.append(f"{name}: cell {shown} redefines {helper}, which the tests "
                                "take from a cell you cannot edit; graded with that cell's")
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


def hidden_code_shown(feedback: Path, masters: Path) -> list[str]:
    """A line for each feedback page that shows a line of its master's hidden
    tests (the marker, or any line that only a hidden test holds)."""
    from html import unescape

    from autograder.run.rag_feedback import secret_lines
    found = []
    for page in sorted(feedback.rglob("*.html")):
        text = unescape(page.read_text(encoding="utf-8"))
        master = masters / f"{page.stem}.ipynb"
        secret = secret_lines(nbformat.read(master, as_version=4)) if master.exists() else set()
        if HIDDEN_MARK in text or any(line in text for line in secret):
            found.append(f"{page.name}: feedback shows hidden tests")
    return found


def parsed(source: str) -> ast.Module | None:
    """A cell's code as a tree, read as the judge reads it (IPython's magics
    become calls), or None when it is not Python."""
    try:
        return parse(transform(source))
    except (SyntaxError, ValueError):
        return None


def bindings(tree: ast.Module) -> dict[str, str]:
    """Each name the code binds in the notebook's namespace (outside any
    function or class), and how: `import module.name` for an import (the
    same object whoever imports it), `code` for anything else."""
    found: dict[str, str] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = "code"
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = (
                    f"import {a.name}" if a.asname or "." not in a.name
                    else f"import {a.name.split('.')[0]}")
            return
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                found[a.asname or a.name] = f"import {node.module}.{a.name}"
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found[node.id] = "code"
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in tree.body:
        visit(stmt)
    return found


@functools.lru_cache(maxsize=None)
def test_helpers(master: Path) -> dict[str, str]:
    """The names that the master's test cells read and that only its locked
    cells (its setup, never a task) bind, with how they bind them: what a
    student must not swap for their own to pass a test."""
    nb = nbformat.read(master, as_version=4)
    locked, tasks, read = {}, set(), set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or (tree := parsed(cell.source)) is None:
            continue
        if meta.get("grade") and meta.get("locked"):  # what it reads and does not bind
            read |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load)} - set(bindings(tree))
        elif meta.get("locked"):
            locked.update(bindings(tree))
        else:
            tasks |= set(bindings(tree))
    return {name: how for name, how in locked.items() if name in read and name not in tasks}


def redefined(nb: nbformat.NotebookNode, helpers: dict[str, str]) -> list[tuple[str, str]]:
    """(cell, name) for each cell the student can edit that binds one of
    `helpers` differently from the master's locked cells."""
    found = []
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("locked") or (tree := parsed(cell.source)) is None:
            continue
        where = meta.get("grade_id") or f"{index + 1}"
        for name, how in sorted(bindings(tree).items()):
            if name in helpers and (how == "code" or how != helpers[name]):
                found.append((where, name))
    return found
