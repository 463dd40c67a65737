"""Check notebooks against their tests, with an exit code you can trust.

    python autograder/check/validate.py NOTEBOOK_OR_FOLDER [...] [--nb NAME]
                                  [--invert] [--details]

`make check` runs this on my-work/lab. For each notebook it runs nbgrader's
own validator (what `nbgrader validate` runs), whose verdict decides pass or
fail, and keeps the notebook as that run left it to print a table: for each
`## Part X (N points)`, the visible test points earned of those possible, the
hidden test points, and the first failing check's message. The notebook runs
once, down to its last graded or answer cell (the cells after it cannot
change a result), so checking one takes seconds. A part not
answered yet shows its hidden points as `?`; when a setup cell (a code cell
above every part heading) fails, its message is given once as the cause
instead of the NameErrors it leads to; in the core edition a worked part
whose cell fails is named as that part (it is not the setup, and it costs no
points); written answers still empty are named; a notebook with no graded
part (the core edition's 01, 02, 08, 09) says so instead of an empty table. The
"VALIDATION FAILED" banner, which nbgrader prints per notebook, comes once at
the end, counting parts.

A task's function that hands its work to ragkit's own version of the piece
(its namesake, or one of `twins.TWINS`) scores 0 at grading; the check
fails its visible tests the same way, with the grader's message, so a
student learns it before the hand-in. A first cell, added to the run and
left out of the table (GUARD), makes ragkit count its calls
(ragkit_watch.py) and, during each test cell, wraps the answer cells'
functions that cell names, so that a call which ran such a piece raises
DelegatedToPackage.

`--nb NAME` checks one notebook of the folders named (or of their
subfolders): by number (`07`, `7`), by name (`07_measuring`,
`measuring`, `quiz`) or file name. `make check NB=07` passes it on.

`nbgrader validate` prints whether the tests pass but exits 0 either way
(nbgrader issue 1908), so a script or a CI job cannot tell. This wrapper exits
0 only when every notebook passes every test (with --invert: fails every test,
which is what the student edition must do before any work is done; no table).
--details adds nbgrader's full report, with every failing cell's traceback.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearSolutions
from nbgrader.utils import determine_grade, is_grade
from nbgrader.validator import Validator

# run as a script, also in the student's bundle with whatever Python the
# student set up (the bundle's own autograder/ is the one to import): the
# folder that holds autograder/ goes first
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autograder.run import ragkit_watch, twins
from autograder.run.nbgrader_cli import nbgrader_settings
from autograder.run.python_tree import names_loaded, parse
from autograder.run.rag_feedback import (BEGIN, HIDDEN_DOC, PART_HEADING, docstring, error_message,
                          is_hidden, parts_of)

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

BANNER = ("VALIDATION FAILED on {parts}: if you hand in as it is, you will not "
          "receive full credit.")
NOT_ANSWERED = "not answered yet ({error})"
SETUP_FAILED = "the setup cell failed (see above)"
WORKED_FAILED = "{part}, worked for you, failed (see above)"
# a worked part's heading in the core edition (autograder/scoring/editions.py)
WORKED_MARK = "worked for you in this release"
NOTHING_GRADED = "No part of this notebook is graded in this release: nothing to score."
# a part's cells that stop at a NameError or never ran after a failed setup
# fail because of it, not of their own
AFTER_SETUP = ("NameError", "not run")


def stubs() -> tuple[list[str], str]:
    """(the lines of the code stub, the text stub) that nbgrader puts in
    place of a solution: a cell still holding one is not answered yet."""
    settings = nbgrader_settings().ClearSolutions  # nbgrader_config.py sets code_stub
    code = settings.code_stub["python"]
    text = settings.get("text_stub", ClearSolutions.text_stub.default_value)
    return [line.strip() for line in code.splitlines() if line.strip()], text.strip()


def holds_stub(source: str, stub: list[str]) -> bool:
    """True when the stub's lines follow each other in `source` (indented or not)."""
    lines = [line.strip() for line in source.splitlines()]
    return any(lines[i:i + len(stub)] == stub for i in range(len(lines) - len(stub) + 1))


def setup_failure(nb: nbformat.NotebookNode) -> str | None:
    """The error of the first failing code cell above every part heading and
    every graded or answer cell (the notebook's setup, such as loading the
    project's corpus). A worked part's cells are not setup, even above the
    first graded part (see `worked_failures`)."""
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") or \
                cell.metadata.get("nbgrader", {}).get("solution"):
            return None
        if cell.cell_type == "markdown" and PART_HEADING.search(cell.source):
            return None
        if cell.cell_type == "code":
            message = error_message(cell, MESSAGE_WIDTH * 2)
            if message:
                return message
    return None


