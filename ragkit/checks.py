"""Argument checks, worded alike across the package and open to students.

The lab's tasks ask for errors that name the argument at fault; these three
helpers raise exactly those, so a task's first lines can be

    check_str(text, "text")
    check_int(size, "size", least=1)

and its points go to the idea of the task. Each raises a ``TypeError`` for
a wrong type and a ``ValueError`` for a value out of range, with the
argument's name and the value it got in the message.
"""

from __future__ import annotations

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
