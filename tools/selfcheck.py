"""Turn the graded quiz master into the reading edition's self-check quiz.

    source/quiz/quiz.ipynb  ->  notebooks/quiz_selfcheck.ipynb  (tools/build.py)

The master keeps each question's key in its hidden test cell: the lines
between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` define
``right`` (the letter, computed with ``REF = fresh()`` where the answer is a
number) and ``why`` (a reason per option), and end with the assert that
grades. The self-check edition reuses those lines, minus the assert, in one
code cell per question that ends with ``quiz.ask(N, options, right, why)``,
so the key is written once and the two editions cannot disagree. That cell
is collapsed (``jupyter.source_hidden``): a reader sees the widget, not the
key. The options come from the question's ``- **A.** text`` lines.

The result depends only on the master (no execution, no timestamps).
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat

__all__ = ["QuizShapeError", "parse_quiz", "selfcheck_notebook"]

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HEADING = re.compile(r"^## Question (\d+) \(1 point\)[ \t]*$", re.M)
OPTION = re.compile(r"^- \*\*([A-Z])\.\*\* (.+)$", re.M)
TITLE = "Quiz · Building blocks of retrieval-augmented generation"

INTRO = f"""\
# Self-check · {TITLE.split(" · ", 1)[1]}

The graded quiz's ten questions, for studying on your own. Run the notebook
from the top (in JupyterLab: *Run > Run All Cells*); under each question pick
an option and press **Check** to see whether it is right and why. The score
line counts each question once, so you can change your mind and check again.
The graded version, where you write the letters and a hidden test scores
them, is `release/quiz/quiz.ipynb`."""

SETUP = """\
from ragkit.reference import fresh
from ragkit.selfcheck import Quiz

quiz = Quiz("{title}",
            total={total})
quiz.show()"""


class QuizShapeError(ValueError):
    """The master does not have the shape this tool reads."""


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _key_lines(source: str, number: int) -> list[str]:
    """The hidden region of question `number`'s test, without its assert."""
    if source.count(BEGIN) != 1 or source.count(END) != 1:
        raise QuizShapeError(f"quiz_hidden_q{number}: expected one hidden region")
    region = source.partition(BEGIN)[2].partition(END)[0].strip("\n").splitlines()
    asserts = [ln for ln in region if ln.startswith("assert ")]
    if len(asserts) != 1 or region[-1] != asserts[0]:
        raise QuizShapeError(f"quiz_hidden_q{number}: the hidden region must end "
                             "with its one assert line")
    body = region[:-1]
    for name in ("REF = fresh()", "why = "):
        if not any(ln.startswith(name) for ln in body):
            raise QuizShapeError(f"quiz_hidden_q{number}: no line starting {name!r}")
    if not any(re.match(r"^\(?right\b", ln) for ln in body):
        raise QuizShapeError(f"quiz_hidden_q{number}: `right` is never set")
    return body


def parse_quiz(master: Path) -> list[dict]:
    """Per question, in order: its number, its prose (the markdown with
    `(1 point)` dropped from the heading), its options (letter -> text) and
    its key lines (the hidden region without the assert)."""
    nb = nbformat.read(str(master), as_version=4)
    hidden = {_grade_id(c): c.source for c in nb.cells
              if _grade_id(c).startswith("quiz_hidden_q")}
    questions = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        found = HEADING.search(cell.source)
        if not found:
            continue
        number = int(found.group(1))
        options = dict(OPTION.findall(cell.source))
        letters = "".join(options)
        if letters != "ABCD"[:len(letters)] or len(options) < 2:
            raise QuizShapeError(f"question {number}: options must be lines "
                                 f"'- **A.** text', '- **B.** ...' (found {letters!r})")
        if f"quiz_hidden_q{number}" not in hidden:
            raise QuizShapeError(f"question {number}: no cell quiz_hidden_q{number}")
        prose = HEADING.sub(f"## Question {number}", cell.source, count=1)
        questions.append({"number": number, "prose": prose, "options": options,
                          "key": _key_lines(hidden[f"quiz_hidden_q{number}"], number)})
    numbers = [q["number"] for q in questions]
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise QuizShapeError(f"{master}: questions must be numbered 1, 2, ... "
                             f"(found {numbers})")
    return questions


def _options_literal(options: dict[str, str]) -> str:
    """`options = {...}` with each text split into pieces of short lines."""
    lines = ["options = {"]
    for letter, text in options.items():
        pieces = textwrap.wrap(text, width=60, break_long_words=False,
                               break_on_hyphens=False, drop_whitespace=False)
        if "".join(pieces) != text or not pieces:
            pieces = [text]
        lines.append(f"    {letter!r}: {pieces[0]!r}")
        lines += [f"         {piece!r}" for piece in pieces[1:]]
        lines[-1] += ","
    return "\n".join(lines + ["}"])


def selfcheck_notebook(master: Path) -> nbformat.NotebookNode:
    """The self-check edition of the quiz master at `master`."""
    master = Path(master)
    questions = parse_quiz(master)
    src = nbformat.read(str(master), as_version=4)
    refs = [c.source for c in src.cells
            if c.cell_type == "markdown" and c.source.startswith("## References")]
    cells = [nbformat.v4.new_markdown_cell(INTRO),
             nbformat.v4.new_code_cell(SETUP.format(title=TITLE,
                                                    total=len(questions)))]
    cells[0].id, cells[1].id = "title", "setup"
    for q in questions:
        n = q["number"]
        text = nbformat.v4.new_markdown_cell(q["prose"])
        text.id = f"q{n}-text"
        body = "\n".join([_options_literal(q["options"]), *q["key"],
                          f"_ = quiz.ask({n}, options, right, why)"])
        ask = nbformat.v4.new_code_cell(body)
        ask.id = f"q{n}-ask"
        ask.metadata["jupyter"] = {"source_hidden": True}
        cells += [text, ask]
    if refs:
        cells.append(nbformat.v4.new_markdown_cell(refs[0]))
        cells[-1].id = "references"
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = nbformat.from_dict(dict(src.metadata))
    return nb