def worked_failures(nb: nbformat.NotebookNode) -> list[tuple[int, str, str]]:
    """(cell index, part name, error) of the first failing code cell under
    each worked part's heading (the core edition's worked examples, which
    carry no points), down to the next part heading."""
    found, current = [], None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            heading = PART_HEADING.search(cell.source)
            if heading:
                current = heading.group(1) if WORKED_MARK in cell.source else None
            continue
        if current and cell.cell_type == "code" and \
                (message := error_message(cell, MESSAGE_WIDTH * 2)):
            found.append((index, current, message))
            current = None  # one failure per worked part
    return found


def up_to_the_last_graded_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` without the cells after its last graded or answer cell: no test
    can depend on them, so a check need not run them (in 03 they are the
    nprobe sweep and the FAISS section, more than half of its run time)."""
    marked = [i for i, c in enumerate(nb.cells)
              if c.metadata.get("nbgrader", {}).get("grade")
              or c.metadata.get("nbgrader", {}).get("solution")]
    if marked:
        nb.cells = nb.cells[:marked[-1] + 1]
    return nb


# the first cell of a checked notebook (removed from what the table reads):
# ragkit counts its calls (ragkit_watch.py), and during each test cell the
# answer cells' functions it names are wrapped so that one which runs
# ragkit's own piece of its task fails the test, as it does at grading
# (judge.py)
GUARD = """\
def _rag_check_guard(watch, twins, tests):
    import functools, sys, types
    from IPython import get_ipython
    modules = {}
    for name, source in (("_ragkit_watch", watch), ("_ragkit_twins", twins)):
        modules[name] = sys.modules[name] = types.ModuleType(name)
        exec(compile(source, "<" + name + ">", "exec"), modules[name].__dict__)
    modules["_ragkit_watch"].install()
    calls, told = modules["_ragkit_watch"].calls, modules["_ragkit_twins"]
    shell, wrapped = get_ipython(), {}

    class DelegatedToPackage(Exception):
        \"\"\"The function ran ragkit's own piece of the task it answers.\"\"\"

    def guard(name, fn):
        forbid = told.forbidden(name)

        @functools.wraps(fn)
        def guarded(*args, **kwargs):
            before = [calls.get(n, 0) for n in forbid]
            result = fn(*args, **kwargs)
            ran = [n for n, b in zip(forbid, before) if calls.get(n, 0) != b]
            if ran:
                raise DelegatedToPackage(told.delegated(name, ran))
            return result
        return guarded

    def before(info):
        for name in tests.get(info.raw_cell, ()):
            fn = shell.user_ns.get(name)
            if callable(fn) and not isinstance(fn, type):
                shell.user_ns[name] = wrapped[name] = guard(name, fn)

    def after(result):
        for name, fn in wrapped.items():
            if shell.user_ns.get(name) is fn:
                shell.user_ns[name] = fn.__wrapped__
        wrapped.clear()

    shell.events.register("pre_run_cell", before)
    shell.events.register("post_run_cell", after)
"""


def with_guard(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` with GUARD as its first cell, given each test cell's source and
    the answer cells' functions it names (those the grader checks: the
    judge checks the functions a test calls, not the helpers they call)."""
    defined, tests = set(), {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            with contextlib.suppress(SyntaxError):
                defined |= {n.name for n in parse(cell.source).body
                            if isinstance(n, ast.FunctionDef)}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            tests[cell.source] = sorted(names_loaded(cell.source) & defined)
    watch, told = (Path(m.__file__).read_text(encoding="utf-8") for m in (ragkit_watch, twins))
    source = f"{GUARD}\n\n_rag_check_guard({watch!r}, {told!r}, {tests!r})\ndel _rag_check_guard\n"
    nb.cells.insert(0, nbformat.v4.new_code_cell(source))
    return nb


class KeepingValidator(Validator):
    """nbgrader's own Validator, which keeps the notebook it ran, so that
    the table explains the very run that gave the verdict. It runs the
    notebook only down to its last graded or answer cell, after GUARD."""
    ran: nbformat.NotebookNode | None = None

    def _preprocess(self, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        self.ran = super()._preprocess(with_guard(up_to_the_last_graded_cell(nb)))
        guard = self.ran.cells.pop(0)
        if message := error_message(guard, MESSAGE_WIDTH * 2):
            raise RuntimeError(f"the check's own first cell failed: {message}")
        return self.ran


def without_zero_point_checks(notebook: Path, folder: Path) -> Path:
    """`notebook`, or a copy in `folder` without its graded cells worth 0
    points (the quiz's checks of an answer's form): nbgrader counts a cell
    as passed when it scores its maximum, and 0 of 0 always does, so under
    --invert a blank quiz would otherwise "pass" those cells."""
    nb = nbformat.read(notebook, as_version=4)
    kept = [c for c in nb.cells if not (c.metadata.get("nbgrader", {}).get("grade")
                                        and not c.metadata["nbgrader"].get("points"))]
    if len(kept) == len(nb.cells):
        return notebook
    nb.cells = kept
    nbformat.write(nb, folder / notebook.name)
    return folder / notebook.name


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


def error_name(problem: str) -> str:
    """'NameError' of 'in your answer: NameError: ...', 'not run' of 'not
    run: ...'."""
    return problem.removeprefix("in your answer: ").split(":", 1)[0].strip()


