"""Plausible student mistakes lose points, and only in their own task.

Every mutant in autograder/testbed/mistakes/ is one slip in one solution cell of a
master (autograder/testbed/mutants.py). Its notebook is run in a real kernel with all
its tests, hidden ones included, and scored as nbgrader scores it.
"""
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
import mutants  # noqa: E402

MUTANTS = mutants.load_mutants()


def sample(every: list) -> list:
    """The mutants `make test` grades: the first mistake of one task per
    notebook, taking turns down the notebooks in order between the first task
    (a slip there must not cost the later tasks, which are graded with
    reference pieces swapped in) and the last (its tests must catch it on
    their own), and each mistake that also patches the package (the attack
    the private reference copy stops). `make mutants` (RAGKIT_ALL_MUTANTS=1)
    grades all of them; they take about 7 s each, too long for every run of
    the suite."""
    if os.environ.get("RAGKIT_ALL_MUTANTS") == "1":
        return every
    tasks: dict[str, list[str]] = {}
    for m in every:
        if m.cell not in tasks.setdefault(m.notebook, []):
            tasks[m.notebook].append(m.cell)
    ends = {(nb, cells[0] if i % 2 == 0 or nb == "quiz" else cells[-1])
            for i, (nb, cells) in enumerate(sorted(tasks.items()))}
    seen, chosen = set(), []
    for m in every:
        key = (m.notebook, m.cell)
        if (key in ends and key not in seen) or "ragkit." in m.mistake:
            chosen.append(m)
        seen.add(key)
    return chosen


GRADED = sample(MUTANTS)


def task_cells(notebook: str) -> dict[str, set[str]]:
    """solution grade_id -> the graded cells that follow it, up to the next task."""
    nb = nbformat.read(mutants.master_path(notebook), as_version=4)
    tasks, current = {}, None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":  # a written answer is marked by a person
            continue
        if meta.get("solution"):
            current = meta["grade_id"]
            tasks[current] = set()
        elif meta.get("grade") and current:
            tasks[current].add(meta["grade_id"])
    return tasks


@pytest.fixture(scope="module")
def scores():
    """Every mutant scored once, two kernels at a time, each in its own
    process (the judge swaps sys.stdout while a test cell runs)."""
    with ProcessPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(mutants.score, GRADED))
    return dict(zip(GRADED, rows))


def test_there_are_three_mutants_for_every_task():
    """source/README.md asks for three plausible mistakes per task."""
    notebooks = sorted({m.notebook for m in MUTANTS})
    assert notebooks, "no mutants found in autograder/testbed/mistakes/"
    for notebook in notebooks:
        for task in task_cells(notebook):
            n = sum(m.notebook == notebook and m.cell == task for m in MUTANTS)
            assert n >= 3, f"{notebook}: task {task} has {n} mutant(s), needs 3"


@pytest.mark.parametrize("mutant", GRADED, ids=lambda m: f"{m.notebook}:{m.mistake}")
def test_a_mistake_costs_points_only_in_its_own_task(scores, mutant):
    """The slip is caught, and no later task is charged for it again."""
    row = scores[mutant]
    assert row["failed"], f"{mutant.mistake!r} passed every test of {mutant.notebook}"
    assert row["kept"] < row["possible"]
    own = task_cells(mutant.notebook)[mutant.cell]
    assert set(row["failed"]) <= own, (
        f"{mutant.mistake!r} in {mutant.cell} also failed {sorted(set(row['failed']) - own)}")


def test_a_mutant_must_change_the_master():
    """A mutant whose text is not in its solution cell is an error, not a pass."""
    bad = mutants.Mutant("03_indexing", "nb03_chunk_fixed", "typo", "no such text", "x")
    nb = nbformat.read(mutants.master_path("03_indexing"), as_version=4)
    with pytest.raises(ValueError, match="must occur once"):
        mutants.mutate(nb, bad)
