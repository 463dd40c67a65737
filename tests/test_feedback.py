"""The feedback page a student receives: points per part first, hidden code never.

Most tests run rag_feedback.py's preprocessors on small notebooks built here,
shaped like what `nbgrader autograde` leaves (GetGrades' score on each graded
cell). The last one grades one submission for real with autograder/commands/grade.py
and reads the HTML page it writes.
"""
import html
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbconvert.filters import markdown2html
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.run.rag_feedback import (  # noqa: E402
    BEGIN, NO_ALT, PartSummary, RedactHiddenTests, cut_hidden, is_hidden, nbgrader_meta,
    parts_of)

MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
HIDDEN_LINE = "assert secret_reference(3) == 9, 'cubes are not squares'"


def graded(gid, source, points, score, outputs=()):
    cell = new_code_cell(source, outputs=list(outputs), execution_count=1)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": gid, "locked": True,
                                 "points": points, "score": score, "solution": False,
                                 "schema_version": 3, "task": False}
    return cell


def answer(gid, source):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": gid, "locked": False,
                                 "solution": True, "schema_version": 3, "task": False}
    return cell


def error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue,
                      traceback=[f"Traceback quoting {HIDDEN_LINE}", f"{ename}: {evalue}"])


def graded_notebook():
    """Two parts as autograde leaves them: Part A loses its hidden point,
    Part B its only test (to text on stderr, which nbgrader scores 0)."""
    return new_notebook(cells=[
        new_markdown_cell("# 99 · A small lab"),
        graded("nb99_test_setup", '"""A check above every part."""\nassert True', 1, 1),
        new_markdown_cell("## Part A (3 points)\nWrite `square`."),
        answer("nb99_square", "def square(x):\n    return x * x"),
        graded("nb99_test_square", '"""Small squares."""\nassert square(2) == 4', 2, 2),
        graded("nb99_hidden_square",
               f'"""(hidden) negative numbers and cubes."""\nsquare(1)\n{BEGIN}\n'
               f"{HIDDEN_LINE}\n### END HIDDEN TESTS", 1, 0,
               [error("AssertionError", "on 1 of 40 numbers <0 the result differs")]),
        new_markdown_cell("## 2. Another section\n\nText.\n\n## Part B (2 points)"),
        answer("nb99_halve", "def halve(x):\n    return x // 2"),
        graded("nb99_test_halve", '"""Halves."""\nhalve(3)', 2, 0,
               [new_output("stream", name="stderr", text="DeprecationWarning: old\n")]),
    ])


def run_chain(nb):
    resources = {}
    for pre in (RedactHiddenTests(), PartSummary()):
        nb, resources = pre.preprocess(nb, resources)
    return nb


