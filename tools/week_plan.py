"""The week's minutes on the core path, counted by code from the masters.

    python tools/week_plan.py     one row per lab notebook: words, minutes

README.md ("The week, hour by hour"), each notebook's time line and the
guide give these numbers; tests/test_week_plan.py checks that they agree.

**Reading.** A notebook's *core prose* is the text of its markdown
cells (title, objectives, setup note, the numbered lecture sections and
their results, the summary), leaving out:

* each graded part's task text: the markdown cells from its
  `## Part X (N points)` heading down to its last graded cell;
* any section under a heading named Exercises, Discussion questions or
  References;
* a "going further" section: one whose first line under its heading starts
  with `*Going further`, down to the next heading of its level or above;
* the `**Time:**` line, which states the result of this count.

A *word* is a run of letters or digits, joined through an apostrophe, a
dot, a comma or a hyphen (`0.04`, `all-MiniLM-L6-v2` and `q03` are one word
each), after link targets, HTML tags and comments are dropped; a formula
counts its symbols. Folded detail (between `<details>` and `</details>`,
which JupyterLab and the site show closed until the reader opens it) is
read too, so it counts; it is also counted apart (`fold words`), since
folds hold extras only and at most `FOLD_SHARE` of a notebook's core
prose. The lecture is planned at `RATE` words a minute: all its words at
`RATE`, rounded *up* to a whole minute, is its reading time, and each
notebook gets a share of it in whole minutes by largest remainder (its
words at `RATE` rounded down, then a minute more for the notebooks with the
largest fractions until the shares add up: `reading_minutes`). So the
lecture as a whole is read at `RATE` at most, and a notebook at a little
more (the tests hold each at `NOTEBOOK_RATE`, 250, at most). Until issue
56's second round each notebook was rounded up on its own, which planned
nine fractions of a minute as nine whole minutes: 122 minutes for a
lecture of 120 at `RATE`. Figures and result tables are not counted as words:
they are read beside the code that draws them, during the lab's time.

**The lab's core path.** Counted like a student works, not like an expert
types:

* each part marked `core` takes `PART_SETUP` minutes (read the task, run
  its demo and its checks) plus `PER_LINE` a line the student writes: one
  line a minute (type it, get it wrong once, fix it). In a scaffolded
  solution cell, the student's lines are those between nbgrader's
  `### BEGIN SOLUTION` and `### END SOLUTION` markers; the lines given
  around them are read and run, so they count as ungraded code. Lines
  leave out blanks, comments and docstrings.
* the *ungraded code on the core path* takes a minute per
  `CODE_LINES_PER_MINUTE` lines that are not blank (run it, skim it, read
  its output): every code cell outside the graded parts (a part runs from
  its heading to its last graded cell, its demo included) and outside the
  sections the reading rule leaves out (going further, exercises,
  discussion questions, references). Setup cells count; check cells do
  not. A check cell (`nbNN_check_<what>`: a comment quoting a claim, then
  asserts) is the pack's proof that the prose's numbers are what the cells
  compute, maintenance code for CI: it is in no edition a student runs
  (tools/build.py leaves it out of release/, `is_check_cell`), and CI runs
  it in the reading edition, notebooks/. Until issue 56's second round
  counted the student's edition, the check cells on the core path were
  230 of the 852 lines counted here (93 minutes of core lab, not 80).

A notebook's *core lab* is the two added and rounded up to whole minutes.
(Until issue 56 the plan timed a part at 3 minutes plus half a minute a
line of its whole solution, two lines of working code a minute, and gave
the code between the parts no time at all: 128 minutes for a lab that
this rule counted at 416.)

**Exercises on the core path.** An exercise whose title is followed by
`(core path, about N min` is on the core path, and N is its time. The
core lab and the core exercises together must fit the seed's two lab
hours (`SEED_LAB_MINUTES`).
"""
from __future__ import annotations

import ast
import math
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "source" / "lab"
from autograder.run.rag_feedback import PART_HEADING, nbgrader_meta, parts_of  # noqa: E402
from autograder.run.nbgrader_cli import is_check_cell  # noqa: E402

