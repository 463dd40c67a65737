"""ragkit.agent: whether to search, what to search for, and the loop."""

import pytest

import ragkit.agent
from ragkit.agent import (
    REPLY_TO_SMALL_TALK,
    SMALL_TALK,
    agent_answer,
    needs_retrieval,
    rewrite_query,
)
from ragkit.answer import NO_ANSWER, Answer
from ragkit.chunking import Chunk
from ragkit.corpus import load_questions, load_unanswerable
from ragkit.text import stem

MODE = "hybrid+rerank"  # the strongest first stage the package offers


@pytest.fixture(scope="module")
def retriever(noted_retriever):
    return noted_retriever


def recording(search):
    """Wrap ``search`` so that every (query, k) call is kept in ``.calls``."""

    def wrapped(query, k):
        wrapped.calls.append((query, k))
        return search(query, k)

    wrapped.calls = []
    return wrapped


QUESTIONS = {q.qid: q for q in load_questions()}
UNANSWERABLE = {u.qid: u for u in load_unanswerable()}


# ----------------------------------------------------------- decision 1


@pytest.mark.parametrize("text", ["hello", "Thanks!", "Hi there", "thank you",
                                  "Good morning!", "", "What is it?"])
def test_small_talk_and_empty_questions_need_no_search(text):
    """Only greetings, thanks or stopwords: nothing to look up."""
    assert needs_retrieval(text) is False


@pytest.mark.parametrize("text", ["hello, what does LC-0417 mean?",
                                  "Thanks! And how much is a locker?",
                                  "opening hours"])
def test_a_real_question_needs_search(text):
    """One token outside the small-talk list is enough."""
    assert needs_retrieval(text) is True


def test_small_talk_list_is_stemmed():
    """The list holds stems, as tokenize makes them."""
    assert stem("thanks") in SMALL_TALK and "thanks" not in SMALL_TALK
    with pytest.raises(TypeError, match="question"):
        needs_retrieval(None)


# ----------------------------------------------------------- decision 2


def test_rewrite_adds_the_shared_concept_words():
    """q03's quit, cash and reimbursed bring cancel, money and refund."""
    q03 = QUESTIONS["q03"].question
    assert rewrite_query(q03, []) == q03 + " cancel money refund"


def test_rewrite_adds_each_concept_once_and_skips_known_ones():
    """quit and resign share 'cancel'; a concept already typed is not added."""
    assert rewrite_query("quit or resign", []) == "quit or resign cancel"
    assert rewrite_query("cancel or quit", []) == "cancel or quit"


def test_rewrite_feedback_words_rule():
    """Two most frequent new tokens of the first two chunks; ties a-z."""
    chunks = [
        Chunk("a#0", "a", "Pump pump chiller 42 lc-0417 laser."),
        Chunk("b#0", "b", "Chiller beep laser."),
        Chunk("c#0", "c", "Zebra zebra zebra zebra."),  # third chunk: ignored
    ]
    # counts: pump 2, chiller 2, beep 1 ("laser" is in the question; 42 and
    # lc-0417 hold digits)
    assert rewrite_query("laser fault", chunks) == "laser fault chiller pump"
    assert rewrite_query("laser fault", chunks[1:2]) == "laser fault beep chiller"


def test_rewrite_with_nothing_to_add_returns_the_question():
    """No concept word and no new token: the very same string."""
    chunks = [Chunk("a#0", "a", "The laser. A fault.")]
    assert rewrite_query("laser fault", chunks) == "laser fault"
    with pytest.raises(TypeError, match="chunks"):
        rewrite_query("laser", "laser#0")


# ---------------------------------------------------------------- the loop


def test_small_talk_never_calls_search(retriever):
    """'hi' is answered with the canned reply and a one-row trace."""
    search = recording(lambda q, k: retriever.search(q, k, MODE))
    answer, trace = agent_answer("hi", search, retriever.by_id)
    assert search.calls == []
    assert answer == Answer(REPLY_TO_SMALL_TALK, (), False)
    assert len(trace) == 1 and trace[0]["stop"] == "small talk"


def test_answerable_question_stops_when_grounded(retriever):
    """q01 is answered in round 1 from laser#1."""
    search = recording(lambda q, k: retriever.search(q, k, MODE))
    answer, trace = agent_answer(QUESTIONS["q01"].question, search, retriever.by_id)
    assert answer.citations == ("laser#1",)
    assert search.calls == [(QUESTIONS["q01"].question, 3)]
    assert [row["stop"] for row in trace] == ["answered"]
    assert set(trace[0]) == {"round", "query", "k", "ids", "outcome", "stop"}


