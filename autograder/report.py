"""The class at a glance, written by grade.py as OUT/report.html.

    report/totals.png      how the class's totals are spread
    report/tests.png       per graded cell, the share of the class passing it
    report/totals.csv      one row per student: total, out of, problems
    report/tests.csv       one row per graded cell: passed, students, share
    report/problems.csv    the submissions with problems (as problems.csv)

Only numbers and names of graded cells appear: no test code, no hidden test,
no student's answer, and no link into feedback/ (each student gets their own
page from there, not this one).
"""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from safe_csv import write_csv


def tables(scores: pd.DataFrame, outcomes) -> tuple[pd.DataFrame, pd.DataFrame,
                                                    pd.DataFrame]:
    totals = (scores.groupby("student")[["score", "max_score"]].sum()
              .rename(columns={"score": "total", "max_score": "out_of"}))
    problems = pd.DataFrame([{"student": o.student, "problem": p}
                             for o in outcomes for p in o.problems],
                            columns=["student", "problem"])
    totals["problems"] = problems.groupby("student").size()
    totals["problems"] = totals["problems"].fillna(0).astype(int)
    rows = [{"cell": cell, "passed": score >= top > 0, "student": o.student}
            for o in outcomes for cell, (score, top) in o.cells.items()]
    cells = pd.DataFrame(rows, columns=["cell", "passed", "student"])
    tests = (cells.groupby("cell")["passed"].agg(["sum", "count"])
             .rename(columns={"sum": "passed", "count": "students"}))
    tests["share"] = (tests["passed"] / tests["students"]).round(3)
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
    ax.barh(tests["cell"], tests["share"], color="#70ad47")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the class passing")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(folder / "tests.png", dpi=100)
    plt.close(fig)


def write(out: Path, scores: pd.DataFrame, outcomes) -> Path:
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
            f"{totals['total'].mean():.2f} of {totals['out_of'].max():g}.</p>"
            if len(totals) else "<h1>Class report</h1><p>No scores.</p>",
            "<h2>Totals</h2>",
            "<img src='report/totals.png' alt='histogram of totals'>"
            if len(totals) else "<p>No totals.</p>",
            "<h2>Share of the class passing each graded cell</h2>",
            "<img src='report/tests.png' alt='share passing per cell'>"
            if len(totals) else "",
            tests.to_html(index=False, escape=True),
            f"<h2>Submissions with problems ({problems['student'].nunique()})</h2>",
            problems.to_html(index=False, escape=True) if len(problems)
            else "<p>None.</p>",
            "<p>Tables: " + ", ".join(f"<a href='report/{esc(n)}'>{esc(n)}</a>"
                                      for n in ("totals.csv", "tests.csv",
                                                "problems.csv")) + ".</p>"]
    (out / "report.html").write_text("\n".join(page), encoding="utf-8")
    return out / "report.html"
