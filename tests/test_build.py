"""The committed release/ and notebooks/ are what the masters build today,
and a build gives the same bytes on any machine the README allows."""
import ast
import json
import platform
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
EVERY_MASTER = sorted((ROOT / "source").glob("*/*.ipynb"))  # lab, quiz, project
PRACTICE = "quiz_practice.ipynb"  # the practice quiz (tools/build_practice_quiz.py), always built


def notebook_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.ipynb"))


def test_there_are_lab_masters_and_no_outputs_in_them():
    """Masters are edited by hand and carry no outputs (the reading edition has them)."""
    assert len(MASTERS) >= 2
    for path in EVERY_MASTER:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [], f"{path.name}: master cell has outputs"
                assert cell.execution_count is None


def test_release_is_not_stale(fresh_build):
    """release/ equals, byte for byte, what nbgrader generate_assignment makes now."""
    committed, rebuilt = ROOT / "release", fresh_build / "release"
    assert notebook_files(committed) == notebook_files(rebuilt)
    for rel in notebook_files(rebuilt):
        assert (committed / rel).read_bytes() == (rebuilt / rel).read_bytes(), \
            f"release/{rel} is stale: run `make build`"


def test_reading_edition_is_not_stale(fresh_build):
    """notebooks/ has the masters' current cells (nbval checks that every
    notebook's outputs are what a fresh run prints), and the notebook built
    afresh here has the same outputs."""
    committed, rebuilt = ROOT / "notebooks", fresh_build / "notebooks"
    assert notebook_files(committed) == sorted([m.name for m in MASTERS] + [PRACTICE])
    for master in MASTERS:
        old = nbformat.read(committed / master.name, as_version=4)
        new = nbformat.read(master, as_version=4)
        assert [c.source for c in old.cells] == [c.source for c in new.cells], \
            f"notebooks/{master.name}: cell sources are stale: run `make build`"
    assert notebook_files(rebuilt) == [MASTERS[0].name]
    for name in notebook_files(rebuilt):
        old = nbformat.read(committed / name, as_version=4)
        new = nbformat.read(rebuilt / name, as_version=4)
        for i, (a, b) in enumerate(zip(old.cells, new.cells)):
            if a.cell_type == "code":
                assert json.dumps(a.outputs, sort_keys=True) == json.dumps(b.outputs, sort_keys=True), \
                    f"notebooks/{name} cell {i}: outputs differ from a fresh run"


def test_build_is_byte_reproducible(fresh_build):
    """A rebuild writes identical bytes, so git only shows real changes."""
    for rel in notebook_files(fresh_build / "notebooks"):
        assert (ROOT / "notebooks" / rel).read_bytes() == \
            (fresh_build / "notebooks" / rel).read_bytes(), f"notebooks/{rel} differs"


def check_cells(path: Path) -> dict[str, str]:
    """grade_id -> source of every check cell of the notebook at `path`."""
    from autograder.run.nbgrader_cli import is_check_cell

    return {c.metadata["nbgrader"]["grade_id"]: c.source
            for c in nbformat.read(path, as_version=4).cells if is_check_cell(c)}


def test_check_cells_are_in_the_reading_edition_and_in_no_release(fresh_build):
    """The check cells that assert the prose's numbers are maintenance code
    for CI: a fresh release (and the committed one) holds none of them, in
    the lab, the quiz or the project, and the reading edition, which CI
    re-executes, holds every one of the lab masters', unchanged."""
    masters = {path: check_cells(path) for path in EVERY_MASTER}
    for path in MASTERS:  # every lab notebook proves its numbers this way
        assert masters[path], f"{path.name}: no check cell found"
    for release in (fresh_build / "release", ROOT / "release"):
        for path in EVERY_MASTER:
            released = release / path.parent.name / path.name
            left = sorted(check_cells(released))
            assert not left, f"{released}: the student's edition keeps check cells {left}"
            # the cells around them are released as before
            assert len(nbformat.read(released, as_version=4).cells) == \
                len(nbformat.read(path, as_version=4).cells) - len(masters[path])
    for folder in (fresh_build / "notebooks", ROOT / "notebooks"):
        for path in MASTERS:
            if (folder / path.name).exists():
                assert check_cells(folder / path.name) == masters[path], \
                    f"{folder / path.name}: the reading edition lost a check cell"
    assert (fresh_build / "notebooks" / MASTERS[0].name).exists()