def plain(text: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def test_parts_follow_the_headings_above_the_graded_cells():
    """A heading may share a cell with a section title; early cells get their own part."""
    nb = graded_notebook()
    parts = parts_of(nb)
    assert [p.name for p in parts] == ["before Part A", "Part A", "Part B"]
    assert [p.tests for p in parts] == [[1], [4, 5], [8]]
    assert [p.answers for p in parts] == [[], [3], [7]]
    assert is_hidden(nb.cells[5]) and not is_hidden(nb.cells[4])


def test_summary_is_the_first_cell_with_points_per_part():
    """Earned of possible for each part and the total, before the notebook's title."""
    nb = run_chain(graded_notebook())
    first = nb.cells[0]
    assert first.cell_type == "markdown" and nb.cells[1].source == "# 99 · A small lab"
    text = plain(first.source)
    assert "Part A 2 / 3" in text, text
    assert "Part B 0 / 2" in text, text
    assert "before Part A 1 / 1 all checks passed" in text, text
    assert "Total 3 / 6" in text, text


def test_summary_names_the_failing_check_and_its_message():
    """The message is the error's last line; a hidden test is marked hidden."""
    text = plain(run_chain(graded_notebook()).cells[0].source)
    assert ("nb99_hidden_square (hidden test): AssertionError: on 1 of 40 numbers <0 "
            "the result differs") in text, text
    assert "nb99_test_halve (test): wrote to stderr (graded as a failure): " \
        "DeprecationWarning: old" in text, text


def test_summary_escapes_messages_and_survives_markdown():
    """A '<' in a message is escaped, and the table renders as one HTML table."""
    source = run_chain(graded_notebook()).cells[0].source
    assert "numbers &lt;0" in source
    assert "\n\n" not in source  # a blank line would end the HTML block
    rendered = markdown2html(source)
    assert rendered.count("<table") == 1 and rendered.count("<tr>") == 5
    assert 'href="#nb99_hidden_square"' in rendered


def test_no_hidden_code_reaches_the_page():
    """The hidden region and any traceback quoting it are gone; the docstring stays."""
    nb = run_chain(graded_notebook())
    everything = nbformat.writes(nb)
    assert HIDDEN_LINE not in everything
    assert BEGIN not in everything
    assert "(hidden) negative numbers and cubes." in everything


def test_a_notebook_without_graded_cells_gets_no_summary():
    """Nothing to sum up: the page starts with the notebook itself."""
    nb = new_notebook(cells=[new_markdown_cell("# notes only")])
    assert len(run_chain(nb).cells) == 1


def hidden_lines(master: Path) -> list[str]:
    """Every line of hidden test code in `master` long enough to be telling."""
    lines, inside = [], False
    for cell in nbformat.read(master, as_version=4).cells:
        for line in cell.source.splitlines():
            if line.strip() == BEGIN:
                inside = True
            elif line.strip() == "### END HIDDEN TESTS":
                inside = False
            elif inside and len(line.strip()) > 25:
                lines.append(line.strip())
    return lines


def test_real_grading_puts_the_summary_on_top(tmp_path):
    """grade.py on one submission: the page opens with the parts' points and the
    planted failure's message, shows no hidden code, and the run says where
    its results went."""
    master = MASTERS[0]
    # a complete answer as a student hands it in: no hidden tests in it
    nb = nbformat.read(master, as_version=4)
    for cell in nb.cells:
        cell.source = cut_hidden(cell.source)[0]
    # the first answer's function now fails every call with a known message
    first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    name = re.search(r"^def (\w+)\(", first.source, re.MULTILINE).group(1)
    first.source += (f"\n\n\ndef {name}(*args, **kwargs):\n"
                     "    raise AssertionError('planted: expected 1, got 2')\n")
    folder = tmp_path / "subs" / "zoe" / "lab"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / master.name)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "autograder" / "commands" / "grade.py"),
                           "--submissions", str(tmp_path / "subs"), "--out", str(out),
                           "--jobs", "1", "--no-report"], capture_output=True, text=True)
    assert "graded 1 of 1 students" in proc.stdout, proc.stdout + proc.stderr
    for name in ("grades.csv", "scores.csv", "feedback/", "problems.csv", "logs/"):
        assert re.search(rf"^  {re.escape(name)} ", proc.stdout, re.MULTILINE), proc.stdout
    assert "without encryption" not in (out / "logs" / "zoe.log").read_text()

    page = (out / "feedback" / "zoe" / "lab" / f"{master.stem}.html").read_text()
    top = page.index("Your score by part")
    assert top < page.index("</table>", top) < page.index("<h1")  # before the title
    summary = plain(page[top:page.index("</table>", top)])
    master_nb = nbformat.read(master, as_version=4)
    parts = parts_of(master_nb)
    planted = [p.name for p in parts if nb.cells.index(first) in p.answers]
    assert len(planted) == 1
    for part in parts:
        possible = sum(float(master_nb.cells[j].metadata["nbgrader"]["points"])
                       for j in part.tests)
        row = re.search(rf"{part.name} ([\d.]+) / {possible:g} (.*?)(?= Part | Total )",
                        summary)
        assert row, f"no row '{part.name} ... / {possible:g}' in: {summary}"
        if part.name in planted:
            assert float(row.group(1)) < possible
            assert "AssertionError: planted: expected 1, got 2" in row.group(2), summary
        elif float(row.group(1)) == possible:  # other parts: the master's answers
            assert row.group(2) == "all checks passed", summary
        else:  # a part graded with the planted function fails with a message
            assert re.match(r"nb\w+ \((hidden )?test\): \w+", row.group(2)), summary
    text = plain(page)
    for line in hidden_lines(master):
        assert " ".join(html.unescape(line).split()) not in text, f"hidden code shown: {line}"


def feedback_exporter_pair(template: str):
    """nbconvert's HTMLExporter and rag_feedback's, with the settings
    nbgrader's GenerateFeedback gives its exporter."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from traitlets.config import Config

    from autograder.run.rag_feedback import FeedbackExporter

    config = Config(GenerateFeedback().config)
    config.HTMLExporter.template_name = template
    return HTMLExporter(config=config), FeedbackExporter(config=config)


def feedback_page(exporter, nb, name: str) -> str:
    # with the notebook's own score, which GetGrades puts in resources
    resources = {"nbgrader": {"notebook": name, "score": 1.5, "max_score": 3,
                              "late_penalty": 0}}
    return exporter.from_notebook_node(nb, resources)[0]


def test_the_faster_feedback_exporter_renders_the_same_pages():
    """FeedbackExporter skips nbconvert's BeautifulSoup pass: once parsed, its
    feedback pages equal nbconvert's on every executed notebook, pictures
    (which need alt text) included; other templates are left to nbconvert.
    Three reading-edition notebooks stand for all: together they hold every
    kind of output the edition has (streams, tables, figures, results), and
    rendering all ten twice took a minute of the suite."""
    from bs4 import BeautifulSoup

    stock, fast = feedback_exporter_pair("feedback")
    images = 0
    for path in [ROOT / "notebooks" / f"{name}.ipynb"
                 for name in ("02_pipeline", "03_indexing", "05_reranking")]:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:  # as GetGrades leaves them: half marks
            meta = nbgrader_meta(cell)
            meta["score"] = meta.get("points", 0) / 2
        want, got = (feedback_page(e, nb, path.stem) for e in (stock, fast))
        assert str(BeautifulSoup(got, features="html.parser")) == want, path.name
        images += got.count("<img")
        assert got.count("<img") == got.count(f'alt="{NO_ALT}"'), path.name
    assert images >= 5  # the comparison saw pictures without alt text
    stock, fast = feedback_exporter_pair("lab")
    nb = nbformat.read(ROOT / "notebooks" / "02_pipeline.ipynb", as_version=4)
    assert fast.from_notebook_node(nb)[0] == stock.from_notebook_node(nb)[0]
    assert 'tabindex="0"' in stock.from_notebook_node(nb)[0]  # bs4's work, kept
