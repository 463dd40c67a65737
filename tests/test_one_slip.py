"""One slip costs once: no test cell runs another part's code unswapped.

A part's test cells may call the student's function of that part. If that
function (directly, or through helpers of its own part) uses a function
another part asks for, the call must sit inside `with using(globals(),
that_function=reference)`, so a blank or broken earlier part is not
charged a second time here. A test cell that uses another part's function
itself must swap it too. This file reads every master's cells (lab,
project, the hostile class) and fails on any such use outside the swap;
no kernel runs.

The dependencies are read from the masters' solutions: which of the
student's functions each solution function names.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.run.python_tree import transform  # noqa: E402
from autograder.run.rag_feedback import nbgrader_meta, parts_of  # noqa: E402

# the course's masters, and the hostile class's (whose Part E builds on A and D)
MASTERS = sorted((ROOT / "source").glob("*/*.ipynb")) + sorted(
    (ROOT / "autograder" / "testbed" / "hostile" / "source").glob("*/*.ipynb"))


def tree(source: str) -> ast.Module:
    return ast.parse(transform(source))


def functions_of(nb) -> tuple[dict[str, str], dict[str, set[str]]]:
    """The student's functions: name -> the part whose solution defines it,
    and name -> the names each one's body loads."""
    part_of, loads = {}, {}
    for part in parts_of(nb):
        for index in part.answers:
            for node in tree(nb.cells[index].source).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    part_of[node.name] = part.name
                    loads[node.name] = {n.id for n in ast.walk(node)
                                        if isinstance(n, ast.Name)}
    return part_of, loads


def needs(name: str, part_of: dict[str, str], loads: dict[str, set[str]]) -> set[str]:
    """Functions of other parts than `name`'s that calling `name` runs
    (through any helpers of its own part)."""
    found, todo, seen = set(), [name], {name}
    while todo:
        for used in loads.get(todo.pop(), set()) & set(part_of):
            if part_of[used] != part_of[name]:
                found.add(used)
            elif used not in seen:
                seen.add(used)
                todo.append(used)
    return found


def swapped_by(call: ast.Call, cell_tree: ast.Module) -> set[str]:
    """Names a `using(globals(), ...)` call binds: its keywords, and the
    constant keys of a dict literal passed as **name (assigned in the cell)."""
    names = {kw.arg for kw in call.keywords if kw.arg}
    for kw in call.keywords:
        if kw.arg is None and isinstance(kw.value, ast.Name):
            for node in ast.walk(cell_tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                        any(isinstance(t, ast.Name) and t.id == kw.value.id
                            for t in node.targets):
                    names |= {k.value for k in node.value.keys
                              if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return names


def unswapped_uses(source: str, part: str, part_of, loads) -> list[str]:
    """Each use of a student function in a test cell of `part` that runs
    another part's function without that function swapped."""
    cell_tree = tree(source)
    problems = []
    # functions the cell defines itself are checked where they are used
    local = {node.name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
             for node in cell_tree.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def required(name: str) -> set[str]:
        if name in local:
            return set().union(*[required(n) for n in local[name] & set(part_of)])
        more = needs(name, part_of, loads)
        return more | {name} if part_of[name] != part else more

    def visit(node, swapped: frozenset):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in local:
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            more = set()
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                        call.func.id == "using":
                    more |= swapped_by(call, cell_tree)
                visit(item.context_expr, swapped)
            for child in node.body:
                visit(child, swapped | more)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                (node.id in part_of or node.id in local) and node.id not in swapped:
            missing = sorted(required(node.id) - swapped)
            if missing:
                problems.append(f"line {node.lineno}: {node.id} runs "
                                f"{', '.join(missing)} of another part unswapped")
        for child in ast.iter_child_nodes(node):
            visit(child, swapped)

    visit(cell_tree, frozenset())
    return problems


def graded_test_cells(nb):
    for part in parts_of(nb):
        for index in part.tests:
            cell = nb.cells[index]
            meta = nbgrader_meta(cell)
            if meta.get("grade") and not meta.get("solution"):
                yield part.name, meta.get("grade_id", str(index)), cell.source


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.stem)
def test_no_test_cell_runs_another_part_unswapped(master):
    nb = nbformat.read(master, as_version=4)
    part_of, loads = functions_of(nb)
    found = []
    for part, gid, source in graded_test_cells(nb):
        found += [f"{gid} ({part}): {p}" for p in unswapped_uses(source, part, part_of, loads)]
    assert not found, (f"{master.relative_to(ROOT)}: a blank earlier part would be "
                       "charged again; put these uses inside with using(globals(), "
                       "name=reference):\n  " + "\n  ".join(found))


def test_the_check_finds_a_call_outside_the_swap():
    """The rule on a made-up notebook: B's function calls A's; a hidden B
    test that calls it before its `with using` block is caught, one that
    calls it inside is not, and a direct use of A's function by B's test
    (even as an argument) must be swapped too."""
    part_of = {"idf": "Part A", "scores": "Part B", "helper": "Part B"}
    loads = {"idf": {"math"}, "scores": {"helper"}, "helper": {"idf", "len"}}
    outside = ('_ = scores("lid")\n'
               'with using(globals(), idf=REF.idf):\n    assert scores("x")\n')
    assert unswapped_uses(outside, "Part B", part_of, loads) == [
        "line 1: scores runs idf of another part unswapped"]
    inside = ('with using(globals(), idf=REF.idf):\n    _ = scores("lid")\n')
    assert unswapped_uses(inside, "Part B", part_of, loads) == []
    by_dict = ('pieces = {"idf": REF.idf}\nwith using(globals(), **pieces):\n'
               '    scores("x")\n')
    assert unswapped_uses(by_dict, "Part B", part_of, loads) == []
    passed_on = 'check_error(ValueError, "k", idf, 0)\n'
    local = ('def curve(n):\n    return scores("x" * n)\n\n'
             'with using(globals(), idf=REF.idf):\n    curve(3)\ncurve(4)\n')
    assert unswapped_uses(local, "Part B", part_of, loads) == [
        "line 6: curve runs idf of another part unswapped"]
    assert unswapped_uses(passed_on, "Part B", part_of, loads) == [
        "line 1: idf runs idf of another part unswapped"]
    assert unswapped_uses(passed_on, "Part A", part_of, loads) == []
