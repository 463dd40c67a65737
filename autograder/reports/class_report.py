"""The class at a glance, for the instructor the day after a deadline:
which parts the class did not get, which mistake cost most of the points,
which quiz question is badly written, and who needs help.

course.py writes it after every grade sheet, as OUT/class_report/:

    index.html      the page: one per class, every assignment on it
    parts.csv       per assignment and part: its points, the students marked,
                    the mean share of the points, hardest first
    heatmap.csv     per student and part: the share of the part's points,
                    and its state (marked; or why there is no share: no
                    submission, not handed in, refused, to mark)
    failures.csv    per part, each failure message the tests gave (numbers
                    and quoted values made alike, so one assertion is one
                    row), how many students got it, and one of them
    items.csv       per quiz question: difficulty, discrimination (against
                    the rest of the quiz, and the upper-lower 27% index),
                    how many chose each option, and what to look at
    totals.csv      per student: each assignment's points after any late
                    penalty, days late, refused hand-ins, assignments with no
                    submission, total and band
    unread.csv      the autograded notebooks the reader could not read, and why
    *.png           the figures (each has its alt text on the page)

The page names students and quotes their failure messages, so it is the
instructor's alone: the folder is made 0700 and every file in it 0600 from
its first byte, in a fresh folder swapped in whole, and nothing copies it
into feedback/. What it reads are the grader's own results (the gathered
gradebook, problems.csv, grade_sheet.csv and the autograded notebooks).
The autograded notebooks hold the student's bytes: this process only opens
them; an unprivileged reader per student (class_report_reader.py) parses
them and sends back plain data, which is checked against the masters,
capped and escaped (read_student). An answer is parsed, never run.

Large classes: from LARGE students on, the heatmap shows groups of students
by their rank in the assignment (the mean share of each group) instead of
one row each, and the page lists only the SHOWN weakest students by name;
the CSV files always hold everyone.
"""
from __future__ import annotations

import ast
import html
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from autograder.intake.gate import SANDBOX_UID, Reader, Refused
from autograder.intake.intake import plain
from autograder.reports.class_report_reader import MAX_MESSAGE, OPTIONS, chosen_option
from autograder.run.rag_feedback import Part, nbgrader_meta, parts_of
from autograder.scoring.results import missing_notebooks
from autograder.scoring.safe_csv import neutralised

FOLDER = "class_report"  # OUT/class_report/
MIN_ITEM_CLASS = 20  # fewer quiz takers than this: counts only, no indices
LOW_DISCRIMINATION = 0.2  # a rest-of-quiz point-biserial below this is flagged
UPPER_LOWER = 0.27  # the share of the class in each of the two groups
LARGE = 40  # from this many students on, the heatmap groups students
SHOWN = 15  # rows of a per-student list shown on the page (CSV: all)
TOP_FAILURES = 3  # failure messages shown per part (CSV: all)
# what a task's stub raises while the student has not written it: a part
# left blank, counted on its own so it never hides a real mistake
BLANK = "NotImplementedError"
READER = Path(__file__).resolve().with_name("class_report_reader.py")
READ_SECONDS = 120  # one student's notebooks, read by READER
# grade.py's and intake's line for a submission refused whole
REFUSED = re.compile(r"^\(submission\): .*(refused|not graded), scored 0$")
STATES = ("marked", "to mark", "not handed in", "refused", "no submission")
UNREAD_COLUMNS = ["student", "assignment", "notebook", "why"]
COLUMNS = ["student", "assignment", "notebook", "cell", "part", "path", "score",
           "max_score", "state", "message"]


@dataclass
class ClassResults:
    """Everything the page is made from, as plain tables.

    cells: one row per student and graded cell (COLUMNS); `state` is one of
    STATES and `message` the failure the cell gave ('' when it passed).
    choices: student, question (1, 2, ...), choice ("A".."D", "other" for an
    answer of another form, "none" for no answer).
    keys: question -> the right option. sheet: the grade sheet (student, each
    assignment after penalty, "<a> days late", "<a> penalty", total, out of).
    unread: the autograded notebooks the reader could not read
    (UNREAD_COLUMNS; their scores count, their messages and choices are
    missing). readers: who each reader said it was (read_student).
    """
    cells: pd.DataFrame
    choices: pd.DataFrame
    keys: dict[int, str]
    sheet: pd.DataFrame
    unread: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=UNREAD_COLUMNS))
    readers: list[str] = field(default_factory=list)


# --- reading a graded class ---------------------------------------------------

def parts_of_master(path: Path) -> dict[str, tuple[str, str]]:
    """grade_id -> (part, path) for every graded cell of a master: the part
    is the `## Part X` or `## Question N` heading above the cell ("Q3" for a
    question), as the feedback pages read it (rag_feedback.parts_of), the
    path "extension" when that heading says so, else "core"."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return {nbgrader_meta(nb.cells[i])["grade_id"]:
            (f"Q{number}" if number else part.name,
             "extension" if part.path == "extension" else "core")
            for part, number in numbered(parts_of(nb)) for i in part.tests}


def numbered(parts: list[Part]) -> list[tuple[Part, int | None]]:
    """Each part with its question's number (None for a `Part X`)."""
    return [(p, int(p.name.split()[1]) if p.name.startswith("Question") else None)
            for p in parts]


