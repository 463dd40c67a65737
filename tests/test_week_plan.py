"""The week's time plan agrees with itself wherever it is written.

Every master opens with a title cell and then a cell of two or three
objectives and a time line. README.md's section "The week, hour by hour"
holds the week in hours and each lab notebook's minutes; the notebooks'
time lines must match that table, its total row must be its sums, and the
reading guide must give the week the same hours. Fast: no kernel runs.
"""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "guide" / "README.md"
MASTERS = sorted((ROOT / "source").glob("*/*.ipynb"))
LAB = sorted((ROOT / "source" / "lab").glob("*.ipynb"))

HEAD = "**After this notebook you can:**"
OBJECTIVE = re.compile(r"^(\d+)\.\s+\S", re.M)
LAB_TIME = re.compile(r"^\*\*Time:\*\* about (\d+) min reading, (\d+) min for the core "
                      r"parts, (\d+) min for the extensions\.$", re.M)
SHORT_TIME = re.compile(r"^\*\*Time:\*\* about (\d+) min\.$", re.M)
PART = re.compile(r"^#{1,6}\s+Part\s+\w+\s*\([\d.]+\s+points?\)\s*·\s*(core|extension)",
                  re.M)
COLUMNS = ("reading", "core parts", "extensions")


def section(path: Path, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    text = path.read_text(encoding="utf-8")
    level = len(heading) - len(heading.lstrip("#"))
    found = re.search(rf"^{re.escape(heading)}\s*$", text, re.M)
    assert found, f"{path.relative_to(ROOT)}: no heading {heading!r}"
    rest = text[found.end():]
    after = re.search(rf"^#{{1,{level}}}\s", rest, re.M)
    return rest[:after.start()] if after else rest


def tables(text: str) -> list[list[list[str]]]:
    """Every markdown table of `text`: a list of rows, each a list of cells,
    header first, the |---| line left out."""
    found, rows = [], []
    for line in text.splitlines() + [""]:
        if line.strip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def table_with(text: str, first_header: str, where: str) -> list[list[str]]:
    matches = [t for t in tables(text) if t[0][0] == first_header]
    assert len(matches) == 1, \
        f"{where}: expected one table whose first column is {first_header!r}, " \
        f"found {len(matches)}"
    return matches[0]


def week_table(path: Path, heading: str) -> list[tuple[str, int]]:
    """(label, hours) per row of the week table under `heading`, total last."""
    where = f"{path.relative_to(ROOT)} ({heading.lstrip('# ')})"
    table = table_with(section(path, heading), "part of the week", where)
    assert table[0][1] == "hours", f"{where}: the week table's columns are {table[0]}"
    rows = []
    for label, hours in table[1:]:
        assert hours.isdigit(), f"{where}: row {label!r} gives {hours!r} hours, not a number"
        rows.append((label, int(hours)))
    assert rows and rows[-1][0] == "total", f"{where}: the week table has no total row last"
    return rows


def hours_of(rows: list[tuple[str, int]], word: str, where: str) -> int:
    matches = [h for label, h in rows if word in label]
    assert len(matches) == 1, f"{where}: expected one week row mentioning {word!r}, " \
                              f"found {len(matches)}"
    return matches[0]


def readme_week() -> list[tuple[str, int]]:
    return week_table(README, "### The week, hour by hour")


def notebook_table() -> dict[str, tuple[int, int, int]]:
    """Notebook (file stem) or 'total' -> minutes (reading, core, extensions)."""
    where = "README.md (The week, hour by hour)"
    table = table_with(section(README, "### The week, hour by hour"), "notebook", where)
    want = ["notebook", *(f"{c} (min)" for c in COLUMNS)]
    assert table[0] == want, f"{where}: the per-notebook table's columns are " \
                             f"{table[0]}, expected {want}"
    rows = {}
    for name, *minutes in table[1:]:
        assert all(m.isdigit() for m in minutes), \
            f"{where}: row {name!r} has minutes {minutes}, not three whole numbers"
        assert name not in rows, f"{where}: {name!r} has two rows"
        rows[name] = tuple(int(m) for m in minutes)
    return rows


def objectives_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    name = path.relative_to(ROOT)
    assert len(nb.cells) > 1, f"{name}: fewer than two cells"
    cell = nb.cells[1]
    assert cell.cell_type == "markdown" and cell.source.startswith(HEAD), \
        f"{name}: the second cell must be markdown starting with {HEAD!r}, " \
        f"it starts {cell.source[:50]!r}"
    assert "nbgrader" not in cell.metadata, \
        f"{name}: the objectives cell must carry no nbgrader metadata"
    return cell.source


@pytest.mark.parametrize("path", MASTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_master_opens_with_objectives_and_a_time_line(path):
    """Title, then 2 or 3 numbered objectives and one **Time:** line."""
    name = path.relative_to(ROOT)
    source = objectives_cell(path)
    numbers = [int(n) for n in OBJECTIVE.findall(source)]
    assert numbers in ([1, 2], [1, 2, 3]), \
        f"{name}: objectives numbered {numbers}, expected 1-2 or 1-3"
    time = LAB_TIME if path.parent.name == "lab" else SHORT_TIME
    assert len(time.findall(source)) == 1, \
        f"{name}: expected one time line matching {time.pattern!r}"
    assert source.count("**Time:**") == 1, f"{name}: more than one **Time:** line"


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.name)
def test_each_lab_notebooks_minutes_match_the_readme(path):
    """The three numbers of the time line are the notebook's row in README.md,
    and a notebook with no core (extension) part plans 0 minutes for them."""
    name = path.relative_to(ROOT)
    table = notebook_table()
    assert path.stem in table, f"README.md: the per-notebook table has no row {path.stem!r}"
    said = tuple(int(n) for n in LAB_TIME.search(objectives_cell(path)).groups())
    assert said == table[path.stem], \
        f"{name} says {dict(zip(COLUMNS, said))} min, README.md's row says " \
        f"{dict(zip(COLUMNS, table[path.stem]))}"
    nb = nbformat.read(path, as_version=4)
    kinds = {m for c in nb.cells if c.cell_type == "markdown"
             for m in PART.findall(c.source)}
    for kind, minutes, column in (("core", said[1], "core parts"),
                                  ("extension", said[2], "extensions")):
        if kind in kinds:
            assert minutes > 0, f"{name} has '· {kind}' parts but plans 0 min for the {column}"
        else:
            assert minutes == 0, \
                f"{name} has no '· {kind}' part but plans {minutes} min for the {column}"


def test_the_readme_tables_add_up():
    """Total row = column sums; reading and core parts 120 min each, as the
    week table's 2 h rows say; the week's hours add to 10; the table lists
    exactly the lab's notebooks."""
    table = notebook_table()
    assert "total" in table, "README.md: the per-notebook table has no 'total' row"
    total = table.pop("total")
    assert sorted(table) == [p.stem for p in LAB], \
        f"README.md: the per-notebook table lists {sorted(table)}, " \
        f"source/lab/ holds {[p.stem for p in LAB]}"
    sums = tuple(sum(row[i] for row in table.values()) for i in range(3))
    assert total == sums, f"README.md: the total row says {dict(zip(COLUMNS, total))}, " \
                          f"the columns add to {dict(zip(COLUMNS, sums))}"
    assert total[0] == 120 and total[1] == 120, \
        f"README.md: reading {total[0]} min and core parts {total[1]} min, expected 120 each"

    week = readme_week()
    where = "README.md (The week, hour by hour)"
    *rows, (_, hours) = week
    assert sum(h for _, h in rows) == hours == 10, \
        f"{where}: the week's rows add to {sum(h for _, h in rows)} h, " \
        f"its total says {hours} h, expected 10"
    assert hours_of(rows, "prose", where) * 60 == total[0], \
        f"{where}: the week gives the notes {hours_of(rows, 'prose', where)} h, " \
        f"the notebooks' reading adds to {total[0]} min"
    assert hours_of(rows, "core parts", where) * 60 == total[1], \
        f"{where}: the week gives the core parts {hours_of(rows, 'core parts', where)} h, " \
        f"the notebooks' core parts add to {total[1]} min"


def test_the_quiz_and_the_project_fit_their_hours():
    """The project's minutes are its week row; the quiz fits in its row."""
    week = readme_week()
    where = "README.md (The week, hour by hour)"
    for path, word, check in (
            (ROOT / "source/project/project.ipynb", "project", lambda m, h: m == 60 * h),
            (ROOT / "source/quiz/quiz.ipynb", "quiz", lambda m, h: 0 < m <= 60 * h)):
        minutes = int(SHORT_TIME.search(objectives_cell(path)).group(1))
        hours = hours_of(week, word, where)
        assert check(minutes, hours), \
            f"{path.relative_to(ROOT)} plans {minutes} min; {where} gives {word} {hours} h"


def test_the_guide_gives_the_week_the_readmes_hours():
    """guide/README.md's week table: the same rows' hours as README.md's."""
    readme = readme_week()
    guide = week_table(GUIDE, "## How to spend the week")
    assert [h for _, h in guide] == [h for _, h in readme], \
        f"guide/README.md's week table gives {guide}, README.md's gives {readme}"
