"""Nothing a student runs depends on a check cell.

A check cell (`nbNN_check_<what>`, locked and ungraded: a comment quoting a
claim of the prose, then asserts) is in the masters and the reading edition
only; the release leaves it out (autograder/run/nbgrader_cli.py,
`is_check_cell`). So no other cell may read a name that a check cell binds:
in the student's edition that name would be unbound, or hold another value.
A check cell may read what another check cell binds (08's BOX_COLUMN): both
are in the reading edition, and neither in the release. Read with `ast`,
no kernel. The project's check cells, which no reading edition runs, are
run here. Fast: about two seconds.
"""
import ast
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.run.nbgrader_cli import is_check_cell
from autograder.scoring.release_check import bindings, parsed

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted((ROOT / "source").glob("*/*.ipynb"))
READING = sorted((ROOT / "source" / "lab").glob("*.ipynb"))  # what notebooks/ executes


def local_names(node: ast.AST) -> set[str]:
    """Names bound inside the functions, lambdas and comprehensions under
    `node` (their arguments and locals): reading one of those there reads
    no name of the notebook's namespace."""
    found = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.arg):
            found.add(inner.arg)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found |= {n.id for n in ast.walk(inner)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        elif isinstance(inner, ast.comprehension):
            found |= {n.id for n in ast.walk(inner.target) if isinstance(n, ast.Name)}
    return found


def targets(node: ast.AST | None) -> set[str]:
    """The names an assignment target binds."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node else set()


def namespace_use(statements: list[ast.stmt], bound: set[str]) -> tuple[set[str], set[str]]:
    """(names read from the notebook's namespace before these statements
    bound them, names they bind there), walking the statements in order
    (a loop or `with` binds its targets before its body)."""
    read, bound = set(), set(bound)

    def loads(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)} - bound - local_names(node)

    for statement in statements:
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            read |= loads(statement.iter)
            bound |= targets(statement.target)
            blocks = [statement.body, statement.orelse]
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                read |= loads(item.context_expr)
                bound |= targets(item.optional_vars)
            blocks = [statement.body]
        elif isinstance(statement, (ast.If, ast.While)):
            read |= loads(statement.test)
            blocks = [statement.body, statement.orelse]
        elif isinstance(statement, ast.Try):
            blocks = [statement.body, *[h.body for h in statement.handlers],
                      statement.orelse, statement.finalbody]
            bound |= {h.name for h in statement.handlers if h.name}
        else:
            read |= loads(statement)
            bound |= targets_of(statement)
            blocks = []
        for block in blocks:
            more_read, bound = namespace_use(block, bound)
            read |= more_read
    return read, bound


def targets_of(statement: ast.stmt) -> set[str]:
    """The names a simple statement binds at its own level (not those of
    the comprehensions inside it)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, ast.Assign):
        return set().union(*map(targets, statement.targets))
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        return targets(statement.target)
    return set(bindings(ast.Module(body=[statement], type_ignores=[]))) \
        - local_names(statement)


def names_read(tree: ast.Module) -> set[str]:
    """Names a cell reads from the notebook's namespace before binding them."""
    return namespace_use(tree.body, set())[0]


def names_bound(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace."""
    return namespace_use(tree.body, set())[1]


def reads_of_check_names(nb) -> list[str]:
    """"LABEL reads NAME (bound by ID)" for every cell that is not a check
    cell and reads a name whose last binding above it is a check cell's."""
    last: dict[str, str | None] = {}  # name -> the check cell that bound it last, or None
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tree = parsed(cell.source)
        assert tree is not None, f"cell {index} is not Python"
        check = cell.metadata["nbgrader"]["grade_id"] if is_check_cell(cell) else None
        if check is None:
            label = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
            found += [f"{label} reads {name} (bound by {last[name]})"
                      for name in sorted(names_read(tree)) if last.get(name)]
        last.update(dict.fromkeys(names_bound(tree), check))
    return found


def check_cell(source: str, grade_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": grade_id, "locked": True,
                                 "schema_version": 3, "solution": False}
    return cell


@pytest.mark.parametrize("path", MASTERS, ids=lambda p: p.name)
def test_no_cell_but_a_check_cell_reads_what_a_check_cell_binds(path):
    """The student's edition runs without the check cells."""
    found = reads_of_check_names(nbformat.read(path, as_version=4))
    assert not found, f"{path.relative_to(ROOT)}: without its check cells, " + "; ".join(found)


def test_the_reading_finds_a_dependency_and_only_that():
    """A demo that reads a check cell's name is caught; a later check cell
    reading it, a cell that binds the name before reading it, and a
    function's argument or a comprehension's variable of that name are not."""
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        code("import numpy as np\nrows = [1, 2]"),
        check_cell("# the two rows\nLIMIT, total = 2, sum(rows)\nassert total == 3",
                   "nb01_check_rows"),
        check_cell("# the limit\nassert LIMIT == 2", "nb01_check_limit"),
        code("for x in rows:\n    print(x)\n"
             "def f(LIMIT):\n    return [LIMIT for LIMIT in range(LIMIT)]"),
        code("total = np.mean(rows)\nprint(total)"),
        code("print(LIMIT * 2)")])
    assert reads_of_check_names(nb) == ["cell 5 reads LIMIT (bound by nb01_check_rows)"]
    nb.cells[4].source = "print(total)\ntotal = 1"  # read before the cell binds it
    assert reads_of_check_names(nb) == ["cell 4 reads total (bound by nb01_check_rows)",
                                        "cell 5 reads LIMIT (bound by nb01_check_rows)"]
    nb.cells[3].source = "for LIMIT in rows:\n    print(LIMIT)"  # bound again, not a check's
    assert reads_of_check_names(nb) == ["cell 4 reads total (bound by nb01_check_rows)"]


def test_a_check_cell_is_what_the_masters_call_one():
    """Locked, ungraded, no solution, a grade_id `<notebook>_check_<what>`:
    06's graded `check_citations` cells are not check cells."""
    assert is_check_cell(check_cell("assert True", "nb08_check_leak"))
    assert is_check_cell(check_cell("assert True", "proj_check_size"))
    graded = check_cell('"""a test."""', "nb06_test_check_citations")
    graded.metadata["nbgrader"].update(grade=True, points=1)
    answer = check_cell("def check_citations(): ...", "nb06_check_citations")
    answer.metadata["nbgrader"].update(solution=True, locked=False)
    helper = check_cell("x = 1", "nb06_setup")
    assert not any(map(is_check_cell, (graded, answer, helper)))
    assert not is_check_cell(nbformat.v4.new_markdown_cell("nb01_check_rows"))


def test_the_check_cells_no_reading_edition_runs_pass():
    """The project's check cells run nowhere else (its release has none and
    notebooks/ is the lab's): for each master outside the reading edition,
    its setup cell and then each check cell, in the master's folder, pass."""
    ran = []
    for path in (p for p in MASTERS if p not in READING):
        nb = nbformat.read(path, as_version=4)
        checks = [c.source for c in nb.cells if is_check_cell(c)]
        if not checks:
            continue
        setup = next(c.source for c in nb.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_setup"))
        setup = "\n".join(line for line in setup.splitlines() if not line.startswith("%"))
        program = "\n\n".join([setup, *checks, f'print("all {len(checks)} passed")'])
        proc = subprocess.run([sys.executable, "-c", program], cwd=path.parent,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{path.name}: a check cell fails:\n{proc.stderr[-3000:]}"
        assert f"all {len(checks)} passed" in proc.stdout
        ran.append(path.name)
    assert "project.ipynb" in ran, f"the project's check cells were not run ({ran})"
