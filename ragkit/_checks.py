"""Argument checks shared by the package, so every module words them alike."""

from __future__ import annotations


def check_int(value: object, name: str, least: int | None = 1) -> None:
    """Refuse anything but an int of at least ``least`` (None: any int).

    A wrong type is a ``TypeError`` and a value too small a ``ValueError``;
    both name the argument. ``bool`` is a subclass of ``int``, but
    ``k=True`` is surely a slip, so it is refused too.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (got {type(value).__name__})")
    if least is not None and value < least:
        raise ValueError(f"{name} must be at least {least} (got {name}={value})")
