"""The order in which `make test` hands its files to the two workers
(tests/conftest.py): the files that take minutes first, in LONG_FILES's
order, then the rest, most tests first; a file's own tests never move."""
import re
from pathlib import Path
from types import SimpleNamespace

from tests import conftest
from tests.conftest import LONG_FILES, ROOT


def test_every_long_file_is_still_there():
    """A renamed or removed file would silently drop out of the list and be
    handed out among the short ones."""
    assert len(set(LONG_FILES)) == len(LONG_FILES)
    assert [name for name in LONG_FILES if not (ROOT / "tests" / name).is_file()] == []


def test_long_files_go_first_and_the_rest_by_number_of_tests():
    def items(path: Path, n: int) -> list:
        return [SimpleNamespace(path=path, name=f"{path.name}:{i}") for i in range(n)]

    tests = ROOT / "tests"
    short, many = tests / "test_a_short_one.py", tests / "test_many.py"
    notebook = ROOT / "notebooks" / "01_why_retrieval.ipynb"
    # as collected: by name, the two long ones last and in the wrong order
    collected = (items(short, 2) + items(many, 5) + items(notebook, 3)
                 + items(tests / LONG_FILES[1], 2) + items(tests / LONG_FILES[0], 3))
    conftest.pytest_collection_modifyitems(collected)
    want = [(LONG_FILES[0], 3), (LONG_FILES[1], 2), ("test_many.py", 5),
            ("01_why_retrieval.ipynb", 3), ("test_a_short_one.py", 2)]
    assert [i.name for i in collected] == [f"{name}:{i}" for name, n in want for i in range(n)]


def test_the_sample_class_is_graded_before_a_file_that_reads_it_is_handed_out():
    """test_grading.py grades it (graded_course) from the first minute;
    every other file whose tests or fixtures take graded_course comes after
    at least two more files that take minutes, so no worker waits on the
    lock while the other grades."""
    asks = re.compile(r"^\s*def \w+\([^)]*\bgraded_course\b", re.M)
    readers = sorted(p.name for p in (ROOT / "tests").glob("test_*.py")
                     if asks.search(p.read_text(encoding="utf-8")))
    assert "test_grading.py" in readers and "test_class_report.py" in readers
    assert LONG_FILES.index("test_grading.py") == 0
    for reader in [r for r in readers if r != "test_grading.py"]:
        assert reader in LONG_FILES and LONG_FILES.index(reader) >= 3, reader