def test_release_holds_no_solutions_or_hidden_tests():
    """The student edition keeps neither solution code nor hidden tests."""
    markers = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS")
    released = notebook_files(ROOT / "release")
    assert released
    for rel in released:
        text = (ROOT / "release" / rel).read_text(encoding="utf-8")
        assert not markers.search(text), f"release/{rel} leaks a solution or hidden test"


def solution_and_other_lines(nb) -> tuple[set[str], set[str]]:
    """Stripped lines written between the solution markers, and all the others."""
    solution, other = set(), set()
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            else:
                (solution if inside else other).add(line.strip())
    return solution, other


def test_release_keeps_none_of_the_solution_lines():
    """No line written only between the solution markers survives into the release."""
    for master in EVERY_MASTER:
        solution, other = solution_and_other_lines(nbformat.read(master, as_version=4))
        release = ROOT / "release" / master.parent.name / master.name
        released = release.read_text(encoding="utf-8")
        released_nb = nbformat.read(release, as_version=4)
        released_lines = {ln.strip() for c in released_nb.cells for ln in c.source.splitlines()}
        # note: a line that a demo cell also uses (a common loop header) is no leak
        leaked = sorted(ln for ln in (solution - other) & released_lines if len(ln) > 12)
        assert not leaked, f"{master.name}: solution lines kept in the release: {leaked}"
        if solution:
            assert "raise NotImplementedError()" in released


def test_every_grade_cell_has_points_and_a_docstring():
    """Each graded test says what it checks and what it is worth (a quiz's
    check of the answer's form alone is worth 0; its hidden test the point)."""
    for master in EVERY_MASTER:
        nb = nbformat.read(master, as_version=4)
        graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert graded, f"{master.name} has no graded cells"
        for cell in graded:
            meta = cell.metadata["nbgrader"]
            free = meta["grade_id"].startswith("quiz_test_")
            assert meta.get("points", 0) > 0 or (free and meta.get("points") == 0), \
                f"{master.name}:{meta['grade_id']} has no points"
            if cell.cell_type == "code":  # a markdown one is a written answer
                first = cell.source.lstrip().splitlines()[0]
                assert first.startswith('"""'), f"{master.name}:{meta['grade_id']} lacks a docstring"


