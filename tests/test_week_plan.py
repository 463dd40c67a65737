"""The week's time plan is counted by code and agrees wherever it is written.

Every master opens with a title cell and then a cell of two or three
objectives and a time line. README.md's section "The week, hour by hour"
holds the week in minutes and each lab notebook's minutes; the notebooks'
time lines must match that table, its total row must be its sums, and the
reading guide must give the week the same minutes. Fast: no kernel runs.

The reading, core-part and core-exercise minutes are not typed by guess:
tools/week_plan.py counts them from the masters, and these tests compare.
Its rule for reading: a notebook's core prose is its markdown, leaving out
each graded part's task text (from its `## Part X` heading down to its
last graded cell), the going-further sections (a heading whose first line
starts `*Going further`), the Exercises, Discussion questions and
References sections, and the time line (folds under `<details>` count, and
are counted apart too); words are runs of letters or digits; the lecture's
minutes are all its words at 200 a minute, rounded up once, and each
notebook gets its share by largest remainder. The core path must read at
200 words a minute or slower over the whole, and 250 or slower in every
notebook.
"""
import math
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
import sys  # noqa: E402
sys.path.insert(0, str(ROOT / "tools"))
import week_plan  # noqa: E402
README = ROOT / "README.md"
GUIDE = ROOT / "guide" / "README.md"
MASTERS = sorted((ROOT / "source").glob("*/*.ipynb"))
LAB = sorted((ROOT / "source" / "lab").glob("*.ipynb"))

HEAD = "**After this notebook you can:**"
OBJECTIVE = re.compile(r"^(\d+)\.\s+\S", re.M)
LAB_TIME = re.compile(r"^\*\*Time:\*\* about (\d+) min reading, (\d+) min for the core "
                      r"lab, (\d+) min for the exercises on the core path, (\d+) min "
                      r"for the extensions\.$", re.M)
SHORT_TIME = re.compile(r"^\*\*Time:\*\* about (\d+) min\.$", re.M)
PART = re.compile(r"^#{1,6}\s+Part\s+\w+\s*\([\d.]+\s+points?\)\s*·\s*(core|extension)",
                  re.M)
COLUMNS = ("reading", "core lab", "core exercises", "extensions")
COUNTED = COLUMNS[:3]  # counted by tools/week_plan.py
WEEK_MINUTES = 600


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
    """(label, minutes) per row of the week table under `heading`, total last."""
    where = f"{path.relative_to(ROOT)} ({heading.lstrip('# ')})"
    table = table_with(section(path, heading), "part of the week", where)
    assert table[0][1] == "minutes", f"{where}: the week table's columns are {table[0]}"
    rows = []
    for label, minutes in table[1:]:
        assert minutes.isdigit(), f"{where}: row {label!r} gives {minutes!r} min, not a number"
        rows.append((label, int(minutes)))
    assert rows and rows[-1][0] == "total", f"{where}: the week table has no total row last"
    return rows


def minutes_of(rows: list[tuple[str, int]], word: str, where: str) -> int:
    matches = [m for label, m in rows if word in label]
    assert len(matches) == 1, f"{where}: expected one week row mentioning {word!r}, " \
                              f"found {len(matches)}"
    return matches[0]


def readme_week() -> list[tuple[str, int]]:
    return week_table(README, "### The week, hour by hour")


def notebook_table() -> dict[str, tuple[int, ...]]:
    """Notebook (file stem) or 'total' -> minutes, one per column of COLUMNS."""
    where = "README.md (The week, hour by hour)"
    table = table_with(section(README, "### The week, hour by hour"), "notebook", where)
    want = ["notebook", *(f"{c} (min)" for c in COLUMNS)]
    assert table[0] == want, f"{where}: the per-notebook table's columns are " \
                             f"{table[0]}, expected {want}"
    rows = {}
    for name, *minutes in table[1:]:
        assert all(m.isdigit() for m in minutes), \
            f"{where}: row {name!r} has minutes {minutes}, not whole numbers"
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
def test_each_lab_notebooks_minutes_match_the_readme_and_the_count(path):
    """The time line's numbers are the notebook's row in README.md; its
    reading, core-part and core-exercise minutes are what tools/week_plan.py
    counts; a notebook with no core (extension) part plans 0 minutes for them."""
    name = path.relative_to(ROOT)
    table = notebook_table()
    assert path.stem in table, f"README.md: the per-notebook table has no row {path.stem!r}"
    said = tuple(int(n) for n in LAB_TIME.search(objectives_cell(path)).groups())
    assert said == table[path.stem], \
        f"{name} says {dict(zip(COLUMNS, said))} min, README.md's row says " \
        f"{dict(zip(COLUMNS, table[path.stem]))}"
    counted = week_plan.plan()[path.stem]
    assert said[:3] == tuple(counted[c] for c in COUNTED), \
        f"{name} plans {dict(zip(COUNTED, said))} min, tools/week_plan.py counts " \
        f"{ {c: counted[c] for c in COUNTED} }"
    nb = nbformat.read(path, as_version=4)
    kinds = {m for c in nb.cells if c.cell_type == "markdown"
             for m in PART.findall(c.source)}
    if "core" in kinds:
        assert said[1] >= week_plan.PART_SETUP * len(week_plan.core_solution_lines(nb)), \
            f"{name} has '· core' parts but plans only {said[1]} min for the core lab"
    if "extension" in kinds:
        assert said[3] > 0, f"{name} has '· extension' parts but plans 0 min for them"
    else:
        assert said[3] == 0, f"{name} has no '· extension' part but plans {said[3]} min"


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.name)
def test_no_notebook_is_read_faster_than_250_words_a_minute(path):
    """The planned reading minutes leave at most 250 words a minute."""
    row = week_plan.plan()[path.stem]
    assert row["reading"] > 0 and row["words"] / row["reading"] <= 250, \
        f"{path.name}: {row['words']} words of core prose in {row['reading']} min"


