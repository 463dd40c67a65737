"""The self-check widget and the practice quiz it runs.

The widget: clicks, the running score, re-answers and errors. No browser is
needed: each question keeps its widgets as attributes, so a test sets the
radio buttons' value and presses the button in Python.

The practice quiz (ragkit/quiz_practice.py): its shape, and every number a
question, an option or a reason states, recomputed with the package.
"""
import re

import numpy as np
import pytest

from ragkit import agent, bm25, chunking, cost, failures, fusion, metrics, rerank
from ragkit.answer import NO_ANSWER
from ragkit.chunking import make_chunks
from ragkit.quiz_practice import QUESTIONS, TITLE, Item, question, question_markdown
from ragkit.selfcheck import Quiz, practice_quiz

OPTIONS = {"A": "one", "B": "two", "C": "three"}
WHY = {"A": "A is too small.", "B": "two is the answer.", "C": "C is <big>."}


def answer(question, letter):
    question.choice.value = letter
    question.check.click()


@pytest.fixture
def quiz():
    return Quiz("Practice", total=3)


def test_a_fresh_quiz_scores_nothing(quiz):
    """Before any click the score line counts no answers."""
    assert quiz.score.value == "0 of 3 right, 0 answered"


def test_the_right_option_is_confirmed_with_its_reason(quiz):
    """A right click says Right and gives the right option's reason."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "B")
    assert q.feedback.value == "Right: two is the answer."
    assert quiz.score.value == "1 of 3 right, 1 answered"


def test_a_wrong_option_gets_the_reason_for_that_option(quiz):
    """A wrong click explains the option picked (escaped for HTML), not the key."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "C")
    assert q.feedback.value == "Not quite: C is &lt;big&gt;."
    assert "two is the answer" not in q.feedback.value
    assert quiz.score.value == "0 of 3 right, 1 answered"


def test_answering_again_replaces_the_earlier_result(quiz):
    """The score counts questions, not clicks."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "A")
    answer(q, "B")
    answer(q, "B")
    assert quiz.score.value == "1 of 3 right, 1 answered"
    answer(q, "C")
    assert quiz.score.value == "0 of 3 right, 1 answered"


def test_the_count_runs_over_several_questions(quiz):
    """Each question adds to one shared score line."""
    first = quiz.ask(1, OPTIONS, "B", WHY)
    second = quiz.ask(2, OPTIONS, "A", WHY)
    third = quiz.ask(3, OPTIONS, "C", WHY)
    answer(first, "B")
    answer(second, "C")
    assert quiz.score.value == "1 of 3 right, 2 answered"
    answer(third, "C")
    assert (quiz.right_count, quiz.answered) == (2, 3)
    assert quiz.score.value == "2 of 3 right, 3 answered"


def test_checking_without_a_choice_changes_nothing(quiz):
    """No option picked: a hint, and the score stays as it was."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    q.check.click()
    assert "Pick an option" in q.feedback.value
    assert quiz.answered == 0


def test_asking_a_number_again_forgets_its_result(quiz):
    """Re-running a question's cell starts that question afresh."""
    answer(quiz.ask(1, OPTIONS, "B", WHY), "B")
    quiz.ask(1, OPTIONS, "A", WHY)
    assert quiz.score.value == "0 of 3 right, 0 answered"


def test_without_a_total_the_score_counts_the_questions_asked():
    """Quiz(title) with no total counts towards however many were asked."""
    quiz = Quiz("Open")
    quiz.ask(1, OPTIONS, "B", WHY)
    quiz.ask(2, OPTIONS, "B", WHY)
    assert quiz.score.value == "0 of 2 right, 0 answered"


def test_the_buttons_offer_the_letters_in_order(quiz):
    """One radio button per option letter, none picked at first."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    assert list(q.choice.options) == ["A", "B", "C"] and q.choice.value is None


@pytest.mark.parametrize("kwargs, name", [
    ({"right": "D"}, "right"),
    ({"why": {"A": "x", "B": "y"}}, "why"),
    ({"options": {"A": "only"}, "right": "A"}, "options"),
    ({"number": 0}, "number"),
])
def test_bad_input_is_refused_naming_the_argument(quiz, kwargs, name):
    """ValueError whose message names the argument at fault."""
    args = {"number": 1, "options": OPTIONS, "right": "B", "why": WHY, **kwargs}
    with pytest.raises(ValueError, match=name):
        quiz.ask(**args)
    assert quiz.questions == {}


def test_a_bad_total_is_refused():
    """total must be a positive int or None."""
    with pytest.raises(ValueError, match="total"):
        Quiz("x", total=0)
    with pytest.raises(TypeError, match="title"):
        Quiz(3)


def test_ask_item_takes_a_practice_question_whole(quiz):
    """ask_item asks with the item's number, options, key and reasons, and
    refuses anything that is not an Item; the quiz's repr is its score."""
    item = question(7)
    q = quiz.ask_item(item)
    assert (q.number, q.options, q.right, q.why) == \
        (7, item.options, item.right, item.why)
    answer(q, item.right)
    assert repr(quiz) == "Quiz('Practice': 1 of 3 right, 1 answered)"
    with pytest.raises(TypeError, match="item"):
        quiz.ask_item({"number": 1})


