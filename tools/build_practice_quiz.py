"""Write the reading edition's practice quiz from the package's questions.

    ragkit/quiz_practice.py + guide/references.md
        ->  notebooks/quiz_practice.ipynb  (tools/build.py)

Nothing here reads the graded quiz (source/quiz): its key lives only in the
master's hidden tests, so no file built for readers can give it away. The
practice quiz has ten questions of its own on the same objectives, and its
key and reasons are meant to be read. The notebook gives each question a
Markdown cell (heading, text, options) and a one-line code cell,
``_ = quiz.ask_item(question(N))``, that draws its radio buttons and Check
button; the key stays in the package, so this notebook and
``ragkit.selfcheck.practice_quiz()`` cannot disagree. It ends with the
entries of guide/references.md that the questions cite.

Every code cell is tagged ``nbval-ignore-output``: a widget's output names a
random model id, so nbval checks that the cell runs, not what it shows. The
result depends only on the two files above (no execution, no timestamps).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from ragkit.quiz_practice import QUESTIONS, TITLE, Item, question_markdown

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["NAME", "cited_numbers", "practice_notebook", "reference_lines"]

NAME = "quiz_practice.ipynb"  # its name in notebooks/
REFERENCES = ROOT / "guide" / "references.md"
ENTRY = re.compile(r'^- <a id="ref-(\d+)"></a>\*\*\[(\d+)\]\*\*', re.M)

INTRO = f"""\
# {TITLE}

Ten questions for studying on your own, one for each topic of the lecture:
why retrieve at all, the pipeline, chunking, BM25, dense retrieval, fusion,
late interaction, the agentic loop, metrics and failure modes. None of them
is a question of the graded quiz, so practising here gives that quiz away
to nobody. Run the notebook from the top (in JupyterLab: *Run > Run All
Cells*), pick an option under a question and press **Check**: the line
below says at once whether you were right, with a reason for the option you
chose. The score counts each question once, so you may change your mind and
check again.

Without this notebook (in the student copy of the course, say), the same
ten questions are one call away in a notebook of your own:

```python
from ragkit.selfcheck import practice_quiz
practice_quiz()
```"""

SETUP = """\
from ragkit.quiz_practice import QUESTIONS, TITLE, question
from ragkit.selfcheck import Quiz

quiz = Quiz(TITLE, total=len(QUESTIONS))
quiz.show()"""

METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python",
                   "name": "python3"},
    "language_info": {"name": "python"},
}


def cited_numbers(questions: tuple[Item, ...] = QUESTIONS) -> list[int]:
    """The reference numbers ``[n]`` the questions cite, sorted (code spans,
    such as a ranked list of ids, are not citations)."""
    found = set()
    for item in questions:
        prose = re.sub(r"`[^`]*`", "", item.text)
        found.update(int(n) for n in re.findall(r"\[(\d+)\]", prose))
    return sorted(found)


def reference_lines(numbers: list[int], path: Path = REFERENCES) -> list[str]:
    """One Markdown line ``- [n] ...`` per number, from the list's entries
    (each entry joined onto one line); KeyError names a missing number."""
    text = path.read_text(encoding="utf-8")
    starts = list(ENTRY.finditer(text))
    entries = {}
    for here, nxt in zip(starts, starts[1:] + [None]):
        body = text[here.end():nxt.start() if nxt else len(text)]
        body = body.split("\n\n")[0]
        entries[int(here.group(2))] = " ".join(body.split())
    missing = [n for n in numbers if n not in entries]
    if missing:
        raise KeyError(f"{path.name} has no entry for {missing}")
    return [f"- [{n}] {entries[n]}" for n in numbers]


def _cell(kind: str, source: str, cell_id: str) -> nbformat.NotebookNode:
    if kind == "markdown":
        cell = nbformat.v4.new_markdown_cell(source)
    else:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = ["nbval-ignore-output"]
    cell.id = cell_id
    return cell


def practice_notebook(questions: tuple[Item, ...] = QUESTIONS,
                      references: Path = REFERENCES) -> nbformat.NotebookNode:
    """The practice quiz as a notebook, one Markdown and one code cell per
    question, between an introduction and the references it cites."""
    cells = [_cell("markdown", INTRO, "title"),
             _cell("code", SETUP, "setup")]
    for item in questions:
        n = item.number
        cells.append(_cell("markdown", question_markdown(item), f"q{n}-text"))
        cells.append(_cell("code", f"_ = quiz.ask_item(question({n}))",
                           f"q{n}-ask"))
    numbers = cited_numbers(questions)
    if numbers:
        refs = ["## References", "",
                "Numbered as in the lecture's list "
                "([guide/references.md](../guide/references.md)).", "",
                *reference_lines(numbers, references)]
        cells.append(_cell("markdown", "\n".join(refs), "references"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = nbformat.from_dict(METADATA)
    return nb
