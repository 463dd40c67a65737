"""The course's grade sheet and what is made from it.

`course.py grade` and `course.py sheet` write, through `sheet`,
OUT/grade_sheet.csv: one row per student from the gathered course's
gradebook, with each assignment, each lab notebook and project part, the
project's autograded and manual points and its band from the rubric (`band`,
`BANDS`); the late policy of OUT/deadlines.toml applied to it
(`apply_deadlines`, with OUT/late_work.csv and .html beside it); a copy in
the layout Canvas's gradebook import reads (`canvas_sheet`); and the class
report after it. course.py keeps the command line; this module only reads
the gradebook and writes the sheet's files.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import nbformat
import pandas as pd

from autograder.reports.class_report import band_of
from autograder.run.nbgrader_cli import run_nbgrader_checked
from autograder.scoring.editions import CORE, path_of_cells
from autograder.scoring.safe_csv import read_text_csv, rewrite_csv, write_csv
from autograder.scoring.similarity import notes as similarity_notes

ORDER = ("lab", "quiz", "project")  # the sheet's order; any other assignment after
BANDS = ((90, "excellent"), (75, "good"), (60, "needs work"), (0, "redo"))
PENDING = "to grade"
COURSE = "formgrader"  # OUT/formgrader/: the one course with every student


def assignments(source: Path) -> list[str]:
    found = {p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))}
    return [a for a in ORDER if a in found] + sorted(found - set(ORDER))


def band(points: float, out_of: float) -> str:
    """The rubric's band for `points` of `out_of`, on a 100-point scale."""
    if out_of <= 0:
        raise ValueError(f"out_of must be positive (got out_of={out_of})")
    return band_of(points, out_of, BANDS)


