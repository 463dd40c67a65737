"""A small agentic loop around any search function.

Classic RAG searches once with the user's words and answers from whatever
came back. The loop here takes three decisions instead:

1. whether to search at all (:func:`needs_retrieval`);
2. what to search for next (:func:`rewrite_query`);
3. whether the evidence is enough (:func:`ragkit.answer.grounded_answer`
   either quotes a sentence or abstains).

:func:`agent_answer` runs them with two stop rules besides success: a round
limit, and "the rewrite brought no new word". Every rule is a few lines of
plain Python, so students can rebuild each one and get the same output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .checks import check_int
from .answer import Answer, NO_ANSWER, _check_chunks, grounded_answer
from .text import concept, stem, tokenize

__all__ = [
    "REPLY_TO_SMALL_TALK",
    "SMALL_TALK",
    "STOP_ANSWERED",
    "STOP_LIMIT",
    "STOP_NO_NEW_WORDS",
    "STOP_SMALL_TALK",
    "agent_answer",
    "needs_retrieval",
    "rewrite_query",
]

# greetings, thanks and goodbyes, stemmed the way tokenize stems them
# ("thanks" -> "thank"); words such as "you" or "there" are stopwords already
SMALL_TALK: frozenset[str] = frozenset(
    stem(word)
    for word in """
    hi hello hey hiya howdy greetings morning afternoon evening good
    thanks thank cheers ta bye goodbye ok okay great
    """.split()
)

REPLY_TO_SMALL_TALK = "Hello! Ask me anything about Fernhill Makerspace."

# the stop reasons an agent_answer trace can end with
STOP_ANSWERED = "answered"
STOP_NO_NEW_WORDS = "no new words"
STOP_LIMIT = "round limit"
STOP_SMALL_TALK = "small talk"

# how many chunks, and how many words from them, a rewrite looks at
REWRITE_CHUNKS = 2
REWRITE_WORDS = 2


def needs_retrieval(question: str) -> bool:
    """True when ``question`` holds something to look up.

    Exact rule: True when at least one token of ``tokenize(question)`` is not
    in :data:`SMALL_TALK`. So "Thanks!" and "hello" need no search, "Hi,
    what does LC-0417 mean?" does, and a text with no tokens at all (empty,
    or only stopwords) needs none, since there is nothing to search for.
    """
    if not isinstance(question, str):
        raise TypeError(f"question must be a str (got {type(question).__name__})")
    return any(token not in SMALL_TALK for token in tokenize(question))


def rewrite_query(question: str, chunks: Sequence) -> str:
    """The next search query: ``question`` plus a few words that may help.

    Exact rule, with ``tokens = tokenize(question)``:

    1. Concept words: for each token in order, ``concept(token)`` when it
       differs from the token and is not already a token or already added.
    2. Feedback words: count the tokens of ``tokenize(chunk.text)`` over the
       first two chunks (repeats count). Skip tokens of the question, concept
       words from step 1, and tokens with a digit in them (a code or a number
       from one page would pull the search towards that page). Take the two
       most frequent; equal counts go in alphabetical order.
    3. Return ``question + " " + " ".join(added)``, or ``question`` unchanged
       when nothing was added.

    ``chunks`` is a list of objects with ``.text`` (best first; may be empty).
    """
    if not isinstance(question, str):
        raise TypeError(f"question must be a str (got {type(question).__name__})")
    chunks = _check_chunks(chunks)
    tokens = tokenize(question)
    added: list[str] = []
    for token in tokens:
        word = concept(token)
        if word != token and word not in tokens and word not in added:
            added.append(word)
    known = set(tokens) | set(added)
    counts: dict[str, int] = {}
    for chunk in chunks[:REWRITE_CHUNKS]:
        for token in tokenize(chunk.text):
            if token in known or any(ch.isdigit() for ch in token):
                continue
            counts[token] = counts.get(token, 0) + 1
    ranked = sorted(counts, key=lambda word: (-counts[word], word))
    added += ranked[:REWRITE_WORDS]
    return f"{question} {' '.join(added)}" if added else question


def _check_agent_args(question, search, chunks_by_id, max_rounds, k, min_overlap):
    if not isinstance(question, str):
        raise TypeError(f"question must be a str (got {type(question).__name__})")
    if not callable(search):
        raise TypeError(f"search must be callable (got {type(search).__name__})")
    if not isinstance(chunks_by_id, Mapping):
        raise TypeError(
            f"chunks_by_id must be a dict of id -> chunk "
            f"(got {type(chunks_by_id).__name__})"
        )
    check_int(max_rounds, "max_rounds")
    check_int(k, "k")
    check_int(min_overlap, "min_overlap")


def agent_answer(
    question: str,
    search: Callable[[str, int], Sequence[str]],
    chunks_by_id: Mapping[str, object],
    max_rounds: int = 3,
    k: int = 3,
    min_overlap: int = 2,
) -> tuple[Answer, list[dict]]:
    """Search, check, rewrite, repeat; return the answer and a trace.

    ``search(query, n)`` returns up to ``n`` chunk ids, best first;
    ``chunks_by_id`` maps every id to its chunk. The rules:

    * When ``needs_retrieval(question)`` is False, ``search`` is never
      called: the answer is ``Answer(REPLY_TO_SMALL_TALK, (), False)`` and
      the trace is one row with round 0, k 0, no ids, outcome and stop both
      ``"small talk"``.
    * Otherwise round ``r`` (1, 2, ...) calls ``search(query, k * r)`` (the
      search widens each round), fetches the chunks, and calls
      ``grounded_answer(question, chunks, min_overlap)`` with the original
      question. The first query is the question itself.
    * Stop with that answer when it does not abstain (``"answered"``).
      Otherwise stop at round ``max_rounds`` (``"round limit"``); before that,
      compute ``rewrite_query(question, chunks)`` and stop when it brings no
      new token, that is when ``set(tokenize(new_query))`` is a subset of
      ``set(tokenize(query))`` (``"no new words"``); else search with it next
      round.
      Every stop but ``"answered"`` returns ``Answer(NO_ANSWER, (), True)``.

    The trace has one dict per round with keys ``round``, ``query``, ``k``,
    ``ids`` (a list), ``outcome`` (``"answered"`` or ``"abstained"``) and
    ``stop`` (None, except the last round's, which holds the stop reason).
    So ``len(trace)`` is the number of search calls (for small talk, 0 calls
    and one row).

    Raises ``TypeError`` for a non-str ``question``, a ``search`` that is not
    callable, a ``chunks_by_id`` that is not a mapping, or a non-int limit;
    ``ValueError`` when ``max_rounds``, ``k`` or ``min_overlap`` is below 1 or
    ``search`` returns an id missing from ``chunks_by_id``.
    """
    _check_agent_args(question, search, chunks_by_id, max_rounds, k, min_overlap)
    if not needs_retrieval(question):
        row = {"round": 0, "query": question, "k": 0, "ids": [],
               "outcome": STOP_SMALL_TALK, "stop": STOP_SMALL_TALK}
        return Answer(REPLY_TO_SMALL_TALK, (), False), [row]
    trace: list[dict] = []
    query = question
    for rnd in range(1, max_rounds + 1):
        width = k * rnd
        ids = list(search(query, width))
        missing = [i for i in ids if i not in chunks_by_id]
        if missing:
            raise ValueError(
                f"search returned {missing[0]!r}, which chunks_by_id does not hold"
            )
        chunks = [chunks_by_id[i] for i in ids]
        answer = grounded_answer(question, chunks, min_overlap)
        row = {"round": rnd, "query": query, "k": width, "ids": ids,
               "outcome": "abstained" if answer.abstained else "answered",
               "stop": None}
        trace.append(row)
        if not answer.abstained:
            row["stop"] = STOP_ANSWERED
            return answer, trace
        if rnd == max_rounds:
            row["stop"] = STOP_LIMIT
            break
        new_query = rewrite_query(question, chunks)
        # a reordering is not progress: only a word the query lacks is
        if set(tokenize(new_query)) <= set(tokenize(query)):
            row["stop"] = STOP_NO_NEW_WORDS
            break
        query = new_query
    return Answer(NO_ANSWER, (), True), trace
