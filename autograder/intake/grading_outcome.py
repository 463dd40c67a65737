"""What the grader records about one student of one assignment."""
from __future__ import annotations

from dataclasses import dataclass, field

DONE = ".students"  # --out/.students/<student>/: what is kept of each finished student


@dataclass
class Outcome:
    student: str
    graded: bool = False
    problems: list[str] = field(default_factory=list)
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    cells: dict[str, tuple[float, float]] = field(default_factory=dict)
    seconds: float = 0.0
    steps: dict[str, float] = field(default_factory=dict)  # seconds per nbgrader step
    reused: bool = False
    refused: bool = False  # not run at all (a link, too many files): every notebook 0
    to_mark: list[str] = field(default_factory=list)  # "name.ipynb:grade_id" awaiting a person
