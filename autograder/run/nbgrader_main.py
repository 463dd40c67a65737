"""`nbgrader ARGS`, as the environment's own `nbgrader` script runs it, with
one change: a new gradebook learns its schema revision in this process.

    python autograder/run/nbgrader_main.py generate_assignment lab --force

nbgrader stamps every gradebook it creates with the newest revision of its
alembic migrations, which it reads by running `alembic heads` in a new
process: about 2.7 s of CPU (a second interpreter importing alembic and
SQLAlchemy) for one line of text. alembic's own ScriptDirectory reads the
same line from the same folder of migrations in about 0.2 s.
nbgrader_cli.nbgrader_command runs every nbgrader command of the pack
through here; tests/test_nbgrader_main.py checks that both ways give the
same revision.
"""
from __future__ import annotations

import sys


def alembic_head() -> str:
    """The revision `alembic heads` prints first for nbgrader's migrations."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def use_alembic_head() -> None:
    """Make gradebooks created by this process read the revision here."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


if __name__ == "__main__":
    use_alembic_head()
    from nbgrader.apps.nbgraderapp import main

    sys.argv[0] = "nbgrader"
    sys.exit(main())
