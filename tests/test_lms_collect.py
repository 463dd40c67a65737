"""An LMS bulk download becomes a submissions folder through nbgrader's
zip_collect (autograder/commands/lms_collect.py), and what it collects grades."""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.commands import lms_collect  # noqa: E402
from autograder.intake import gate  # noqa: E402

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


# a name that sets the terminal's title, starts a new line and turns the
# rest around (a bidi override)
NASTY = "\x1b]0;pwned\x07\nnothing was collected; run rm\u202ebnpyi.exe"


def hostile_hand_ins(tmp: Path) -> dict[str, Path]:
    """The hostile intake class, each student's upload of hand-in.zip, and
    beside some of them an honest quiz that must still be collected."""
    quiz = (SAMPLE / "ada_complete" / "quiz" / "quiz.ipynb").read_bytes()
    lab = (SAMPLE / "ada_complete" / "lab" / "01_why_retrieval.ipynb").read_bytes()
    out = {}

    def zip_at(name: str, members: list[tuple[str, bytes, int]]) -> Path:
        with zipfile.ZipFile(tmp / name, "w", zipfile.ZIP_DEFLATED) as z:
            for member, data, mode in members:
                info = zipfile.ZipInfo(member)
                info.external_attr, info.compress_type = mode << 16, zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        return tmp / name

    plain_file = stat.S_IFREG | 0o644
    layer = zip_at("layer.zip", [("zeros", bytes(8 * gate.MB), plain_file)])
    # nested zips, and 60 MiB of zeros: 60 KB to upload
    out["bomb_1_2_hand-in.zip"] = zip_at("bomb.zip", [
        ("lab/layer.zip", layer.read_bytes(), plain_file),
        ("project/corpus/zeros.json", bytes(60 * gate.MB), plain_file)])
    many = zip_at("many.zip", [(f"lab/{i:05}.txt", b"", plain_file) for i in range(20_000)])
    out["many_3_4_hand-in.zip"] = many
    (tmp / "truncated.zip").write_bytes(many.read_bytes()[:100_000])
    out["trunc_5_6_hand-in.zip"] = tmp / "truncated.zip"
    out["clash_7_8_hand-in.zip"] = zip_at("clash.zip", [
        ("lab/01_why_retrieval.ipynb", lab, stat.S_IFREG | 0o6777),
        ("lab/x", b"x", plain_file), ("lab/x/y", b"y", plain_file), (f"lab/{NASTY}", b"/etc/shadow", stat.S_IFLNK | 0o777)])
    # a tar under the zip's name: links, a pipe and a device beside the quiz
    with tarfile.open(tmp / "pipe.tar", "w") as t:
        info = tarfile.TarInfo("quiz/quiz.ipynb")
        info.size, info.mode = len(quiz), 0o4755
        t.addfile(info, io.BytesIO(quiz))
        for name, kind in [("lab/pipe", tarfile.FIFOTYPE), ("lab/zero", tarfile.CHRTYPE),
                           ("lab/shadow", tarfile.SYMTYPE)]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.devmajor, info.devminor = kind, "/etc/shadow", 1, 5
            t.addfile(info)
    out["pipe_9_10_hand-in.zip"] = tmp / "pipe.tar"
    return out


@pytest.fixture(scope="module")
def canvas_zip(tmp_path_factory) -> Path:
    """Two students as Canvas names them: smithjane uploads files one by one
    (a blank quiz, then her finished quiz as a resubmission, a notebook, a
    stray note, a file whose name is a terminal escape); lee uploads the
    student bundle's hand-in.zip with the project and its corpus. Plus a
    file Canvas did not name, and the hostile intake class."""
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
        z.writestr(f"smithjane_12345_67890_{NASTY}", "a name")
        z.writestr("readme.txt", "not a submission")
        z.write(hand_in, "lee_22222_33333_hand-in.zip")
        for name, upload in hostile_hand_ins(tmp).items():
            z.write(upload, name)
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
    # some were refused (1), and collect did not crash (which also exits 1)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert sha(canvas_zip) == before, "collect changed the LMS's zip"
    return out, proc.stdout


def test_every_file_lands_where_it_belongs(collected):
    out, stdout = collected
    ada = SAMPLE / "ada_complete"
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
                   and p.parts[len(out.parts)] in ("lee", "smithjane", "lms_collected.csv"))
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
    # every file of the zip, the unpacked hand-in's too
    assert listing["file"].str.match(r"(lee|smithjane)_|readme").sum() == 12
    for line in ("readme.txt: matched no pattern", "smithjane_12345_67890_notes.txt: matched",
                 "4 student(s) collected"):
        assert line in stdout


