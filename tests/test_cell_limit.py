"""A notebook cell's time limit is written once, in autograder/run/cell_limit.py.

It was once a literal in four places (nbgrader's configuration, the judge's
default, the execute step's fallback and the mistakes' grading), which could
drift apart. The first test reads the grader's and the tools' Python for a
line that names a timeout beside the number; the second loads what each
user actually ends up with.
"""
import inspect
import re
from pathlib import Path

from autograder.run.cell_limit import CELL_TIMEOUT
from autograder.run.judge import Judge
from autograder.run.nbgrader_cli import GRADER_FILES, nbgrader_settings

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(rf"(?<![\w.]){CELL_TIMEOUT}(\.0)?(?![\w.])")


def literal_limits(folder: Path) -> list[str]:
    """Lines of the Python under `folder` that name a timeout and hold the
    limit's number, as `path:line`."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if "timeout" in code.lower() and NUMBER.search(code):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_the_limit_is_a_literal_in_one_place_only():
    found = literal_limits(ROOT / "autograder") + literal_limits(ROOT / "tools")
    assert [line.split(":")[0] for line in found] == ["autograder/run/cell_limit.py"], found


def test_every_user_reads_the_one_limit():
    assert nbgrader_settings().Execute.timeout == CELL_TIMEOUT
    assert inspect.signature(Judge).parameters["timeout"].default == CELL_TIMEOUT
    # a course folder's copy of the grader must hold the module its
    # nbgrader_config.py imports
    assert "cell_limit.py" in {p.name for p in GRADER_FILES}
