"""One failure taxonomy: notebook 08's Figure 8.1 and triage table,
ragkit.failures, notebook 09's failure analysis and the project's Part C
rubric all file each failure in the same column, by the same stated rule.

Each check reads the masters as text (figure code, lecture prose, check
cells, mark scheme), so an edit to any one of them that breaks the
agreement fails here, whichever file it is in; the last checks scan every
notebook, the package and the guide for a sentence that files missing
content under retrieval (07's Summary and the glossary's Triage once did).
"""
import ast
import json
import re
from pathlib import Path

import pytest

from ragkit import failures as F

ROOT = Path(__file__).resolve().parents[1]
NB08 = ROOT / "source" / "lab" / "08_failure_modes.ipynb"
NB09 = ROOT / "source" / "lab" / "09_project.ipynb"
PROJECT = ROOT / "source" / "project" / "project.ipynb"
ALTERNATIVE = ROOT / "autograder" / "testbed" / "alternatives" / "project.py"
MISSING = "should have abstained"  # triage's name for missing content


def cells(path: Path) -> dict[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {c["id"]: "".join(c["source"]) for c in nb["cells"]}


def flat(text: str) -> str:
    # prose may wrap lines anywhere and set the rule in italics
    return " ".join(text.replace("*", "").split())


def assigned_literal(source: str, name: str):
    """The literal value a cell assigns to `name` (figure data, not code)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"no assignment to {name}")


def figure_columns(figure: dict | None = None) -> dict[str, str]:
    """Box label (citation mark dropped) -> column, from 08's figure code."""
    if figure is None:
        figure = assigned_literal(cells(NB08)["nb08-fig6"], "FIGURE_8_1")
    assert list(figure) == list(F.COLUMNS)
    return {box.removesuffix(" [22]"): column
            for column, boxes in figure.items() for box in boxes}


def disagreements(boxes: dict[str, str]) -> list[str]:
    """Stages whose Figure 8.1 box is missing or sits in another column."""
    return [stage for stage, box in F.FIGURE_BOX.items()
            if boxes.get(box) != F.COLUMN[stage]]


def test_figure_8_1_puts_every_stage_in_the_package_column():
    boxes = figure_columns()
    assert disagreements(boxes) == []
    assert boxes["missing content"] == F.COLUMN[MISSING] == "reader"


def test_a_figure_that_disagrees_is_caught():
    figure = assigned_literal(cells(NB08)["nb08-fig6"], "FIGURE_8_1")
    figure["reader"].remove("missing content [22]")
    figure["retrieval"].insert(0, "missing content [22]")  # the old layout
    assert disagreements(figure_columns(figure)) == [MISSING]
    figure["reader"].remove("bad citation")
    assert disagreements(figure_columns(figure)) == ["bad citation", MISSING]


def test_the_triage_table_takes_its_rows_and_columns_from_the_package():
    code = cells(NB08)["nb08-table"]
    assert "pd.DataFrame(ragkit.failures.TRIAGE_ROWS," in code
    assert 'TRIAGE_TABLE["column"] = TRIAGE_TABLE["stage"].map(COLUMN)' in code
    rows = [stage for _, _, stage, _ in F.TRIAGE_ROWS]
    assert rows == list(F.STAGES[1:]), "one row per failure stage, in order"


@pytest.mark.parametrize("path, ids", [
    (NB08, ["nb08-column-rule"]),
    (NB09, ["nb09-failures-prose"]),
    (PROJECT, ["c5_ask", "proj_scheme_c"]),
])
def test_each_place_states_the_rule_in_the_same_words(path, ids):
    text = cells(path)
    for cid in ids:
        assert flat(F.COLUMN_RULE) in flat(text[cid]), (
            f"{path.name} cell {cid} does not state ragkit.failures.COLUMN_RULE")


def test_notebook_08_says_why_missing_content_is_the_readers():
    prose = flat(cells(NB08)["nb08-column-rule"])
    assert "Figure 8.1 draws it in the reader column" in prose
    assert f'"{MISSING}"' in prose and "only the reader" in prose


def test_notebook_09_counts_and_concludes_with_the_same_columns():
    text = cells(NB09)
    checked = re.findall(r'\("(\w+)", "([a-z ]+)"\): \d+',  # the check's dict of counts
                         text["nb09-check-failures"])
    assert (F.COLUMN[MISSING], MISSING) in checked
    for column, stage in checked:
        assert F.COLUMN[stage] == column, f"09 files {stage!r} under {column!r}"
    prose = flat(text["nb09-failures-prose"])
    biggest = re.search(r"16 sit in the (\w+) column", prose).group(1)
    assert biggest == F.COLUMN[MISSING] == F.COLUMN["reader missed it"]
    assert re.search(r"next thing to work on is the (\w+)", prose).group(1) \
        == biggest
    assert "they count for the reader" in prose


def sorted_failures(text: str) -> list[tuple[str, str]]:
    # (question id, column) of each failure a memo sorts
    names = "|".join(F.COLUMNS)
    return re.findall(rf"\b([qu]\d\d)\W+({names})\b", text)


def test_the_project_rubric_and_model_answers_follow_the_rule():
    text = cells(PROJECT)
    scheme = flat(text["proj_scheme_c"])
    placed = re.search(r"missing content\) is the (\w+)'s", scheme).group(1)
    assert placed == F.COLUMN[MISSING]
    assert "answered unanswerable question filed under retrieval" in scheme
    ask = flat(text["c5_ask"])
    assert re.search(r"missing content\) is therefore a (\w+) failure",
                     ask).group(1) == F.COLUMN[MISSING]
    for source in (text["proj_memo_c"], ALTERNATIVE.read_text()):
        rows = sorted_failures(source)
        assert len(rows) == 5, rows
        for qid, column in rows:
            if qid.startswith("u"):  # an unanswerable question got a reply
                assert column == F.COLUMN[MISSING], (qid, column)


# ---------------------------------------------------------------- everywhere
# Every place that files a failure, read as text: the lecture notebooks
# (prose, figure code and check cells alike), the quiz, the project's
# rubric and mark scheme, the package (ragkit.failures and the practice
# quiz) and the guide. A sentence there that files a wrong answer under
# retrieval because the gold chunk was absent agrees with the rule only if
# its paragraph speaks of answerable questions: for a question the corpus
# cannot answer no chunk is ever present, and the reply is the reader's to
# refuse.
GUIDE = ROOT / "guide"
ABSENT = re.compile(
    r"no gold (chunk|passage)|never (reached|arrived|came back)"
    r"|not in the (context|prompt|top)|missed the (context|prompt)")
FILED_UNDER_RETRIEVAL = re.compile(
    r"retriever's (failure|fault)|retrieval (failure|fault|column)"
    r"|is the retriever's|retrieval \(")
# the presuppositions that confine a paragraph to answerable questions: it
# says so, or it speaks of the question's own chunk, which only an
# answerable question has
ANSWERABLE_ONLY = re.compile(
    r"(?<!un)answerable|(whose|their|its) (gold )?chunk")


def places() -> dict[str, str]:
    """Place name -> its text, for every file that files a failure."""
    texts = {}
    for path in sorted((ROOT / "source").rglob("*.ipynb")):
        for cid, source in cells(path).items():
            texts[f"{path.relative_to(ROOT)} cell {cid}"] = source
    for path in sorted((ROOT / "ragkit").glob("*.py")) + sorted(GUIDE.glob("*.md")):
        texts[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    return texts


def paragraphs(text: str) -> list[str]:
    """Paragraphs and list items, each on one line (a comment's # dropped)."""
    text = re.sub(r"^\s*#+ ?", " ", text, flags=re.M)
    items = re.split(r"\n\s*(?:[*-]|\d+\.) |\n\s*\n", text)
    return [flat(item) for item in items if item.strip()]


def misfiled(texts: dict[str, str]) -> list[str]:
    """The sentences that put a missing gold chunk in the retrieval column
    in a paragraph not confined to answerable questions."""
    return [f"{place}: {s}" for place, text in texts.items()
            for item in paragraphs(text) if not ANSWERABLE_ONLY.search(item)
            for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*`\"])", item)
            if ABSENT.search(s) and FILED_UNDER_RETRIEVAL.search(s)]


def test_no_place_files_missing_content_under_retrieval():
    texts = places()
    assert len(texts) > 300, "the scan must reach the notebooks, package and guide"
    assert misfiled(texts) == []


@pytest.mark.parametrize("old", [
    # 07's Summary and the glossary's Triage before they followed the rule
    "* Measure retrieval and answers apart: a wrong answer with no gold chunk\n"
    "  in the context is the retriever's failure, one with the gold chunk there\n"
    "  is the reader's.\n",
    "- **Triage** — Sorting a wrong answer by the stage at fault: retrieval (the\n"
    "  right passage never reached the prompt), reader (it did, and the model\n"
    "  misused it) or loop (the agent's own steps went wrong).\n",
])
def test_the_scan_catches_a_sentence_that_breaks_the_rule(old):
    assert len(misfiled({"old text": old})) == 1


def glossary_entry(term: str) -> str:
    text = (GUIDE / "glossary.md").read_text(encoding="utf-8")
    match = re.search(rf"^- \*\*{re.escape(term)}\*\* — (.*?)(?=^- \*\*|\Z)",
                      text, re.M | re.S)
    assert match, f"the glossary has no entry {term!r}"
    return flat(match.group(1))


def test_the_glossary_and_07_give_missing_content_to_the_reader():
    triage = glossary_entry("Triage")
    assert re.search(r"(\w+) \([^()]*missing content", triage).group(1) \
        == F.COLUMN[MISSING]
    summary = flat(cells(ROOT / "source" / "lab" / "07_measuring.ipynb")["nb07-summary"])
    said = re.search(r"is the (\w+)'s, and so is a reply to a question the "
                     r"corpus cannot answer \(missing content\)", summary)
    assert said and said.group(1) == F.COLUMN[MISSING]
