"""The grading conventions of source/README.md hold in every master.

Visible and hidden tests sit in separate graded cells (partial credit), every
assertion says what it expected, hidden cross-checks use a private copy of the
package, each task's heading states the points its cells carry, and every
citation has an entry in the notebook's reference list.
"""
import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source").glob("*/*.ipynb"))
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def graded(nb) -> list:
    return [c for c in nb.cells if meta(c).get("grade") and c.cell_type == "code"]


def code_of(source: str) -> str:
    """Cell source with IPython magics commented out, so ast can parse it."""
    return "\n".join("# " + ln if ln.lstrip().startswith(("%", "!")) else ln
                     for ln in source.splitlines())


@pytest.fixture(params=MASTERS, ids=lambda p: p.name)
def master(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_visible_and_hidden_tests_are_separate_cells(master):
    """A graded cell is either all visible or a docstring, a call, then hidden tests."""
    path, nb = master
    for cell in graded(nb):
        gid, src = meta(cell)["grade_id"], cell.source
        if BEGIN not in src:
            assert END not in src and "_hidden_" not in gid, f"{path.name}:{gid}"
            continue
        assert "_hidden_" in gid, f"{path.name}:{gid} mixes hidden tests into a visible cell"
        before, _, rest = src.partition(BEGIN)
        hidden, _, after = rest.partition(END)
        assert after.strip() == "", f"{path.name}:{gid}: code after {END}"
        assert src.count(BEGIN) == 1, f"{path.name}:{gid}: one hidden region per cell"
        lines = [ln for ln in before.splitlines() if ln.strip()]
        assert lines[0].startswith('"""(hidden)'), \
            f"{path.name}:{gid}: the docstring must start with (hidden) and say what is checked"
        assert len(lines) >= 2, \
            f"{path.name}:{gid}: one visible call must make the cell fail while the task is blank"


def test_every_task_has_a_visible_test_before_the_next_task(master):
    """A student can always run some check of the task they just wrote."""
    path, nb = master
    task, seen_visible = None, True
    for cell in nb.cells:
        m = meta(cell)
        if m.get("solution") and not m.get("grade"):  # (a manually graded
            # answer is its own test: a human reads it)
            assert seen_visible, f"{path.name}: task {task} has no visible test cell"
            task, seen_visible = m["grade_id"], False
        elif m.get("grade") and "_hidden_" not in m["grade_id"]:
            seen_visible = True
    assert seen_visible, f"{path.name}: task {task} has no visible test cell"


def test_every_assertion_in_a_graded_cell_explains_itself(master):
    """`assert cond, "what was expected"`: a failing test tells the student why."""
    path, nb = master
    for cell in graded(nb):
        tree = ast.parse(code_of(cell.source))
        bare = [node.lineno for node in ast.walk(tree)
                if isinstance(node, ast.Assert) and node.msg is None]
        assert not bare, f"{path.name}:{meta(cell)['grade_id']}: assert without a message " \
                         f"on line(s) {bare}"


def test_hidden_cross_checks_use_a_private_copy_of_the_package(master):
    """Hidden tests never compare with the `ragkit` the student's kernel can patch."""
    path, nb = master
    for cell in graded(nb):
        hidden = cell.source.partition(BEGIN)[2]
        assert not re.search(r"\bragkit\.", hidden), \
            f"{path.name}:{meta(cell)['grade_id']}: use REF = fresh() in hidden tests"


def test_part_headings_state_the_points_of_their_cells(master):
    """`## Part X (N points)` equals the points of the graded cells under it."""
    path, nb = master
    heading, claimed, totals = None, {}, {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.search(r"^## (Part [A-Z]|Question \d+) \((\d+) points?\)",
                              cell.source, re.M)
            if found:
                heading = found.group(1)
                claimed[heading] = int(found.group(2))
                totals[heading] = 0
        if meta(cell).get("grade") and heading:  # code, or a written answer
            totals[heading] += meta(cell)["points"]
    assert claimed, f"{path.name}: no '## Part X (N points)' or '## Question N (1 point)' headings"
    assert totals == claimed, f"{path.name}: points per part {totals}, headings say {claimed}"


def test_every_citation_is_in_the_notebooks_reference_list(master):
    """Each [n] in the prose has an entry under ## References, and no entry is unused."""
    path, nb = master
    prose = [c.source for c in nb.cells if c.cell_type == "markdown"]
    refs = [s for s in prose if s.startswith("## References")]
    assert len(refs) == 1, f"{path.name}: needs one '## References' cell"
    body = "\n".join(s for s in prose if not s.startswith("## References"))
    body = re.sub(r"`[^`]*`|\$[^$]*\$", "", body)  # code and maths are not citations
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    listed = {int(n) for n in re.findall(r"^- \[(\d+)\]", refs[0], re.M)}
    assert cited == listed, f"{path.name}: cited {sorted(cited)}, listed {sorted(listed)}"


def test_every_notebook_ends_with_summary_exercises_and_discussion(master):
    """The closing sections of source/README.md are there, in order (in the
    lab's notebooks; the quiz and the project end with their references)."""
    path, nb = master
    if path.parent.name != "lab":
        pytest.skip("the closing sections are the lab's")
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    places = [prose.find(h) for h in ("## Summary", "## Exercises",
                                      "## Discussion questions", "## References")]
    assert -1 not in places and places == sorted(places), \
        f"{path.name}: expected Summary, Exercises, Discussion questions, References"


def test_the_visible_call_of_a_hidden_cell_shows_no_value(master):
    """nbgrader reads a number shown by a graded cell as its partial credit."""
    path, nb = master
    for cell in graded(nb):
        head = cell.source.partition(BEGIN)[0]
        shown = [node.lineno for node in ast.parse(code_of(head)).body
                 if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)]
        if BEGIN in cell.source:
            assert not shown, f"{path.name}:{meta(cell)['grade_id']}: assign the call " \
                              f"(`_ = ...`) on line(s) {shown}"