def parts_of(master: Path) -> dict[str, str]:
    """grade_id -> part letter for every graded cell under `## Part X (...)`."""
    nb = nbformat.read(master, as_version=4)
    part, out = None, {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.search(r"^## Part ([A-Z]) \(", cell.source, re.M)
            part = found.group(1) if found else part
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and part:
            out[meta["grade_id"]] = part
    return out


# --- a written answer that changed after it was marked ----------------------

CHANGED = "written answer changed since it was marked; check the mark"
CHANGED_FILE = "changed_answers.json"  # OUT/formgrader/: the marks to check




def changed_answers(course: Path) -> dict[str, float]:
    """"student/assignment/notebook/grade id" -> the mark that was given to
    an answer that changed afterwards (until a person changes that mark)."""
    import json

    path = course / CHANGED_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def still_to_check(gb, kept: dict[str, float]) -> dict[str, float]:
    """The entries of `kept` whose mark nobody has changed since."""
    from nbgrader.api import MissingEntry

    out = {}
    for key, mark in kept.items():
        student, assignment, notebook, grade_id = key.split("/")
        try:
            now = gb.find_grade(grade_id, notebook, assignment, student).manual_score
        except MissingEntry:
            continue
        if now is not None and float(now) == float(mark):
            out[key] = mark
    return out


# --- the grade sheet ---------------------------------------------------------

def sheet(out: Path, source: Path, report: bool = False) -> pd.DataFrame:
    """OUT/grade_sheet.csv from the course's gradebook (and nbgrader's export),
    and with `report` the class report after it (OUT/class_report/)."""
    import json

    from nbgrader.api import Gradebook, MissingEntry

    course = out / COURSE
    run_nbgrader_checked(["export", "--to", "grades.csv"], course)
    rewrite_csv(course / "grades.csv")  # no cell a spreadsheet would run
    names = assignments(source)
    # (notebook, grade_id) -> the project part the cell counts towards
    parts = {(master.stem, g): p for master in sorted((source / "project").glob("*.ipynb"))
             for g, p in parts_of(master).items()}
    lab_paths = path_of_cells(source / "lab") if (source / "lab").is_dir() else {}
    rows = []
    similar: dict[str, str] = {}  # student -> the similarity report's note
    for a in names:
        for student, note in similarity_notes(out / a).items():
            similar[student] = "; ".join(filter(None, [similar.get(student), note]))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        changed = still_to_check(gb, changed_answers(course))
        if (course / CHANGED_FILE).is_file():  # forget the answers marked again
            (course / CHANGED_FILE).write_text(json.dumps(changed, indent=1, sort_keys=True),
                                               encoding="utf-8")
        for student in sorted(s.id for s in gb.students):
            row: dict = {"student": student}
            check = [key.split("/", 1)[1] for key, mark in sorted(changed.items())
                     if key.split("/")[0] == student]
            if check:
                row["note"] = f"{CHANGED}: " + ", ".join(check)
            if student in similar:
                row["note"] = "; ".join(filter(None, [row.get("note"), similar[student]]))
            total = out_of = 0.0
            for a in names:
                try:
                    assignment = gb.find_assignment(a)
                except MissingEntry:
                    continue
                try:
                    sub = gb.find_submission(a, student)
                except MissingEntry:
                    row[a] = None
                    out_of += assignment.max_score
                    continue
                row[a] = float(sub.score)
                total += float(sub.score)
                out_of += float(sub.max_score)
                auto = manual = 0.0
                pending = 0
                if a == "lab":
                    row["lab core"] = row["lab extension"] = 0.0
                for nb in sub.notebooks:
                    if a == "lab":
                        row[f"lab/{nb.name}"] = float(nb.score)
                    for g in nb.grades:
                        if a == "lab":
                            kind = lab_paths.get(f"{nb.name}.ipynb:{g.name}", CORE)
                            row[f"lab {kind}"] += float(g.score)
                        if g.needs_manual_grade and g.manual_score is None:
                            pending += 1
                        elif g.manual_score is not None or g.cell.cell_type == "markdown":
                            manual += float(g.score)
                        else:
                            auto += float(g.score)
                        part = parts.get((nb.name, g.name)) if a == "project" else None
                        if part:
                            key = f"project {part}"
                            row[key] = row.get(key, 0.0) + float(g.score)
                if a == "project":
                    row["project auto"] = auto
                    row["project manual"] = PENDING if pending else manual
                    row["project band"] = PENDING if pending else band(
                        float(sub.score), float(sub.max_score))
            row["total"], row["out of"] = total, out_of
            rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        first = ["student", *[a for a in names if a in frame], "total", "out of"]
        frame = frame[first + [c for c in frame.columns if c not in first]]
    frame = apply_deadlines(frame, out)
    write_csv(frame, out / "grade_sheet.csv")  # no cell a spreadsheet would run
    if report:
        write_class_report(out, source)
    return frame


def write_class_report(out: Path, source: Path) -> None:
    """OUT/class_report/ from the sheet just written (class_report.py); a
    fault in it is printed and costs nothing else."""
    from autograder.reports import class_report

    names = assignments(source)
    try:
        page = class_report.write(out, class_report.read_class(out, source, names),
                                  names, BANDS)
        print(f"the class at a glance (for the instructor only): {page}")
    except Exception as err:  # noqa: BLE001 (the sheet stands without it)
        print(f"class report not written: {err!r}", file=sys.stderr)


# --- due dates and late work (deadlines.py) ----------------------------------

DEADLINES = "deadlines.toml"  # OUT/deadlines.toml: the policy grading was given
LMS_LATE = "lms_late.csv"  # OUT/lms_late.csv: the LMS's LATE marks at grading
LATE_COLUMNS = ["student", "assignment", "handed in (UTC)", "claimed by the student (UTC)",
                "claim earlier", "due (UTC)", "days late", "before penalty", "penalty",
                "after penalty", "accepted", "note"]
# the hub's collect (hub/exchange_collect.py) writes its listing in the course
# folder, beside the SUBMISSIONS it collects into (COURSE/submitted/)
EXCHANGE_LISTING = "exchange_collected.csv"


def keep_deadlines(out: Path, deadlines: Path | None, submissions: Path | None) -> None:
    """Check the policy file and keep a copy in OUT (later `sheet` runs use
    it), with the LATE marks of an LMS download in SUBMISSIONS and the
    hub's collect listing beside it (the students' claimed times)."""
    from autograder.intake.deadlines import load

    if deadlines is not None:
        load(deadlines)  # a mistake stops here, before any grading
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(deadlines, out / DEADLINES)
    listing = submissions / "lms_collected.csv" if submissions is not None else None
    if listing is not None and listing.is_file():
        files = read_text_csv(listing)
        late = files[files["file"].str.contains(r"_LATE_", regex=True)]
        out.mkdir(parents=True, exist_ok=True)
        write_csv(late[["student", "assignment"]].drop_duplicates().sort_values(
            ["student", "assignment"]), out / LMS_LATE)
    if submissions is not None and (submissions.parent / EXCHANGE_LISTING).is_file():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(submissions.parent / EXCHANGE_LISTING, out / EXCHANGE_LISTING)


def apply_deadlines(frame: pd.DataFrame, out: Path) -> pd.DataFrame:
    """The late policy of OUT/deadlines.toml applied to the sheet: for each
    assignment it names, the score becomes the points after the penalty,
    with the points before it, the days late and the penalty beside it; the
    total follows. Also writes OUT/late_work.csv and OUT/late_work.html. No
    row is removed: a submission the policy does not accept stays, at 0."""
    import html

    from autograder.intake.deadlines import (after_penalty, claim_cells, exchange_claims, judge,
                                             load)
    from nbgrader.api import Gradebook, MissingEntry

    if frame.empty or not (out / DEADLINES).is_file():
        return frame
    policies = load(out / DEADLINES)
    marks = set()
    if (out / LMS_LATE).is_file():
        marks = {(r["student"], r["assignment"]) for _, r in read_text_csv(out / LMS_LATE).iterrows()}
    claims = exchange_claims(out / EXCHANGE_LISTING)
    frame = frame.copy()
    rows = []
    with Gradebook(f"sqlite:///{out / COURSE / 'gradebook.db'}") as gb:
        for i, r in frame.iterrows():
            for a, policy in policies.items():
                if a not in frame.columns or pd.isna(r[a]):
                    continue
                try:
                    sub = gb.find_submission(a, r["student"])
                except MissingEntry:
                    continue
                late = judge(policy, r["student"], float(sub.max_score), sub.timestamp,
                             (r["student"], a) in marks)
                before = float(r[a])
                after = after_penalty(before, late)
                frame.loc[i, [f"{a} before penalty", f"{a} days late", f"{a} penalty"]] = [
                    before, late.days, round(before - after, 6)]
                frame.loc[i, a] = after
                frame.loc[i, "total"] = round(float(frame.loc[i, "total"]) - (before - after), 6)
                claim, earlier = claim_cells(claims.get((r["student"], a)), sub.timestamp)
                rows.append({"student": r["student"], "assignment": a,
                             "handed in (UTC)": (f"{sub.timestamp:%Y-%m-%d %H:%M:%S}"
                                                 if sub.timestamp else ""),
                             "claimed by the student (UTC)": claim, "claim earlier": earlier,
                             "due (UTC)": f"{policy.due_for(r['student']):%Y-%m-%d %H:%M:%S}",
                             "days late": late.days, "before penalty": before,
                             "penalty": round(before - after, 6), "after penalty": after,
                             "accepted": "yes" if late.accepted else "no", "note": late.note})
    table = pd.DataFrame(rows, columns=LATE_COLUMNS)
    write_csv(table, out / "late_work.csv")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in LATE_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>\n"
                   for row in table.itertuples(index=False))
    (out / "late_work.html").write_text(
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Late work</title></head>"
        "<body><h1>Late work</h1><p>The policy of deadlines.toml, applied to each "
        "submission's time; no submission is dropped. From the hub's exchange, that time "
        "is when it was received (what the student cannot set back); the time the "
        "student's own timestamp.txt claims is beside it, flagged when earlier.</p>\n"
        "<table border='1'>"
        f"<tr>{head}</tr>\n{body}</table></body></html>\n", encoding="utf-8")
    return frame