def test_the_core_path_reads_at_200_words_a_minute_or_slower():
    """Over all nine notebooks, at most 200 words a minute; README.md states
    the words, the rate and the fastest notebook's rate as counted."""
    rows = week_plan.plan().values()
    words = sum(r["words"] for r in rows)
    minutes = sum(r["reading"] for r in rows)
    assert words / minutes <= 200, f"{words} words in {minutes} min"
    text = section(README, "### The week, hour by hour")
    stated = f"hold {words:,} words of core prose: {round(words / minutes)} words a minute " \
             f"over the {minutes} minutes, and at most " \
             f"{max(round(r['words'] / r['reading']) for r in rows)} in any one notebook"
    assert stated in " ".join(text.split()), f"README.md should say {stated!r}"
    assert f"at {week_plan.RATE} words a minute" in " ".join(text.split())


def test_the_readme_states_the_lab_rule_and_its_example():
    """README.md's rule for the core lab is the one tools/week_plan.py
    applies, and its example (06's loop) is computed."""
    nb = nbformat.read(ROOT / "source/lab/06_agentic.ipynb", as_version=4)
    loop = [p for p in week_plan.parts_of(nb) if p.name == "Part F"][0]
    lines = sum(week_plan.solution_lines(nb.cells[i].source) for i in loop.answers)
    given = sum(week_plan.scaffold_lines(nb.cells[i].source) for i in loop.answers)
    text = " ".join(section(README, "### The week, hour by hour").split())
    assert (week_plan.PART_SETUP, week_plan.PER_LINE, week_plan.CODE_LINES_PER_MINUTE) \
        == (5, 1, 20)
    assert "5 minutes to read the task" in text and "a minute per line the student writes" \
        in text and "a minute per 20 lines" in text
    said = (f"06's loop: the student writes {lines} lines inside {given} given ones, "
            f"{week_plan.PART_SETUP + lines} minutes")
    assert said in text, f"README.md should say {said!r}"


def test_at_least_four_exercises_are_on_the_core_path():
    """Four or more exercises say "core path, about N min", and the README
    names them in its exercise row."""
    rows = week_plan.plan()
    assert sum(r["exercises"] for r in rows.values()) >= 4
    week = readme_week()
    count = sum(r["exercises"] for r in rows.values())
    words = {4: "four", 5: "five", 6: "six"}
    assert minutes_of(week, "exercises on the core path", "README.md") == \
        sum(r["core exercises"] for r in rows.values())
    assert any(label.startswith(words.get(count, str(count)) + " exercises")
               for label, _ in week), f"README.md's week should count {count} exercises"


def test_the_solution_line_count_leaves_out_what_is_not_code():
    """Blank lines, comments, docstrings and nbgrader markers are not lines."""
    code = ('def f(x):\n    """Doc\n    string."""\n    ### BEGIN SOLUTION\n'
            '    # why\n\n    y = x + 1\n    return y\n    ### END SOLUTION\n')
    assert week_plan.solution_lines(code) == 3 - 1  # the `def` line is given
    assert week_plan.solution_lines(code.replace("### BEGIN SOLUTION\n", "")
                                    .replace("### END SOLUTION\n", "")) == 3


