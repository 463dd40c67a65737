"""The grader, run for real (nbgrader + bubblewrap) on the sample class.

The expected scores come from the masters' nbgrader metadata and from what each
sample student did (autograder/testbed/make_sample_class.py), never from a grading run.
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
SAMPLE = ROOT / "autograder" / "testbed" / "sample_class"
GRADE = ROOT / "autograder" / "commands" / "grade.py"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
import make_sample_class as msc  # noqa: E402

MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
LAB_STUDENTS = msc.students_of("lab")


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
def graded(graded_course):
    """The lab's part of the session's grading of the whole sample class."""
    proc, out, before = graded_course
    return proc, out / "lab", before


def test_sample_class_is_current(tmp_path):
    """autograder/testbed/sample_class is what make_sample_class.py writes from today's release."""
    msc.build(tmp_path)
    assert tree_digest(tmp_path) == tree_digest(SAMPLE), "run `make sample-class`"


def test_grader_finishes_cleanly(graded):
    """Every student is graded and nothing leaks; the run exits 0."""
    proc, out, _ = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"graded {len(LAB_STUDENTS)} of {len(LAB_STUDENTS)} students" in proc.stdout


def test_every_score_is_what_the_student_earned(graded):
    """Full marks for correct work in either style, 0 for blanks, tampering undone."""
    _, out, _ = graded
    scores = pd.read_csv(out / "scores.csv")
    got = {(r.student, r.notebook): r.score for r in scores.itertuples()}
    assert got == pytest.approx(expected_scores())
    for m in MASTERS:
        assert set(scores.loc[scores.notebook == m.name, "max_score"]) == {total(m)}


def test_notebooks_not_handed_in_are_listed_and_score_0(graded):
    """cai hands in only the lab's first notebook and dee the first two
    (make_sample_class.LAB_HANDED_IN): each other notebook gets its problem
    line and a 0, and the summary counts them per student."""
    proc, out, _ = graded
    problems = pd.read_csv(out / "problems.csv")
    scores = pd.read_csv(out / "scores.csv").set_index(["student", "notebook"])["score"]
    for student, handed_in in msc.LAB_HANDED_IN.items():
        lines = set(problems.loc[problems.student == student, "problem"])
        absent = [m.name for m in MASTERS[handed_in:]]
        missing = {line for line in lines if line.endswith(": missing, scored 0")}
        assert missing == {f"{name}: missing, scored 0" for name in absent}
        # and nothing else but dee's rewritten tests, each named
        assert all(" was edited; graded with the master's" in line
                   for line in lines - missing)
        assert all(scores[student, name] == 0 for name in absent)
        assert f"! {student}: {len(absent)} of {len(MASTERS)} lab notebooks not handed in" \
            in proc.stdout
    assert not set(problems.student) & {"ada_complete", "ben_blank", "eli_alternative"}


def test_sample_students_differ_in_score():
    """The class spans the range: full, zero and something in between."""
    exp = expected_scores()
    per_student = {s: sum(v for (st, _), v in exp.items() if st == s) for s in LAB_STUDENTS}
    full = sum(total(m) for m in MASTERS)
    assert per_student["ada_complete"] == full
    assert 0 < per_student["cai_partial"] < per_student["dee_tampered"] < full


def test_export_csv_has_one_row_per_student(graded):
    """nbgrader export's CSV lists each student once with the same total."""
    _, out, _ = graded
    grades = pd.read_csv(out / "grades.csv")
    assert sorted(grades["student_id"]) == sorted(LAB_STUDENTS)
    scores = pd.read_csv(out / "scores.csv").groupby("student")["score"].sum()
    for row in grades.itertuples():
        assert row.score == pytest.approx(scores[row.student_id])


