"""After marking: `course.py feedback` puts the marks into students' pages,
and a resubmission whose written answer changed after it was marked is
listed (the mark is kept, never silently moved onto the new text).

A class of two (the project only, blank apart from one written answer),
graded by `course.py grade`; a mark and a comment are entered through
nbgrader's Gradebook API, as the formgrader does.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.commands import course  # noqa: E402
from autograder.run import rag_feedback  # noqa: E402

COURSE = ROOT / "autograder" / "commands" / "course.py"
ANSWER = "proj_memo_a"  # the project's first written answer (8 points)
STUDENT, OTHER = "amy", "bob"
MARK, COMMENT = 6, "Clear on where chunking helped; say what overlap cost."


def submit(work: Path, student: str, answer: str) -> None:
    nb = nbformat.read(ROOT / "release" / "project" / "project.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == ANSWER)
    cell.source = answer
    folder = work / "submitted" / student / "project"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / "project.ipynb")


def run(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(COURSE), *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def marked(tmp_path_factory) -> Path:
    """The class graded, and amy's first written answer marked with a comment."""
    from nbgrader.api import Gradebook

    work = tmp_path_factory.mktemp("feedback-class")
    submit(work, STUDENT, "Sentence chunks kept each answer whole, so recall rose.")
    submit(work, OTHER, "Fixed windows were fine.")
    run("grade", "--submissions", str(work / "submitted"), "--out", str(work / "grades"),
        "--no-report")
    with Gradebook(f"sqlite:///{work / 'grades' / 'formgrader' / 'gradebook.db'}") as gb:
        gb.find_grade(ANSWER, "project", "project", STUDENT).manual_score = MARK
        gb.find_comment(ANSWER, "project", "project", STUDENT).manual_comment = COMMENT
        gb.db.commit()
    return work


def score(page: str) -> float:
    """The notebook's total as nbgrader's feedback header shows it."""
    return float(re.search(r"Score: ([\d.]+) / [\d.]+", page).group(1))


def test_feedback_shows_the_mark_and_comment_and_no_hidden_test(marked, tmp_path):
    out = tmp_path / "grades"
    shutil.copytree(marked / "grades", out, symlinks=True)
    page_path = out / "project" / "feedback" / STUDENT / "project" / "project.html"
    before = page_path.read_text(encoding="utf-8")
    assert COMMENT not in html.unescape(before)
    proc = run("feedback", "--out", str(out))
    assert "replaces the pages written at autograding" in proc.stdout
    page = page_path.read_text(encoding="utf-8")
    text = html.unescape(page)
    assert COMMENT in text
    assert f"Score: {MARK:.1f} / 8.0" in page, "the written answer's mark is not shown"
    assert score(page) == pytest.approx(score(before) + MARK), "the total was not updated"
    assert "Your score by part" in page, "the per-part summary is missing"
    master = nbformat.read(ROOT / "source" / "project" / "project.ipynb", as_version=4)
    secrets = rag_feedback.secret_lines(master)
    assert secrets
    for student in (STUDENT, OTHER):
        shown = html.unescape((out / "project" / "feedback" / student / "project"
                               / "project.html").read_text(encoding="utf-8"))
        assert not [line for line in secrets if line in shown], "a hidden test line is shown"


def test_a_written_answer_changed_after_marking_is_listed(marked, tmp_path):
    from nbgrader.api import Gradebook

    work = tmp_path
    shutil.copytree(marked / "grades", work / "grades", symlinks=True)
    shutil.copytree(marked / "submitted", work / "submitted", symlinks=True)
    submit(work, STUDENT, "A late resubmission with a different memo.")  # after the mark
    proc = run("grade", "--submissions", str(work / "submitted"), "--out",
               str(work / "grades"), "--no-report")
    assert course.CHANGED in proc.stdout + proc.stderr
    with Gradebook(f"sqlite:///{work / 'grades' / 'formgrader' / 'gradebook.db'}") as gb:
        assert gb.find_grade(ANSWER, "project", "project", STUDENT).manual_score == MARK
    problems = pd.read_csv(work / "grades" / "project" / "problems.csv")
    mine = problems[problems.student == STUDENT].problem.tolist()
    assert any(ANSWER in p and course.CHANGED in p for p in mine), mine
    assert not any(course.CHANGED in p for p in problems[problems.student == OTHER].problem)
    rows = pd.read_csv(work / "grades" / "grade_sheet.csv").set_index("student")
    assert course.CHANGED in rows.loc[STUDENT, "note"]
    assert pd.isna(rows.loc[OTHER, "note"])
    # the note stays on the sheet until a person changes the mark
    assert course.CHANGED in course.sheet(work / "grades", ROOT / "source") \
        .set_index("student").loc[STUDENT, "note"]
    with Gradebook(f"sqlite:///{work / 'grades' / 'formgrader' / 'gradebook.db'}") as gb:
        gb.find_grade(ANSWER, "project", "project", STUDENT).manual_score = MARK - 1
        gb.db.commit()
    again = course.sheet(work / "grades", ROOT / "source")
    assert "note" not in again or again.set_index("student")["note"].isna().all()
