"""Reference copies of ragkit for hidden tests, out of the notebook's reach.

A hidden test cross-checks a student's function against its twin in this
package. Both run in the student's kernel, so a student who writes
``ragkit.dense.maxsim = maxsim`` (to let later cells use their own version)
would make the check compare their code with itself. :func:`fresh` loads a
second, private copy of the whole package from disk under another name;
assignments to the imported ``ragkit`` modules do not reach it.

:func:`using` serves the other grading rule, "one mistake costs once": while
a later task is tested, the earlier pieces it calls are swapped for the
reference ones, then the student's own are put back.

:func:`each` is how a hidden test calls a student's function on many
inputs: ``map`` here, and far fewer round trips where the grader runs the
test outside the student's kernel (autograder/run/judge.py).

:func:`token_rows` and :func:`maxsim_rows` are pieces of :mod:`ragkit.rerank`
in the shape lab 05 asks for (lists of floats; the task's argument names),
for its hidden tests to swap in. Being functions of the package rather than
a test's lambdas, the grader hands them to the student's kernel as its own
private copy of them instead of answering every call itself.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from . import rerank

__all__ = ["each", "fresh", "maxsim_rows", "token_rows", "using"]

_PACKAGE = Path(__file__).resolve().parent
_copies = itertools.count(1)


def fresh() -> ModuleType:
    """A new, private copy of ``ragkit`` with every submodule loaded anew.

    The copy lives under a name of its own (``_ragkit_reference_N``), so its
    relative imports resolve inside the copy too: patching ``ragkit.text``
    changes nothing that ``fresh().retrieval`` uses.
    """
    name = f"_ragkit_reference_{next(_copies)}"
    spec = importlib.util.spec_from_file_location(
        name, _PACKAGE / "__init__.py", submodule_search_locations=[str(_PACKAGE)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # relative imports look their parent up here
    spec.loader.exec_module(module)
    return module


@contextmanager
def using(namespace: MutableMapping, **pieces: object) -> Iterator[None]:
    """Bind ``pieces`` in ``namespace`` (a notebook's ``globals()``) for a while.

    >>> with using(globals(), bm25_idf=fresh().bm25.bm25_idf):
    ...     scores = bm25_scores("laser", texts)   # graded with the reference IDF

    Names that were not bound before are removed again afterwards.
    """
    missing = object()
    saved = {name: namespace.get(name, missing) for name in pieces}
    namespace.update(pieces)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def each(fn: Callable, *iterables: Iterable) -> Iterator:
    """``fn(*case)`` for each case of ``zip(*iterables)``, lazily and in order:
    exactly ``map(fn, *iterables)``.

    >>> for text, got in zip(TEXTS, each(tokenize, TEXTS)):
    ...     assert got == fresh().text.tokenize(text)

    A grader whose tests run outside the student's kernel hands ``fn`` over as
    a stand-in whose class has ``_each``; that one asks the kernel for many
    answers per round trip instead of one (autograder/run/judge.py).
    """
    batched = getattr(type(fn), "_each", None)
    if batched is not None:
        return batched(fn, *iterables)
    return map(fn, *iterables)


def token_rows(text: str, dim: int = 64) -> list[list[float]]:
    """:func:`ragkit.rerank.token_vectors` as a list of rows of floats."""
    return rerank.token_vectors(text, dim).tolist()


def maxsim_rows(query_rows: object, passage_rows: object) -> float:
    """:func:`ragkit.rerank.maxsim` under lab 05's argument names."""
    return rerank.maxsim(query_rows, passage_rows)