def test_one_bad_hand_in_fails_alone(collected):
    """Each hostile student gets rows saying what was refused and why; what
    else they handed in is collected, as plain files of the gate's modes."""
    out, stdout = collected
    listing = pd.read_csv(out / "lms_collected.csv", dtype=str, keep_default_na=False)
    note = dict(zip(listing["file"], listing["note"]))
    nothing = "; nothing in it was collected"
    assert note["bomb_1_2_hand-in.zip"] == (
        "refused: project/corpus/zeros.json is larger than 50 MiB" + nothing)
    assert note["many_3_4_hand-in.zip"] == "refused: more than 500 files and folders" + nothing
    assert note["trunc_5_6_hand-in.zip"].startswith("refused: it cannot be read (BadZipFile")
    shown = "\\x1b]0;pwned\\x07\\x0anothing was collected; run rm\\u202ebnpyi.exe"
    assert {f: n for f, n in note.items() if f.startswith(("clash", "pipe"))} == {
        "clash_7_8_hand-in.zip": "unpacked; its files are listed by name",
        "clash_7_8_hand-in/lab/01_why_retrieval.ipynb": "", "clash_7_8_hand-in/lab/x": "",
        "clash_7_8_hand-in/lab/x/y": "refused: its folder lab/x is a file",
        f"clash_7_8_hand-in/lab/{shown}": "refused: a symbolic link",
        "pipe_9_10_hand-in.zip": "unpacked; its files are listed by name",
        "pipe_9_10_hand-in/quiz/quiz.ipynb": "",
        "pipe_9_10_hand-in/lab/pipe": "refused: a named pipe",
        "pipe_9_10_hand-in/lab/zero": "refused: a device",
        "pipe_9_10_hand-in/lab/shadow": "refused: a symbolic link"}
    assert note[f"smithjane_12345_67890_{shown}"] == "matched no pattern; not collected"
    # names are data in the terminal too: no escape, no forged line
    assert "\x1b" not in stdout and "\u202e" not in stdout
    assert not any(line.startswith("nothing was collected") for line in stdout.splitlines())
    assert "refused in part or whole, for: bomb, clash, many, pipe, trunc" in stdout
    # the bomb, the 20,000 files and the truncated zip: nothing collected
    assert sorted(p.name for p in out.iterdir()) == [
        "clash", "lee", "lms_collected.csv", "pipe", "smithjane"]
    ada = SAMPLE / "ada_complete"
    assert sha(out / "pipe" / "quiz" / "quiz.ipynb") == sha(ada / "quiz" / "quiz.ipynb")
    assert sha(out / "clash" / "lab" / "01_why_retrieval.ipynb") == sha(
        ada / "lab" / "01_why_retrieval.ipynb")
    assert (out / "clash" / "lab" / "x").read_text() == "x"
    # every collected file and folder: the gate's modes, never the upload's
    ours = {"smithjane", "smithjane/lab", "smithjane/lab/07_measuring.ipynb",  # the fixture's
            lms_collect.COLLECTED}
    for path in out.rglob("*"):
        if str(path.relative_to(out)) in ours:
            continue
        info = path.lstat()
        assert stat.S_IMODE(info.st_mode) == (0o750 if path.is_dir() else 0o640), path
        assert stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode), path
        assert os.geteuid() != 0 or (info.st_uid, info.st_gid) == (0, gate.GATE_GID), path
    # carried into the quiz's problems.csv when the class is graded
    whole = [("bomb", "(LMS download) bomb_1_2_hand-in.zip"),
             ("many", "(LMS download) many_3_4_hand-in.zip"),
             ("trunc", "(LMS download) trunc_5_6_hand-in.zip")]
    carried = {a: sorted((r["student"], r["problem"].split(": ")[0]) for r in
                         lms_collect.refusals(out / lms_collect.COLLECTED, a))
               for a in ("lab", "quiz")}
    assert carried["quiz"] == whole
    assert carried["lab"] == sorted(whole + [
        ("clash", "(LMS download) clash_7_8_hand-in/lab/x/y"),
        ("clash", f"(LMS download) clash_7_8_hand-in/lab/{shown}"),
        ("pipe", "(LMS download) pipe_9_10_hand-in/lab/pipe"),
        ("pipe", "(LMS download) pipe_9_10_hand-in/lab/shadow"),
        ("pipe", "(LMS download) pipe_9_10_hand-in/lab/zero")])


def test_grading_carries_the_refusals_into_problems_csv(collected, tmp_path):
    """course.py grade adds the refused rows of an assignment to the
    problems.csv grade.py wrote for it, after the lines already there."""
    from autograder.commands import course

    out, _ = collected
    (tmp_path / "quiz").mkdir()
    pd.DataFrame([{"student": "smithjane", "problem": "quiz.ipynb: a line of grade.py"}]
                 ).to_csv(tmp_path / "quiz" / "problems.csv", index=False)
    assert course.carry_refusals(tmp_path, out, "quiz") == 3
    problems = pd.read_csv(tmp_path / "quiz" / "problems.csv", dtype=str)
    assert problems["student"].tolist() == ["smithjane", "bomb", "many", "trunc"]
    assert problems["problem"].iloc[1] == (
        "(LMS download) bomb_1_2_hand-in.zip: refused: project/corpus/zeros.json is larger "
        "than 50 MiB; nothing in it was collected")


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
    """The quiz smithjane resubmitted finished gets full marks, and so does
    the quiz beside the hostile files of pipe: the grader reads what
    collect wrote."""
    out, _ = collected
    proc = subprocess.run([sys.executable, str(ROOT / "autograder" / "commands" / "grade.py"),
                           "--submissions", str(out), "--assignment", "quiz",
                           "--out", str(tmp_path / "quiz"), "--no-report"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scores = pd.read_csv(tmp_path / "quiz" / "scores.csv")
    # beside the hostile files of his hand-in, pipe handed in the finished quiz
    assert scores["student"].tolist() == ["pipe", "smithjane"]
    assert scores["score"].tolist() == scores["max_score"].tolist()
    assert scores["max_score"].iloc[0] > 0