def part_label(assignment_notebooks: int, notebook: str, part: str) -> str:
    """A part's name on the page: the notebook's number goes in front when
    the assignment has several notebooks ("04 Part B")."""
    if assignment_notebooks < 2:
        return part
    return f"{notebook.split('_', 1)[0]} {part}"


@dataclass
class Read:
    """What the reader sent of one autograded notebook: grade_id -> the
    failure message (escaped, capped), answer grade_id -> the option it
    sets, and why it could not be read ('' when it could)."""
    messages: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    unread: str = ""


def gave_up_root(who: str) -> bool:
    """Whether the ids a reader reported (real, effective, saved uid and
    gid, then its groups) are the sandbox's and nothing of root's."""
    ids = who.split()
    return (len(ids) >= 6 and all(i.isdigit() for i in ids)
            and {int(i) for i in ids[:6]} == {SANDBOX_UID}
            and all(int(i) != 0 for i in ids[6:]))


def open_plain(path: Path) -> int:
    """`path` opened for reading without following a link (nor waiting on
    a pipe); OSError when it is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(0, "not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_student(paths: list[Path], known: list[set[str]],
                 answers: dict[str, str]) -> tuple[list[Read], str]:
    """One student's autograded notebooks `paths`, read by an unprivileged
    child (class_report_reader.py) from files this process opens: a Read
    each, and who the reader said it was. `known[i]` are the graded cells of
    notebook i's master (the reader is asked for no other, and a message for
    any other cell is not taken),
    `answers` the quiz's answer cells and their variables. Whatever goes
    wrong (a notebook too large or too deep, the reader out of time or
    memory) marks this student's notebooks unread, no one else's."""
    reads = [Read() for _ in paths]
    fds, order, asked = [], [], []
    for i, path in enumerate(paths):
        try:
            fds.append(open_plain(path))
            order.append(i)
            asked.append(f"{fds[-1]}:{','.join(sorted(known[i]))}")
        except OSError as err:
            reads[i].unread = f"cannot be opened ({err.strerror})"
    if not fds:
        return reads, ""
    wanted = ",".join(f"{g}={name}" for g, name in sorted(answers.items()))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(READER), str(SANDBOX_UID), str(SANDBOX_UID),
             wanted, *asked], pass_fds=fds, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/", env={},
            start_new_session=True)
    finally:
        for fd in fds:
            os.close(fd)
    who, current, sent = "", None, 0
    try:
        frames = Reader(proc.stdout.fileno(), time.monotonic() + READ_SECONDS, READ_SECONDS)
        kind, payload = frames.frame()
        who = payload.decode("ascii", "replace")[:200] if kind == b"U" else ""
        if os.geteuid() == 0 and not gave_up_root(who):
            raise Refused(f"the reader did not give up root (it said {plain(who)!r})")
        while (frame := frames.frame())[0] != b"Z":
            kind, payload = frame
            if kind == b"N":
                n = int(payload) if payload.isdigit() else -1
                if not 0 <= n < len(order) or (current is not None and n <= current):
                    raise Refused("the reader sent something unexpected")
                current, sent = n, 0
                continue
            if current is None:
                raise Refused("the reader sent something unexpected")
            read = reads[order[current]]
            text = payload.decode("utf-8", "replace")
            if kind == b"X":
                read.unread = plain(text, MAX_MESSAGE)
                continue
            key, _, value = text.partition("\0")
            sent += 1  # a message or an option per cell of the master at most
            if sent > len(known[order[current]]) + len(answers):
                raise Refused("the reader sent more than the notebook has cells")
            if kind == b"M" and key in known[order[current]]:
                read.messages[key] = plain(value, MAX_MESSAGE)
            elif kind == b"Q" and key in answers and value in (*OPTIONS, "other", "none"):
                read.options[key] = value
            else:
                raise Refused("the reader sent something unexpected")
        current = len(order)
    except Refused as why:
        # the notebook being read when it went wrong, and those after it
        for n in range(current or 0, len(order)):
            reads[order[n]] = Read(unread=f"not read: {why}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    return reads, who


def read_class(out: Path, source: Path, assignments: list[str]) -> ClassResults:
    """The class as course.py left it in OUT: scores from the gathered
    gradebook (manual marks included), what was refused or not handed in
    from each assignment's problems.csv, the sheet from grade_sheet.csv,
    and failure messages and quiz choices from the gathered autograded
    notebooks, read by an unprivileged reader per student (read_student).
    Every student of the class (the gradebook's, and anyone an assignment's
    scores.csv names) gets a row in every assignment graded: "no
    submission" for one who handed none of it in."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.scoring.safe_csv import read_text_csv

    course = out / "formgrader"
    graded = [a for a in assignments if (out / a / "scores.csv").is_file()]
    masters = {a: sorted((source / a).glob("*.ipynb")) for a in graded}
    parts = {(a, m.name): parts_of_master(m) for a in graded for m in masters[a]}
    keys, reasons, answers = {}, {}, {}
    if "quiz" in graded:
        keys, reasons = quiz_keys(masters["quiz"]), quiz_reasons(masters["quiz"])
        answers = answer_cells(masters["quiz"])
    handed = {a: set(read_text_csv(out / a / "scores.csv")["student"]) for a in graded}
    plan = []  # (assignment, student, master, state, its grades)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        everyone = sorted(set().union({s.id for s in gb.students}, *handed.values()))
        for a in graded:
            problems = read_text_csv(out / a / "problems.csv")
            lines = problems.groupby("student")["problem"].apply(list).to_dict()
            for student in everyone:
                said = lines.get(student, [])
                refused = any(REFUSED.match(p) for p in said)
                missing = set(missing_notebooks(said))
                try:
                    sub = None if refused else gb.find_submission(a, student)
                except MissingEntry:
                    sub = None
                for m in masters[a]:
                    grades = {}
                    if sub is not None and m.name not in missing:
                        nb = next((n for n in sub.notebooks if n.name == m.stem), None)
                        grades = {g.name: (float(g.score), float(g.max_score),
                                           g.needs_manual_grade and g.manual_score is None)
                                  for g in nb.grades} if nb else {}
                    state = ("no submission" if student not in handed[a]
                             else "refused" if refused else None)
                    plan.append((a, student, m, state, grades))
    reads, readers = {}, []
    for student in sorted({p[1] for p in plan}):
        mine = [p for p in plan if p[1] == student and p[4]]
        found, who = read_student(
            [course / "autograded" / student / a / m.name for a, _, m, _, _ in mine],
            [set(parts[(a, m.name)]) for a, _, m, _, _ in mine], answers)
        reads.update({(a, student, m.name): r for (a, _, m, _, _), r in zip(mine, found)})
        readers += [who] if who else []
    rows, choices = [], []
    for a, student, m, state, grades in plan:
        read = reads.get((a, student, m.name), Read())
        start = len(rows)
        for grade_id, (part, kind) in parts[(a, m.name)].items():
            g = grades.get(grade_id)
            cell_state = state or ("not handed in" if g is None
                                   else "to mark" if g[2] else "marked")
            top = g[1] if g is not None else np.nan
            score = g[0] if cell_state == "marked" else np.nan
            rows.append({"student": student, "assignment": a, "notebook": m.name,
                         "cell": grade_id,
                         "part": part_label(len(masters[a]), m.name, part),
                         "path": kind, "score": score, "max_score": top,
                         "state": cell_state,
                         "message": read.messages.get(grade_id, "")
                         if cell_state == "marked" and score < top else ""})
        if a == "quiz" and grades and not read.unread:
            choices += quiz_choices(student, rows[start:], keys, reasons, answers,
                                    read.options)
    cells = pd.DataFrame(rows, columns=COLUMNS)
    # a cell's points come from the master when no gradebook holds them
    points = cells.dropna(subset=["max_score"]).groupby(["assignment", "cell"])["max_score"].max()
    cells["max_score"] = [points.get((a, c), 0.0) for a, c in zip(cells["assignment"],
                                                                   cells["cell"])]
    sheet = (pd.read_csv(out / "grade_sheet.csv") if (out / "grade_sheet.csv").is_file()
             else pd.DataFrame(columns=["student"]))
    unread = pd.DataFrame([{"student": s, "assignment": a, "notebook": n, "why": r.unread}
                           for (a, s, n), r in sorted(reads.items()) if r.unread],
                          columns=UNREAD_COLUMNS)
    return ClassResults(cells, pd.DataFrame(choices, columns=["student", "question", "choice"]),
                        keys, sheet, unread, readers)


