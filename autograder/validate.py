"""Check notebooks against their tests, with an exit code you can trust.

    python autograder/validate.py NOTEBOOK [NOTEBOOK ...] [--invert]

`nbgrader validate` prints whether the tests pass but exits 0 either way
(nbgrader issue 1908), so a script or a CI job cannot tell. This wrapper runs
the real `nbgrader validate` on each notebook, prints its report, and exits 0
only when every notebook passes every test (with --invert: fails every test,
which is what the student edition must do before any work is done).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from nbgrader_cli import course_folder, nbgrader_command, nbgrader_env

PASSED = "Success! Your notebook passes all the tests."
NONE_PASSED = "Success! The notebook does not pass any tests."


def validate(notebook: Path, invert: bool = False) -> tuple[bool, str]:
    """(ok, report) for one notebook; ok means the expected result was printed."""
    flags = ["--invert"] if invert else []
    with tempfile.TemporaryDirectory(prefix="rag-validate-") as tmp:
        # run where only our nbgrader settings apply (timeouts, code stub)
        course = course_folder(Path(tmp))
        proc = subprocess.run(nbgrader_command("validate", str(notebook), *flags),
                              cwd=course, env=nbgrader_env(), capture_output=True, text=True)
    report = proc.stdout.strip() or proc.stderr.strip()
    wanted = NONE_PASSED if invert else PASSED
    return proc.returncode == 0 and wanted in proc.stdout, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="nbgrader validate with a real exit code.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--invert", action="store_true",
                        help="expect every test to fail (for the student edition)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        parser.error(f"notebooks not found: {', '.join(missing)}")
    failed = []
    for path in args.notebooks:
        ok, report = validate(path.resolve(), args.invert)
        print(f"{'ok  ' if ok else 'FAIL'} {path}\n{report}\n")
        if not ok:
            failed.append(str(path))
    print(f"{len(args.notebooks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