def test_practice_quiz_draws_all_ten_and_scores_them():
    """practice_quiz() asks the ten questions in order; right answers to
    all give a full score and a wrong one costs exactly one."""
    quiz = practice_quiz()
    assert quiz.title == TITLE and list(quiz.questions) == list(range(1, 11))
    for item in QUESTIONS:
        answer(quiz.questions[item.number], item.right)
    assert quiz.score.value == "10 of 10 right, 10 answered"
    item = QUESTIONS[4]
    wrong = next(x for x in item.options if x != item.right)
    answer(quiz.questions[item.number], wrong)
    assert quiz.score.value == "9 of 10 right, 10 answered"
    assert quiz.questions[item.number].feedback.value.startswith("Not quite: ")


# -- the practice quiz's questions --------------------------------------------

def test_ten_questions_one_per_topic_with_four_reasoned_options():
    """Numbers 1..10, ten different topics, options A-D each with a reason,
    a key among them, and at least three different right letters."""
    assert [item.number for item in QUESTIONS] == list(range(1, 11))
    assert len({item.topic for item in QUESTIONS}) == 10
    for item in QUESTIONS:
        assert isinstance(item, Item)
        assert list(item.options) == list(item.why) == list("ABCD"), item.number
        assert item.right in item.options
        assert all(len(reason.split()) >= 6 for reason in item.why.values())
    assert len({item.right for item in QUESTIONS}) >= 3


def test_no_reason_of_a_wrong_option_names_the_right_one():
    """A wrong option's reason never quotes the right option's text."""
    for item in QUESTIONS:
        right = item.options[item.right].lower()
        for letter, reason in item.why.items():
            if letter != item.right:
                assert right not in reason.lower(), (item.number, letter)


def test_question_markdown_and_lookup():
    """The markdown holds the heading, the text and every option line; an
    unknown number is refused, naming the argument."""
    md = question_markdown(question(3))
    assert md.startswith("## Question 3\n\n") and question(3).text in md
    assert md.count("\n- **") == 4 and "- **D.** " in md
    with pytest.raises(ValueError, match="number"):
        question(11)


def stated(item, letter="right"):
    """The option text of the right letter (or of `letter`)."""
    return item.options[item.right if letter == "right" else letter]


def test_q1_stuffing_grows_with_the_corpus_and_retrieval_does_not():
    """The package's cost model gives the numbers of the right option."""
    small, big = cost.prompt_tokens(150_000), cost.prompt_tokens(15_000_000)
    assert (round(small[0], -3), round(big[0], -5)) == (195_000, 19_500_000)
    assert small[1] == big[1] == 1326
    text = stated(question(1))
    assert "195,000" in text and "19.5 million" in text and "1,300" in text
    assert "= 1,326" in question(1).why["B"]


def test_q2_the_first_stage_caps_what_a_reranker_can_reach():
    """40 questions, gold among the 50 candidates for 36: a perfect
    reranker reaches hit@5 = 0.9, and the first stage's own hit@5 can be
    far lower."""
    rng = np.random.default_rng(0)
    before, after = [], []
    for i in range(40):
        candidates = [f"c{i}-{j}" for j in range(50)]
        gold = {candidates[rng.integers(10, 50)]} if i < 36 else {f"lost{i}"}
        reranked = sorted(candidates, key=lambda c: c not in gold)
        before.append(metrics.hit_at_k(candidates, gold, 5))
        after.append(metrics.hit_at_k(reranked, gold, 5))
    assert np.mean(after) == 0.9 and np.mean(before) == 0.0
    assert stated(question(2)).startswith("0.9:")


def test_q3_overlap_guarantees_runs_of_overlap_plus_one_words():
    """Windows of 100 starting every 80 words: every run of 21 words sits
    in one window, a run of 22 (and a 30-word run at word 75) does not."""
    words = [f"w{i}" for i in range(1000)]
    windows = [set(w.split()) for w in chunking.chunk_fixed(" ".join(words), 100, 20)]

    def whole(start, length):
        return any(set(words[start:start + length]) <= w for w in windows)

    assert all(whole(a, 21) for a in range(1000 - 21 + 1))
    assert not whole(79, 22) and not whole(75, 30)
    assert "at most 21 words" in stated(question(3))


def test_q4_bm25_term_frequency_saturates():
    """Ten occurrences against one, same length as the average: about 2.17
    times the score, as the reason computes."""
    filler = [f"x{i}" for i in range(30)]
    p = ["lathe"] * 10 + filler[:10]
    q = ["lathe"] + filler[10:29]
    other = filler[:20]
    index = bm25.BM25Index([p, q, other], tokenizer=None, k1=1.5, b=0.75)
    assert index.avgdl == len(p) == len(q)
    score_p, score_q, _ = index.scores(["lathe"])
    assert score_p / score_q == pytest.approx(25 / 11.5)
    assert round(score_p / score_q, 1) == 2.2 and "2.2 times" in stated(question(4))