def question_cells(nb) -> list[tuple[int, object]]:
    """(question number, answer cell) for each answer cell of a quiz: the
    solution cell under each `## Question N` heading."""
    return [(number, nb.cells[i]) for part, number in numbered(parts_of(nb)) if number
            for i in part.answers]


def quiz_keys(masters: list[Path]) -> dict[int, str]:
    """question -> the option the master's solution chooses."""
    import nbformat

    return {q: chosen_option(cell.source, f"q{q}")
            for m in masters for q, cell in question_cells(nbformat.read(m, as_version=4))}


def answer_cells(masters: list[Path]) -> dict[str, str]:
    """grade_id of each question's answer cell -> the variable it sets
    ("q3"), from the masters: the reader looks for these cells by id."""
    import nbformat

    return {nbgrader_meta(cell)["grade_id"]: f"q{q}"
            for m in masters for q, cell in question_cells(nbformat.read(m, as_version=4))}


def quiz_reasons(masters: list[Path]) -> dict[int, dict[str, str]]:
    """question -> {option: what its hidden test says to a student who chose
    it}, from the `why = {...}` table of each question's test in the master
    (a master is the instructor's, so its literal is read as data)."""
    import nbformat

    found: dict[int, dict[str, str]] = {}
    for m in masters:
        nb = nbformat.read(m, as_version=4)
        tests = [(number, nb.cells[i]) for part, number in numbered(parts_of(nb)) if number
                 for i in part.tests]
        for number, cell in tests:
            for node in ast.walk(ast.parse(cell.source)):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                        and any(isinstance(t, ast.Name) and t.id == "why"
                                for t in node.targets)):
                    # an explanation made by an f-string is left out
                    found[number] = {k.value: v.value for k, v in zip(node.value.keys,
                                                                      node.value.values)
                                     if isinstance(k, ast.Constant)
                                     and isinstance(v, ast.Constant)}
    return found