def kernel_written(version: str, stamp: str) -> nbformat.NotebookNode:
    """A notebook as nbclient leaves it on a machine running Python `version`."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nb.metadata = nbformat.from_dict({
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"codemirror_mode": {"name": "ipython", "version": 3},
                          "file_extension": ".py", "mimetype": "text/x-python",
                          "name": "python", "nbconvert_exporter": "python",
                          "pygments_lexer": "ipython3", "version": version},
        "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {stamp: {}}}},
    })
    cell = nb.cells[0]
    cell.id = "first"
    cell.execution_count = 1
    cell.metadata["execution"] = {"iopub.status.busy": stamp}
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    return nb


def test_the_build_writes_the_same_bytes_on_any_python_311():
    """Debian 12's 3.11.2 and another machine's 3.11.7 give byte-identical notebooks."""
    from tools.build import normalise

    master = {"kernelspec": {"display_name": "Python 3", "language": "python",
                             "name": "python3"}, "language_info": {"name": "python"}}
    debian = nbformat.writes(normalise(kernel_written("3.11.2", "2024-01-01"), master))
    other = nbformat.writes(normalise(kernel_written("3.11.7", "2025-06-30"), master))
    assert debian == other
    assert "3.11" not in debian and "2024" not in debian
    assert json.loads(debian)["metadata"]["language_info"]["pygments_lexer"] == "ipython3"


def test_an_executed_notebook_keeps_no_machine_details(tmp_path, capfd):
    """A real kernel run: no Python version, no timestamps, no encryption warning."""
    from tools.build import execute

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}
    nbformat.write(nb, tmp_path / "tiny.ipynb")
    ran = execute(tmp_path / "tiny.ipynb", cwd=tmp_path)
    assert ran.cells[0].outputs[0]["text"] == "42\n"
    assert "version" not in ran.metadata["language_info"]
    assert "execution" not in ran.cells[0].metadata
    assert ran.metadata["kernelspec"] == nb.metadata["kernelspec"]
    assert "without encryption" not in capfd.readouterr().err


def test_a_timing_cell_is_stored_as_a_note_and_the_rest_as_run(tmp_path):
    """A real kernel run: the output of a cell tagged nbval-ignore-output (a
    timing) becomes a fixed note, so two builds agree; other cells keep theirs."""
    from tools.build import VARIES, VARIES_NOTE, execute

    timed = nbformat.v4.new_code_cell("import time\nprint(time.perf_counter())")
    timed.metadata["tags"] = [VARIES]
    nb = nbformat.v4.new_notebook(cells=[timed, nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}
    nbformat.write(nb, tmp_path / "timed.ipynb")
    first, second = (execute(tmp_path / "timed.ipynb", cwd=tmp_path) for _ in range(2))
    assert [o["text"] for o in first.cells[0].outputs] == [VARIES_NOTE]
    assert nbformat.writes(first) == nbformat.writes(second)
    assert first.cells[1].outputs[0]["text"] == "42\n"


def test_the_reading_edition_stores_no_timing():
    """Every cell a master tags nbval-ignore-output is a timing, and notebooks/
    keeps the note for it, not the seconds of the machine that built it."""
    from tools.build import VARIES, VARIES_NOTE

    tagged = 0
    for master in MASTERS:
        built = nbformat.read(ROOT / "notebooks" / master.name, as_version=4)
        for cell in built.cells:
            if VARIES in cell.metadata.get("tags", []):
                tagged += 1
                assert "perf_counter" in cell.source, \
                    f"{master.name}: {VARIES} on a cell that times nothing"
                assert [o.get("text") for o in cell.outputs] == [VARIES_NOTE]
    assert tagged >= 1


def test_committed_notebooks_name_no_python_version_or_path():
    """notebooks/ and release/ carry no interpreter version, repo path or temp path."""
    version = re.compile(r"\b3\.1\d\.\d+\b")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + \
            sorted((ROOT / "release").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        info = nb.metadata.get("language_info", {})
        assert "version" not in info, f"{path.relative_to(ROOT)}: run `make build`"
        assert not version.search(json.dumps(nb.metadata)), path.name
        text = path.read_text(encoding="utf-8")
        assert platform.python_version() not in text, path.name
        assert str(ROOT) not in text and "/tmp/" not in text, path.name


def test_hidden_cells_of_the_release_show_no_value():
    """nbgrader reads the value a graded cell shows as its score: 0.5 gives half
    the points, a value above the points makes `nbgrader validate` crash. In the
    release a hidden cell ends with its one call, so that call must not show a
    value: write `_ = f(...)`."""
    for path in sorted((ROOT / "release").rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            source = cell.source.strip()
            if not (cell.metadata.get("nbgrader", {}).get("grade")
                    and source.startswith('"""(hidden)')):
                continue
            last = ast.parse(source).body[-1]
            line = source.splitlines()[last.end_lineno - 1].split("#")[0].rstrip()
            assert not isinstance(last, ast.Expr) or line.endswith(";"), (
                f"release/{path.relative_to(ROOT / 'release')} "
                f"{cell.metadata['nbgrader']['grade_id']}: its last line shows a "
                "value, which nbgrader takes for a score: assign it (`_ = ...`)")


def test_reading_edition_figures_are_drawn_at_twice_their_shown_size():
    """Every figure of notebooks/ is a PNG with twice the pixels of the size
    it is shown at (its width and height metadata), so it stays sharp on a
    high-resolution screen."""
    import base64
    import struct

    figures = 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                if "image/png" not in output.get("data", {}):
                    continue
                figures += 1
                png = base64.b64decode(output["data"]["image/png"])
                pixels = struct.unpack(">II", png[16:24])  # the IHDR chunk's size
                shown = output.get("metadata", {}).get("image/png", {})
                assert shown, f"{path.name}: a figure without its shown size (not retina)"
                assert (pixels[0] // 2, pixels[1] // 2) == (shown["width"], shown["height"]), (
                    f"{path.name}: {pixels[0]}x{pixels[1]} pixels shown at "
                    f"{shown['width']}x{shown['height']}")
    assert figures >= 9, f"only {figures} figures in notebooks/"