def part_rows(nb: nbformat.NotebookNode) -> list[dict]:
    """One row per part: visible points, hidden points, written answers and
    the first failing check."""
    code_stub, text_stub = stubs()
    setup = setup_failure(nb)
    worked = worked_failures(nb)
    rows = []
    for part in parts_of(nb):
        cells = part.answers + part.tests
        # a worked part above this one failed: its NameErrors come from there
        above = [name for index, name, _ in worked if cells and index < min(cells)]
        visible = {"earned": 0.0, "possible": 0.0}
        hidden = {"earned": 0.0, "possible": 0.0, "ran": True}
        # points of written answers, which a person marks; empty ones
        written = {"possible": 0.0, "empty": False}
        untouched = any(nb.cells[i].cell_type == "code"
                        and holds_stub(nb.cells[i].source, code_stub)
                        for i in part.answers)
        first, ok = None, True
        for index in sorted(part.answers + part.tests):
            cell = nb.cells[index]
            if cell.cell_type == "markdown":
                written["possible"] += float(cell.metadata["nbgrader"].get("points", 0) or 0)
                text = cell.source.strip()
                written["empty"] |= not text or text == text_stub
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
        if setup and first and error_name(first) in AFTER_SETUP:
            first = SETUP_FAILED
        elif above and first and error_name(first) in AFTER_SETUP:
            first = WORKED_FAILED.format(part=above[-1])
        elif untouched and first and "NotImplementedError" in first:
            first = NOT_ANSWERED.format(error="NotImplementedError")
        if setup or untouched:
            hidden["ran"] = False  # its smoke call says nothing about the answer
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

    def by_a_person(written):
        if not written["possible"]:
            return "-"
        return "empty" if written["empty"] else f"?/{written['possible']:g}"

    by_hand = any(row["written"]["possible"] for row in rows)
    grid = [["notebook", "part", "result", "visible", "hidden",
             *(["by a person"] if by_hand else []), "first failing check"]]
    for row in rows:
        grid.append([notebook.stem, row["part"], "ok" if row["ok"] else "FAIL",
                     score(row["visible"]), score(row["hidden"]),
                     *([by_a_person(row["written"])] if by_hand else []),
                     row["first"] or "-"])
    widths = [max(len(line[i]) for line in grid) for i in range(len(grid[0]) - 1)]
    return "\n".join("  " + "  ".join(text.ljust(w) for text, w in zip(line, widths))
                     + "  " + line[-1] for line in grid)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def verdict(report: str, rows: list[dict] | None = None) -> str:
    """nbgrader's summary on one line: its report up to the first failing
    cell; when the notebook's table is at hand, its failures counted in
    parts instead of nbgrader's banner counting cells (the banner comes once,
    at the end). When nbgrader itself failed: its error."""
    if report.startswith("nbgrader validate failed"):
        return report
    head = " ".join(report.split("=" * 20, 1)[0].split())
    if rows is None or not head.startswith("VALIDATION FAILED"):
        return head
    failing = sum(not row["ok"] for row in rows)
    return f"{failing} of {plural(len(rows), 'part')} fail a visible test"


def empty_written(rows: list[dict]) -> list[str]:
    return [row["part"] for row in rows if row["written"]["empty"]]


def validate(notebook: Path, invert: bool = False
             ) -> tuple[bool, str, nbformat.NotebookNode | None]:
    """(ok, nbgrader's report, the notebook as nbgrader ran it or None).

    nbgrader's Validator runs here, with only the course's settings
    (autograder/run/nbgrader_config.py: time limit, encrypted kernel transport),
    the kernel in the notebook's folder; ok means it printed the expected
    result. One run gives both the verdict and the table.
    """
    validator = KeepingValidator(config=nbgrader_settings())
    validator.invert = invert
    validator.stream = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="rag-validate-") as tmp:
        target = without_zero_point_checks(notebook, Path(tmp)) if invert else notebook
        try:
            validator.validate_and_print(str(target))
        except Exception as err:  # noqa: BLE001 (a dead kernel, a broken file)
            return False, f"nbgrader validate failed: {type(err).__name__}: {err}", None
    report = validator.stream.getvalue().strip()
    return (NONE_PASSED if invert else PASSED) in report, report, validator.ran


