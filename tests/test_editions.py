"""The lab's core path: every part marked, 32 points of core, and a core-only
release (make build CORE=1) that validates and is graded as released."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
from autograder.scoring import editions  # noqa: E402
from make_sample_class import fill, master_answers  # noqa: E402
from autograder.run.rag_feedback import BEGIN, PART_HEADING, nbgrader_meta  # noqa: E402

LAB = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
GRADE = ROOT / "autograder" / "commands" / "grade.py"
VALIDATE = ROOT / "autograder" / "check" / "validate.py"
# the pipeline end to end, one idea a part, as issue 56 and the README's core
# path list them: the window step, the BM25 term, the RRF sum, MaxSim's max
# then sum, the loop's round limit, the metric's cut-off
CORE_TASKS = {"nb03_chunk_fixed", "nb04_bm25_scores", "nb04_rrf", "nb05_maxsim",
              "nb06_agent_answer", "nb07_hit_recall"}
CORE_POINTS = 6 + 7 + 3 + 5 + 6 + 5  # 03 A, 04 B, 04 D, 05 B, 06 F, 07 A


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("master", LAB, ids=lambda p: p.stem)
def test_every_part_is_marked_in_its_heading_and_on_its_solution_cells(master):
    nb = read(master)
    headings = [m.group(0) for c in nb.cells if c.cell_type == "markdown"
                for m in PART_HEADING.finditer(c.source)]
    marks = editions.heading_paths(nb)
    assert headings and len(marks) == len(headings), (
        f"{master.name}: every '## Part X (N points)' heading ends in '· core' or "
        f"'· extension' ({len(marks)} of {len(headings)} do)")
    paths = editions.cell_paths(nb)
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            said = cell.metadata.get("course", {}).get("path")
            assert said == paths[meta["grade_id"]], (
                f"{master.name} {meta['grade_id']}: metadata says {said!r}, its "
                f"heading {paths[meta['grade_id']]!r}")
            assert (said == editions.CORE) == (meta["grade_id"] in CORE_TASKS), meta["grade_id"]


def test_the_core_path_is_its_six_parts_points_of_the_labs_total():
    by_path = [editions.points_by_path(read(m)) for m in LAB]
    core = sum(p[editions.CORE] for p in by_path)
    total = sum(sum(p.values()) for p in by_path)
    points = sum(float(nbgrader_meta(c).get("points", 0)) for m in LAB for c in read(m).cells
                 if nbgrader_meta(c).get("grade"))
    assert (core, total) == (CORE_POINTS, points)


@pytest.mark.parametrize("master", LAB, ids=lambda p: p.stem)
def test_the_core_edition_grades_only_core_parts_and_keeps_no_hidden_test(master):
    nb = read(master)
    paths = editions.cell_paths(nb)
    core = editions.core_edition(nb)
    assert core.metadata["course"]["edition"] == editions.CORE
    assert nbformat.writes(editions.core_edition(nb)) == nbformat.writes(core)  # same bytes
    graded = {nbgrader_meta(c)["grade_id"] for c in core.cells if nbgrader_meta(c).get("grade")}
    assert graded == {g for g, p in paths.items() if p == editions.CORE
                      and nbgrader_meta(next(c for c in nb.cells
                                             if nbgrader_meta(c).get("grade_id") == g)).get("grade")}
    assert not [c for c in core.cells if BEGIN in c.source and not nbgrader_meta(c).get("grade")]
    # a core part's cells are the master's, unchanged
    before = {nbgrader_meta(c).get("grade_id"): c.source for c in nb.cells}
    for cell in core.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if paths.get(gid) == editions.CORE:
            assert cell.source == before[gid]
    # an extension's solution is given, without nbgrader's markers
    for gid, path in paths.items():
        if path == editions.EXTENSION and nbgrader_meta(
                next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == gid)).get("solution"):
            worked = [c for c in core.cells if c.get("id") == next(
                c for c in nb.cells if nbgrader_meta(c).get("grade_id") == gid).get("id")]
            assert len(worked) == 1 and "SOLUTION" not in worked[0].source
            assert "raise NotImplementedError" not in worked[0].source


@pytest.fixture(scope="module")
def core_release(tmp_path_factory):
    """`build.py --core` into a folder, with a copy of source/ beside it (so
    grade.py finds the release built from those masters)."""
    out = tmp_path_factory.mktemp("core")
    subprocess.run([sys.executable, str(ROOT / "tools" / "build.py"), "--core",
                    "--only", "release", "--out", str(out)], check=True,
                   capture_output=True, text=True)
    subprocess.run(["cp", "-r", str(ROOT / "source"), str(out / "source")], check=True)
    return out


def filled(core_release: Path, stem: str) -> nbformat.NotebookNode:
    """The core release of `stem` with the master's answers in its core parts."""
    nb = read(core_release / "release" / "lab" / f"{stem}.ipynb")
    fill(nb, master_answers(ROOT / "source" / "lab" / f"{stem}.ipynb"))
    return nb


def test_a_core_release_validates(core_release, tmp_path):
    """Once its core parts are answered, the released notebook passes every
    check, its one core part's row only (the worked parts run, ungraded);
    the blank one scores nothing when graded, below."""
    (tmp_path / "done" / "lab").mkdir(parents=True)
    nbformat.write(filled(core_release, "05_reranking"),
                   tmp_path / "done" / "lab" / "05_reranking.ipynb")
    done = subprocess.run([sys.executable, str(VALIDATE), str(tmp_path / "done" / "lab")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split()[1:3] for line in done.stdout.splitlines()
            if line.strip().startswith("05_reranking  Part")]
    assert rows == [["Part", "B"]], done.stdout  # C, the reranker, is an extension now


def test_a_core_release_is_graded_as_released(core_release, tmp_path):
    """grade.py finds the core edition beside the masters: a student who
    answered the core parts gets all of the notebook's points, which are its
    core points only; a blank notebook gets none."""
    subs = tmp_path / "subs"
    for student, nb in (("corey", filled(core_release, "05_reranking")),
                        ("blank", read(core_release / "release" / "lab" / "05_reranking.ipynb"))):
        (subs / student / "lab").mkdir(parents=True)
        nbformat.write(nb, subs / student / "lab" / "05_reranking.ipynb")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(GRADE), "--submissions", str(subs),
                           "--out", str(out), "--source", str(core_release / "source"),
                           "--notebook", "05_reranking", "--no-report"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "grading the core edition" in proc.stdout
    scores = pd.read_csv(out / "scores.csv").set_index("student")
    want = editions.points_by_path(read(ROOT / "source" / "lab" / "05_reranking.ipynb"))
    corey, blank = scores.loc["corey"], scores.loc["blank"]
    assert (corey.score, corey.max_score) == (want[editions.CORE], want[editions.CORE])
    assert (corey.core, corey.core_max, corey.extension_max) == (
        want[editions.CORE], want[editions.CORE], 0)
    assert (blank.score, blank.core) == (0, 0)