def test_a_scaffold_counts_only_the_lines_the_student_writes():
    """Between the markers: the student's lines; around them: given code,
    counted at the ungraded rate."""
    code = ('def score(q, d):\n    """Doc."""\n    check(q)\n    terms = split(q)\n'
            '    ### BEGIN SOLUTION\n    total = sum(w(t) for t in terms)\n'
            '    ### END SOLUTION\n    # given again\n    return round(total, 3)\n')
    assert week_plan.solution_lines(code) == 1
    assert week_plan.scaffold_lines(code) == 4  # def, check, terms, return
    assert week_plan.scaffold_lines("x = 1\n") == 0  # no markers: all the student's


def test_the_reading_rule_leaves_out_what_it_says():
    """Task text, folds, going-further, exercises and references are not
    counted; lecture text after a part's last graded cell is."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    graded = code("assert True")
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1}
    nb = nbformat.v4.new_notebook(cells=[
        md("# Title\n\none two"),
        md("## 1. Section\n\nthree four\n\n<details><summary>More</summary>\n\n"
           "folded words here\n\n</details>"),
        md("## Part A (1 point) · core\n\ntask words here"), graded,
        md("five six"),
        md("## 2. Far\n\n*Going further: off the path.*\n\nfar words"),
        md("### deeper\n\nstill far"),
        md("## Summary\n\nseven\n\n## Exercises\n\n1. an exercise\n\n"
           "## References\n\n- a paper")])
    kept = week_plan.core_prose(nb)
    # Title, 1, Section, Summary, one..seven, and the fold's More + 3 words
    assert week_plan.words(kept) == 15, kept
    assert week_plan.fold_words(kept) == 4, kept
    for left_out in ("task", "far", "exercise", "paper"):
        assert left_out not in kept
    assert week_plan.minutes(201) == 2 and week_plan.minutes(200) == 1


def test_a_math_less_than_sign_is_not_a_tag():
    """`$y_{<i}$` in a formula starts no HTML tag: the words after it count."""
    assert week_plan.words("the token $y_{<i}$ before it\n\nthen more words > here") == \
        week_plan.words("the token $y_{i}$ before it\n\nthen more words > here")


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.name)
def test_folds_hold_extras_only(path):
    """A notebook's folds hold at most FOLD_SHARE of its core prose: the
    lecture is on the path, and a fold is for derivations and asides."""
    row = week_plan.plan()[path.stem]
    share = row["fold words"] / row["words"]
    assert share <= week_plan.FOLD_SHARE, \
        f"{path.name}: {row['fold words']} of {row['words']} words of core prose are " \
        f"folded ({share:.0%}); at most {week_plan.FOLD_SHARE:.0%}"


def test_the_readme_tables_add_up():
    """Total rows = column sums; the week fits in 600 minutes or says by
    how much it runs over; its reading, core-part and core-exercise rows
    are the notebooks' totals; the table lists exactly the lab's notebooks."""
    table = notebook_table()
    assert "total" in table, "README.md: the per-notebook table has no 'total' row"
    total = table.pop("total")
    assert sorted(table) == [p.stem for p in LAB], \
        f"README.md: the per-notebook table lists {sorted(table)}, " \
        f"source/lab/ holds {[p.stem for p in LAB]}"
    sums = tuple(sum(row[i] for row in table.values()) for i in range(len(COLUMNS)))
    assert total == sums, f"README.md: the total row says {dict(zip(COLUMNS, total))}, " \
                          f"the columns add to {dict(zip(COLUMNS, sums))}"

    week = readme_week()
    where = "README.md (The week, hour by hour)"
    *rows, (_, minutes) = week
    assert sum(m for _, m in rows) == minutes, \
        f"{where}: the week's rows add to {sum(m for _, m in rows)} min, " \
        f"its total says {minutes}"
    # the seed's week is ten hours; a plan over it says so in so many words
    # (until the lab's core parts are scaffolded, the lab runs over)
    if minutes > WEEK_MINUTES:
        said = f"takes {minutes} minutes ({minutes - WEEK_MINUTES} over the seed's ten hours)"
        assert said in " ".join(section(README, "### The week, hour by hour").split()), \
            f"{where}: the week is {minutes} min; the README must say {said!r}"
    for word, column in (("prose", 0), ("core lab", 1), ("exercises on the core path", 2)):
        assert minutes_of(rows, word, where) == total[column], \
            f"{where}: the week gives {word} {minutes_of(rows, word, where)} min, " \
            f"the notebooks' {COLUMNS[column]} add to {total[column]}"


def test_the_quiz_and_the_project_fit_their_minutes():
    """The quiz's and the project's time lines are their week rows."""
    week = readme_week()
    where = "README.md (The week, hour by hour)"
    for path, word in ((ROOT / "source/project/project.ipynb", "project"),
                       (ROOT / "source/quiz/quiz.ipynb", "the quiz")):
        minutes = int(SHORT_TIME.search(objectives_cell(path)).group(1))
        planned = minutes_of(week, word, where)
        assert minutes == planned, \
            f"{path.relative_to(ROOT)} plans {minutes} min; {where} gives {word} {planned}"


def test_the_guide_gives_the_week_the_readmes_minutes():
    """guide/README.md's week table: the same rows' minutes as README.md's."""
    readme = readme_week()
    guide = week_table(GUIDE, "## How to spend the week")
    assert [m for _, m in guide] == [m for _, m in readme], \
        f"guide/README.md's week table gives {guide}, README.md's gives {readme}"


