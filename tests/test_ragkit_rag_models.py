"""ragkit.rag_models: RAG-Sequence and RAG-Token, and the retriever-reader pair.

Expected values are worked out by hand from the two formulas in the module
docstring; random tables are checked against plain-Python products. The last
tests measure retrieval plus the mock reader on the help centre.
"""

import math
import random

import numpy as np
import pytest

from ragkit.answer import NO_ANSWER, Answer
from ragkit.chunking import chunk_documents
from ragkit.corpus import Question, load_documents, load_questions
from ragkit.rag_models import (
    answer_is_correct,
    best_answer,
    ceiling_curve,
    check_tables,
    compare_answers,
    grade_answers,
    log_rag_sequence,
    log_rag_token,
    rag_sequence,
    rag_token,
    retriever_probs,
)
from ragkit.retrieval import Retriever, evaluate

# two passages, equally likely; "mixed" needs passage 0 for its first token
# and passage 1 for its second, "single" is well supported by passage 0 alone
DOC = [0.5, 0.5]
MIXED = [[0.9, 0.1], [0.1, 0.9]]
SINGLE = [[0.6, 0.6], [0.05, 0.05]]


def plain_sequence(p, t):
    return sum(pk * math.prod(row) for pk, row in zip(p, t))


def plain_token(p, t):
    return math.prod(sum(pk * row[i] for pk, row in zip(p, t))
                     for i in range(len(t[0])))


def test_hand_worked_values():
    """mixed: 0.5*0.09 + 0.5*0.09 = 0.09 and 0.5*0.5 = 0.25."""
    assert rag_sequence(DOC, MIXED) == pytest.approx(0.09)
    assert rag_token(DOC, MIXED) == pytest.approx(0.25)
    # single: 0.5*0.36 + 0.5*0.0025 and 0.325 ** 2
    assert rag_sequence(DOC, SINGLE) == pytest.approx(0.18125)
    assert rag_token(DOC, SINGLE) == pytest.approx(0.105625)


def test_the_two_models_can_pick_different_answers():
    candidates = {"mixed": MIXED, "single": SINGLE}
    assert best_answer(DOC, candidates, "sequence") == "single"
    assert best_answer(DOC, candidates, "token") == "mixed"
    table = compare_answers(DOC, candidates)
    assert list(table) == ["mixed", "single"]
    assert table["single"] == pytest.approx((0.18125, 0.105625))


def test_random_tables_match_plain_products():
    rng = random.Random(7)
    for _ in range(300):
        k, n = rng.randint(1, 5), rng.randint(1, 6)
        raw = [rng.random() + 1e-3 for _ in range(k)]
        p = [x / sum(raw) for x in raw]
        t = [[rng.random() for _ in range(n)] for _ in range(k)]
        assert rag_sequence(p, t) == pytest.approx(plain_sequence(p, t), rel=1e-9)
        assert rag_token(p, t) == pytest.approx(plain_token(p, t), rel=1e-9)


def test_one_passage_or_one_token_makes_the_models_agree():
    rng = np.random.default_rng(3)
    one_passage = rng.random((1, 4))
    assert rag_sequence([1.0], one_passage) == pytest.approx(
        rag_token([1.0], one_passage))
    one_token = rng.random((3, 1))
    p = [0.2, 0.3, 0.5]
    assert rag_sequence(p, one_token) == pytest.approx(rag_token(p, one_token))


def test_which_model_scores_higher_depends_on_agreement():
    """K=2, p=(0.5, 0.5), table [[a, c], [b, d]]: token - sequence equals
    -(a - b)(c - d) / 4, so RAG-Token scores higher exactly when the two
    passages back different tokens, and RAG-Sequence when one backs both."""
    assert rag_token(DOC, MIXED) > rag_sequence(DOC, MIXED)
    aligned = [[0.9, 0.9], [0.1, 0.1]]
    assert rag_sequence(DOC, aligned) > rag_token(DOC, aligned)
    a, c, b, d = 0.3, 0.8, 0.6, 0.2
    gap = rag_token(DOC, [[a, c], [b, d]]) - rag_sequence(DOC, [[a, c], [b, d]])
    assert gap == pytest.approx(-(a - b) * (c - d) / 4)


def test_log_space_survives_long_answers():
    """400 tokens at 0.1 each: 1e-400 underflows, its log does not."""
    t = np.full((2, 400), 0.1)
    assert rag_sequence(DOC, t) == 0.0  # below the smallest float
    assert log_rag_sequence(DOC, t) == pytest.approx(400 * math.log(0.1))
    assert log_rag_token(DOC, t) == pytest.approx(400 * math.log(0.1))


def test_zero_probabilities_give_minus_infinity_in_log_space():
    assert log_rag_token([1.0, 0.0], [[0.0], [1.0]]) == -math.inf
    assert rag_sequence([1.0, 0.0], [[0.0], [1.0]]) == 0.0


def test_retriever_probs_is_a_softmax():
    p = retriever_probs([2.0, 1.0, 0.0])
    assert p.sum() == pytest.approx(1.0)
    assert p[0] / p[1] == pytest.approx(math.e)
    assert retriever_probs([1002.0, 1001.0, 1000.0]) == pytest.approx(p)


