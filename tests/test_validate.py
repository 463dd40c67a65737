"""nbgrader validate: the masters pass every test, the student edition passes none.

`nbgrader validate` exits 0 even when tests fail (nbgrader issue 1908). These
tests go through autograder/validate.py, which reads what nbgrader prints and
turns it into an exit code; the wrapper itself, and what `make check` shows a
student (a table of points per part), are tested here too.
"""
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
RELEASE = ROOT / "release" / "lab"
VALIDATE = ROOT / "autograder" / "validate.py"
sys.path.insert(0, str(ROOT / "autograder"))
import make_sample_class as msc  # noqa: E402
from rag_feedback import is_hidden, parts_of  # noqa: E402


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(VALIDATE), *args],
                          capture_output=True, text=True)


# the first and the last notebook test the wrapper; that every master's answers
# pass every test and every blank fails is graded for real on the sample class
# (tests/test_grading.py: ada_complete full marks, ben_blank none)
ENDS = [MASTERS[0], MASTERS[-1]]


@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_master_solutions_pass_every_test(master):
    """With the solutions in, every visible and hidden test passes."""
    proc = run(str(master))
    assert proc.returncode == 0, proc.stdout
    assert "Success! Your notebook passes all the tests." in proc.stdout
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_release_blanks_fail_every_test(master):
    """In the student edition every graded test fails until the student works."""
    proc = run(str(ROOT / "release" / "lab" / master.name), "--invert")
    assert proc.returncode == 0, proc.stdout
    assert "Success! The notebook does not pass any tests." in proc.stdout


def test_a_failing_notebook_gives_a_failing_exit_code():
    """Where nbgrader would exit 0, the wrapper exits 1 and says which notebook."""
    blank = ROOT / "release" / "lab" / MASTERS[0].name
    proc = run(str(blank))
    assert proc.returncode == 1
    assert f"FAIL {blank}" in proc.stdout
    assert "VALIDATION FAILED" in proc.stdout
    assert proc.stdout.strip().endswith("0 passed, 1 failed")


def test_a_missing_notebook_is_an_error():
    """A typo in the path is reported, not validated as empty."""
    proc = run("no/such/notebook.ipynb")
    assert proc.returncode == 2
    assert "notebooks not found: no/such/notebook.ipynb" in proc.stderr


def student_copy(master: Path, folder: Path, answered: set[str] | None = None) -> Path:
    """The student edition of `master` with the master's answers written into
    the solution cells named in `answered` (all of them when None)."""
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    msc.fill(nb, msc.master_answers(master), only=answered)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / master.name)
    return folder / master.name


def rows_of(stdout: str, stem: str) -> dict[str, list[str]]:
    """Part name -> the table row's columns after the part, for one notebook."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(rf"\s+{re.escape(stem)}\s+(Part \w+|before Part \w+)\s+(.*)", line)
        if m:
            rows[m.group(1)] = m.group(2).split(None, 3)
    return rows


def test_check_before_make_lab_says_to_run_it(tmp_path):
    """No my-work/lab yet, or nothing in it: the answer is `make lab`, not a path error."""
    for folder in (tmp_path / "my-work" / "lab", tmp_path):
        proc = run(str(folder))
        assert proc.returncode == 2
        assert f"no notebooks in {folder} yet: run `make lab` first" in proc.stderr
        assert "notebooks not found" not in proc.stderr


# two notebooks are enough to test the check itself; that every master's
# answers pass is tested above, and tests/test_conventions.py rules out the
# shown values that once made finished copies fail
@pytest.mark.parametrize("master", ENDS, ids=lambda p: p.name)
def test_a_finished_student_copy_passes_check(master, tmp_path):
    """The release with the master's answers in it: exit 0, every part ok, every
    visible point earned, hidden points left to grading."""
    copy = student_copy(master, tmp_path / "lab")
    proc = run(str(tmp_path / "lab"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"ok   {copy}" in proc.stdout
    rows = rows_of(proc.stdout, master.stem)
    assert [p.name for p in parts_of(nbformat.read(copy, as_version=4))] == list(rows)
    for part, (result, visible, hidden, first) in rows.items():
        earned, possible = visible.split("/")
        assert (result, earned, first) == ("ok", possible, "-"), f"{part}: {proc.stdout}"
        assert hidden == "-" or hidden.startswith("?/"), f"{part}: {proc.stdout}"


def test_check_explains_itself_and_scores_each_part(tmp_path):
    """Half-done work: the table shows the answered part passing and the first
    unanswered one failing with its error; the text says what is not checked."""
    master = MASTERS[0]
    nb = nbformat.read(RELEASE / master.name, as_version=4)
    parts = [p for p in parts_of(nb) if p.answers]
    done, todo = parts[0], parts[1]
    answered = {nb.cells[i].metadata["nbgrader"]["grade_id"] for i in done.answers}
    copy = student_copy(master, tmp_path / "lab", answered)
    proc = run(str(copy))
    assert proc.returncode == 1
    out = proc.stdout
    assert "This runs the visible tests" in out and '"(hidden)"' in out
    assert "VALIDATION FAILED" in out and "The following cell failed" not in out
    rows = rows_of(out, master.stem)
    result, visible, _, first = rows[done.name]
    assert result == "ok" and visible.split("/")[0] == visible.split("/")[1], out
    result, visible, _, first = rows[todo.name]
    assert result == "FAIL" and visible.startswith("0/"), out
    assert "NotImplementedError" in first, out
    hidden = [nb.cells[i] for p in parts for i in p.tests if is_hidden(nb.cells[i])]
    if hidden:
        assert "hidden tests, added at grading:" in out
    details = run(str(copy), "--details").stdout
    assert "The following cell failed" in details
