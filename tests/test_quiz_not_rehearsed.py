"""The graded quiz is not rehearsed in the lab.

Question 8 of the quiz asks for the MRR and recall@3 of one ranked list.
Notebook 07's "try it yourself" and its exercises once asked about that very
list, so a student had worked the graded item before meeting it. No ranked
list of a quiz question may appear in a lab master, in the practice quiz or
in the guide.
"""
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
RANKED = re.compile(r"`\[(d\d+(?:,\s*d\d+){2,})\]`")


def lists_in(text: str) -> set[tuple[str, ...]]:
    return {tuple(x.strip() for x in m.split(",")) for m in RANKED.findall(text)}


def markdown(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in nb.cells)


def test_no_quiz_list_is_worked_in_the_lab():
    quiz = lists_in(markdown(ROOT / "source" / "quiz" / "quiz.ipynb"))
    assert quiz, "the quiz holds no ranked list to compare with: the pattern is stale"
    elsewhere = {path: lists_in(markdown(path))
                 for path in sorted((ROOT / "source" / "lab").glob("*.ipynb"))}
    elsewhere.update({path: lists_in(path.read_text(encoding="utf-8"))
                      for path in [*(ROOT / "guide").glob("*.md"),
                                   ROOT / "ragkit" / "quiz_practice.py"]})
    shared = {str(p.relative_to(ROOT)): sorted(found & quiz)
              for p, found in elsewhere.items() if found & quiz}
    assert not shared, f"quiz lists rehearsed elsewhere: {shared}"
    assert any(elsewhere.values()), "no lab list found at all: the pattern is stale"