def find_notebooks(args: list[Path], nb: str | None = None) -> tuple[list[Path], list[str]]:
    """Notebooks named or held by the folders named, and the problems found.
    With `nb`, the notebook of that number or name (see `pick`) among those,
    or, for a folder holding none, among those of its subfolders; a folder
    without notebooks is then a problem only when the notebook is found
    nowhere."""
    found, problems, missing = [], [], []
    for path in args:
        if path.suffix == ".ipynb":
            (found if path.is_file() else missing).append(path)
            continue
        inside = sorted(path.glob("*.ipynb")) if path.is_dir() else []
        if nb is not None and path.is_dir() and not inside:  # my-work/: its assignments
            inside = sorted(p for p in path.glob("*/*.ipynb")
                            if not p.parent.name.startswith("."))
        if not inside:
            problems.append(f"no notebooks in {path} yet: run `make lab` first, "
                            "which copies the student notebooks there")
        found += inside
    if missing:
        problems.append(f"notebooks not found: {', '.join(map(str, missing))}")
    if nb is None or not found:
        return found, problems
    chosen = pick(found, nb)
    if not chosen:
        names = ", ".join(sorted({p.stem for p in found}))
        return [], [f"no notebook {nb!r} here; there are: {names}"]
    return chosen, []


NUMBERED = re.compile(r"^(\d+)_(.+)$")  # 07_measuring


def pick(notebooks: list[Path], nb: str) -> list[Path]:
    """The notebooks that `nb` names: by file name or stem (`07_measuring`,
    `quiz`), else by the stem without its number (`measuring`), else by
    number (`07` or `7`)."""
    name = Path(nb.strip()).name.removesuffix(".ipynb")

    def numbered(stem: str) -> tuple[int | None, str]:
        match = NUMBERED.match(stem)
        return (int(match.group(1)), match.group(2)) if match else (None, stem)

    rules = [lambda stem: stem == name,
             lambda stem: numbered(stem)[1] == name,
             lambda stem: name.isdigit() and numbered(stem)[0] == int(name)]
    for rule in rules:
        chosen = [p for p in notebooks if rule(p.stem)]
        if chosen:
            return chosen
    return []


def report_notebook(path: Path, ok: bool, report: str, ran, details: bool,
                    invert: bool) -> list[dict]:
    """Print one notebook's result; return its table rows ([] with --invert)."""
    print(f"{'ok  ' if ok else 'FAIL'} {path}")
    if invert or ran is None:
        print(report)
        return []
    rows = part_rows(ran)
    print(verdict(report, rows))
    if details and "=" * 20 in report:
        print("=" * 20 + report.split("=" * 20, 1)[1].rstrip())
    setup = setup_failure(ran)
    if setup:
        print("  the setup cell failed, and the checks that need what it "
              f"defines fail with it:\n    {setup}")
    for _, name, message in worked_failures(ran):
        print(f"  {name}, worked for you (no points), raised an error, and the "
              f"cells that need what it defines fail with it:\n    {message}")
    empty = ", ".join(empty_written(rows))
    marking = "a person marks them at grading, and an empty one scores 0"
    if ok and empty:
        print(f"Only the written answers are still empty: {empty} ({marking}).")
    if not rows:
        print("  " + NOTHING_GRADED)
        return rows
    print("\n" + table(path, rows))
    if empty and not ok:
        print(f"  written answers still empty: {empty} ({marking})")
    checks = hidden_checks(ran)
    if checks:
        print("  hidden tests, added at grading:")
        print("\n".join(f"    {line}" for line in checks))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="nbgrader validate with a real exit code "
                                     "and a table of points per part.")
    parser.add_argument("notebooks", nargs="+", type=Path,
                        help="notebooks, or folders whose notebooks to check")
    parser.add_argument("--nb", default=None, metavar="NAME",
                        help="check only this notebook of the folders: by number "
                        "(07) or name (07_measuring, measuring, quiz)")
    parser.add_argument("--invert", action="store_true",
                        help="expect every test to fail (for the student edition)")
    parser.add_argument("--details", action="store_true",
                        help="print nbgrader's full report: every failing cell and its error")
    args = parser.parse_args(argv)
    if args.nb is not None and not args.nb.strip():
        parser.error("--nb needs a notebook number or name, e.g. --nb 07")
    notebooks, problems = find_notebooks(args.notebooks, args.nb)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if not args.invert:
        print(INTRO + "\n")
    failed, failing_parts = [], 0
    for path in notebooks:
        ok, report, ran = validate(path.resolve(), args.invert)
        rows = report_notebook(path, ok, report, ran, args.details, args.invert)
        print()
        if not ok:
            failed.append(str(path))
            failing_parts += sum(not row["ok"] for row in rows)
    if failed and not args.invert:
        where = plural(failing_parts, "part") + " in " + plural(len(failed), "notebook")
        print(BANNER.format(parts=where if failing_parts else plural(len(failed), "notebook")))
        print(HINT + "\n")
    print(f"{len(notebooks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
