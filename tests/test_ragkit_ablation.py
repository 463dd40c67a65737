"""ragkit.ablation: the one-row-per-step table and its per-question rows."""

import math

import pandas as pd
import pytest

from ragkit.ablation import (
    COLUMNS,
    COST,
    RUN_COLUMNS,
    STEPS,
    ablation_table,
    outcome,
    question_runs,
    score_questions,
    summarise,
)
from ragkit.answer import NO_ANSWER, Answer
from ragkit.chunking import chunk_documents
from ragkit.corpus import (
    Document,
    Question,
    Unanswerable,
    load_documents,
    load_questions,
    load_unanswerable,
)
from ragkit.retrieval import Retriever, evaluate


@pytest.fixture(scope="module")
def corpus():
    return load_documents(), load_questions(), load_unanswerable()


@pytest.fixture(scope="module")
def runs(corpus):
    return question_runs(*corpus)


def test_table_has_one_row_per_step_in_order(corpus):
    table = ablation_table(*corpus)
    assert list(table.columns) == list(COLUMNS)
    assert list(table["step"]) == list(STEPS)
    assert list(table.index) == list(range(len(STEPS)))


def test_long_rows_cover_every_step_and_question(corpus, runs):
    docs, questions, unanswerable = corpus
    assert list(runs.columns) == list(RUN_COLUMNS)
    per_step = len(questions) + len(unanswerable)
    assert len(runs) == len(STEPS) * per_step
    first = runs[runs["step"] == STEPS[1]]
    assert list(first["qid"]) == [q.qid for q in questions + unanswerable]


def test_without_retrieval_the_answerer_always_declines(corpus):
    row = ablation_table(*corpus, steps=["no retrieval"]).iloc[0]
    assert row["recall"] == 0.0 and row["mrr"] == 0.0
    assert row["abstained"] == 1.0 and row["correct"] == 0.0
    assert row["refused"] == 1.0
    assert (row["searches"], row["model_calls"]) == (0, 1)


def test_retrieval_columns_agree_with_evaluate(corpus):
    docs, questions, _ = corpus
    table = ablation_table(docs, questions, steps=["bm25", "dense", "hybrid"])
    retriever = Retriever(chunk_documents(docs, "sentence", size=25))
    for _, row in table.iterrows():
        want = evaluate(retriever, questions, row["step"], k=3)
        assert row["recall"] == pytest.approx(want["recall"])
        assert row["mrr"] == pytest.approx(want["mrr"])


def test_context_step_searches_the_notes(corpus):
    docs, questions, _ = corpus
    table = ablation_table(docs, questions,
                           steps=["hybrid+rerank", "hybrid+rerank+context"])
    retriever = Retriever(chunk_documents(docs, "sentence", size=25,
                                          contextual=True))
    want = evaluate(retriever, questions, "hybrid+rerank", k=3)
    assert table.loc[1, "recall"] == pytest.approx(want["recall"])
    assert table.loc[1, "recall"] > table.loc[0, "recall"]


def test_outcome_shares_add_up_to_one(corpus):
    table = ablation_table(*corpus)
    total = table[["correct", "wrong", "abstained"]].sum(axis=1)
    assert total.round(12).eq(1.0).all()


def test_summarise_counts_by_hand():
    runs = pd.DataFrame(
        [("bm25", "a", True, 1.0, 1.0, "correct"),
         ("bm25", "b", True, 0.0, 0.5, "wrong"),
         ("bm25", "c", True, 0.5, 0.0, "abstained"),
         ("bm25", "d", True, 1.0, 1.0, "correct"),
         ("bm25", "x", False, math.nan, math.nan, "abstained"),
         ("bm25", "y", False, math.nan, math.nan, "wrong")],
        columns=list(RUN_COLUMNS))
    row = summarise(runs).iloc[0]
    assert row["recall"] == pytest.approx(2.5 / 4)
    assert row["mrr"] == pytest.approx(2.5 / 4)
    assert (row["correct"], row["wrong"], row["abstained"]) == (0.5, 0.25, 0.25)
    assert row["refused"] == 0.5
    assert (row["searches"], row["model_calls"]) == COST["bm25"]


def test_recall_divides_by_the_relevant_chunks_not_by_k():
    # the answer sits in two chunks; only one can be in a top 1
    docs = [Document("p", "Pump", "The pump is red. The pump is red.")]
    questions = [Question("q1", "Is the pump red?", "pump is red",
                          "p", "literal")]
    retriever = Retriever(chunk_documents(docs, "sentence", size=5))
    rows = score_questions(retriever, "bm25", questions, k=1)
    assert rows.loc[0, "recall"] == 0.5
    assert rows.loc[0, "rr"] == 1.0
    assert rows.loc[0, "outcome"] == "correct"


