"""Argument checks, worded alike across the package and open to students.

The lab's tasks ask for errors that name the argument at fault; these three
helpers raise exactly those, so a task's first lines can be

    check_str(text, "text")
    check_int(size, "size", least=1)

and its points go to the idea of the task. Each raises a ``TypeError`` for
a wrong type and a ``ValueError`` for a value out of range, with the
argument's name and the value it got in the message.

The other side of those errors lives here too: :func:`error_of` and
:func:`check_error` are what the notebooks' test cells use to see that a
student's function refuses bad input by that rule, and :func:`same_frame`
compares two tables cell by cell. They were once defined again in every
notebook's setup cell, bookkeeping a student had to run and scroll past;
the setup now imports them in one line.
"""

from __future__ import annotations

import math
import numbers


def check_int(value: object, name: str, least: int | None = 1) -> None:
    """Refuse anything but an int of at least ``least`` (None: any int).

    ``bool`` is a subclass of ``int``, but ``k=True`` is surely a slip, so
    it is refused too.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (got {type(value).__name__})")
    if least is not None and value < least:
        raise ValueError(f"{name} must be at least {least} (got {name}={value})")


def check_str(value: object, name: str) -> None:
    """Refuse anything but a ``str``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str (got {type(value).__name__})")


def check_number(value: object, name: str) -> None:
    """Refuse anything but a real number (an int or a float; not ``bool``,
    since ``tokens_per_word=True`` is surely a slip)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number (got {type(value).__name__})")


def error_of(func, *args, **kwargs) -> tuple[type | None, str]:
    """``(exception class, message)`` of a call that raises a ``TypeError``
    or ``ValueError``; ``(None, "")`` when it returns. Any other exception
    goes up: a crash is not the refusal a task asks for."""
    try:
        func(*args, **kwargs)
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    return None, ""


def check_error(kind: type, name: str, func, *args, **kwargs) -> None:
    """Assert that ``func(*args, **kwargs)`` raises ``kind`` (exactly that
    class) with ``name`` in its message; the failure says what came instead."""
    got, message = error_of(func, *args, **kwargs)
    found = got.__name__ if got else "no error"
    assert got is kind and name in message, (
        f"{getattr(func, '__name__', func)} with a bad {name} should raise "
        f"{kind.__name__} whose message names {name!r}; got {found}: {message!r}")


def same_frame(got, want) -> bool:
    """True when two DataFrames have the same columns, index and cells, a
    NaN matching a NaN and floats matching within 1e-12 (``==`` on frames
    says NaN differs from itself)."""
    if [list(got.columns), list(got.index)] != [list(want.columns), list(want.index)]:
        return False
    return all(_same_cell(x, y) for column in want.columns
               for x, y in zip(got[column], want[column]))


def _same_cell(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, abs_tol=1e-12)
    return x == y


def fields(answer) -> tuple[str, tuple, bool]:
    """``(text, citations, abstained)`` of an answer, so that two answers of
    different classes (a student's own Answer and the package's) compare."""
    return answer.text, tuple(answer.citations), answer.abstained
