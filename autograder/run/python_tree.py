"""Reading a cell's Python: ast.parse that two threads can call at once, the
cell as plain Python (IPython's magics become calls) and the names it reads.

The grader parses cells in the threads that grade students side by side
(grade.py, the mutant runs). CPython 3.11 keeps the depth count it checks
while building an AST's Python objects in state that every thread shares
(python/cpython#106905, fixed in 3.12). If a parse pauses half way, say for a
finaliser the garbage collector runs, and another thread parses meanwhile,
the first one ends with the other's count and raises "SystemError: AST
constructor recursion depth mismatch". One lock around every parse the
grader makes keeps them apart.
"""
from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str) -> ast.Module:
    """ast.parse(source), never while another of our threads parses."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)


def transform(source: str) -> str:
    """A cell's source as plain Python (IPython magics become calls)."""
    from IPython.core.inputtransformer2 import TransformerManager
    return TransformerManager().transform_cell(source)


def names_loaded(source: str) -> set[str]:
    """The names a cell's code reads (none when it is not Python)."""
    try:
        tree = parse(transform(source))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
