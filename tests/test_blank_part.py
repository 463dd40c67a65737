"""A part left blank costs its own points and nothing else, in both editions.

The later parts of a notebook call the earlier parts' functions; their test
cells swap the reference in (tests/test_one_slip.py reads that from the
masters). Here it is graded for real: a master with one earlier part left
as the release gives it (its stub raising NotImplementedError) runs through
the grader's execute step (graded cells in the judge), and must keep every
point but that part's. In the core edition a worked extension part that a
student rewrites and leaves unfinished costs nothing at all, since it is
worth nothing there. The cases are the ones issue 30 found charged twice.
"""
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
import mutants  # noqa: E402
from autograder.scoring.editions import answer_code, core_edition  # noqa: E402
from autograder.run.rag_feedback import nbgrader_meta, parts_of  # noqa: E402

# (notebook, the solution cell left blank, edition)
CASES = [("04_retrievers", "nb04_bm25_idf", "full"),
         ("05_reranking", "nb05_maxsim", "full"),
         ("07_measuring", "nb07_mrr", "full"),
         ("04_retrievers", "nb04_bm25_idf", "core"),
         ("05_reranking", "nb05_token_vectors", "core")]


def stub_of(notebook: str, gid: str) -> str:
    """The solution cell as the full edition's release gives it."""
    release = nbformat.read(ROOT / "release" / "lab" / f"{notebook}.ipynb", as_version=4)
    [cell] = [c for c in release.cells if nbgrader_meta(c).get("grade_id") == gid]
    assert "NotImplementedError" in cell.source, f"{gid}: the release has no stub"
    return cell.source


def blanked(notebook: str, gid: str, edition: str):
    """The master (or its core edition) with the cell `gid` as the release
    gives it, and the grade_ids of its part's test cells in the master."""
    master = nbformat.read(ROOT / "source" / "lab" / f"{notebook}.ipynb", as_version=4)
    [part] = [p for p in parts_of(master)
              if any(nbgrader_meta(master.cells[i]).get("grade_id") == gid for i in p.answers)]
    own = {nbgrader_meta(master.cells[i])["grade_id"] for i in part.tests}
    nb = core_edition(master) if edition == "core" else master
    # a worked part's cell has lost its nbgrader id in the core edition: it is
    # the cell whose code the master's solution gives
    answer = answer_code(next(c.source for c in master.cells
                              if nbgrader_meta(c).get("grade_id") == gid))
    [target] = [c for c in nb.cells if c.cell_type == "code" and
                (nbgrader_meta(c).get("grade_id") == gid or c.source == answer)]
    target.source = stub_of(notebook, gid)
    return nb, own


def grade(case):
    nb, own = blanked(*case)
    points = mutants.graded_cells(nb)
    passed = mutants.run(nb, cwd=ROOT / "source" / "lab")
    return {"points": points, "failed": sorted(g for g, ok in passed.items() if not ok),
            "own": sorted(own & set(points))}


@pytest.fixture(scope="module")
def graded():
    with ProcessPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(grade, CASES)))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0][:2]}-{c[1]}-{c[2]}")
def test_a_blank_part_costs_its_own_points_only(graded, case):
    row = graded[case]
    notebook, gid, edition = case
    kept = sum(p for g, p in row["points"].items() if g not in row["failed"])
    promised = sum(row["points"].values()) - sum(row["points"][g] for g in row["own"])
    assert row["failed"] == row["own"], (
        f"{notebook} ({edition} edition) with {gid} left blank: only its own part's "
        f"cells {row['own']} may fail; failed {row['failed']}")
    assert kept == promised, f"{notebook}: kept {kept} of the promised {promised}"
    if edition == "full":
        assert row["own"], f"{gid}: its own part has graded cells, which must fail"
