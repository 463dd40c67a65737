"""The class at a glance, written by grade.py as OUT/report.html.

    report/totals.png      how the class's totals are spread
    report/tests.png       per graded cell, the share of the class passing it
    report/totals.csv      one row per student: total, out of, its core and
                           extension parts, notebooks not handed in,
                           answers to mark, problems
    report/tests.csv       one row per graded cell: passed, failed, not handed
                           in, to mark, students, share (passed of those marked)
    report/problems.csv    the submissions with problems (as problems.csv)

Only numbers and names of graded cells appear: no test code, no hidden test,
no student's answer, and no link into feedback/ (each student gets their own
page from there, not this one).
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from autograder.scoring.results import PATH_COLUMNS
from autograder.scoring.safe_csv import write_csv


# grade.py's line for a notebook the student did not hand in (scored 0)
MISSING = re.compile(r"^(.+\.ipynb): missing, scored 0$")
STATES = ("passed", "failed", "not handed in", "to mark")


def state(o, cell: str, score: float, top: float, missing: set[str]) -> str:
    """What one graded cell of one student counts as: a cell of a notebook
    not handed in is not a failure, nor is a written answer nobody marked."""
    if cell.split(":", 1)[0] in missing:
        return "not handed in"
    if cell in set(getattr(o, "to_mark", ()) or ()):
        return "to mark"
    return "passed" if score >= top > 0 else "failed"


def tables(scores: pd.DataFrame, outcomes) -> tuple[pd.DataFrame, pd.DataFrame,
                                                    pd.DataFrame]:
    split = [c for c in PATH_COLUMNS if c in scores.columns]
    totals = (scores.groupby("student")[["score", "max_score", *split]].sum()
              .rename(columns={"score": "total", "max_score": "out_of"}))
    problems = pd.DataFrame([{"student": o.student, "problem": p}
                             for o in outcomes for p in o.problems],
                            columns=["student", "problem"])
    missing = {o.student: {m.group(1) for m in map(MISSING.match, o.problems) if m}
               for o in outcomes}
    rows = [{"cell": cell, "state": state(o, cell, score, top, missing[o.student]),
             "student": o.student}
            for o in outcomes for cell, (score, top) in o.cells.items()]
    cells = pd.DataFrame(rows, columns=["cell", "state", "student"])
    totals["not handed in"] = pd.Series({s: len(m) for s, m in missing.items()})
    totals["to mark"] = cells[cells["state"] == "to mark"].groupby("student").size()
    totals["problems"] = problems.groupby("student").size()
    for column in ("not handed in", "to mark", "problems"):
        totals[column] = totals[column].fillna(0).astype(int)
    tests = (pd.crosstab(cells["cell"], cells["state"]) if len(cells)
             else pd.DataFrame(index=pd.Index([], name="cell")))
    tests = tests.reindex(columns=list(STATES), fill_value=0).astype(int)
    tests.columns.name = None
    tests.index.name = "cell"
    tests["students"] = tests[list(STATES)].sum(axis=1)
    marked = tests["passed"] + tests["failed"]
    # the share of those whose answer was handed in and marked; none: empty
    tests["share"] = (tests["passed"] / marked.where(marked > 0)).round(3)
    return totals.reset_index(), tests.reset_index(), problems


def figures(folder: Path, totals: pd.DataFrame, tests: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if totals.empty:  # nobody could be graded: tables only
        return
    fig, ax = plt.subplots(figsize=(6, 3.2))
    top = float(totals["out_of"].max()) or 1.0
    ax.hist(totals["total"], bins=min(20, max(5, len(totals))), range=(0, top),
            color="#4472c4", edgecolor="white")
    ax.set_xlabel(f"total points (out of {top:g})")
    ax.set_ylabel("students")
    ax.set_title("Totals of the class")
    fig.tight_layout()
    fig.savefig(folder / "totals.png", dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 0.25 * max(4, len(tests)) + 1))
    ax.barh(tests["cell"], tests["share"].fillna(0), color="#70ad47")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the class passing")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(folder / "tests.png", dpi=100)
    plt.close(fig)


def similar_section(rows: list[dict]) -> list[str]:
    """The answers that look copied, each beside what it looks like."""
    esc = html.escape
    page = ["<h2>Answers that look copied (for a person to judge)</h2>",
            "<p>Each answer below shares most of its code (names and literals "
            "aside) with ragkit's source or with another student's answer to the "
            "same cell, or names something no answer needs that reaches into "
            "ragkit's files or the grader, by which it could run ragkit's own code "
            "unseen (autograder/scoring/similarity.py). Nothing is deducted for it: "
            "read the two side by side and decide.</p>"]
    if not rows:
        return page + ["<p>None.</p>"]
    for row in rows:
        if row.get("share") is None:  # an answer that reaches (similarity.reaches)
            page.append(f"<h3>{esc(row['student'])}: {esc(row['notebook'])}, cell "
                        f"{esc(row['cell'])} {esc(row['other'])}</h3>"
                        f"<pre>{esc(row.get('code') or '')}</pre>")
            continue
        share = f"{row['share']:.0%}" + (f" / {row['other_share']:.0%}"
                                         if row.get("other_share") is not None else "")
        other = row.get("other_code") or f"(ragkit's source: {row['other']})"
        page.append(f"<h3>{esc(row['student'])} and {esc(row['other'])}: "
                    f"{esc(row['notebook'])}, cell {esc(row['cell'])} ({share} shared)</h3>"
                    "<table><tr><td style='vertical-align:top'><pre>"
                    f"{esc(row.get('code') or '')}</pre></td>"
                    f"<td style='vertical-align:top'><pre>{esc(other)}</pre></td></tr></table>")
    return page


def write(out: Path, scores: pd.DataFrame, outcomes, similar: list[dict] | None = None) -> Path:
    folder = out / "report"
    folder.mkdir(exist_ok=True)
    totals, tests, problems = tables(scores, outcomes)
    write_csv(totals, folder / "totals.csv")  # no cell a spreadsheet runs
    write_csv(tests, folder / "tests.csv")
    write_csv(problems, folder / "problems.csv")
    figures(folder, totals, tests)
    esc = html.escape
    page = ["<!doctype html><meta charset='utf-8'><title>Class report</title>",
            "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
            "td,th{padding:2px 8px;text-align:left}</style>",
            f"<h1>Class report</h1><p>{len(totals)} students; mean total "
            f"{totals['total'].mean():.2f} of {totals['out_of'].max():g}; "
            f"{(totals['not handed in'] > 0).sum()} with a notebook not handed in; "
            f"{totals['to mark'].sum()} written answer(s) to mark.</p>"
            if len(totals) else "<h1>Class report</h1><p>No scores.</p>",
            # course.py writes the whole class's page beside the assignments'
            # folders (class_report.py), and that page links back here
            "<p>The whole class, every assignment on one page: <a href='../class_report/"
            "index.html'>the class at a glance</a> (written by course.py grade and sheet; "
            "for the instructor only).</p>",
            "<h2>Totals</h2>",
            "<img src='report/totals.png' alt='histogram of totals'>"
            if len(totals) else "<p>No totals.</p>",
            "<h2>Share of the class passing each graded cell</h2>",
            "<p>A student who did not hand in a notebook counts under \"not "
            "handed in\", not as failing its cells; a written answer nobody "
            "has marked yet counts under \"to mark\". The share is of the "
            "students whose answer was handed in and marked.</p>",
            "<img src='report/tests.png' alt='share passing per cell'>"
            if len(totals) else "",
            tests.to_html(index=False, escape=True),
            f"<h2>Submissions with problems ({problems['student'].nunique()})</h2>",
            problems.to_html(index=False, escape=True) if len(problems)
            else "<p>None.</p>",
            *similar_section(similar or []),
            "<p>Tables: " + ", ".join(f"<a href='report/{esc(n)}'>{esc(n)}</a>"
                                      for n in ("totals.csv", "tests.csv",
                                                "problems.csv")) + ".</p>"]
    (out / "report.html").write_text("\n".join(page), encoding="utf-8")
    return out / "report.html"
