"""The lab's two editions: the full one and the core path alone.

Every graded part of a lab master is marked `core` or `extension` twice: in
its heading (`## Part A (6 points) · core`) and on its solution cells
(metadata `course.path`). The six core parts build the pipeline end to end,
one idea each (the chunker's window step, the BM25 term, the RRF sum,
MaxSim, the loop's round limit, the metric's cut-off), and are worth 32
points; the extensions carry the rest.

    make build CORE=1     releases the core edition (release/ as students get it)
    make grade            grades the edition that release/ holds

In the core edition an extension part is a worked example: its solution is
given (so the core parts that call it run), its visible checks stay as
checks a student may run for no points, its hidden tests are gone, and its
heading says so. A part that is not marked (the quiz, the project) is core.

Its text is made true for that edition too: the intro's bullet of a worked
part says it is worked, and the intro's folded "How the parts are graded"
goes (the note under the intro says what is graded instead); a worked
part's task text loses its sentences about hidden tests and points, asks
the student to read rather than write, and speaks of "the" function rather
than "your" function. The masters' other prose is written to be true in
both editions (tests/test_editions_text.py reads the core edition).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat

from autograder.run.rag_feedback import BEGIN, nbgrader_meta, parts_of

CORE, EXTENSION = "core", "extension"
FULL = "full"
EDITIONS = (FULL, CORE)
# an extension part's heading, which the core edition rewrites
EXTENSION_HEADING = re.compile(r"^(#{1,6}\s+Part\s+\w+\s*)\([\d.]+\s+points?\)\s*·\s*"
                               r"extension[ \t]*$", re.MULTILINE)
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
WORKED = "(0 points) · extension, worked for you in this release"
WORKED_BULLET = "(worked for you in this release)"
WORKED_NOTE = ("*Worked for you in this release: the code below is complete. Read it "
               "against the task, run its checks, and write it yourself later if you "
               "have time.*")
# the intro's fold about grading, which speaks of every part as graded
GRADING_FOLD = re.compile(r"\n*<details><summary>How the parts are graded</summary>"
                          r".*?</details>", re.S)
# in a worked part's task text: sentences about hidden tests and points go
GRADING_TALK = re.compile(r"hidden test|costs? points|points? only|[Tt]he tests (run|swap)"
                          r"|tests of this part")
SENTENCE_END = re.compile(r"(?<=[.!?)])\s+(?=[A-Z(*`])")


def without_grading_talk(item: str) -> str:
    """A paragraph or list item without its sentences about grading."""
    sentences = SENTENCE_END.split(item.strip())
    kept = [x for x in sentences if not GRADING_TALK.search(x)]
    return item.strip() if len(kept) == len(sentences) else " ".join(kept)


def worked_text(source: str) -> str:
    """A worked part's task text, true for a part whose code is given."""
    out, fence = [], False
    for block in source.split("\n\n"):
        opens = block.count("```") % 2 == 1
        if fence or block.lstrip().startswith(("#", "|", "```", "---")):
            fence ^= opens
            out.append(block)
            continue
        fence ^= opens
        items = re.split(r"\n(?=\s*(?:[*-]|\d+\.)\s)", block)
        kept = [without_grading_talk(x) for x in items]
        kept = [x for x in kept if not re.fullmatch(r"(?:[*-]|\d+\.)?\s*", x)]
        if not kept:
            continue
        block = "\n".join(kept)
        block = re.sub(r"\b([Ww])rite\b(?=\s+(?:`|a |an |the ))",
                       lambda m: "Read" if m.group(1) == "W" else "read", block)
        block = re.sub(r"\byour(?=\s+`)", "the", block)
        out.append(block)
    return "\n\n".join(out)


def core_intro(source: str, worked: list[str]) -> str:
    """The intro cell with worked parts' bullets marked and the grading fold gone."""
    source = GRADING_FOLD.sub("", source)
    for name in worked:
        source = re.sub(rf"^(\* \*\*{re.escape(name)}\*\*)", rf"\1 {WORKED_BULLET}",
                        source, flags=re.M)
    return source


def answer_code(source: str) -> str:
    """A solution cell's source without nbgrader's solution marker lines."""
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in SOLUTION_MARKERS)


def heading_paths(nb) -> dict[str, str]:
    """Part name ("Part A") -> the path its heading names (parts whose
    heading names none are left out)."""
    return {part.name: part.path for part in parts_of(nb) if part.path}