def late_summary(out: Path) -> str:
    """The late-work table as printed after grading ('' without a policy)."""
    path = out / "late_work.csv"
    if not (out / DEADLINES).is_file() or not path.is_file():
        return ""
    table = read_text_csv(path)
    shown = ["student", "assignment", "handed in (UTC)", "days late", "before penalty",
             "penalty", "after penalty", "accepted"]
    return "" if table.empty else table[shown].to_string(index=False)


# --- the grade sheet for an LMS ----------------------------------------------

CANVAS_HEAD = ["Student", "ID", "SIS User ID", "Section"]
ROSTER_COLUMNS = ("student", "name", "sis_id", "section")


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """student folder name -> {"name", "sis_id", "section"} from a roster CSV
    with the columns student,name,sis_id,section (empty cells allowed)."""
    roster = read_text_csv(path)
    lacking = [c for c in ROSTER_COLUMNS if c not in roster.columns]
    if lacking:
        raise ValueError(f"{path}: the roster needs the columns {','.join(ROSTER_COLUMNS)} "
                         f"(missing: {', '.join(lacking)})")
    return {r["student"].strip(): {c: r[c].strip() for c in ROSTER_COLUMNS[1:]}
            for _, r in roster.iterrows() if r["student"].strip()}


def canvas_sheet(out: Path, source: Path, frame: pd.DataFrame,
                 roster: dict[str, dict[str, str]] | None = None) -> Path:
    """OUT/grade_sheet_canvas.csv: the sheet's assignment scores in the layout
    Canvas's gradebook import reads (Student, ID, SIS User ID, Section, one
    column per assignment, a "Points Possible" row second). Without a roster
    a student's name and SIS User ID are their folder name; the Canvas ID is
    left empty, so Canvas matches the rows by SIS User ID."""
    from nbgrader.api import Gradebook, MissingEntry

    roster = roster or {}
    names, possible = [], {}
    with Gradebook(f"sqlite:///{out / COURSE / 'gradebook.db'}") as gb:
        for a in assignments(source):
            try:
                possible[a] = float(gb.find_assignment(a).max_score)
            except MissingEntry:
                continue
            names.append(a)
    rows = [{"Student": "Points Possible", "ID": "", "SIS User ID": "", "Section": "",
             **possible}]
    for _, r in (frame.iterrows() if not frame.empty else []):
        who = roster.get(r["student"], {})
        rows.append({"Student": who.get("name") or r["student"], "ID": "",
                     "SIS User ID": who.get("sis_id") or r["student"],
                     "Section": who.get("section", ""),
                     **{a: (None if pd.isna(r.get(a)) else float(r[a])) for a in names}})
    canvas = pd.DataFrame(rows, columns=CANVAS_HEAD + names).astype(object)
    path = out / "grade_sheet_canvas.csv"
    write_csv(canvas, path)  # names come from folders and the roster: no formulas
    return path


def summary(frame: pd.DataFrame) -> str:
    """The printed table: each assignment, the project's parts and its band."""
    wanted = [c for c in ("student", "lab", "quiz", "project auto", "project manual",
                          "project", "total", "out of", "project band", "note") if c in frame]
    shown = frame[wanted].astype(object).fillna("-")
    return shown.to_string(index=False, float_format=lambda v: f"{v:g}")