def graded_choice(q: int, right: bool, message: str, reasons: dict[str, str],
                  key: str, parsed: str) -> str:
    """The option a student chose, as the grading saw it: the key when the
    question's test passed; the option whose explanation the failed test
    gave; "other" when the test refused the answer's form, "none" when there
    was no answer; else `parsed`, what the reader found the answer cell's
    text sets (parsed, not run; '' when it found no answer cell)."""
    if right:
        return key
    said = message.split(f"Question {q}: ", 1)
    if message.startswith("AssertionError") and len(said) == 2 and said[1]:
        for option, why in sorted(reasons.items()):
            if why.startswith(said[1]) and option in OPTIONS:
                return option
    if message.startswith("ValueError") and f"q{q} must be" in message:
        return "other"
    if message.startswith(("NotImplementedError", "NameError")):
        return "none"
    return parsed or "none"


def quiz_choices(student: str, rows: list[dict], keys: dict[int, str],
                 reasons: dict[int, dict[str, str]], answers: dict[str, str],
                 options: dict[str, str]) -> list[dict]:
    """A student's choices, from their graded quiz's `rows` of cells and
    the `options` the reader found in its `answers` cells (see
    answer_cells)."""
    out = []
    for grade_id, name in sorted(answers.items(), key=lambda item: int(item[1][1:])):
        q = int(name[1:])
        tests = [r for r in rows if r["part"] == f"Q{q}" and r["max_score"] > 0]
        right = bool(tests) and all(r["score"] >= r["max_score"] for r in tests)
        message = next((r["message"] for r in tests if r["message"]), "")
        out.append({"student": student, "question": q,
                    "choice": graded_choice(q, right, message, reasons.get(q, {}),
                                            keys.get(q, ""), options.get(grade_id, ""))})
    return out


# --- the numbers ----------------------------------------------------------------

