"""Check notebooks against their tests, with an exit code you can trust.

    python autograder/validate.py NOTEBOOK_OR_FOLDER [...] [--invert] [--details]

`make check` runs this on my-work/lab. For each notebook it runs the real
`nbgrader validate`, whose verdict decides pass or fail, and meanwhile runs
the notebook once more with errors allowed, to print a table: for each
`## Part X (N points)`, the visible test points earned of those possible, the
hidden test points, and the first failing check's message.

`nbgrader validate` prints whether the tests pass but exits 0 either way
(nbgrader issue 1908), so a script or a CI job cannot tell. This wrapper exits
0 only when every notebook passes every test (with --invert: fails every test,
which is what the student edition must do before any work is done; no table).
--details adds nbgrader's full report, with every failing cell's traceback.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.utils import determine_grade, is_grade

from nbgrader_cli import course_folder, nbgrader_command, nbgrader_env, nbgrader_settings
from rag_feedback import BEGIN, HIDDEN_DOC, docstring, error_message, is_hidden, parts_of

PASSED = "Success! Your notebook passes all the tests."
NONE_PASSED = "Success! The notebook does not pass any tests."
MESSAGE_WIDTH = 150  # characters of an error message in the table

INTRO = """\
This runs the visible tests: the test cells you can read in each notebook.
Grading adds hidden tests (edge cases, comparisons with a reference). Each
part's hidden test cell says what they check in its first line, which starts
with "(hidden)"; in your copy that cell only makes one call, so "?" below
means those points are decided at grading."""

HINT = """\
To fix a part, start from its first failing check, save, and check again.
Every failing cell's full traceback: add --details (make check DETAILS=1)."""


def start_validate(notebook: Path, invert: bool, course: Path) -> subprocess.Popen:
    """Start the real `nbgrader validate` in course folder `course`.

    With `invert`, a copy is validated without the graded cells worth 0
    points (the quiz's checks of an answer's form): nbgrader counts a cell
    as passed when it scores its maximum, and 0 of 0 always does, so a blank
    quiz would otherwise "pass" those cells.
    """
    flags = ["--invert"] if invert else []
    if invert:
        nb = nbformat.read(notebook, as_version=4)
        kept = [c for c in nb.cells if not (c.metadata.get("nbgrader", {}).get("grade")
                                            and not c.metadata["nbgrader"].get("points"))]
        if len(kept) < len(nb.cells):
            nb.cells = kept
            notebook = course / notebook.name
            nbformat.write(nb, notebook)
    return subprocess.Popen(nbgrader_command("validate", str(notebook), *flags),
                            cwd=course, env=nbgrader_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_cells(notebook: Path) -> nbformat.NotebookNode:
    """Execute a copy of `notebook` top to bottom, errors allowed, where it
    lies and with nbgrader's time limit per cell; the file is not changed."""
    settings = nbgrader_settings()
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", allow_errors=True,
                            timeout=settings.Execute.timeout, interrupt_on_timeout=True,
                            config=settings,
                            resources={"metadata": {"path": str(notebook.parent)}})
    try:
        client.execute()
    except Exception as err:  # noqa: BLE001 (a dead kernel still leaves a table)
        nb.metadata["stopped_by"] = f"{type(err).__name__}: {err}".splitlines()[0]
    return nb


def cell_result(cell) -> tuple[float, str | None]:
    """(points earned, what went wrong or None) for one graded or answer cell.

    A graded cell is scored by nbgrader's own rule (utils.determine_grade):
    an error or text on stderr scores 0, and a number its last line shows is
    read as partial credit. An answer cell fails only by raising an error.
    """
    if cell.get("execution_count") is None:
        return 0.0, "not run: the notebook stopped before this cell"
    message = error_message(cell, MESSAGE_WIDTH, stderr=is_grade(cell))
    if message and message.startswith("KeyboardInterrupt"):
        message = "stopped: the cell ran past the time limit (an endless loop?)"
    if not is_grade(cell):
        return 0.0, message
    try:
        earned, possible = determine_grade(cell)
    except ValueError as err:  # a shown value above the cell's points
        return 0.0, f"its last line shows a value, which nbgrader reads as a score: {err}"
    if earned < possible and message is None:
        message = f"scored {earned:g} of {possible:g}: nbgrader reads its last value as a score"
    return float(earned), message


def part_rows(nb: nbformat.NotebookNode) -> list[dict]:
    """One row per part: visible points, hidden points, first failing check."""
    rows = []
    for part in parts_of(nb):
        visible = {"earned": 0.0, "possible": 0.0}
        hidden = {"earned": 0.0, "possible": 0.0, "ran": True}
        written = 0.0  # points of written answers, which a person marks
        first, ok = None, True
        for index in sorted(part.answers + part.tests):
            cell = nb.cells[index]
            if cell.cell_type == "markdown":
                written += float(cell.metadata["nbgrader"].get("points", 0) or 0)
                continue
            earned, problem = cell_result(cell)
            if is_grade(cell):
                ok = ok and problem is None
                bucket = hidden if is_hidden(cell) else visible
                bucket["possible"] += float(cell.metadata["nbgrader"].get("points", 0))
                bucket["earned"] += earned
                if is_hidden(cell) and BEGIN not in cell.source and problem is None:
                    hidden["ran"] = False  # only its smoke call ran here
            elif problem is not None:
                problem = f"in your answer: {problem}"
            if first is None and problem is not None:
                first = problem
        rows.append({"part": part.name, "ok": ok, "visible": visible,
                     "hidden": hidden, "written": written, "first": first})
    return rows


