"""autograder/run/nbgrader_main.py: nbgrader's commands with a new gradebook's
schema revision read in-process give the gradebook nbgrader's own way gives."""
import functools
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.run.nbgrader_cli import (  # noqa: E402
    BIN, course_folder, nbgrader_command, nbgrader_env)
from autograder.run.nbgrader_main import alembic_head  # noqa: E402


@functools.cache
def heads_by_alembic() -> str:
    """What nbgrader.api.get_alembic_version reads: `alembic heads`, first word."""
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        out = subprocess.check_output([str(BIN / "alembic"), "-c", ini, "heads"], text=True)
    return out.split("\n")[0].split(" ")[0]


def test_the_revision_read_here_is_the_one_alembic_prints():
    head = alembic_head()
    assert head and head == heads_by_alembic()


def test_a_gradebook_made_through_the_wrapper_is_stamped_and_usable(tmp_path):
    course = course_folder(tmp_path / "course")
    add = subprocess.run(nbgrader_command("db", "student", "add", "ada"), cwd=course,
                         env=nbgrader_env(), capture_output=True, text=True)
    assert add.returncode == 0, add.stderr
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == \
            [(heads_by_alembic(),)]
        assert db.execute("SELECT id FROM student").fetchall() == [("ada",)]
