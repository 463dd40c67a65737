"""How long each lab notebook's core prose takes to read, counted by code.

    python tools/reading_time.py      one row per notebook: words, minutes, rate

The rule, which tests/test_week_plan.py and README.md ("The week, hour by
hour") state too. A notebook's *core prose* is the text of its markdown
cells (title, objectives, setup note, the numbered lecture sections and
their results, the summary), leaving out:

* each graded part's task text: the markdown cells from its
  `## Part X (N points)` heading down to its last graded cell;
* any section under a heading named Exercises, Discussion questions or
  References;
* a "going further" section: one whose first line under its heading starts
  with `*Going further`, down to the next heading of its level or above;
* folded detail: anything between `<details>` and `</details>`, which
  JupyterLab and the site show closed until the reader opens it.

A *word* is a run of letters or digits, joined through an apostrophe, a
dot, a comma or a hyphen (`0.04`, `all-MiniLM-L6-v2` and `q03` are one word
each), after link targets, HTML tags and comments are dropped; a formula
counts its symbols. The planned minutes are the words at `RATE` words a
minute, rounded *up* to a multiple of five, so no notebook is planned
faster than `RATE`. Figures and result tables are not counted as words:
they are read beside the code that draws them, during the lab's time.
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "source" / "lab"
sys.path.insert(0, str(ROOT / "autograder"))
from rag_feedback import PART_HEADING, nbgrader_meta  # noqa: E402

RATE = 180        # words a minute: careful technical reading runs 150-200
STEP = 5          # minutes are planned in steps of five
LEFT_OUT = ("exercises", "discussion questions", "references")
GOING_FURTHER = "*Going further"

WORD = re.compile(r"[^\W_]+(?:['’.,\-][^\W_]+)*")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
FOLD = re.compile(r"<details\b.*?</details>", re.S | re.I)
COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"</?[A-Za-z][^>]*>")
LINK_TARGET = re.compile(r"\]\([^)]*\)")


def words(text: str) -> int:
    """The words of a piece of markdown, by the module's rule."""
    text = LINK_TARGET.sub("]", TAG.sub(" ", COMMENT.sub(" ", text)))
    return len(WORD.findall(text))


def task_lines(nb) -> dict[int, int]:
    """Markdown cell index -> the line from which that cell is a graded
    part's task text (0: the whole cell). A part's task text runs from its
    `## Part X (N points)` heading line down to its last graded cell."""
    found, heading, last = {}, None, None

    def close():
        if heading is not None:
            for i in range(heading[0] + 1, (last or heading[0]) + 1):
                if nb.cells[i].cell_type == "markdown":
                    found[i] = 0
            found[heading[0]] = heading[1]

    for index, cell in enumerate(nb.cells):
        match = cell.cell_type == "markdown" and PART_HEADING.search(cell.source)
        if match:
            close()
            heading, last = (index, cell.source[:match.start()].count("\n")), None
        elif nbgrader_meta(cell).get("grade") or nbgrader_meta(cell).get("solution"):
            last = index
    close()
    return found


def core_prose(nb) -> str:
    """The core prose of a notebook (see the module's docstring), as one text."""
    tasks = task_lines(nb)
    kept, skip_level = [], None  # skip_level: the heading level of a left-out section
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        lines = FOLD.sub(" ", cell.source).splitlines()
        task_from = tasks.get(index, len(lines))
        for at, line in enumerate(lines):
            heading = HEADING.match(line)
            if heading:
                level = len(heading.group(1))
                if skip_level is not None and level <= skip_level:
                    skip_level = None
                title = heading.group(2).strip().lower()
                first = next((x.strip() for x in lines[at + 1:] if x.strip()), "")
                if skip_level is None and (title in LEFT_OUT
                                           or first.startswith(GOING_FURTHER)):
                    skip_level = level
            if skip_level is None and at < task_from:
                kept.append(line)
    return "\n".join(kept)


def minutes(n_words: int) -> int:
    """Planned minutes for `n_words` of core prose."""
    return STEP * math.ceil(n_words / RATE / STEP)


def notebook_words(path: Path) -> int:
    return words(core_prose(nbformat.read(path, as_version=4)))


def plan() -> dict[str, tuple[int, int]]:
    """Notebook stem -> (core words, planned reading minutes)."""
    return {path.stem: (n, minutes(n))
            for path in sorted(LAB.glob("*.ipynb")) for n in [notebook_words(path)]}


def main() -> int:
    rows = plan()
    total_words = sum(w for w, _ in rows.values())
    total_minutes = sum(m for _, m in rows.values())
    for stem, (n, m) in rows.items():
        print(f"{stem:20s} {n:6d} words  {m:4d} min  {n / m:5.0f} words a minute")
    print(f"{'total':20s} {total_words:6d} words  {total_minutes:4d} min  "
          f"{total_words / total_minutes:5.0f} words a minute")
    return 0


if __name__ == "__main__":
    sys.exit(main())