def toy_lab() -> nbformat.NotebookNode:
    """A notebook with ungraded code on and off the core path and one core
    part whose student writes 3 lines inside a given `def` line."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    solution = code("def f(x):\n    ### BEGIN SOLUTION\n    y = x\n    z = y\n"
                    "    return z\n    ### END SOLUTION")
    solution.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "f",
                                     "locked": False}
    solution.metadata["course"] = {"path": "core"}
    graded = code("assert f(1) == 1")
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1,
                                   "locked": True, "solution": False}
    check = code("# the prose's claim: a is 1\nassert a == 1\nassert b == 2")
    check.metadata["nbgrader"] = {"grade": False, "grade_id": "nb01_check_ab",
                                  "locked": True, "solution": False}
    return nbformat.v4.new_notebook(cells=[
        md("# Title"),
        code("a = 1\n\nb = 2"),                      # 2 lines on the path
        check,                                        # not in the student's edition
        md("## Part A (1 point) · core\n\nWrite `f`."), solution,
        code("f(3)  # the part's demo"), graded,      # inside the part
        md("## 2. Far\n\n*Going further: off the path.*"), code("far = 1"),
        md("## 3. Back\n\ntext"), code("c = 3"),      # on the path again
        md("## Exercises\n\n1. **One** (core path, about 10 min)"), code("ex = 1")])


def test_the_lab_rule_counts_what_it_says():
    """Ungraded core-path code leaves out the parts (demo included), going
    further and exercises, the check cells (no student runs them) and blank
    lines, and takes the given lines of a scaffold; a core part is 5 min +
    1 a line the student writes."""
    nb = toy_lab()
    assert week_plan.ungraded_code_lines(nb) == 3 + 1  # the given `def` line
    assert week_plan.core_solution_lines(nb) == [3]
    assert week_plan.core_part_minutes(nb) == 5 + 3
    assert week_plan.core_lab_minutes(nb) == math.ceil(5 + 3 + 4 / 20)
    assert week_plan.exercise_minutes(nb) == [10]


def test_the_readme_states_the_core_lab_against_the_seeds_two_hours():
    """README.md says what the core lab and its exercises count, truthfully,
    and by how much they run over the seed's 120 lab minutes if they do."""
    rows = week_plan.plan().values()
    lab = sum(r["core lab"] for r in rows) + sum(r["core exercises"] for r in rows)
    text = " ".join(section(README, "### The week, hour by hour").split())
    stated = (f"{sum(r['core parts'] for r in rows)} core parts in which the student writes "
              f"{sum(r['solution lines'] for r in rows)} lines, "
              f"{sum(r['code lines'] for r in rows):,} lines of given code to run and read, "
              f"and {sum(r['exercises'] for r in rows)} core exercises: "
              f"{lab} minutes against the seed's {week_plan.SEED_LAB_MINUTES}")
    assert stated in text, f"README.md should say {stated!r}"
    over = lab - week_plan.SEED_LAB_MINUTES
    if over > 0:
        assert f"{over} minutes over" in text, f"README.md should say the lab is {over} over"


def test_the_lecture_is_planned_whole_and_shared_out_by_largest_remainder():
    """The lecture's minutes are all its words at RATE, rounded up once; a
    notebook gets its words at RATE rounded down, and the largest fractions
    a minute more each (ties by name) until the shares add up."""
    rate = week_plan.RATE
    # 10.5, 10.75 and 10.05 minutes: 31.3 in all, so 32; two spare minutes
    # go to b (0.75 left over) and a (0.5), not c (0.05)
    counts = {"a": int(10.5 * rate), "b": int(10.75 * rate), "c": int(10.05 * rate)}
    assert week_plan.reading_minutes(counts) == {"a": 11, "b": 11, "c": 10}
    # rounding each up on its own would have planned 33
    assert sum(week_plan.minutes(n) for n in counts.values()) == 33
    # equal fractions: the first name takes the one spare minute
    half = int(1.5 * rate)
    assert week_plan.reading_minutes({"x": half, "w": half}) == {"w": 2, "x": 1}
    # whole minutes are never rounded
    assert week_plan.reading_minutes({"a": 3 * rate, "b": 2 * rate}) == {"a": 3, "b": 2}