def student_parts(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per assignment, part and student: points and of over the
    part's marked cells, their share, how many cells wait for a person, and
    the state: refused, no submission (nothing of the assignment handed
    in), not handed in (not this part's notebook), marked (any cell
    marked), or to mark (every cell still waits for a person)."""
    if not isinstance(cells, pd.DataFrame):
        raise TypeError(f"cells must be a DataFrame, got {type(cells).__name__}")
    lacking = set(COLUMNS) - set(cells.columns) - {"notebook", "message", "path"}
    if lacking:
        raise ValueError(f"cells lacks the columns {sorted(lacking)}")
    marked = cells["state"] == "marked"
    frame = cells.assign(of=cells["max_score"].where(marked, 0.0),
                         pending=(cells["state"] == "to mark").astype(int),
                         refused=cells["state"] == "refused",
                         absent=cells["state"] == "not handed in", marked=marked,
                         nothing=cells["state"] == "no submission")
    table = frame.groupby(["assignment", "part", "student"], sort=True).agg(
        points=("score", "sum"), of=("of", "sum"), to_mark=("pending", "sum"),
        refused=("refused", "any"), absent=("absent", "all"),
        marked=("marked", "any"), nothing=("nothing", "all")).reset_index()
    table["state"] = np.select([table["nothing"], table["refused"], table["absent"],
                                table["marked"]],
                               ["no submission", "refused", "not handed in", "marked"],
                               "to mark")
    has = (table["state"] == "marked") & (table["of"] > 0)
    table["share"] = (table["points"] / table["of"].where(has)).where(has)
    return table.drop(columns=["refused", "absent", "marked", "nothing"])


def parts_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per assignment and part: its points, how many students were marked
    on it, and their mean share of its points; hardest first in each
    assignment (ties by the part's name). Refused and missing hand-ins and
    answers still to mark are left out of the mean: they say nothing about
    the part (to_mark counts those answers)."""
    per = student_parts(cells)
    table = per.groupby(["assignment", "part"]).agg(
        marked=("share", "count"), to_mark=("to_mark", "sum"), mean_share=("share", "mean"),
        students_below_half=("share", lambda s: int((s < 0.5).sum()))).reset_index()
    first = cells.groupby(["assignment", "part"])
    paths = first["path"].first()
    points = cells.groupby(["assignment", "part", "student"])["max_score"].sum().groupby(
        level=[0, 1]).max()
    keys = list(zip(table["assignment"], table["part"]))
    table.insert(2, "points", [points[k] for k in keys])
    table["path"] = [paths[k] for k in keys]
    table["mean_share"] = table["mean_share"].round(4)
    return table.sort_values(["assignment", "mean_share", "part"],
                             na_position="last", kind="mergesort").reset_index(drop=True)


def heatmap_table(cells: pd.DataFrame, assignment: str) -> pd.DataFrame:
    """Students x parts of one assignment (shares, NaN where there is none),
    rows by the student's share of the assignment's points, lowest first,
    columns by the part's mean share, lowest first: the students who need
    help sit at the top, the parts to teach again on the left."""
    mine = cells[cells["assignment"] == assignment]
    if mine.empty:
        raise ValueError(f"assignment {assignment!r} has no cells")
    per = student_parts(mine)
    grid = per.pivot(index="student", columns="part", values="share")
    columns = parts_table(mine)["part"].tolist()
    marked = mine[mine["state"] == "marked"]
    share = (marked.groupby("student")["score"].sum()
             / marked.groupby("student")["max_score"].sum().replace(0, np.nan))
    rank = share.reindex(grid.index).fillna(-1.0)  # nothing marked: first
    rows = sorted(grid.index, key=lambda s: (rank[s], s))
    return grid.loc[rows, columns]


NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def normalise(message: str) -> str:
    """A failure message with what varies between students made alike:
    quoted values become '…' and numbers N, so one assertion is one group."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    return re.sub(r"\s+", " ", NUMBER.sub("N", QUOTED.sub("'…'", message))).strip()


def failures_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per assignment and part, each normalised failure message: how many
    students got it, in how many cells, and one of them (the first by
    name) with their message as it was; most students first."""
    failed = cells[(cells["message"] != "") & (cells["state"] == "marked")]
    failed = failed.assign(pattern=failed["message"].map(normalise))
    if failed.empty:
        return pd.DataFrame(columns=["assignment", "part", "pattern", "students", "cells",
                                     "example_student", "example"])
    table = failed.sort_values(["student", "cell"]).groupby(
        ["assignment", "part", "pattern"]).agg(
        students=("student", "nunique"), cells=("cell", "size"),
        example_student=("student", "first"), example=("message", "first")).reset_index()
    return table.sort_values(["assignment", "part", "students", "pattern"],
                             ascending=[True, True, False, True],
                             kind="mergesort").reset_index(drop=True)


def item_table(cells: pd.DataFrame, choices: pd.DataFrame, keys: dict[int, str],
               assignment: str = "quiz") -> tuple[pd.DataFrame, int]:
    """Item analysis of a quiz: (one row per question, the students counted).

    The students counted are those marked on every question (refused and
    missing hand-ins are not). Per question: difficulty, the share right;
    r_rest, the point-biserial correlation of being right with the score on
    the other questions (the question's own point left out, so it does not
    correlate with itself); upper_lower, the share right among the best
    27% on the quiz minus that among the weakest 27% (ties by name); the
    count of each option, "other" and "none"; and a flag saying what to look
    at. Below MIN_ITEM_CLASS students the two indices are left empty."""
    mine = cells[cells["assignment"] == assignment]
    per = student_parts(mine)
    per = per[per["part"].str.match(r"^Q\d+$")]
    complete = per.groupby("student")["state"].apply(lambda s: (s == "marked").all())
    takers = sorted(complete[complete].index)
    right = (per[per["student"].isin(takers)].pivot(index="student", columns="part",
                                                    values="share") >= 1.0).astype(float)
    questions = sorted(right.columns, key=lambda p: int(p[1:]))
    total = right.sum(axis=1)
    group = int(round(UPPER_LOWER * len(takers)))
    ranked = sorted(takers, key=lambda s: (-total[s], s))
    upper, lower = ranked[:group], ranked[-group:] if group else []
    chosen = choices[choices["student"].isin(takers)]
    rows = []
    for part in questions:
        q, x = int(part[1:]), right[part]
        rest = total - x
        counts = chosen[chosen["question"] == q]["choice"].value_counts()
        row = {"question": q, "key": keys.get(q, ""), "students": len(takers),
               "difficulty": round(float(x.mean()), 4) if len(takers) else np.nan,
               "r_rest": np.nan, "upper_lower": np.nan,
               **{o: int(counts.get(o, 0)) for o in (*OPTIONS, "other", "none")}}
        if len(takers) >= MIN_ITEM_CLASS:
            varies = x.std() > 0 and rest.std() > 0
            row["r_rest"] = round(float(np.corrcoef(x, rest)[0, 1]), 4) if varies else np.nan
            row["upper_lower"] = round(float(x[upper].mean() - x[lower].mean()), 4)
        row["flag"] = item_flag(row, len(takers))
        rows.append(row)
    columns = ["question", "key", "students", "difficulty", "r_rest", "upper_lower",
               *OPTIONS, "other", "none", "flag"]
    return pd.DataFrame(rows, columns=columns), len(takers)


def item_flag(row: dict, n: int) -> str:
    """What to look at in one question, in a sentence or two ('' if nothing)."""
    said = []
    if n >= MIN_ITEM_CLASS:
        r = row["r_rest"]
        if pd.isna(r):
            said.append("Everyone answered it alike, so it separates no one: "
                        "keep it only if it checks something every student must know.")
        elif r < 0:
            said.append(f"Negative discrimination (r = {r:.2f}): students who did well "
                        "on the rest of the quiz got it wrong more often; check the key "
                        "and whether a second option can be defended.")
        elif r < LOW_DISCRIMINATION:
            said.append(f"Low discrimination (r = {r:.2f}): it barely separates strong "
                        "from weak students; look for ambiguous wording or a trick.")
    unused = [o for o in OPTIONS if row[o] == 0 and o != row["key"]]
    if unused and n:
        said.append(f"Option{'s' if len(unused) > 1 else ''} {', '.join(unused)} "
                    f"{'were' if len(unused) > 1 else 'was'} chosen by nobody: a "
                    "distractor nobody finds plausible tests nothing; rewrite it "
                    "after a common mistake.")
    return " ".join(said)


def totals_table(results: ClassResults, assignments: list[str],
                 bands: tuple[tuple[float, str], ...]) -> pd.DataFrame:
    """Per student: each assignment's points after any penalty, days late,
    whether a hand-in was refused, the total and its band (bands as
    course.py's sheet: (floor in percent, name), highest first)."""
    sheet = results.sheet.copy()
    if sheet.empty:
        return sheet
    def named(state: str) -> pd.Series:  # student -> the assignments in `state`
        found = results.cells[results.cells["state"] == state]
        return found.groupby("student")["assignment"].apply(lambda s: ", ".join(sorted(set(s))))

    keep = ["student", *[a for a in assignments if a in sheet],
            *[c for c in sheet if c.endswith((" days late", " penalty"))
              and not c.endswith("before penalty")], "total", "out of"]
    table = sheet[keep].copy()
    table["refused"] = table["student"].map(named("refused")).fillna("")
    table["no submission"] = table["student"].map(named("no submission")).fillna("")
    table["band"] = [band_of(t, o, bands) for t, o in zip(table["total"], table["out of"])]
    return table.sort_values(["total", "student"], kind="mergesort").reset_index(drop=True)


def band_of(points: float, out_of: float, bands) -> str:
    """The band of `bands` ((floor percent, name), highest first) that
    `points` of `out_of` reach; '' without an out-of (the grade sheet's
    band, course.band, is this with the rubric's bands)."""
    if not out_of or pd.isna(out_of):
        return ""
    percent = 100 * points / out_of
    return next(name for floor, name in bands if percent >= floor - 1e-9)


# --- writing it, closed ---------------------------------------------------------

def closed_file(path: Path, mode: str = "w"):
    """A new file only the owner may read, 0600 from its first byte, never
    through a link (the folder is new and 0700 too)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"}))


def save_csv(frame: pd.DataFrame, path: Path) -> None:
    with closed_file(path) as f:  # no cell a spreadsheet would run (safe_csv.py)
        neutralised(frame).to_csv(f, index=False)


def save_figure(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    with closed_file(path, "wb") as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)


def heatmap_figure(grid: pd.DataFrame, labels: list[str], title: str):
    """A students x parts heatmap: red for a low share, green for full,
    grey where there is no share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = np.ma.masked_invalid(grid.to_numpy(dtype=float))
    fig, ax = plt.subplots(figsize=(min(14, 2.5 + 0.32 * grid.shape[1]),
                                    min(12, 1.6 + 0.24 * grid.shape[0])))
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#bbbbbb")
    image = ax.imshow(values, cmap=cmap, vmin=0, vmax=1, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=90, fontsize=7)
    ax.set_yticks(range(grid.shape[0]), labels, fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.03, label="share of the part's points")
    fig.tight_layout()
    return fig


def histogram_figure(points: pd.Series, out_of: float, bands, title: str):
    """The spread of scores with the sheet's band floors drawn in."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.hist(points, bins=20, range=(0, out_of or 1), color="#4472c4", edgecolor="white")
    for floor, name in bands:
        if floor > 0:
            ax.axvline(out_of * floor / 100, color="#333333", linestyle="--", linewidth=1)
            ax.text(out_of * floor / 100, ax.get_ylim()[1] * 0.92, f" {name}",
                    fontsize=7)
    ax.set_xlabel(f"points (out of {out_of:g})")
    ax.set_ylabel("students")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def grouped(grid: pd.DataFrame, groups: int) -> tuple[pd.DataFrame, list[str]]:
    """The heatmap of a large class: its rows (already ordered) cut into
    `groups` consecutive groups, each the mean share of its students."""
    cuts = np.array_split(np.arange(len(grid)), groups)
    frame = pd.DataFrame([grid.iloc[c].mean(axis=0) for c in cuts], columns=grid.columns)
    labels = [f"students {c[0] + 1}-{c[-1] + 1}" for c in cuts]
    return frame, labels


def table_html(frame: pd.DataFrame, caption: str, limit: int | None = None,
               csv: str | None = None) -> str:
    """A table with a caption, cut to `limit` rows with a line pointing to
    the CSV that holds them all."""
    shown = frame if limit is None else frame.head(limit)
    body = shown.to_html(index=False, escape=True, na_rep="", float_format=lambda v: f"{v:.2f}",
                         border=0, classes="t")
    opened = body.index(">") + 1  # the caption is the table's first child
    body = f"{body[:opened]}<caption>{html.escape(caption)}</caption>{body[opened:]}"
    more = ""
    if limit is not None and len(frame) > limit:
        more = (f"<p>{limit} of {len(frame)} rows shown; all of them in "
                f"<a href='{html.escape(csv or '')}'>{html.escape(csv or '')}</a>.</p>")
    return body + more


def row_label(student: str, a: str, totals: pd.DataFrame, states: set[str],
              unread: bool = False) -> str:
    """A heatmap row's name with what changed its points: late, refused,
    no submission; and whether a notebook of it could not be read.
    `states` are the states of the student's parts in assignment `a`."""
    said = [student]
    if states == {"no submission"}:
        said.append("no submission")
    elif "refused" in states:
        said.append("refused")
    elif states == {"not handed in"}:
        said.append("not handed in")
    if not totals.empty and f"{a} days late" in totals:
        found = totals[totals["student"] == student]
        days = found[f"{a} days late"].iloc[0] if len(found) else np.nan
        if pd.notna(days) and days > 0:
            said.append(f"{days:g} d late, -{found[f'{a} penalty'].iloc[0]:g}")
    if unread:
        said.append("notebook unreadable")
    return " · ".join(said)


def write(out: Path, results: ClassResults, assignments: list[str],
          bands: tuple[tuple[float, str], ...]) -> Path:
    """OUT/class_report/ from `results`, made in a new 0700 folder and
    swapped in whole; returns the page."""
    if not isinstance(out, Path):
        raise TypeError(f"out must be a Path, got {type(out).__name__}")
    folder, fresh = out / FOLDER, out / f".{FOLDER}.new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(mode=0o700)
    os.chmod(fresh, 0o700)  # whatever the umask took away, nothing is added
    esc = html.escape
    cells = results.cells
    present = [a for a in assignments if (cells["assignment"] == a).any()]
    parts = parts_table(cells)
    failures = failures_table(cells)
    totals = totals_table(results, present, bands)
    items, takers = (item_table(cells, results.choices, results.keys)
                     if "quiz" in present else (pd.DataFrame(), 0))
    heat = []
    for a in present:
        grid = heatmap_table(cells, a)
        states = student_parts(cells[cells["assignment"] == a])[["student", "part", "state"]]
        heat.append(grid.reset_index().melt(id_vars="student", var_name="part",
                                            value_name="share").assign(assignment=a)
                    .merge(states, on=["student", "part"], how="left"))
    for name, frame in (("parts.csv", parts), ("failures.csv", failures),
                        ("totals.csv", totals), ("items.csv", items),
                        ("unread.csv", results.unread),
                        ("heatmap.csv", pd.concat(heat, ignore_index=True)
                         [["assignment", "student", "part", "share", "state"]] if heat
                         else pd.DataFrame())):
        save_csv(frame, fresh / name)
    students = cells["student"].nunique()
    page = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            "<title>The class at a glance</title>",
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto;padding:0 1em;"
            "color:#111}table.t{border-collapse:collapse;margin:0.5em 0}"
            "table.t td,table.t th{padding:2px 8px;text-align:left;border-bottom:1px solid #ccc}"
            "caption{text-align:left;font-weight:bold;padding:4px 0}img{max-width:100%}"
            "</style></head><body><main>",
            "<h1>The class at a glance</h1>",
            f"<p>{students} students; for the instructor only: it names students and "
            "quotes their failures (never sent with feedback). Every table is also a "
            "CSV in this folder. Each assignment's own report: "
            + ", ".join(f"<a href='../{esc(a)}/report.html'>{esc(a)}</a>" for a in present)
            + ".</p>"]
    page += distributions_section(fresh, cells, totals, present, bands)
    for a in present:
        page += assignment_section(fresh, a, cells, parts, failures, totals, results.unread)
    if "quiz" in present:
        page += items_section(items, takers)
    page += ["<h2>Students by total</h2>",
             table_html(totals, "Every student's points, lowest total first",
                        SHOWN if students >= LARGE else None, "totals.csv"),
             "</main></body></html>"]
    with closed_file(fresh / "index.html") as f:
        f.write("\n".join(page))
    old = out / f".{FOLDER}.old"
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists() and not folder.is_symlink():
        folder.rename(old)
    elif folder.is_symlink():
        folder.unlink()
    fresh.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return folder / "index.html"


