"""Write CSV files that a spreadsheet cannot turn against the instructor.

Every CSV the grader writes (scores.csv, problems.csv, grades.csv, report/*.csv,
the grade sheet, nbgrader's export in formgrader/) goes through `write_csv`.
A student chooses some of what lands in those cells (the names of their
files, the ids of their cells, an error message their code raises), and a
spreadsheet opened on a cell that starts with `=`, `+`, `-` or `@` (or a
tab, carriage return or line feed before one) reads it as a formula:
`=HYPERLINK(...)`, `=WEBSERVICE(...)`, DDE. Such a text cell gets a leading
`'`, which spreadsheets show as text. Numbers stay numbers: a float is left
as it is, and so is text that is a plain number (`-3`, `-0.5`, as nbgrader's
export holds when read back as text); anything else that starts with one of
those characters, `-1+1` or `-inf` included, is neutralised.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def cell(value):
    """`value` as a spreadsheet may read it: text that would start a formula
    gets a leading `'`; numbers and any other value are returned as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START) \
            and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` with every text cell (and column name) through `cell`."""
    out = frame.copy()
    out.columns = [cell(c) for c in out.columns]
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(cell)
    return out


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """`frame.to_csv(path, index=False)`, neutralised first."""
    neutralised(frame).to_csv(path, index=False)


def read_text_csv(path: Path) -> pd.DataFrame:
    """A CSV read back as text, cell for cell (no number parsing, no NaN for
    "NA" or "null"), so that rewriting it changes nothing but formulas."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def rewrite_csv(path: Path) -> None:
    """Neutralise a CSV another program wrote (nbgrader's export) in place."""
    write_csv(read_text_csv(path), path)
