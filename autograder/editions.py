"""The lab's two editions: the full one and the core path alone.

Every graded part of a lab master is marked `core` or `extension` twice: in
its heading (`## Part A (6 points) · core`) and on its solution cells
(metadata `course.path`). The core parts build the pipeline end to end
(chunk, BM25, dense, fusion, rerank, the metrics and the chunk-size study,
the loop) and are worth 60 points; the extensions carry the rest.

    make build CORE=1     releases the core edition (release/ as students get it)
    make grade            grades the edition that release/ holds

In the core edition an extension part is a worked example: its solution is
given (so the core parts that call it run), its visible checks stay as
checks a student may run for no points, its hidden tests are gone, and its
heading says so. A part that is not marked (the quiz, the project) is core.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat

from rag_feedback import BEGIN, nbgrader_meta, parts_of

CORE, EXTENSION = "core", "extension"
FULL = "full"
EDITIONS = (FULL, CORE)
# an extension part's heading, which the core edition rewrites
EXTENSION_HEADING = re.compile(r"^(#{1,6}\s+Part\s+\w+\s*)\([\d.]+\s+points?\)\s*·\s*"
                               r"extension[ \t]*$", re.MULTILINE)
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
WORKED = "(0 points) · extension, worked for you in this release"


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
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = EXTENSION_HEADING.sub(lambda m: m.group(1) + WORKED, cell.source)
    nb.cells = [c for i, c in enumerate(nb.cells) if i not in drop]
    if worked:
        points = sum(float(nbgrader_meta(c).get("points", 0)) for c in nb.cells
                     if nbgrader_meta(c).get("grade"))
        note = ("**This release grades the core path only:** "
                + (f"{', '.join(graded)} ({points:g} points). " if graded
                   else "no part of this notebook is graded. ")
                + f"{', '.join(worked)} come with their code written: read it, "
                "run its checks, and write it yourself afterwards if you have time.")
        # a fixed id, so that two core builds give the same bytes
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(note, id="core-edition-note"))
    nb.metadata.setdefault("course", {})["edition"] = CORE
    return nb


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
