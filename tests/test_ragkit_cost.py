"""ragkit.cost: prompt tokens of stuffing the corpus against retrieving k chunks.

Expected values are worked out by hand from the module docstring.
"""

import math

import numpy as np
import pytest

from ragkit.cost import (
    CONTEXT_RULE_TOKENS,
    TOKENS_PER_WORD,
    WORDS_PER_PAGE,
    cost_table,
    prompt_tokens,
    stuffing_limit,
)


def test_defaults_are_the_stated_assumptions():
    """200k-token rule, 1.3 tokens per word, 300 words to a page."""
    assert CONTEXT_RULE_TOKENS == 200_000
    assert TOKENS_PER_WORD == 1.3
    assert WORDS_PER_PAGE == 300


def test_one_corpus_by_hand():
    """10,000 words: 1.3 * 10,020 stuffed; 1.3 * (5 * 200 + 20) retrieved."""
    stuffed, retrieved = prompt_tokens(10_000)
    assert math.isclose(stuffed, 13_026.0)
    assert math.isclose(retrieved, 1_326.0)
    assert isinstance(stuffed, float) and isinstance(retrieved, float)


def test_retrieval_cannot_send_more_than_the_corpus():
    """A 300-word corpus with k * chunk = 1000 words: both prompts are equal."""
    stuffed, retrieved = prompt_tokens(300, k=5, chunk_words=200)
    assert stuffed == retrieved == pytest.approx(1.3 * 320)


def test_an_empty_corpus_costs_only_the_question():
    stuffed, retrieved = prompt_tokens(0, question_words=10, tokens_per_word=2.0)
    assert stuffed == retrieved == 20.0


def test_arrays_agree_with_scalars():
    """The vectorised call gives the scalar answers element by element."""
    sizes = np.array([0, 50, 999, 1_000, 1_001, 250_000])
    stuffed, retrieved = prompt_tokens(sizes, k=4, chunk_words=250,
                                       tokens_per_word=1.5, question_words=8)
    for n, size in enumerate(sizes):
        one = prompt_tokens(int(size), 4, 250, 1.5, 8)
        assert (stuffed[n], retrieved[n]) == pytest.approx(one)


def test_retrieval_flattens_once_the_corpus_is_bigger_than_k_chunks():
    stuffed, retrieved = prompt_tokens(np.arange(0, 5_000, 100))
    assert (np.diff(stuffed) > 0).all()
    assert (retrieved <= stuffed + 1e-9).all()
    assert np.ptp(retrieved[10:]) == 0  # from 1,000 words on: 5 x 200 words


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"corpus_words": -1}, "corpus_words"),
        ({"corpus_words": 10, "k": 0}, "k"),
        ({"corpus_words": 10, "chunk_words": 0}, "chunk_words"),
        ({"corpus_words": 10, "tokens_per_word": 0}, "tokens_per_word"),
        ({"corpus_words": 10, "question_words": -3}, "question_words"),
    ],
)
def test_bad_values_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        prompt_tokens(**kwargs)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"corpus_words": "many"}, "corpus_words"),
        ({"corpus_words": True}, "corpus_words"),
        ({"corpus_words": 10, "k": "5"}, "k"),
        ({"corpus_words": 10, "tokens_per_word": True}, "tokens_per_word"),
    ],
)
def test_bad_types_name_the_argument(kwargs, name):
    with pytest.raises(TypeError, match=name):
        prompt_tokens(**kwargs)


def test_cost_table_columns_and_fits():
    """The row at the limit fits; one word more does not."""
    limit = stuffing_limit()
    table = cost_table([1_000, math.floor(limit), math.ceil(limit)])
    assert list(table) == ["corpus_words", "stuff_tokens", "retrieve_tokens",
                           "stuff_fits"]
    assert table["stuff_fits"].tolist() == [True, True, False]
    assert table["retrieve_tokens"].tolist() == pytest.approx([1_326.0] * 3)


def test_cost_table_refuses_a_bad_budget():
    with pytest.raises(ValueError, match="budget"):
        cost_table([10], budget=0)


def test_stuffing_limit_by_hand():
    """200,000 / 1.3 - 20 words, about 513 pages of 300 words."""
    limit = stuffing_limit()
    assert limit == pytest.approx(200_000 / 1.3 - 20)
    assert round(limit / WORDS_PER_PAGE) == 513
    stuffed, _ = prompt_tokens(limit)
    assert stuffed == pytest.approx(CONTEXT_RULE_TOKENS)


def test_stuffing_limit_refuses_a_question_that_does_not_fit():
    with pytest.raises(ValueError, match="budget"):
        stuffing_limit(budget=10, tokens_per_word=1.0, question_words=11)
    with pytest.raises(ValueError, match="tokens_per_word"):
        stuffing_limit(tokens_per_word=-1.0)