@pytest.mark.parametrize(
    "doc, table, name",
    [
        ([], [[0.5]], "doc_probs"),
        ([0.7, 0.7], [[0.5], [0.5]], "doc_probs"),
        ([1.2, -0.2], [[0.5], [0.5]], "doc_probs"),
        ([0.5, 0.5], [[0.5]], "token_probs"),
        ([0.5, 0.5], [[0.5, 1.5], [0.5, 0.5]], "token_probs"),
        ([1.0], [[]], "token_probs"),
        ([1.0], [0.5, 0.5], "token_probs"),
    ],
)
def test_bad_tables_name_the_table(doc, table, name):
    with pytest.raises(ValueError, match=name):
        check_tables(doc, table)


def test_non_numbers_are_a_type_error():
    with pytest.raises(TypeError, match="doc_probs"):
        check_tables("0.5 0.5", [[0.5], [0.5]])
    with pytest.raises(TypeError, match="token_probs"):
        check_tables([1.0], [["high"]])


def test_best_answer_checks_its_model_and_breaks_ties_by_name():
    with pytest.raises(ValueError, match="model"):
        best_answer(DOC, {"a": MIXED}, "beam")
    twins = {"b": MIXED, "a": MIXED}
    assert best_answer(DOC, twins, "token") == "a"


# ------------------------------------------- the retriever-reader pair

@pytest.fixture(scope="module")
def corpus():
    docs = load_documents()
    return load_questions(), chunk_documents(docs, "sentence", size=25)


def test_answer_is_correct_ignores_case_and_refuses_abstentions():
    said = Answer("Code LC-0417 means the lid was opened.", ("laser#1",))
    assert answer_is_correct(said, "THE LID WAS OPENED")
    assert not answer_is_correct(said, "a dirty focus lens")
    declined = Answer(NO_ANSWER, (), True)
    assert not answer_is_correct(declined, NO_ANSWER)  # abstaining is no answer
    with pytest.raises(ValueError, match="gold"):
        answer_is_correct(said, "  ")
    with pytest.raises(TypeError, match="gold"):
        answer_is_correct(said, None)


def test_grade_answers_without_chunks_answers_nothing(corpus):
    questions, _ = corpus
    table = grade_answers(questions, lambda text: [])
    assert table["qid"] == [q.qid for q in questions]
    assert not any(table["answered"]) and not any(table["correct"])
    assert set(table["context_words"]) == {0}
    with pytest.raises(ValueError, match="questions"):
        grade_answers([], lambda text: [])


def test_grade_answers_with_the_gold_chunk_is_mostly_right(corpus):
    """Handing over exactly the relevant chunk: correct whenever answered."""
    questions, chunks = corpus
    gold = {q.qid: [c for c in chunks if q.answer.lower() in c.text.lower()]
            for q in questions}
    fetch_by_text = {q.question: gold[q.qid] for q in questions}
    table = grade_answers(questions, fetch_by_text.__getitem__)
    assert table["correct"] == table["answered"]
    assert sum(table["correct"]) >= len(questions) // 2
    words = [sum(len(c.text.split()) for c in gold[qid]) for qid in table["qid"]]
    assert table["context_words"] == words


def test_ceiling_curve_never_lets_accuracy_exceed_hit(corpus):
    questions, chunks = corpus
    fixed = chunk_documents(load_documents(), "overlap", size=12, overlap=6)
    for pieces in (chunks, fixed):
        for mode in ("bm25", "dense", "hybrid"):
            curve = ceiling_curve(questions, pieces, [1, 3, 10], mode)
            assert list(curve["k"]) == [1, 3, 10]
            assert (curve["accuracy"] <= curve["hit"] + 1e-12).all()
            assert (curve["recall"] <= curve["hit"] + 1e-12).all()


def test_ceiling_curve_recall_matches_evaluate(corpus):
    questions, chunks = corpus
    curve = ceiling_curve(questions, chunks, [1, 2, 5], "bm25")
    for k, recall in zip(curve["k"], curve["recall"]):
        want = evaluate(Retriever(chunks), questions, "bm25", k=int(k))["recall"]
        assert recall == pytest.approx(want)


def test_ceiling_curve_case_of_gold_does_not_matter(corpus):
    questions, chunks = corpus
    loud = [Question(q.qid, q.question, q.answer.upper(), q.doc_id, q.kind)
            for q in questions]
    a = ceiling_curve(questions, chunks, [3], "dense")
    b = ceiling_curve(loud, chunks, [3], "dense")
    assert a["accuracy"] == pytest.approx(b["accuracy"])
    assert a["recall"] == pytest.approx(b["recall"])


def test_ceiling_curve_refuses_empty_inputs(corpus):
    questions, chunks = corpus
    with pytest.raises(ValueError, match="questions"):
        ceiling_curve([], chunks, [1])
    with pytest.raises(ValueError, match="ks"):
        ceiling_curve(questions, chunks, [])
