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


def test_refuses_an_output_folder_it_did_not_make(tmp_path):
    """A folder with someone else's files is never wiped."""
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = run_grader(SAMPLE, out)
    assert proc.returncode != 0
    assert "was not made by this script" in proc.stderr + proc.stdout
    assert (out / "notes.txt").read_text() == "mine"


def test_refuses_output_inside_the_submissions(tmp_path):
    """Results may not be written among the submissions."""
    subs = tmp_path / "subs"
    shutil.copytree(SAMPLE / "ben_blank", subs / "ben_blank")
    proc = run_grader(subs, subs / "results")
    assert proc.returncode != 0
    assert "--out must lie outside --submissions" in proc.stderr + proc.stdout


def copy_notebooks(student: str, names: list[str], to: Path) -> Path:
    """A submission holding only some of a sample student's notebooks."""
    folder = to / "lab"
    folder.mkdir(parents=True)
    for name in names:
        shutil.copy(SAMPLE / student / "lab" / name, folder / name)
    return folder


def test_a_broken_submission_does_not_stop_the_class(tmp_path):
    """Unreadable JSON, a deleted test and a retyped cell are reported; all are graded."""
    subs = tmp_path / "subs"
    first, second = MASTERS[0].name, MASTERS[-1].name
    # two notebooks each keep the class small; the others are reported missing
    gus = copy_notebooks("ada_complete", [first, second], subs / "gus_broken")
    (gus / first).write_text("{ this is not json")
    nb = nbformat.read(gus / second, as_version=4)
    deleted = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    nb.cells.remove(deleted)
    nbformat.write(nb, gus / second)
    # a second student turns an answer cell into markdown (nbgrader issue 1941)
    ivy = copy_notebooks("ada_complete", [first], subs / "ivy_retyped")
    nb = nbformat.read(ivy / first, as_version=4)
    retyped = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    retyped.cell_type = "markdown"
    del retyped["outputs"], retyped["execution_count"]
    nbformat.write(nb, ivy / first)
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--jobs", "2")
    assert "graded 2 of 2 students" in proc.stdout, proc.stdout + proc.stderr
    problems = pd.read_csv(out / "problems.csv")
    gus_problems = " | ".join(problems.loc[problems.student == "gus_broken", "problem"])
    assert "not a readable notebook" in gus_problems
    assert deleted.metadata["nbgrader"]["grade_id"] in gus_problems
    assert f"{MASTERS[1].name}: missing, scored 0" in gus_problems
    ivy_problems = " | ".join(problems.loc[problems.student == "ivy_retyped", "problem"])
    assert f"{retyped.metadata['nbgrader']['grade_id']!r} was turned into markdown" \
        in ivy_problems
    by_nb = pd.read_csv(out / "scores.csv").set_index(["student", "notebook"])["score"]
    # nbgrader turns the cell back into code, so ivy's answer still counts
    assert by_nb["ivy_retyped", first] == pytest.approx(total(MASTERS[0])), proc.stdout
    # gus's unreadable notebook scores 0, and his other work still counts,
    # less the points of the test cell he deleted
    points = float(deleted.metadata["nbgrader"]["points"])
    assert by_nb["gus_broken", first] == 0
    assert by_nb["gus_broken", second] == pytest.approx(total(MASTERS[-1]) - points)
    assert by_nb["gus_broken", MASTERS[1].name] == 0


def test_sandbox_blocks_writes_outside_the_course_and_the_network(tmp_path):
    """Under the grader's bubblewrap, code writes only its own folder and has no network."""
    from grade import sandbox

    course = tmp_path / "work" / "mallory"
    course.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    code = ("import pathlib, socket\n"
            f"pathlib.Path({str(course / 'ok.txt')!r}).write_text('fine')\n"
            f"try:\n    pathlib.Path({str(outside)!r}).write_text('escaped')\n"
            "except OSError:\n    print('write blocked')\n"
            # a fresh network namespace has the loopback device and nothing else
            "names = sorted(n for _, n in socket.if_nameindex())\n"
            "print('network blocked' if names == ['lo'] else names)\n")
    proc = subprocess.run(sandbox([sys.executable, "-c", code], course),
                          capture_output=True, text=True, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert (course / "ok.txt").read_text() == "fine"
    assert not outside.exists()
    assert "write blocked" in proc.stdout and "network blocked" in proc.stdout


def test_an_endless_loop_costs_only_its_own_tests(tmp_path):
    """A solution that never returns is stopped; the rest of the work still counts."""
    subs = tmp_path / "subs"
    first, others = MASTERS[0], MASTERS[1:2]  # two notebooks keep it short
    copy_notebooks("ada_complete", [first.name, others[0].name], subs / "hal_loops")
    path = subs / "hal_loops" / "lab" / first.name
    nb = nbformat.read(path, as_version=4)
    task = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    header = task.source.splitlines()[0]  # the `def ...:` line of the first task
    assert header.startswith("def ")
    task.source = header + "\n    while True:\n        pass\n"
    nbformat.write(nb, path)
    out = tmp_path / "out"
    proc = run_grader(subs, out, "--timeout", "5")
    assert "graded 1 of 1 students" in proc.stdout, proc.stdout + proc.stderr
    scores = pd.read_csv(out / "scores.csv").set_index("notebook")["score"]
    first_task_points = sum(p for _, p, t in grade_cells(first) if t == 0)
    assert scores[first.name] <= total(first) - first_task_points
    for m in others:
        assert scores[m.name] == total(m)
