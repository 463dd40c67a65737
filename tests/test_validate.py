"""nbgrader validate: the masters pass every test, the student edition passes none.

`nbgrader validate` exits 0 even when tests fail (nbgrader issue 1908), so these
tests read what it prints, and also check that it printed nothing else.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
PASS = "Success! Your notebook passes all the tests."
NONE_PASS = "Success! The notebook does not pass any tests."


def validate(notebook: Path, tmp_path: Path, *flags: str) -> str:
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "validate",
                           *flags, str(notebook)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_master_solutions_pass_every_test(master, tmp_path):
    """With the solutions in, every visible and hidden test passes."""
    out = validate(master, tmp_path)
    assert PASS in out, out
    assert "FAILED" not in out


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_release_blanks_fail_every_test(master, tmp_path):
    """In the student edition every graded test fails until the student works."""
    out = validate(ROOT / "release" / "lab" / master.name, tmp_path, "--invert")
    assert NONE_PASS in out, out
