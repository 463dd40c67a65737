"""The grader, run for real (nbgrader + bubblewrap) on the sample class.

The expected scores come from the masters' nbgrader metadata and from what each
sample student did (autograder/make_sample_class.py), never from a grading run.
"""
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "autograder" / "sample_class"
GRADE = ROOT / "autograder" / "grade.py"
sys.path.insert(0, str(ROOT / "autograder"))
import make_sample_class as msc  # noqa: E402

MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))


def grade_cells(master: Path) -> list[tuple[str, float, int]]:
    """(grade_id, points, index of the task it follows) for each graded cell."""
    nb = nbformat.read(master, as_version=4)
    rows, task = [], -1
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if m.get("solution"):
            task += 1
        if m.get("grade"):
            rows.append((m["grade_id"], float(m["points"]), task))
    return rows


def total(master: Path) -> float:
    return sum(p for _, p, _ in grade_cells(master))


def expected_scores() -> dict[tuple[str, str], float]:
    first = MASTERS[0]
    exp = {}
    for m in MASTERS:
        exp[("ada_complete", m.name)] = total(m)
        exp[("eli_alternative", m.name)] = total(m)
        exp[("ben_blank", m.name)] = 0.0
        # cai answered the first tasks of the first notebook: only their tests pass
        exp[("cai_partial", m.name)] = sum(
            p for _, p, t in grade_cells(m) if 0 <= t < msc.PARTIAL_TASKS) if m == first else 0.0
        # dee's rewritten tests are put back by nbgrader, and fail on her blanks
        exp[("dee_tampered", m.name)] = total(m) if m == first else 0.0
    return exp


def run_grader(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GRADE), "--submissions", str(submissions),
                           "--out", str(out), *extra], capture_output=True, text=True)


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    before = tree_digest(SAMPLE)
    out = tmp_path_factory.mktemp("grades")
    proc = run_grader(SAMPLE, out)
    return proc, out, before


def test_sample_class_is_current(tmp_path):
    """autograder/sample_class is what make_sample_class.py writes from today's release."""
    msc.build(tmp_path)
    assert tree_digest(tmp_path) == tree_digest(SAMPLE), "run `make sample-class`"


def test_grader_finishes_cleanly(graded):
    """Every student is graded and nothing leaks; the run exits 0."""
    proc, out, _ = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"graded {len(msc.STUDENTS)} of {len(msc.STUDENTS)} students" in proc.stdout


def test_every_score_is_what_the_student_earned(graded):
    """Full marks for correct work in either style, 0 for blanks, tampering undone."""
    _, out, _ = graded
    scores = pd.read_csv(out / "scores.csv")
    got = {(r.student, r.notebook): r.score for r in scores.itertuples()}
    assert got == pytest.approx(expected_scores())
    for m in MASTERS:
        assert set(scores.loc[scores.notebook == m.name, "max_score"]) == {total(m)}


def test_sample_students_differ_in_score():
    """The class spans the range: full, zero and something in between."""
    exp = expected_scores()
    per_student = {s: sum(v for (st, _), v in exp.items() if st == s) for s in msc.STUDENTS}
    full = sum(total(m) for m in MASTERS)
    assert per_student["ada_complete"] == full
    assert 0 < per_student["cai_partial"] < per_student["dee_tampered"] < full


def test_export_csv_has_one_row_per_student(graded):
    """nbgrader export's CSV lists each student once with the same total."""
    _, out, _ = graded
    grades = pd.read_csv(out / "grades.csv")
    assert sorted(grades["student_id"]) == sorted(msc.STUDENTS)
    scores = pd.read_csv(out / "scores.csv").groupby("student")["score"].sum()
    for row in grades.itertuples():
        assert row.score == pytest.approx(scores[row.student_id])


def test_feedback_exists_and_hides_hidden_tests(graded):
    """One HTML page per student and notebook, with no hidden test code in it."""
    _, out, _ = graded
    for student in msc.STUDENTS:
        pages = sorted((out / "feedback" / student / "lab").glob("*.html"))
        assert [p.stem for p in pages] == [m.stem for m in MASTERS]
        for page in pages:
            text = page.read_text(encoding="utf-8")
            assert "BEGIN HIDDEN TESTS" not in text
            assert "hidden tests ran here" in text


def test_grading_leaves_every_submission_untouched(graded):
    """The grader only reads the submissions."""
    _, _, before = graded
    assert tree_digest(SAMPLE) == before


def test_rerun_into_its_own_output_folder_works(graded, tmp_path):
    """Grading again into a folder the grader made replaces the old results."""
    _, out, _ = graded
    subs = tmp_path / "subs"  # one student keeps the second run short
    shutil.copytree(SAMPLE / "ben_blank", subs / "ben_blank")
    copy = tmp_path / "again"
    shutil.copytree(out, copy)
    proc = run_grader(subs, copy, "--jobs", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    again = pd.read_csv(copy / "scores.csv")
    assert set(again["student"]) == {"ben_blank"}, "the old results must be gone"
    first = pd.read_csv(out / "scores.csv")
    first = first[first.student == "ben_blank"].reset_index(drop=True)
    assert again.equals(first)
