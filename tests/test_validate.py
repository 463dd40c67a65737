"""nbgrader validate: the masters pass every test, the student edition passes none.

`nbgrader validate` exits 0 even when tests fail (nbgrader issue 1908). These
tests go through autograder/validate.py, which reads what nbgrader prints and
turns it into an exit code; the wrapper itself is tested here too.
"""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
VALIDATE = ROOT / "autograder" / "validate.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(VALIDATE), *args],
                          capture_output=True, text=True)


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_master_solutions_pass_every_test(master):
    """With the solutions in, every visible and hidden test passes."""
    proc = run(str(master))
    assert proc.returncode == 0, proc.stdout
    assert "Success! Your notebook passes all the tests." in proc.stdout
    assert "FAILED" not in proc.stdout


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
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
