"""A grounded mock answerer and a citation check.

No language model runs in this course. :func:`grounded_answer` stands in for
the generator of a RAG system: it may only quote a sentence from the chunks
it was handed, it names the chunk it quoted, and when nothing it was given
matches the question well enough it says :data:`NO_ANSWER` instead of
guessing. :func:`check_citations` is the cheapest faithfulness check there
is: every id an answer cites must belong to a chunk that was retrieved.
:func:`best_sentence` is the scoring rule on its own: it says which sentence
the answerer would quote and how strongly it matches, so a caller can set
its own threshold on that score (notebook 08's calibrated abstention).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .checks import check_int
from .text import concept, split_sentences, tokenize

__all__ = [
    "NO_ANSWER",
    "Answer",
    "Match",
    "best_sentence",
    "check_citations",
    "concepts_of",
    "grounded_answer",
    "sentence_pool",
]

NO_ANSWER = "The help centre pages I was given do not answer that."


@dataclass(frozen=True)
class Answer:
    """What the answerer says, which chunk ids back it, and whether it declined.

    ``citations`` is stored as a tuple (a list passed in is converted), so an
    answer can be compared and hashed.
    """

    text: str
    citations: tuple[str, ...] = ()
    abstained: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "citations", tuple(self.citations))


def _check_chunks(chunks: object) -> list:
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Iterable):
        raise TypeError(
            f"chunks must be a list of chunks (got {type(chunks).__name__})"
        )
    chunks = list(chunks)
    for n, chunk in enumerate(chunks):
        if not (hasattr(chunk, "chunk_id") and hasattr(chunk, "text")):
            raise TypeError(
                f"chunks[{n}] must have .chunk_id and .text "
                f"(got {type(chunk).__name__})"
            )
    return chunks


def concepts_of(text: str) -> set[str]:
    """The distinct concept words of ``text``: ``concept`` of every token."""
    return {concept(token) for token in tokenize(text)}


def sentence_pool(chunks: Sequence) -> list[tuple[str, str, set[str]]]:
    """``(chunk_id, sentence, concepts)`` for every sentence, chunks in order.

    A sentence is read in its window: its concepts are those of the chunk's
    context note (``chunk.context``, empty when the chunk has none), of the
    sentence just before it in the same chunk (none for the first one), and
    of the sentence itself. The window resolves "It opens ..." or "Each one
    costs ...", whose subject is named in the note or the sentence before.
    """
    pool = []
    for chunk in chunks:
        note = concepts_of(getattr(chunk, "context", "") or "")
        before: set[str] = set()
        for sentence in split_sentences(chunk.text):
            own = concepts_of(sentence)
            pool.append((chunk.chunk_id, sentence, note | before | own))
            before = own
    return pool


@dataclass(frozen=True)
class Match:
    """The sentence :func:`best_sentence` picked and how well it matched.

    ``score`` is the sum of the weights of the ``shared`` concepts (sorted);
    ``question_weight`` is the total weight of every concept of the
    question, where a concept that no candidate holds weighs
    ``ln(1 + n)``, as much as a concept found in a single candidate.
    """

    score: float
    sentence: str
    chunk_id: str
    shared: tuple[str, ...]
    question_weight: float

    @property
    def share(self) -> float:
        """``score / question_weight``: 1.0 when every concept is matched."""
        return self.score / self.question_weight


def best_sentence(
    question: str, chunks: Sequence, min_overlap: int = 1
) -> Match | None:
    """The best-matching candidate sentence for ``question``, or None.

    Steps 1 to 5 of :func:`grounded_answer`'s rule: the candidates are the
    sentences of ``chunks`` read in their windows, a shared concept ``c``
    weighs ``ln(1 + n / df[c])``, a candidate needs at least
    ``min_overlap`` shared concepts, the highest score wins and the earliest
    candidate wins a tie. Returns None when no candidate is eligible
    (including when ``chunks`` is empty). With the default
    ``min_overlap=1`` the score is defined for every question that shares
    one concept with the chunks, which is what a threshold on the score
    needs. Raises the errors :func:`grounded_answer` does.
    """
    if not isinstance(question, str):
        raise TypeError(f"question must be a str (got {type(question).__name__})")
    chunks = _check_chunks(chunks)
    check_int(min_overlap, "min_overlap")
    wanted = concepts_of(question)
    pool = sentence_pool(chunks)
    n = len(pool)
    df: dict[str, int] = {}
    for _, _, found in pool:
        for c in found:
            df[c] = df.get(c, 0) + 1
    best: tuple[float, str, str, tuple[str, ...]] | None = None
    for chunk_id, sentence, found in pool:
        shared = wanted & found
        if len(shared) < min_overlap:
            continue
        # sorted: a float sum must not depend on set iteration order
        score = math.fsum(math.log(1 + n / df[c]) for c in sorted(shared))
        if best is None or score > best[0]:  # strict: the earliest tie stays
            best = (score, sentence, chunk_id, tuple(sorted(shared)))
    if best is None:
        return None
    total = math.fsum(math.log(1 + n / max(df.get(c, 0), 1))
                      for c in sorted(wanted))
    return Match(best[0], best[1], best[2], best[3], total)


def grounded_answer(question: str, chunks: Sequence, min_overlap: int = 2) -> Answer:
    """Quote the retrieved sentence that best matches ``question``, or abstain.

    Exact rule:

    1. Question side: the set of ``concept(token)`` over the question's
       tokens (:func:`concepts_of`).
    2. The candidates are the sentences of the chunks, in the order given
       (best chunk first), each chunk's ``text`` split with
       ``split_sentences``. A candidate's concepts are those of its window:
       the chunk's ``context`` note, the sentence before it in the same
       chunk (if any) and the sentence itself (see :func:`sentence_pool`).
    3. ``n`` is the number of candidates and ``df[c]`` the number of
       candidates whose concepts include ``c``. A matched concept ``c``
       weighs ``ln(1 + n / df[c])``: a concept found in few candidates
       counts more than one found in many.
    4. A candidate's matches are the concepts it shares with the question.
       It is eligible when it has at least ``min_overlap`` matches; its score
       is the sum of their weights.
    5. The eligible candidate with the highest score wins; on a tie the
       earliest candidate wins. The answer is that sentence, unchanged, with
       the id of its chunk as the one citation and ``abstained=False``.
    6. With no eligible candidate (including when ``chunks`` is empty) the
       result is ``Answer(NO_ANSWER, (), True)``.

    Steps 1 to 5 are :func:`best_sentence`, which this function calls.

    Raises ``TypeError`` when ``question`` is not a str, ``chunks`` is not a
    list of objects with ``.chunk_id`` and ``.text``, or ``min_overlap`` is
    not an int; ``ValueError`` when ``min_overlap < 1``.
    """
    best = best_sentence(question, chunks, min_overlap)
    if best is None:
        return Answer(NO_ANSWER, (), True)
    return Answer(best.sentence, (best.chunk_id,), False)


def check_citations(answer: Answer, chunks: Sequence) -> bool:
    """True when every id ``answer`` cites is the id of one of ``chunks``.

    An answer that cites nothing (an abstention) passes: it claims no source.
    """
    if not hasattr(answer, "citations"):
        raise TypeError(
            f"answer must be an Answer (got {type(answer).__name__})"
        )
    retrieved = {chunk.chunk_id for chunk in _check_chunks(chunks)}
    return set(answer.citations) <= retrieved