def test_unanswerable_question_ends_in_abstention_within_the_limit(retriever):
    """u02, u05, u07: abstain, at most max_rounds searches, a stop reason."""
    for qid in ["u02", "u05", "u07"]:
        for max_rounds in [1, 2, 3, 5]:
            search = recording(lambda q, k: retriever.search(q, k, MODE))
            answer, trace = agent_answer(UNANSWERABLE[qid].question, search,
                                         retriever.by_id, max_rounds=max_rounds)
            assert answer == Answer(NO_ANSWER, (), True), qid
            assert 1 <= len(search.calls) <= max_rounds
            assert len(trace) == len(search.calls)
            assert trace[-1]["stop"] in ("no new words", "round limit")
            assert all(row["stop"] is None for row in trace[:-1])


def test_search_calls_for_three_round_limits(retriever):
    """Exercise 9 on u05: limits 1, 2 and 5 cost 1, 2 and 3 searches (the
    third query adds no new words, so the limit of 5 is never reached)."""
    calls = {}
    for max_rounds in [1, 2, 5]:
        search = recording(lambda q, k: retriever.search(q, k, MODE))
        _, trace = agent_answer(UNANSWERABLE["u05"].question, search,
                                retriever.by_id, max_rounds=max_rounds)
        calls[max_rounds] = (len(search.calls), trace[-1]["stop"])
    assert calls == {1: (1, "round limit"), 2: (2, "round limit"),
                     5: (3, "no new words")}


def test_bm25_misses_the_paraphrase_then_the_rewrite_finds_it(retriever):
    """q03 with BM25 and k=1: nothing in round 1, billing#3 in round 2."""
    def bm25(query, k):
        return [i for i, _ in retriever.bm25.search(query, k)]

    search = recording(bm25)
    q03 = QUESTIONS["q03"].question
    answer, trace = agent_answer(q03, search, retriever.by_id, k=1)
    assert [row["ids"] for row in trace][0] == []
    assert trace[0]["outcome"] == "abstained" and trace[0]["stop"] is None
    assert trace[1]["query"] == q03 + " cancel money refund"
    assert [k for _, k in search.calls] == [1, 2]  # the search widens
    assert not answer.abstained and answer.citations == ("billing#3",)
    assert trace[1]["stop"] == "answered"


def test_a_rewrite_that_never_changes_the_query_stops_after_one_round(
        retriever, monkeypatch):
    """With the question as its own rewrite, one search and 'no new words'."""
    monkeypatch.setattr(ragkit.agent, "rewrite_query", lambda question, chunks: question)
    search = recording(lambda q, k: retriever.search(q, k, MODE))
    answer, trace = agent_answer(UNANSWERABLE["u07"].question, search,
                                 retriever.by_id, max_rounds=5)
    assert answer.abstained and len(search.calls) == 1
    assert trace[-1]["stop"] == "no new words"


def test_a_reordered_rewrite_is_not_progress(monkeypatch):
    """Same words in another order count as nothing new."""
    chunks = {"a#0": Chunk("a#0", "a", "Nothing useful here.")}
    rewrites = iter(["bring dog cat", "cat dog bring", "bring dog fish"])
    monkeypatch.setattr(ragkit.agent, "rewrite_query",
                        lambda question, found: next(rewrites))
    _, trace = agent_answer("bring dog", lambda q, k: ["a#0"], chunks,
                            max_rounds=5)
    assert [row["query"] for row in trace] == ["bring dog", "bring dog cat"]
    assert trace[-1]["stop"] == "no new words"


def test_round_limit_is_the_last_resort(retriever):
    """max_rounds=1 stops after one search even when a rewrite would help."""
    def bm25(query, k):
        return [i for i, _ in retriever.bm25.search(query, k)]

    answer, trace = agent_answer(QUESTIONS["q03"].question, bm25,
                                 retriever.by_id, max_rounds=1, k=1)
    assert answer.abstained and len(trace) == 1
    assert trace[0]["stop"] == "round limit"


@pytest.mark.parametrize(
    "kwargs, kind, name",
    [
        ({"question": 3}, TypeError, "question"),
        ({"search": "bm25"}, TypeError, "search"),
        ({"chunks_by_id": [("a", 1)]}, TypeError, "chunks_by_id"),
        ({"max_rounds": 0}, ValueError, "max_rounds"),
        ({"max_rounds": 2.0}, TypeError, "max_rounds"),
        ({"k": 0}, ValueError, "k"),
        ({"k": True}, TypeError, "k"),
        ({"min_overlap": 0}, ValueError, "min_overlap"),
    ],
)
def test_agent_bad_input(kwargs, kind, name):
    """Each bad argument is refused with its name in the message."""
    args = {"question": "laser lid", "search": lambda q, k: [],
            "chunks_by_id": {}} | kwargs
    with pytest.raises(kind, match=rf"^{name} "):
        agent_answer(**args)


def test_unknown_id_from_search_is_reported():
    """An id missing from chunks_by_id is a ValueError, not a KeyError."""
    with pytest.raises(ValueError, match="chunks_by_id"):
        agent_answer("laser lid", lambda q, k: ["ghost#0"], {})