def test_unanswerable_rows_have_no_retrieval_metrics():
    docs = [Document("p", "Pump", "The pump is red. The lid is blue.")]
    nothing = [Unanswerable("u1", "Who painted the pump red?", "not said")]
    questions = [Question("q1", "Which colour is the lid?", "lid is blue",
                          "p", "literal")]
    retriever = Retriever(chunk_documents(docs, "sentence", size=5))
    rows = score_questions(retriever, "hybrid", questions, nothing)
    assert list(rows["qid"]) == ["q1", "u1"]
    assert list(rows["answerable"]) == [True, False]
    assert math.isnan(rows.loc[1, "recall"]) and math.isnan(rows.loc[1, "rr"])


def test_outcome_rules():
    assert outcome(Answer(NO_ANSWER, (), True), "red") == "abstained"
    assert outcome(Answer("It is RED.", ("p#0",)), "red") == "correct"
    assert outcome(Answer("It is blue.", ("p#0",)), "red") == "wrong"
    assert outcome(Answer("It is red.", ("p#0",)), None) == "wrong"
    assert outcome(Answer(NO_ANSWER, (), True), None) == "abstained"


def test_the_table_is_reproducible(corpus):
    assert ablation_table(*corpus).equals(ablation_table(*corpus))


def test_a_subset_of_steps_keeps_the_order_given(corpus):
    table = ablation_table(*corpus, steps=["hybrid", "bm25"])
    assert list(table["step"]) == ["hybrid", "bm25"]


@pytest.mark.parametrize(
    "kwargs, kind, name",
    [({"steps": ["bm25", "rerank"]}, ValueError, "steps"),
     ({"steps": ["bm25", "bm25"]}, ValueError, "steps"),
     ({"steps": []}, ValueError, "steps"),
     ({"steps": "bm25"}, TypeError, "steps"),
     ({"k": 0}, ValueError, "k"),
     ({"k": 2.0}, TypeError, "k")],
)
def test_bad_arguments_are_named(corpus, kwargs, kind, name):
    with pytest.raises(kind, match=name):
        ablation_table(*corpus, **kwargs)


def test_no_questions_is_an_error(corpus):
    with pytest.raises(ValueError, match="questions"):
        ablation_table(corpus[0], [])


# ------------------------------------ notebook 09's reading of the table
# Its check cells assert the table's counts; the questions its prose names
# behind them are checked here, on the same rows (question_runs).


def test_notebook_09_the_questions_behind_the_ablation_list(runs):
    by_step = {s: runs[runs["step"] == s].set_index("qid") for s in STEPS}
    bm25, dense, full = by_step["bm25"], by_step["dense"], by_step[STEPS[-1]]
    # dense loses 5 of BM25's gold chunks, only 1 of them a right reply for BM25,
    # and answers the paraphrases q03 and q06, which BM25 missed
    lost = bm25.index[(bm25["recall"] == 1) & (dense["recall"] == 0)]
    assert len(lost) == 5 and (bm25.loc[lost, "outcome"] == "correct").sum() == 1
    assert (bm25.loc[["q03", "q06"], "recall"] == 0).all()
    assert (dense.loc[["q03", "q06"], "outcome"] == "correct").all()
    # from BM25 to the full pipeline the only refusal lost is u03, which it answers wrongly
    refused = {s: set(t.index[~t["answerable"] & (t["outcome"] == "abstained")])
               for s, t in by_step.items()}
    assert refused["bm25"] - refused[STEPS[-1]] == {"u03"} <= refused["hybrid+rerank"]
    assert refused[STEPS[-1]] <= refused["bm25"] and full.loc["u03", "outcome"] == "wrong"


def test_notebook_09_each_single_step_can_not_be_told_from_chance(corpus, runs):
    from ragkit.plots import paired_gains

    pages = {q.qid: q.doc_id for q in corpus[1]}
    pairs = [("bm25", "hybrid"), ("hybrid", "hybrid+rerank"),
             ("hybrid+rerank", "hybrid+rerank+context")]
    steps = paired_gains(runs, pairs, pages)
    # each step adds 2 right replies with an interval from 0; recall@3: 2 up and
    # 2 down for fusion and for the reranker, 1 up for the notes
    assert list((steps["gain"] * 43).round()) == [0, 2, 0, 2, 1, 2]
    assert (steps.loc[steps["score"] == "correct", "low"].round(3) == 0).all()
    assert steps.loc[steps["score"] == "recall", ["up", "down"]].values.tolist() == [
        [2, 2], [2, 2], [1, 0]]