def test_q5_the_question_shares_no_bm25_term_with_the_page():
    """After the package's tokenizer the terms are the ones the reason
    lists, and BM25 scores the page 0."""
    item = question(5)
    asked = re.search(r'"(Can I.+?)"', item.text).group(1)
    page = re.search(r'"(Refunds.+?)"', item.text).group(1)
    assert bm25.tokenize(asked) == ["get", "money", "back", "class", "miss"]
    assert "(get, money, back, class, miss)" in item.why["A"]
    index = bm25.BM25Index([page, "The workshop opens at ten."])
    assert index.scores(asked)[0] == 0.0
    assert "BM25 finds none of the query's terms" in stated(item)


def test_q6_rrf_k_decides_between_agreement_and_a_first_place():
    """Y wins at k = 60, X at k = 0, with the sums the reason prints."""
    keyword, dense = ["X", "a", "Y"], ["b", "c", "Y"]
    at60 = dict(fusion.rrf([keyword, dense], k=60))
    at0 = dict(fusion.rrf([keyword, dense], k=0))
    assert at60["Y"] > at60["X"] and at0["X"] > at0["Y"]
    assert stated(question(6)).startswith("Y with k = 60, X with k = 0")
    why = question(6).why["A"]
    assert f"{at60['Y']:.4f}" in why and f"{at60['X']:.4f}" in why
    assert f"{at0['Y']:.3f}" in why


def test_q7_maxsim_sums_each_query_tokens_best_match():
    """With identity query vectors the table is the dot products; the four
    options are MaxSim (right), the best pair, the sum of all, and MaxSim
    taken over the passage's tokens."""
    table = np.array([[0.9, 0.2, 0.4], [0.1, 0.3, 0.7]])
    query_vecs, doc_vecs = np.eye(2), table.T
    item = question(7)
    values = {"C": rerank.maxsim(query_vecs, doc_vecs), "A": table.max(),
              "B": table.sum(), "D": rerank.maxsim(doc_vecs, query_vecs)}
    for letter, value in values.items():
        assert float(item.options[letter]) == pytest.approx(value), letter
    assert item.right == "C"
    rows = re.findall(r"^\| (q\d) \| (.+) \|$", item.text, re.M)
    assert [[float(x) for x in r[1].split(" | ")] for r in rows] == table.tolist()


def test_q8_the_loop_stops_on_an_unanswerable_question():
    """Around a search that never finds the answer, the loop ends by its
    round limit or by a rewrite with no new word, with a wider k each round."""
    chunks = make_chunks("hours", [
        "The workshop opens at ten in the morning on weekdays.",
        "Members may bring one guest on Saturdays.",
        "The laser cutter needs an induction first."])
    by_id = {c.chunk_id: c for c in chunks}

    def search(query, n):
        return [c.chunk_id for c in chunks][:n]

    for rounds in (1, 2, 5):
        reply, trace = agent.agent_answer(
            "What is the wifi password of the café?", search, by_id,
            max_rounds=rounds, k=1)
        assert reply.text == NO_ANSWER and len(trace) <= rounds
        assert trace[-1]["stop"] in (agent.STOP_LIMIT, agent.STOP_NO_NEW_WORDS)
        assert [row["k"] for row in trace] == [r + 1 for r in range(len(trace))]
    assert "limit on the number of rounds" in stated(question(8))


def test_q9_ndcg_and_the_metrics_the_wrong_options_confuse_it_with():
    """nDCG@3 is the right option; the others are MRR, hit@3, precision@3."""
    ranked, gold = ["d3", "d1", "d7"], {"d1"}
    item = question(9)
    values = {"C": metrics.ndcg_at_k(ranked, gold, 3), "A": metrics.mrr(ranked, gold),
              "B": metrics.hit_at_k(ranked, gold, 3), "D": 1 / 3}
    for letter, value in values.items():
        assert float(item.options[letter]) == pytest.approx(value, abs=0.005), letter
    assert item.right == "C" and "`[d3, d1, d7]`" in item.text


def test_q10_a_gold_chunk_below_the_cut_is_ranked_too_low():
    """The package's triage puts the question's record where option B does."""
    record = {"answerable": True, "gold_rank": 12, "k": 5, "in_prompt": False,
              "answered": True, "correct": False, "citations_ok": True,
              "searches": 1, "max_searches": None}
    stage = failures.triage(record)
    assert stage == "ranked too low" and failures.column_of(stage) == "retrieval"
    assert "rank 12" in question(10).text and "top 5" in question(10).text
    assert stated(question(10)).startswith("The ranking:")