RATE = 200        # words a minute: careful technical reading runs 150-200
NOTEBOOK_RATE = 250  # ... and no notebook planned faster than this (issue 56)
FOLD_SHARE = 0.15  # at most this share of a notebook's core prose sits in folds
STEP = 1          # minutes are planned in whole minutes
PART_SETUP = 5              # minutes per core part: read it, run its demo and checks
PER_LINE = 1                # ... plus a minute per line the student writes
CODE_LINES_PER_MINUTE = 20  # ungraded core-path code: run, skim, read the output
SEED_LAB_MINUTES = 120      # the seed's two lab hours
CORE_EXERCISE = re.compile(r"^\d+\.\s+\*\*[^*\n]+\*\*[^\n]*?\(core path, about (\d+) min",
                           re.M)
LEFT_OUT = ("exercises", "discussion questions", "references")
GOING_FURTHER = "*Going further"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # nbgrader's solution markers
TIME_LINE = "**Time:**"  # the plan itself is not counted: it depends on the count

WORD = re.compile(r"[^\W_]+(?:['’.,\-][^\W_]+)*")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
FOLD = re.compile(r"<details\b.*?</details>", re.S | re.I)
COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")  # one line: `$y_{<i}$` is no tag
LINK_TARGET = re.compile(r"\]\([^)]*\)")


def words(text: str) -> int:
    """The words of a piece of markdown, by the module's rule."""
    text = LINK_TARGET.sub("]", TAG.sub(" ", COMMENT.sub(" ", text)))
    return len(WORD.findall(text))


def task_lines(nb) -> dict[int, int]:
    """Markdown cell index -> the line from which that cell is a graded
    part's task text (0: the whole cell). A part's task text runs from its
    `## Part X (N points)` heading line down to its last graded cell."""
    return {i: line for i, line in part_cells(nb).items()
            if nb.cells[i].cell_type == "markdown"}


def part_cells(nb) -> dict[int, int]:
    """Cell index -> the line from which the cell belongs to a graded part
    (0: the whole cell), for every cell from a `## Part X (N points)`
    heading down to that part's last graded cell."""
    found, heading, last = {}, None, None

    def close():
        if heading is not None:
            for i in range(heading[0] + 1, (last or heading[0]) + 1):
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
    return core_path(nb)[0]


def core_path(nb) -> tuple[str, list[int]]:
    """The core prose, and the indexes of the code cells on the core path
    outside the graded parts and other than check cells (the ungraded code
    a student runs)."""
    tasks = task_lines(nb)
    parts = part_cells(nb)
    kept, code, skip_level = [], [], None  # skip_level: the heading level of a left-out section
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and skip_level is None and index not in parts \
                and not is_check_cell(cell):
            code.append(index)
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
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
            if skip_level is None and at < task_from and not line.startswith(TIME_LINE):
                kept.append(line)
    return "\n".join(kept), code


def ungraded_code_lines(nb) -> int:
    """Lines, not blank, of the ungraded code on the core path, with what
    the core parts' scaffolded solution cells give around the student's lines."""
    given = sum(scaffold_lines(nb.cells[i].source)
                for part in parts_of(nb) if part.path == "core" for i in part.answers)
    return given + sum(1 for i in core_path(nb)[1]
                       for line in nb.cells[i].source.splitlines() if line.strip())


def minutes(n_words: int) -> int:
    """Planned minutes for `n_words` of core prose read in one go."""
    return STEP * math.ceil(n_words / RATE / STEP)


def reading_minutes(counts: dict[str, int]) -> dict[str, int]:
    """Each notebook's share, in whole minutes, of the lecture's planned
    reading time (`minutes` of all its words), given its words: its words
    at `RATE` rounded down, and one minute more for each of the notebooks
    with the largest fractions left over (ties by name) until the shares
    add up to the lecture's time."""
    exact = {name: n / RATE / STEP for name, n in counts.items()}
    share = {name: math.floor(x) for name, x in exact.items()}
    spare = minutes(sum(counts.values())) // STEP - sum(share.values())
    for name in sorted(exact, key=lambda name: (share[name] - exact[name], name))[:spare]:
        share[name] += 1
    return {name: STEP * n for name, n in share.items()}


def solution_lines(code: str) -> int:
    """Lines of `code` that are not blank, a comment or part of a docstring.
    In a scaffolded solution cell (one with nbgrader's `### BEGIN SOLUTION`
    markers) only the lines between the markers count: they are what the
    student writes; the rest is given (see `scaffold_lines`)."""
    return _counted_lines(code, inside=True if BEGIN in code else None)


