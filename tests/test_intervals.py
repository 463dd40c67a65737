"""Intervals on the help centre resample pages, not questions.

The help centre's 43 questions sit on 15 pages (up to 8 on one), and
questions about one page are found or missed together, so every bootstrap
interval the notebooks put on help-centre scores draws whole pages
(ragkit.evaluation.cluster_bootstrap_interval, or paired_difference with
clusters). A plain, per-question bootstrap may appear only in a cell about
SQuAD (the notebooks show it there and then redraw by paragraph) or beside
the clustered interval it is compared with, in the same cell.
Reads the masters' code; no kernel.
"""
import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from ragkit.corpus import load_questions

ROOT = Path(__file__).resolve().parents[1]
LAB = sorted((ROOT / "source" / "lab").glob("*.ipynb"))


def code_cells(path: Path) -> list[tuple[str, str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(c["id"], "".join(c["source"])) for c in nb["cells"]
            if c["cell_type"] == "code"]


def per_question_calls(source: str) -> int:
    """How many bootstrap calls in `source` resample single questions."""
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines()
                                   if not line.lstrip().startswith("%")))
    except SyntaxError:
        return 0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            keywords = {k.arg for k in node.keywords}
            if node.func.id == "bootstrap_interval" or (
                    node.func.id == "paired_difference" and "clusters" not in keywords):
                count += 1
    return count


def test_the_help_centre_questions_share_pages():
    pages = Counter(q.doc_id for q in load_questions())
    assert (sum(pages.values()), len(pages), max(pages.values())) == (43, 15, 8)


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_per_question_intervals_only_on_squad(path):
    wrong = [cid for cid, source in code_cells(path)
             if per_question_calls(source) and "squad" not in source.lower()
             and "clusters=" not in source
             and "cluster_bootstrap_interval(" not in source]
    assert wrong == [], f"{path.name}: cells {wrong} resample help-centre questions one by one"


def test_the_check_sees_a_per_question_interval():
    # Figure 7.1's band and 09's ablation bars as they were before issue 56
    assert per_question_calls(
        'bands = np.array([bootstrap_interval(h, seed=7) for h in study["hits"]])') == 1
    assert per_question_calls("low, high = bootstrap_interval(gain, seed=9)") == 1
    assert per_question_calls("paired_difference(a, b, seed=7, clusters=PAGES)") == 0
