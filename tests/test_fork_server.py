"""The fork server grade.py starts each student's grading from has imported
the running command once, so a child does not import pandas and the
reports anew (2 s a student) when multiprocessing re-runs the main script
in it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# run as if by `python <main>`: two children report whether grade.py's module
# was already imported by name when they started (exit 0) or not (exit 3)
DRIVER = """
import sys
sys.modules["__main__"].__file__ = {main!r}
from autograder.pipeline.run_student import fork_server
ctx = fork_server(preload=False)
codes = []
for _ in range(2):
    child = ctx.Process(target=exec, args=(
        "import sys; sys.exit(0 if 'autograder.commands.grade' in sys.modules else 3)",))
    child.start()
    child.join(60)
    codes.append(child.exitcode)
print(codes)
"""


def children_of(main: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", DRIVER.format(main=str(main))],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_a_child_of_grade_py_finds_its_imports_loaded():
    assert children_of(ROOT / "autograder" / "commands" / "grade.py") == "[0, 0]"


def test_only_the_packs_own_commands_are_imported_in_the_server():
    """A main outside the pack (here: a script of the test's own) is not
    imported by the server: importing it could run it."""
    assert children_of(ROOT / "tests" / "test_fork_server.py") == "[3, 3]"
