"""Plausible student mistakes, and what each one costs.

    python autograder/testbed/mutants.py [--only NOTEBOOK_STEM] [--source DIR]

Each mutant takes a master, makes one small change to one solution cell (the
kind of slip a student makes), executes the notebook in a real kernel with
all its tests, hidden ones included, through grade.py's own execute step
(its test cells in the judge, judge.py), and scores it the way `nbgrader
autograde` does: a graded test cell earns its points when it runs without an
error. The table shows, per mutant, the points kept of the points possible
and which graded cells failed.

tests/test_mutants.py asserts the two grading rules on every mutant: the
mistake costs points, and it costs them only in the cells of the task it was
made in (one mistake costs once; later tasks are graded with the reference).
Mutants for notebook NN live in autograder/testbed/mistakes/NN_topic.py as a list
MUTANTS of Mutant(...) entries (Mutant is predefined there); add three or more for every
new task (source/README.md).
"""
from __future__ import annotations

import argparse
import sys
import functools
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
from autograder.run.cell_limit import CELL_TIMEOUT  # noqa: E402
from autograder.run.nbgrader_cli import nbgrader_settings  # noqa: E402
from autograder.run.rag_feedback import GuardedExecute  # noqa: E402

SOURCE = ROOT / "source"
MISTAKES = Path(__file__).resolve().parent / "mistakes"


@dataclass(frozen=True)
class Mutant:
    notebook: str   # stem of the master, e.g. "03_indexing"
    cell: str       # grade_id of the solution cell that is changed
    mistake: str    # what the student got wrong, in words
    old: str        # text in that cell (must occur exactly once)
    new: str        # what the student wrote instead


def load_mutants(folder: Path = MISTAKES) -> list[Mutant]:
    """Every MUTANTS list of autograder/testbed/mistakes/NN_topic.py, in file order."""
    found = []
    for path in sorted(folder.glob("*.py")):
        namespace = {"Mutant": Mutant}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
        found += namespace["MUTANTS"]
    return found


def mutate(nb: nbformat.NotebookNode, mutant: Mutant) -> nbformat.NotebookNode:
    """A copy of `nb` with the mutant's change made in its solution cell."""
    nb = nbformat.from_dict(nb)
    cells = [c for c in nb.cells
             if c.metadata.get("nbgrader", {}).get("grade_id") == mutant.cell]
    if len(cells) != 1 or not cells[0].metadata["nbgrader"].get("solution"):
        raise ValueError(f"{mutant.notebook}: no solution cell {mutant.cell!r}")
    cell = cells[0]
    if cell.source.count(mutant.old) != 1:
        raise ValueError(f"{mutant.notebook}/{mutant.cell}: the text to change for "
                         f"{mutant.mistake!r} must occur once (found "
                         f"{cell.source.count(mutant.old)} times)")
    cell.source = cell.source.replace(mutant.old, mutant.new)
    return nb


def graded_cells(nb: nbformat.NotebookNode) -> dict[str, float]:
    """grade_id -> points of every graded test cell, in notebook order."""
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def run(nb: nbformat.NotebookNode, cwd: Path) -> dict[str, bool]:
    """Execute every cell as the grader does (graded test cells in the judge,
    rag_feedback.GuardedExecute), errors allowed; grade_id -> did the graded
    cell pass."""
    step = GuardedExecute(timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=True,
                          config=nbgrader_settings())
    nb, _ = step.preprocess(nb, {"metadata": {"path": str(cwd)}})
    passed = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            passed[meta["grade_id"]] = not any(
                o.output_type == "error" for o in cell.get("outputs", []))
    return passed


def master_path(notebook: str, source: Path = SOURCE) -> Path:
    """source/<assignment>/<notebook>.ipynb, whichever assignment holds it."""
    found = sorted(source.glob(f"*/{notebook}.ipynb"))
    if len(found) != 1:
        raise ValueError(f"notebook {notebook!r}: expected one master in {source}/*/, "
                         f"found {len(found)}")
    return found[0]


def score(mutant: Mutant, source: Path = SOURCE) -> dict:
    """Points kept by one mutant, and the graded cells that failed."""
    path = master_path(mutant.notebook, source)
    master = nbformat.read(path, as_version=4)
    points = graded_cells(master)
    passed = run(mutate(master, mutant), cwd=path.parent)
    failed = [gid for gid, ok in passed.items() if not ok]
    return {"notebook": mutant.notebook, "cell": mutant.cell, "mistake": mutant.mistake,
            "kept": sum(points[g] for g in passed if passed[g]),
            "possible": sum(points.values()), "failed": failed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Score the mutant solutions.")
    parser.add_argument("--only", help="notebook stem, e.g. 03_indexing")
    parser.add_argument("--source", type=Path, default=SOURCE,
                        help="folder of the assignments' masters (default: source/)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    chosen = [m for m in load_mutants() if args.only in (None, m.notebook)]
    # processes, not threads: the judge swaps sys.stdout while a test cell
    # runs, and two threads doing that at once can leave this table unprinted
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(functools.partial(score, source=args.source.resolve()), chosen))
    for row in rows:
        print(f"{row['kept']:5g} / {row['possible']:<4g} {row['notebook']:15s} "
              f"{row['mistake']:45s} failed: {', '.join(row['failed']) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