def distributions_section(fresh: Path, cells: pd.DataFrame, totals: pd.DataFrame,
                          present: list[str], bands) -> list[str]:
    """Each assignment's scores and the course total, with the bands."""
    esc = html.escape
    floors = ", ".join(f"{name} from {floor:g}%" for floor, name in bands)
    page = ["<h2>Distributions</h2>",
            f"<p>Points after any late penalty, with the grade sheet's bands ({floors}) "
            "as dashed lines.</p>"]
    if totals.empty:
        return page + ["<p>No grade sheet yet.</p>"]
    for a in [*present, "total"]:
        out_of = (float(totals["out of"].max()) if a == "total"
                  else assignment_max(cells, a))
        points = totals[a].fillna(0)
        name = f"dist_{a}.png"
        save_figure(histogram_figure(points, out_of, bands, f"{a}: points of the class"),
                    fresh / name)
        counts = pd.cut(100 * points / (out_of or 1),
                        [-1e-9, *[f for f, _ in reversed(bands) if f > 0], np.inf],
                        right=False).value_counts(sort=False)
        spread = ", ".join(f"{n} {name_}" for n, name_ in zip(
            counts.to_numpy(), [b for _, b in reversed(bands)]))
        page.append(f"<figure><img src='{name}' alt='Histogram of {esc(a)} points, out of "
                    f"{out_of:g}: median {points.median():g}, mean {points.mean():.1f}; by "
                    f"band {esc(spread)}.'><figcaption>{esc(a)}: median "
                    f"{points.median():g} of {out_of:g}; {esc(spread)}.</figcaption></figure>")
    return page


