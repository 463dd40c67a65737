"""What the instructor reads after grading a tiny class for real: the report
counts a notebook not handed in and a written answer nobody marked apart from
failures, the printed summary gives one line per student for missing
notebooks, and `course.py sheet --lms canvas` writes a sheet Canvas imports.

The class: ada hands in the whole project (its written answers wait for a
person); cai hands in only a corpus, no project notebook.
"""
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "autograder" / "testbed" / "sample_class"
COURSE = ROOT / "autograder" / "commands" / "course.py"
sys.path.insert(0, str(ROOT))
from autograder.intake.grading_outcome import Outcome  # noqa: E402
from autograder.scoring.results import summary_lines  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    base = tmp_path_factory.mktemp("tiny")
    subs, out = base / "subs", base / "grades"
    shutil.copytree(SAMPLE / "ada_complete" / "project", subs / "ada" / "project")
    shutil.copytree(SAMPLE / "ada_complete" / "project" / "corpus",
                    subs / "cai" / "project" / "corpus")
    graded = subprocess.run([sys.executable, str(COURSE), "grade", "--submissions", str(subs),
                             "--out", str(out), "--jobs", "2"],
                            capture_output=True, text=True, cwd=ROOT)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    roster = base / "roster.csv"
    roster.write_text("student,name,sis_id,section\n"
                      "ada,\"Lovelace, Ada\",S001,=cmd|' /C calc'!A0\n", encoding="utf-8")
    sheet = subprocess.run([sys.executable, str(COURSE), "sheet", "--out", str(out),
                            "--lms", "canvas", "--roster", str(roster)],
                           capture_output=True, text=True, cwd=ROOT)
    assert sheet.returncode == 0, sheet.stdout[-3000:] + sheet.stderr[-3000:]
    return {"out": out, "printed": graded.stdout, "sheet": sheet.stdout}


def test_report_counts_missing_and_unmarked_apart_from_failures(tiny):
    report = tiny["out"] / "project" / "report"
    tests = pd.read_csv(report / "tests.csv").set_index("cell")
    problems = pd.read_csv(tiny["out"] / "project" / "problems.csv")
    assert "project.ipynb: missing, scored 0" in set(
        problems[problems["student"] == "cai"]["problem"])
    # every cell: cai's notebook is not handed in, so nobody failed for it
    assert (tests["not handed in"] == 1).all()
    assert (tests["students"] == 2).all()
    # ada's written answers wait for a person: "to mark", not failed
    to_mark = tests[tests["to mark"] > 0]
    assert len(to_mark) > 0
    assert (to_mark["failed"] == 0).all() and (to_mark["passed"] == 0).all()
    assert to_mark["share"].isna().all()
    # ada's autograded cells all pass (the master's solution)
    auto = tests[tests["to mark"] == 0]
    assert (auto["failed"] == 0).all() and (auto["share"] == 1.0).all()
    totals = pd.read_csv(report / "totals.csv").set_index("student")
    assert totals.loc["cai", "not handed in"] == 1 and totals.loc["ada", "not handed in"] == 0
    assert totals.loc["ada", "to mark"] == len(to_mark) and totals.loc["cai", "to mark"] == 0
    page = (tiny["out"] / "project" / "report.html").read_text(encoding="utf-8")
    assert "not handed in" in page and "to mark" in page


def test_summary_prints_one_line_per_student_for_missing_notebooks(tiny):
    assert "! cai: 1 of 1 project notebook not handed in" in tiny["printed"]
    assert "project.ipynb: missing, scored 0" not in tiny["printed"]
    lab = Outcome("cai", graded=True,
                  scores={f"0{i}.ipynb": (0.0, 1.0) for i in range(1, 10)},
                  problems=[f"0{i}.ipynb: missing, scored 0" for i in range(3, 10)]
                  + ["notes.ipynb: not part of the assignment, ignored"])
    assert summary_lines([lab], "lab") == [
        ("cai", "7 of 9 lab notebooks not handed in"),
        ("cai", "notes.ipynb: not part of the assignment, ignored")]


def test_canvas_sheet_reads_back_with_the_default_sheets_numbers(tiny):
    out = tiny["out"]
    with open(out / "grade_sheet_canvas.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Student", "ID", "SIS User ID", "Section", "project"]
    default = pd.read_csv(out / "grade_sheet.csv").set_index("student")
    possible = rows[1]
    assert possible[:4] == ["Points Possible", "", "", ""]
    assert float(possible[4]) == float(default.loc["ada", "out of"]) > 0
    body = {r[2]: r for r in rows[2:]}
    assert len(rows) == 2 + len(default) == 4
    # ada from the roster (her section, a formula, neutralised), cai by folder name
    assert body["S001"][:4] == ["Lovelace, Ada", "", "S001", "'=cmd|' /C calc'!A0"]
    assert body["cai"][:4] == ["cai", "", "cai", ""]
    assert float(body["S001"][4]) == float(default.loc["ada", "project"])
    assert float(body["cai"][4]) == float(default.loc["cai", "project"]) == 0.0