def scaffold_lines(code: str) -> int:
    """Counted lines a scaffolded solution cell gives outside its markers:
    the student reads and runs them, so they count as ungraded code."""
    return _counted_lines(code, inside=False) if BEGIN in code else 0


def _counted_lines(code: str, inside: bool | None) -> int:
    """Counted lines of `code` (not blank, a comment or a docstring): all of
    them (`inside` None), or only those between the solution markers (True)
    or outside them (False). The markers themselves never count."""
    raw = code.splitlines()
    between, state = [], False
    for line in raw:
        mark = line.strip()
        state = True if mark.startswith(BEGIN) else False if mark.startswith(END) else state
        between.append(state)
    blanked = "\n".join("" if line.strip().startswith("### ") else line for line in raw)
    docs = set()
    for node in ast.walk(ast.parse(blanked)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) \
                and ast.get_docstring(node) is not None:
            first = node.body[0]
            docs |= set(range(first.lineno, first.end_lineno + 1))
    return sum(1 for number, line in enumerate(blanked.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in docs
               and (inside is None or between[number - 1] == inside))


def core_part_minutes(nb) -> int:
    """Minutes for a notebook's core parts (0 when it has none): `PART_SETUP`
    per part plus `PER_LINE` per line the student writes."""
    return math.ceil(sum(PART_SETUP + PER_LINE * lines for lines in core_solution_lines(nb)))


def core_solution_lines(nb) -> list[int]:
    """The lines the student writes in each core part, in order."""
    return [sum(solution_lines(nb.cells[i].source) for i in part.answers)
            for part in parts_of(nb) if part.path == "core"]


def core_lab_minutes(nb) -> int:
    """A notebook's core lab: its core parts and its ungraded core-path code
    (see the module's docstring)."""
    return core_part_minutes(nb) + math.ceil(ungraded_code_lines(nb) / CODE_LINES_PER_MINUTE)


def exercise_minutes(nb) -> list[int]:
    """The minutes of each exercise on the core path, in order."""
    return [int(m) for cell in nb.cells if cell.cell_type == "markdown"
            for m in CORE_EXERCISE.findall(exercises_text(cell.source))]


def exercises_text(source: str) -> str:
    """The text of a cell under its `## Exercises` heading, if any."""
    found = re.search(r"^#+\s+Exercises\s*$(.*?)(?=^#+\s|\Z)", source, re.M | re.S)
    return found.group(1) if found else ""


def notebook_words(path: Path) -> int:
    return words(core_prose(nbformat.read(path, as_version=4)))


def fold_words(prose: str) -> int:
    """The words of the folds in a notebook's core prose."""
    return sum(words(fold) for fold in FOLD.findall(prose))


def plan() -> dict[str, dict[str, int]]:
    """Notebook stem -> its core words and its minutes: reading, core lab,
    core exercises (with the counts behind them)."""
    rows = {}
    for path in sorted(LAB.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        prose = core_prose(nb)
        n = words(prose)
        rows[path.stem] = {"words": n, "fold words": fold_words(prose), "reading": 0,
                           "core lab": core_lab_minutes(nb),
                           "core exercises": sum(exercise_minutes(nb)),
                           "exercises": len(exercise_minutes(nb)),
                           "core parts": len(core_solution_lines(nb)),
                           "solution lines": sum(core_solution_lines(nb)),
                           "code lines": ungraded_code_lines(nb)}
    for stem, share in reading_minutes({stem: row["words"] for stem, row in rows.items()}).items():
        rows[stem]["reading"] = share
    return rows


def main() -> int:
    rows = plan()
    total = {key: sum(row[key] for row in rows.values()) for key in next(iter(rows.values()))}
    for stem, row in [*rows.items(), ("total", total)]:
        print(f"{stem:17s} {row['words']:6d} words {row['reading']:4d} min reading "
              f"({row['words'] / row['reading']:3.0f} a minute) | "
              f"{row['core parts']:2d} core parts, {row['solution lines']:3d} lines to write, "
              f"{row['code lines']:4d} lines to run: {row['core lab']:3d} min core lab | "
              f"{row['core exercises']:3d} min for {row['exercises']} core exercises")
    lab = total["core lab"] + total["core exercises"]
    print(f"\nThe core lab and its exercises: {lab} minutes, against the seed's "
          f"{SEED_LAB_MINUTES}.")
    return 0 if lab <= SEED_LAB_MINUTES else 1


if __name__ == "__main__":
    sys.exit(main())