def hidden_checks(nb: nbformat.NotebookNode) -> list[str]:
    """'Part A (1 point): what its hidden tests check', for hidden cells whose
    tests are not in this copy (a student's notebook)."""
    lines = []
    for part in parts_of(nb):
        for index in part.tests:
            cell = nb.cells[index]
            if is_hidden(cell) and BEGIN not in cell.source:
                what = docstring(cell.source)[len(HIDDEN_DOC):].strip()
                pts = float(cell.metadata["nbgrader"].get("points", 0))
                lines.append(f"{part.name} ({pts:g} point{'s' * (pts != 1)}): {what}")
    return lines


def table(notebook: Path, rows: list[dict]) -> str:
    """The rows as aligned text, one line per part."""
    def score(bucket):
        if bucket["possible"] == 0:
            return "-"
        if not bucket.get("ran", True):
            return f"?/{bucket['possible']:g}"
        return f"{bucket['earned']:g}/{bucket['possible']:g}"

    by_hand = any(row.get("written") for row in rows)
    grid = [["notebook", "part", "result", "visible", "hidden",
             *(["by a person"] if by_hand else []), "first failing check"]]
    for row in rows:
        marked = [f"?/{row['written']:g}" if row.get("written") else "-"]
        grid.append([notebook.stem, row["part"], "ok" if row["ok"] else "FAIL",
                     score(row["visible"]), score(row["hidden"]),
                     *(marked if by_hand else []), row["first"] or "-"])
    widths = [max(len(line[i]) for line in grid) for i in range(len(grid[0]) - 1)]
    return "\n".join("  " + "  ".join(text.ljust(w) for text, w in zip(line, widths))
                     + "  " + line[-1] for line in grid)


def verdict(report: str) -> str:
    """nbgrader's summary: its report up to the first failing cell, on one
    line; or, when nbgrader itself failed, the last lines of its log."""
    if "[ValidateApp | ERROR]" in report:
        lines = [line.strip() for line in report.splitlines() if line.strip()]
        return "nbgrader validate failed:\n  " + "\n  ".join(lines[-2:])
    head = report.split("=" * 20, 1)[0]
    return " ".join(head.split())


def validate(notebook: Path, invert: bool = False,
             with_table: bool = True) -> tuple[bool, str, nbformat.NotebookNode | None]:
    """(ok, nbgrader's report, the notebook as run for the table or None).

    ok means nbgrader printed the expected result. Both runs go at once: the
    verdict is nbgrader's, the table only explains it.
    """
    with tempfile.TemporaryDirectory(prefix="rag-validate-") as tmp:
        # run where only our nbgrader settings apply (timeouts, code stub)
        proc = start_validate(notebook, invert, course_folder(Path(tmp)))
        ran = run_cells(notebook) if with_table else None
        stdout, stderr = proc.communicate()
    report = stdout.strip() or stderr.strip()
    wanted = NONE_PASSED if invert else PASSED
    return proc.returncode == 0 and wanted in stdout, report, ran


def find_notebooks(args: list[Path]) -> tuple[list[Path], list[str]]:
    """Notebooks named or held by the folders named; and the problems found."""
    found, problems, missing = [], [], []
    for path in args:
        if path.suffix == ".ipynb":
            (found if path.is_file() else missing).append(path)
            continue
        inside = sorted(path.glob("*.ipynb")) if path.is_dir() else []
        if not inside:
            problems.append(f"no notebooks in {path} yet: run `make lab` first, "
                            "which copies the student notebooks there")
        found += inside
    if missing:
        problems.append(f"notebooks not found: {', '.join(map(str, missing))}")
    return found, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="nbgrader validate with a real exit code "
                                     "and a table of points per part.")
    parser.add_argument("notebooks", nargs="+", type=Path,
                        help="notebooks, or folders whose notebooks to check")
    parser.add_argument("--invert", action="store_true",
                        help="expect every test to fail (for the student edition)")
    parser.add_argument("--details", action="store_true",
                        help="print nbgrader's full report: every failing cell and its error")
    args = parser.parse_args(argv)
    notebooks, problems = find_notebooks(args.notebooks)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if not args.invert:
        print(INTRO + "\n")
    failed = []
    for path in notebooks:
        ok, report, ran = validate(path.resolve(), args.invert, with_table=not args.invert)
        print(f"{'ok  ' if ok else 'FAIL'} {path}")
        print(report if args.details or args.invert else verdict(report))
        if ran is not None:
            print("\n" + table(path, part_rows(ran)))
            if "stopped_by" in ran.metadata:
                print(f"  the run stopped early: {ran.metadata['stopped_by']}")
            checks = hidden_checks(ran)
            if checks:
                print("  hidden tests, added at grading:")
                print("\n".join(f"    {line}" for line in checks))
        print()
        if not ok:
            failed.append(str(path))
    if failed and not args.invert:
        print(HINT + "\n")
    print(f"{len(notebooks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