def cell_paths(nb) -> dict[str, str]:
    """grade_id -> path of every graded and solution cell of `nb` (by the
    part heading above it; a part without a mark is core)."""
    return {nbgrader_meta(nb.cells[index])["grade_id"]: part.path or CORE
            for part in parts_of(nb) for index in part.answers + part.tests}


def core_edition(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a master with its extension parts turned into worked
    examples (see the module's docstring), and its metadata saying so."""
    nb = nbformat.from_dict(nb)
    drop, graded, worked = set(), [], []
    for part in parts_of(nb):
        if part.path != EXTENSION:
            graded.append(part.name)
            continue
        worked.append(part.name)
        for index in part.answers:  # nbgrader's markers go, the code stays
            cell = nb.cells[index]
            cell.metadata.pop("nbgrader", None)
            cell.source = answer_code(cell.source)
        for index in part.tests:
            cell = nb.cells[index]
            if BEGIN in cell.source:
                drop.add(index)
            else:  # a check the student may run, for no points
                meta = nbgrader_meta(cell)
                meta.update(grade=False, locked=True)
                meta.pop("points", None)
    for part in parts_of(nb):
        if part.path == EXTENSION:
            for index in task_cells(nb, part):
                nb.cells[index].source = worked_text(nb.cells[index].source)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and EXTENSION_HEADING.search(cell.source):
            cell.source = EXTENSION_HEADING.sub(
                lambda m: m.group(1) + WORKED + "\n\n" + WORKED_NOTE, cell.source)
    if worked and nb.cells and nb.cells[0].cell_type == "markdown":
        nb.cells[0].source = core_intro(nb.cells[0].source, worked)
    nb.cells = [c for i, c in enumerate(nb.cells) if i not in drop]
    if worked:
        points = sum(float(nbgrader_meta(c).get("points", 0)) for c in nb.cells
                     if nbgrader_meta(c).get("grade"))
        note = ("**This release grades the core path only:** "
                + (f"{', '.join(graded)} ({points:g} points), each with visible "
                   "tests you can run now and a hidden test cell that runs at "
                   "grading. " if graded
                   else "no part of this notebook is graded. ")
                + f"{', '.join(worked)} come with their code written: read it, "
                "run its checks, and write it yourself afterwards if you have time.")
        # a fixed id, so that two core builds give the same bytes
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(note, id="core-edition-note"))
    nb.metadata.setdefault("course", {})["edition"] = CORE
    return nb


def task_cells(nb, part) -> list[int]:
    """The markdown cells of a part's task text: from the cell holding its
    heading down to its last graded or solution cell."""
    cells = part.answers + part.tests
    first, last = min(cells), max(cells)
    heading = next(i for i in range(first, -1, -1)
                   if nb.cells[i].cell_type == "markdown"
                   and re.search(rf"^#{{1,6}}\s+{re.escape(part.name)}\s*\(", nb.cells[i].source,
                                 re.M))
    return [i for i in range(heading, last + 1) if nb.cells[i].cell_type == "markdown"]


def make_core(source: Path) -> Path:
    """Turn every master under `source` (`<assignment>/*.ipynb`) that has
    extension parts into its core edition, in place; returns `source`."""
    for path in sorted(source.glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(part.path == EXTENSION for part in parts_of(nb)):
            nbformat.write(core_edition(nb), path)
    return source


def write_core_masters(source: Path, target: Path) -> Path:
    """`source` copied to `target` (which must not exist) in its core edition."""
    shutil.copytree(source, target)
    return make_core(target)


def edition_of(release: Path) -> str:
    """The edition a released assignment folder holds ("full" when none of
    its notebooks says otherwise, or when there is no release)."""
    for path in sorted(release.glob("*.ipynb")):
        if nbformat.read(path, as_version=4).metadata.get("course", {}).get("edition") == CORE:
            return CORE
    return FULL


def path_of_cells(assignment: Path) -> dict[str, str]:
    """"name.ipynb:grade_id" -> path of every graded cell of the masters in
    the folder `assignment` (as grade.py names a student's cells)."""
    return {f"{path.name}:{grade_id}": kind
            for path in sorted(assignment.glob("*.ipynb"))
            for grade_id, kind in cell_paths(nbformat.read(path, as_version=4)).items()}


def points_by_path(nb) -> dict[str, float]:
    """{"core": points, "extension": points} of a master."""
    paths = cell_paths(nb)
    totals = {CORE: 0.0, EXTENSION: 0.0}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            totals[paths.get(meta["grade_id"], CORE)] += float(meta.get("points", 0))
    return totals
