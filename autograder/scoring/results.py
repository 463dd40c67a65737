"""What grading one class produces: an Outcome per student, and the
files, tables and summary lines made from all of them (grades.csv,
scores.csv, problems.csv, the printed table)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd

from autograder.intake.intake import valid_id
from autograder.intake.grading_outcome import DONE, Outcome
from autograder.scoring.safe_csv import read_text_csv, write_csv


def notebook_scores(course: Path, assignment: str, student: str):
    """Scores per notebook and per graded cell ("name.ipynb:grade_id") from
    the student's gradebook; also writes
    course/grades.csv with nbgrader's CSV export plugin (what `nbgrader
    export` runs, without starting another nbgrader)."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        CsvExportPlugin(to=str(course / "grades.csv")).export(gb)
        sub = gb.find_submission(assignment, student)
        return ({f"{nb.name}.ipynb": (float(nb.score), float(nb.max_score))
                 for nb in sub.notebooks},
                {f"{nb.name}.ipynb:{g.name}": (float(g.score), float(g.max_score))
                 for nb in sub.notebooks for g in nb.grades},
                [f"{nb.name}.ipynb:{g.name}" for nb in sub.notebooks for g in nb.grades
                 if g.needs_manual_grade and g.manual_score is None])


MISSING = re.compile(r"^(.+\.ipynb): missing, scored 0$")


def missing_notebooks(problems: list[str]) -> list[str]:
    """The notebooks a student did not hand in, from their problem lines."""
    return [m.group(1) for m in map(MISSING.match, problems) if m]


def summary_lines(outcomes: list[Outcome], assignment: str) -> list[tuple[str, str]]:
    """(student, line) for the printed summary: a student's missing notebooks
    make one line ("7 of 9 lab notebooks not handed in"), in the place of the
    first; problems.csv keeps one line per notebook."""
    lines = []
    for o in outcomes:
        missing = missing_notebooks(o.problems)
        said = False
        for p in o.problems:
            if not MISSING.match(p):
                lines.append((o.student, p))
            elif not said:
                said = True
                of = len(o.scores) or len(missing)
                what = "notebook" if of == 1 else "notebooks"
                lines.append((o.student, f"{len(missing)} of {of} {assignment} {what} "
                                         "not handed in"))
    return lines


def zero_scores(template: Path, assignment: str, outcomes: list[Outcome]) -> None:
    """Give each refused outcome 0 points of the maximum for every notebook
    and graded cell of the assignment (from the template's gradebook), so it
    counts in scores.csv and the report as a submission that scored 0."""
    from nbgrader.api import Gradebook

    if not outcomes:
        return
    with Gradebook(f"sqlite:///{template / 'gradebook.db'}") as gb:
        notebooks = gb.find_assignment(assignment).notebooks
        scores = {f"{nb.name}.ipynb": (0.0, float(nb.max_score)) for nb in notebooks}
        cells = {f"{nb.name}.ipynb:{c.name}": (0.0, float(c.max_score))
                 for nb in notebooks for c in nb.grade_cells}
    for o in outcomes:
        o.scores, o.cells = dict(scores), dict(cells)


def by_path(o: Outcome, notebook: str, paths: dict[str, str]) -> dict[str, float]:
    """A student's score and maximum of one notebook, split into the core
    path and the extensions ("name.ipynb:grade_id" -> path in `paths`; a
    cell not in it is core)."""
    split = dict.fromkeys(PATH_COLUMNS, 0.0)
    for cell, (score, top) in o.cells.items():
        if cell.split(":", 1)[0] == notebook:
            kind = paths.get(cell, "core")
            split[kind] += score
            split[f"{kind}_max"] += top
    return split


PATH_COLUMNS = ("core", "core_max", "extension", "extension_max")


def write_results(out: Path, outcomes: list[Outcome],
                  paths: dict[str, str] | None = None) -> pd.DataFrame:
    """scores.csv, problems.csv, grades.csv, feedback/<student>/ and
    logs/<student>.log. Paths are built from valid student ids only (a
    refused folder name is only ever shown, escaped); every CSV goes
    through safe_csv. scores.csv splits each score into the core path and
    the extensions (`paths`, from editions.path_of_cells)."""
    rows, problems, exports = [], [], []
    for o in outcomes:
        for nb_name, (score, max_score) in sorted(o.scores.items()):
            rows.append({"student": o.student, "notebook": nb_name,
                         "score": score, "max_score": max_score,
                         **by_path(o, nb_name, paths or {})})
        problems += [{"student": o.student, "problem": p} for p in o.problems]
        if o.refused or not valid_id(o.student):
            continue
        keep = out / DONE / o.student
        if (keep / "feedback").is_dir():
            shutil.copytree(keep / "feedback", out / "feedback" / o.student)
        if (keep / "log.txt").is_file():
            (out / "logs").mkdir(exist_ok=True)
            shutil.copy(keep / "log.txt", out / "logs" / f"{o.student}.log")
        if o.graded and (keep / "grades.csv").is_file():
            exports.append(read_text_csv(keep / "grades.csv"))
    scores = pd.DataFrame(rows, columns=["student", "notebook", "score", "max_score",
                                         *PATH_COLUMNS])
    write_csv(scores, out / "scores.csv")
    write_csv(pd.DataFrame(problems, columns=["student", "problem"]), out / "problems.csv")
    if exports:
        grades = pd.concat(exports, ignore_index=True).sort_values("student_id")
        write_csv(grades, out / "grades.csv")
    return scores


def grade_table(scores: pd.DataFrame) -> pd.DataFrame:
    table = scores.pivot(index="student", columns="notebook", values="score")
    table["total"] = table.sum(axis=1)
    table["out of"] = scores.groupby("student")["max_score"].sum()
    return table


def where_results_went(out: Path, n_problems: int) -> str:
    """A few closing lines: what each result file holds and where it is."""
    try:
        shown = out.relative_to(Path.cwd())
    except ValueError:
        shown = out
    found = f"{n_problems} listed above" if n_problems else "none"
    rows = [("grades.csv", "nbgrader's export: one row per student, total score"),
            ("scores.csv", "one row per student and notebook: score, max_score"),
            ("feedback/", "<student>/<assignment>/*.html: points per part, then "
                          "every cell"),
            ("problems.csv", f"what was wrong with a submission ({found})"),
            ("report.html", "the class at a glance: totals, share passing each "
                            "test, problems (PNGs and CSVs in report/)"),
            ("logs/", "nbgrader's log for each student")]
    return "\n".join([f"results in {shown}/"]
                     + [f"  {name:<13} {what}" for name, what in rows])


def print_results(out: Path, outcomes: list[Outcome], scores, assignment: str,
                  reused: int, blocked: int) -> None:
    """The class in a few lines on the terminal: how many were graded, the
    score table, one line per student with a problem, where the files are."""
    print(f"graded {sum(o.graded or o.refused for o in outcomes)} of {len(outcomes)} "
          f"students -> {out}"
          + (f" ({reused} kept from an earlier run)" if reused else "")
          + (f"; {blocked} submission(s) refused and scored 0" if blocked else ""))
    if not scores.empty:
        print(grade_table(scores).to_string(float_format=lambda v: f"{v:g}"))
    trouble = [(o.student, p) for o in outcomes for p in o.problems]
    for student, problem in summary_lines(outcomes, assignment):
        print(f"  ! {student}: {problem}")
    print(where_results_went(out, len(trouble)))