def test_feedback_exists_and_hides_hidden_tests(graded):
    """One HTML page per student and notebook handed in, with no hidden test
    code in it."""
    _, out, _ = graded
    for student in LAB_STUDENTS:
        pages = sorted((out / "feedback" / student / "lab").glob("*.html"))
        handed_in = MASTERS[:msc.LAB_HANDED_IN.get(student, len(MASTERS))]
        assert [p.stem for p in pages] == [m.stem for m in handed_in]
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
    proc = run_grader(subs, copy, "--jobs", "1", "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    again = pd.read_csv(copy / "scores.csv")
    assert set(again["student"]) == {"ben_blank"}, "the old results must be gone"
    first = pd.read_csv(out / "scores.csv")
    first = first[first.student == "ben_blank"].reset_index(drop=True)
    assert again.equals(first)


# --- the whole course: quiz, project, one gradebook, the grade sheet ----------

from autograder.commands import course  # noqa: E402  (autograder/commands/course.py)
from autograder.reports import grade_sheet  # noqa: E402

OWN_ASSIGNMENTS = ("quiz", "project")


def single_master(assignment: str) -> Path:
    (master,) = sorted((ROOT / "source" / assignment).glob("*.ipynb"))
    return master


def auto_cells(master: Path) -> list[tuple[str, float, int, str]]:
    """(grade_id, points, task index, task grade_id) of the graded code
    cells: the ones a machine scores (a graded markdown cell waits for a
    person). Tasks are counted as make_sample_class counts answers."""
    nb = nbformat.read(master, as_version=4)
    rows, task, name = [], -1, None
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if m.get("solution"):
            task += 1
            if cell.cell_type == "code":
                name = m["grade_id"]
        if m.get("grade") and cell.cell_type == "code":
            rows.append((m["grade_id"], float(m["points"]), task, name))
    return rows


def manual_cells(master: Path) -> dict[str, float]:
    nb = nbformat.read(master, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and c.cell_type == "markdown"}


def expected_auto(assignment: str) -> dict[str, float]:
    """Each sample student's autograded points, from the master and from what
    make_sample_class.py says the student did."""
    cells = auto_cells(single_master(assignment))
    full = sum(p for _, p, _, _ in cells)
    partial = sum(p for _, p, t, _ in cells if 0 <= t < msc.PARTIAL_TASKS)
    # dee rewrote the graded cells of a blank notebook (put back by nbgrader);
    # fay's corpus is malformed: only the tasks that never read it score
    free = sum(p for _, p, _, task in cells if task in msc.CORPUS_FREE)
    exp = {"ada_complete": full, "eli_alternative": full, "ben_blank": 0.0,
           "cai_partial": partial, "dee_tampered": 0.0, "fay_malformed": free}
    return {s: exp[s] for s in msc.students_of(assignment)}


@pytest.mark.parametrize("assignment", OWN_ASSIGNMENTS)
def test_quiz_and_project_scores_are_what_each_student_earned(graded_course, assignment):
    """Autograded points of the quiz and the project, for every sample student."""
    _, out, _ = graded_course
    scores = pd.read_csv(out / assignment / "scores.csv")
    got = dict(zip(scores.student, scores.score))
    assert got == pytest.approx(expected_auto(assignment))
    assert 0 < expected_auto(assignment)["cai_partial"] < expected_auto(assignment)["ada_complete"]


def test_the_project_is_worth_100_points_split_as_the_rubric(graded_course):
    """A 30, B 30, C 25, D 15: the rubric's split, autograded and manual together."""
    parts = grade_sheet.parts_of(single_master("project"))
    nb = nbformat.read(single_master("project"), as_version=4)
    points = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
              for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    per_part = {}
    for gid, part in parts.items():
        per_part[part] = per_part.get(part, 0) + points[gid]
    assert per_part == {"A": 30, "B": 30, "C": 25, "D": 15}
    assert manual_cells(single_master("project")), "the project has written answers"


def test_a_malformed_corpus_is_graded_and_reported(graded_course):
    """fay's questions.json lacks an answer: she is graded (0 autograded
    points), the problem names the file and the field, and the batch goes on."""
    proc, out, _ = graded_course
    problems = pd.read_csv(out / "project" / "problems.csv")
    fay = " ".join(problems.loc[problems.student == "fay_malformed", "problem"])
    assert "setup cell failed" in fay and "questions.json" in fay and "answer" in fay, fay
    assert "graded 6 of 6 students" in proc.stdout
    assert 0 < expected_auto("project")["fay_malformed"] < expected_auto("project")["ada_complete"]


def test_one_table_for_the_course_while_manual_grades_are_pending(graded_course):
    """make course prints every assignment's points, and the project's written
    answers as to grade; the sheet has a row per student."""
    proc, out, _ = graded_course
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "=== the course ===" in proc.stdout and grade_sheet.PENDING in proc.stdout
    sheet = pd.read_csv(out / "grade_sheet.csv")
    assert sorted(sheet.student) == sorted(msc.STUDENTS)
    for column in ("lab", "quiz", "project", "project A", "project D", "project auto",
                   "project manual", "total", "out of", "project band",
                   *[f"lab/{m.stem}" for m in MASTERS]):
        assert column in sheet.columns, column
    ada = sheet.set_index("student").loc["ada_complete"]
    assert ada["project manual"] == grade_sheet.PENDING == ada["project band"]
    assert float(ada["project auto"]) == expected_auto("project")["ada_complete"]
    assert float(ada["quiz"]) == expected_auto("quiz")["ada_complete"]
    # the lab's core path and extensions, apart (autograder/scoring/editions.py)
    from autograder.scoring import editions

    core = sum(editions.points_by_path(nbformat.read(m, as_version=4))[editions.CORE]
               for m in MASTERS)
    assert float(ada["lab core"]) == core == 32  # the six core parts (test_editions)
    for _, row in sheet[sheet["lab"].notna()].iterrows():  # fay handed in no lab
        assert float(row["lab core"]) + float(row["lab extension"]) == float(row["lab"])
    assert sheet["lab"].notna().sum() == 5
    scores = pd.read_csv(out / "lab" / "scores.csv")
    assert scores.groupby("student")["core_max"].sum().eq(core).all()


def test_manual_grades_through_the_nbgrader_api_give_totals_and_bands(graded_course, tmp_path):
    """A grader marks the written answers (here through nbgrader's Gradebook
    API, as the formgrader does); the sheet and nbgrader's export agree, the
    bands follow the rubric, and grading the class again keeps the marks."""
    from nbgrader.api import Gradebook

    _, out, _ = graded_course
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    manual = manual_cells(single_master("project"))
    given = {"ada_complete": 1.0, "eli_alternative": 0.5}  # share of each answer's points
    with Gradebook(f"sqlite:///{copy / 'formgrader' / 'gradebook.db'}") as gb:
        for student, share in given.items():
            for gid, points in manual.items():
                grade = gb.find_grade(gid, "project", "project", student)
                assert grade.needs_manual_grade
                grade.manual_score = share * points
        gb.db.commit()
    frame = course.sheet(copy, ROOT / "source")
    rows = frame.set_index("student")
    auto = expected_auto("project")
    for student, share in given.items():
        project = auto[student] + share * sum(manual.values())
        assert float(rows.loc[student, "project"]) == pytest.approx(project)
        want = ("excellent" if project >= 90 else "good" if project >= 75
                else "needs work" if project >= 60 else "redo")
        assert rows.loc[student, "project band"] == want
        assert float(rows.loc[student, "total"]) == pytest.approx(
            project + float(rows.loc[student, "lab"]) + float(rows.loc[student, "quiz"]))
    # dee's edited answer cells wait for a person; cai left hers as released,
    # and nbgrader scores an untouched answer 0 without asking anyone
    assert rows.loc["dee_tampered", "project band"] == grade_sheet.PENDING
    assert float(rows.loc["cai_partial", "project manual"]) == 0.0
    assert rows.loc["cai_partial", "project band"] == grade_sheet.band(auto["cai_partial"], 100)
    export = pd.read_csv(copy / "formgrader" / "grades.csv")
    for r in export.itertuples():
        if r.assignment == "project" and r.student_id in given:
            assert r.score == pytest.approx(float(rows.loc[r.student_id, "project"]))
    course.gather(copy, ROOT / "source")  # the class graded again
    with Gradebook(f"sqlite:///{copy / 'formgrader' / 'gradebook.db'}") as gb:
        for gid, points in manual.items():
            assert gb.find_grade(gid, "project", "project", "ada_complete").manual_score \
                == points, "a manual grade was lost when the class was graded again"


def test_band_edges_follow_the_rubric():
    """90-100 excellent, 75-89 good, 60-74 needs work, under 60 redo."""
    assert [grade_sheet.band(p, 100) for p in (100, 90, 89.5, 75, 74, 60, 59.9, 0)] == [
        "excellent", "excellent", "good", "good", "needs work", "needs work", "redo", "redo"]
    with pytest.raises(ValueError, match="out_of"):
        grade_sheet.band(10, 0)