def assignment_max(cells: pd.DataFrame, a: str) -> float:
    """An assignment's points: the sum of its graded cells' points."""
    mine = cells[cells["assignment"] == a]
    return float(mine.groupby("student")["max_score"].sum().max()) if len(mine) else 0.0


def assignment_section(fresh: Path, a: str, cells: pd.DataFrame, parts: pd.DataFrame,
                       failures: pd.DataFrame, totals: pd.DataFrame,
                       unread: pd.DataFrame) -> list[str]:
    """One assignment: its parts hardest first, the heatmap, who handed
    nothing in, the notebooks that could not be read, and the most common
    failure messages of each part."""
    esc = html.escape
    mine = parts[parts["assignment"] == a]
    grid = heatmap_table(cells, a)
    per = student_parts(cells[cells["assignment"] == a])
    states = per.groupby("student")["state"].agg(set)
    unread = unread[unread["assignment"] == a]
    labels = [row_label(s, a, totals, states[s], s in set(unread["student"]))
              for s in grid.index]
    large = len(grid) >= LARGE
    shown, shown_labels = grouped(grid, 20) if large else (grid, labels)
    name = f"heatmap_{a}.png"
    save_figure(heatmap_figure(shown, shown_labels, f"{a}: share of each part's points "
                               "(weakest students at the top, hardest parts on the left)"),
                fresh / name)
    hardest = mine.dropna(subset=["mean_share"]).head(3)
    said = "; ".join(f"{p} {m:.0%}" for p, m in zip(hardest["part"], hardest["mean_share"]))
    weakest = [s for s in grid.index if "marked" in states[s]]
    page = [f"<h2>{esc(a)}</h2>",
            f"<p>{len(grid)} students, {len(mine)} parts. Hardest parts (mean share of "
            f"their points among the students marked on them): {esc(said) or 'none marked'}."
            " A student who did not hand in a part, was refused or waits for a mark is "
            "left out of its mean.</p>",
            table_html(mine.drop(columns="assignment"),
                       f"{a}: parts, hardest first", None, "parts.csv")]
    how = ("Each row is a group of students of neighbouring rank in this assignment "
           f"(the mean share of the group), because the class has {len(grid)} students; "
           "the weakest students are listed by name below, and heatmap.csv holds "
           "everyone." if large else
           "Each row is a student; a row's label says when the hand-in was late (days, "
           "points taken off) or refused. Rows, top to bottom: " + "; ".join(labels) + ".")
    page.append(f"<figure><img src='{name}' alt='Heatmap of {esc(a)}: rows are "
                f"{'groups of ' if large else ''}students, weakest first; columns are "
                f"parts, hardest first ({esc(', '.join(map(str, grid.columns[:5])))}'"
                f"...); colour from red (none of the part's points) to green (all); grey "
                f"where there is no share. Hardest: {esc(said)}.'>"
                f"<figcaption>{esc(how)} Grey: no submission, not handed in, refused or not yet "
                "marked.</figcaption></figure>")
    if large:
        page.append(f"<p>Weakest {SHOWN} students in {esc(a)}: "
                    + esc(", ".join(weakest[:SHOWN])) + ".</p>")
    nothing = [s for s in grid.index if states[s] == {"no submission"}]
    if nothing:
        page.append(f"<p>No submission of {esc(a)} from {len(nothing)}: "
                    + esc(", ".join(sorted(nothing))) + ".</p>")
    if len(unread):
        page.append(table_html(unread.drop(columns="assignment"),
                               f"{a}: graded notebooks the report could not read (their "
                               "points count; their failure messages and quiz answers "
                               "are missing here)", SHOWN, "unread.csv"))
    rows, blank = [], []
    for part in mine["part"]:
        top = failures[(failures["assignment"] == a) & (failures["part"] == part)]
        left = top["pattern"].str.startswith(BLANK)
        rows += top[~left].head(TOP_FAILURES).to_dict("records")
        if left.any():
            blank.append(f"{part} {int(top[left]['students'].max())}")
    page.append("<h3>What went wrong, counted</h3>")
    if rows:
        page.append(table_html(pd.DataFrame(rows).drop(columns="assignment"),
                               f"{a}: the {TOP_FAILURES} most common failure messages of "
                               "each part (numbers shown as N, quoted values as '…'), "
                               "a part left blank aside", None, "failures.csv"))
    if blank:
        page.append(f"<p>Left blank (the task's stub still raised {BLANK}), students per "
                    "part: " + esc("; ".join(blank)) + ".</p>")
    if not rows and not blank:
        page.append("<p>No test failed.</p>")
    return page


def items_section(items: pd.DataFrame, takers: int) -> list[str]:
    """The quiz's item analysis, with the reason when indices are left out."""
    page = ["<h2>Quiz: item analysis</h2>",
            f"<p>{takers} students answered every question and were marked. Difficulty "
            "is the share who chose the key; r_rest is the point-biserial correlation "
            "of being right with the score on the other questions; upper_lower is the "
            "share right among the best 27% on the quiz minus the share among the "
            "weakest 27%. A question whose r_rest is below "
            f"{LOW_DISCRIMINATION:g} or negative, or with an option nobody chose, is "
            "flagged. \"other\" is an answer of another form, \"none\" no answer.</p>"]
    if takers < MIN_ITEM_CLASS:
        page.append(f"<p><strong>Fewer than {MIN_ITEM_CLASS} students: the counts are "
                    "shown, the two discrimination indices are left out.</strong> With so "
                    "few students one answer moves a correlation by more than the "
                    "difference between a good and a bad question.</p>")
    return page + [table_html(items, "Quiz questions", None, "items.csv")]
