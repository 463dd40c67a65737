"""An LMS bulk download becomes a submissions folder through nbgrader's
zip_collect (autograder/commands/lms_collect.py), and what it collects grades."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.commands import lms_collect  # noqa: E402

SAMPLE = ROOT / "autograder" / "testbed" / "sample_class"
RELEASED = lms_collect.released_notebooks(ROOT / "release")


def test_canvas_names_route_to_assignments():
    place = lambda rel: lms_collect.place(rel, lms_collect.CANVAS, RELEASED)  # noqa: E731
    assert place("smithjane_12_34_07_measuring.ipynb") == lms_collect.Placed(
        "smithjane", "lab", "07_measuring.ipynb", 0)
    assert place("smithjane_LATE_12_34_quiz-3.ipynb") == lms_collect.Placed(
        "smithjane", "quiz", "quiz.ipynb", 3)
    assert place("smithjane_12_34_questions.json") == lms_collect.Placed(
        "smithjane", "project", "corpus/questions.json", 0)
    assert place("lee_1_2_hand-in-2/project/corpus/documents.json") == lms_collect.Placed(
        "lee", "project", "corpus/documents.json", 2)
    for stray in ("readme.txt", "smithjane_12_34_notes.txt", "smithjane_12_34_99_extra.ipynb",
                  "lee_1_2_hand-in/lab/.ipynb_checkpoints/07_measuring-checkpoint.ipynb",
                  "lee_1_2_hand-in/grades/07_measuring.ipynb",
                  "lee_1_2_other/lab/07_measuring.ipynb", "smithjane_x_34_quiz.ipynb"):
        assert place(stray) is None, stray


def test_the_highest_counter_wins_not_the_last_name():
    names = ["s_1_2_quiz.ipynb", "s_1_2_quiz-2.ipynb", "s_1_2_quiz-10.ipynb", "s_1_2_quiz-9.ipynb"]
    placed = {n: lms_collect.place(n, lms_collect.CANVAS, RELEASED) for n in names}
    replaced = lms_collect.choose(placed)
    assert set(replaced) == set(names) - {"s_1_2_quiz-10.ipynb"}
    assert set(replaced.values()) == {"s_1_2_quiz-10.ipynb"}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def canvas_zip(tmp_path_factory) -> Path:
    """Two students as Canvas names them: smithjane uploads files one by one
    (a blank quiz, then her finished quiz as a resubmission, a notebook, a
    stray note); lee uploads the student bundle's hand-in.zip with the
    project and its corpus. Plus a file Canvas did not name."""
    tmp = tmp_path_factory.mktemp("lms")
    path = tmp / "submissions.zip"
    ada, ben = SAMPLE / "ada_complete", SAMPLE / "ben_blank"
    hand_in = tmp / "hand-in.zip"
    with zipfile.ZipFile(hand_in, "w") as z:
        z.write(ada / "lab" / "01_why_retrieval.ipynb", "lab/01_why_retrieval.ipynb")
        z.write(ada / "project" / "project.ipynb", "project/project.ipynb")
        for f in sorted((ada / "project" / "corpus").iterdir()):
            z.write(f, f"project/corpus/{f.name}")
    with zipfile.ZipFile(path, "w") as z:
        z.write(ben / "quiz" / "quiz.ipynb", "smithjane_12345_67890_quiz.ipynb")
        z.write(ada / "quiz" / "quiz.ipynb", "smithjane_12345_67999_quiz-1.ipynb")
        z.write(ada / "lab" / "07_measuring.ipynb", "smithjane_12345_67890_07_measuring.ipynb")
        z.writestr("smithjane_12345_67890_notes.txt", "my notes")
        z.writestr("readme.txt", "not a submission")
        z.write(hand_in, "lee_22222_33333_hand-in.zip")
    return path


@pytest.fixture(scope="module")
def collected(canvas_zip, tmp_path_factory):
    before = sha(canvas_zip)
    out = tmp_path_factory.mktemp("collected") / "submitted"
    # the same work collected before (a second run over one zip) is no clash
    (out / "smithjane" / "lab").mkdir(parents=True)
    shutil.copy(SAMPLE / "ada_complete" / "lab" / "07_measuring.ipynb",
                out / "smithjane" / "lab" / "07_measuring.ipynb")
    proc = subprocess.run([sys.executable,
                           str(ROOT / "autograder" / "commands" / "lms_collect.py"),
                           "--zip", str(canvas_zip), "--submissions", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sha(canvas_zip) == before, "collect changed the LMS's zip"
    return out, proc.stdout


def test_every_file_lands_where_it_belongs(collected):
    out, stdout = collected
    ada = SAMPLE / "ada_complete"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == sorted([
        "lms_collected.csv",
        "lee/lab/01_why_retrieval.ipynb", "lee/project/project.ipynb",
        *(f"lee/project/corpus/{f.name}" for f in (ada / "project" / "corpus").iterdir()),
        "smithjane/lab/07_measuring.ipynb", "smithjane/quiz/quiz.ipynb"])
    # the resubmission, not the first upload, and bytes unchanged
    assert sha(out / "smithjane" / "quiz" / "quiz.ipynb") == sha(ada / "quiz" / "quiz.ipynb")
    assert sha(out / "lee" / "project" / "corpus" / "documents.json") == sha(
        ada / "project" / "corpus" / "documents.json")
    listing = pd.read_csv(out / "lms_collected.csv", dtype=str, keep_default_na=False)
    note = dict(zip(listing["file"], listing["note"]))
    assert note["readme.txt"] == note["smithjane_12345_67890_notes.txt"] == (
        "matched no pattern; not collected")
    assert note["smithjane_12345_67890_quiz.ipynb"] == (
        "replaced by smithjane_12345_67999_quiz-1.ipynb")
    assert len(listing) == 11  # every file of the zip, the unpacked hand-in's too
    for line in ("readme.txt: matched no pattern", "smithjane_12345_67890_notes.txt: matched",
                 "2 student(s) collected"):
        assert line in stdout


def test_collect_never_overwrites_different_work(canvas_zip, tmp_path):
    own = tmp_path / "submitted"
    (own / "smithjane" / "quiz").mkdir(parents=True)
    (own / "smithjane" / "quiz" / "quiz.ipynb").write_text("{}")
    clash = subprocess.run([sys.executable,
                            str(ROOT / "autograder" / "commands" / "lms_collect.py"),
                            "--zip", str(canvas_zip), "--submissions", str(own)],
                           capture_output=True, text=True)
    assert clash.returncode == 2 and "smithjane/quiz" in clash.stderr
    assert (own / "smithjane" / "quiz" / "quiz.ipynb").read_text() == "{}"
    assert not (own / "lee").exists(), "a clash must stop the whole collect"


def test_collected_work_grades(collected, tmp_path):
    """The quiz smithjane resubmitted finished gets full marks: the grader
    reads what collect wrote."""
    out, _ = collected
    proc = subprocess.run([sys.executable, str(ROOT / "autograder" / "commands" / "grade.py"),
                           "--submissions", str(out), "--assignment", "quiz",
                           "--out", str(tmp_path / "quiz"), "--no-report"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scores = pd.read_csv(tmp_path / "quiz" / "scores.csv")
    assert scores["student"].tolist() == ["smithjane"]
    assert scores["score"].tolist() == scores["max_score"].tolist()
    assert scores["max_score"].iloc[0] > 0
