"""The practice quiz: ten questions for studying, apart from the graded quiz.

The graded quiz (``source/quiz``) keeps its key in hidden tests only. These
ten questions test the same objectives with different questions, one per
lecture topic, and their key is meant to be seen: every option carries a
reason, shown after a click on *Check*. Two ways to take the quiz:

* in any notebook, ``from ragkit.selfcheck import practice_quiz`` and then
  ``practice_quiz()`` draws all ten questions in one cell (this works in
  the student bundle, which ships ``ragkit``);
* the reading edition's ``notebooks/quiz_practice.ipynb`` (written by
  ``tools/build_practice_quiz.py``) gives each question a cell of its own.

Every number in a question, an option or a reason is recomputed with the
package by ``tests/test_ragkit_selfcheck.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Item", "QUESTIONS", "TITLE", "question", "question_markdown"]

TITLE = "Practice quiz · Building blocks of retrieval-augmented generation"


@dataclass(frozen=True)
class Item:
    """One practice question.

    ``text`` is Markdown and may cite sources as ``[n]`` (numbers of
    ``guide/references.md``); ``options`` maps each letter to its text, in
    display order; ``right`` is the right letter; ``why`` gives a reason for
    every letter, the right one included.
    """

    number: int
    topic: str
    text: str
    options: dict[str, str]
    right: str
    why: dict[str, str]


def question_markdown(item: Item) -> str:
    """The question as Markdown: a heading, the text, one line per option."""
    lines = [f"## Question {item.number}", "", item.text, ""]
    lines += [f"- **{opt}.** {text}" for opt, text in item.options.items()]
    return "\n".join(lines)


QUESTIONS: tuple[Item, ...] = (
    Item(
        number=1,
        topic="why retrieval",
        text=(
            "The Fernhill help centre holds 150,000 words, and a sister site "
            "a hundred times larger is planned. Count 1.3 tokens per word "
            "and a question of 20 words. One design sends the whole help "
            "centre along with every question (stuffing); the other sends "
            "the five best chunks of 200 words each (retrieval). What "
            "happens to the prompt tokens per question when the corpus "
            "grows a hundredfold?"
        ),
        options={
            "A": "Both grow a hundredfold: each design has to read the "
                 "corpus to answer.",
            "B": "Stuffing grows from about 195,000 to about 19.5 million "
                 "tokens, far past any context window, while retrieval "
                 "stays at about 1,300.",
            "C": "Retrieval grows faster than stuffing, because a larger "
                 "index holds longer chunks.",
            "D": "Neither grows after the first question, since prompt "
                 "caching makes a repeated corpus free.",
        },
        right="B",
        why={
            "A": "retrieval reads the corpus when it builds the index, not "
                 "in the prompt: the search still hands over five chunks of "
                 "200 words, however many pages exist.",
            "B": "stuffing pays 1.3 tokens for every word of the corpus on "
                 "every question; retrieval pays for five chunks and the "
                 "question only, 1.3 × (1,000 + 20) = 1,326 tokens at any "
                 "corpus size.",
            "C": "chunk length is a setting chosen when the pages are cut; "
                 "more pages give more chunks, each as long as before.",
            "D": "a cache can make a repeated prefix cheaper to process, "
                 "but every token of it still has to fit in the context "
                 "window, and 19.5 million do not.",
        },
    ),
    Item(
        number=2,
        topic="pipeline",
        text=(
            "A pipeline keeps the first stage's 50 best chunks for each "
            "question, a reranker reorders them, and the reader gets the "
            "top 5 of the new order. On 40 test questions, a chunk that "
            "holds the answer is among the 50 candidates for 36 of them. "
            "What is the highest hit@5 this pipeline can reach, however "
            "good the reranker is?"
        ),
        options={
            "A": "1.0: a strong enough reranker finds the answer for every "
                 "question.",
            "B": "No more than the first stage's own hit@5, because a "
                 "reranker only reorders what it is given.",
            "C": "0.125, because only 5 of the 40 questions fit in a top 5.",
            "D": "0.9: the reranker can bring a gold chunk into the top 5 "
                 "for at most the 36 questions whose candidates hold one.",
        },
        right="D",
        why={
            "A": "a reranker never sees a chunk outside its 50 candidates, "
                 "so for 4 of the questions there is nothing it could lift.",
            "B": "reordering is exactly what raises hit@5: a gold chunk at "
                 "rank 30 of the candidates can move to rank 1, so the "
                 "ceiling is the first stage's hit@50, not its hit@5.",
            "C": "hit@5 asks, for each question, whether a gold chunk is in "
                 "that question's own top 5, and averages over questions.",
            "D": "what the first stage misses, no later stage can recover: "
                 "36 / 40 = 0.9, reached only if the reranker puts a gold "
                 "chunk in the top 5 every time one is there.",
        },
    ),
    Item(
        number=3,
        topic="chunking",
        text=(
            "A page is cut into windows of 100 words, and a new window "
            "begins every 80 words, so neighbouring windows share 20 words. "
            "The answer to a question is a run of 30 consecutive words "
            "somewhere on the page. Is some window sure to hold all 30 of "
            "them?"
        ),
        options={
            "A": "No: only runs of at most 21 words are sure to sit whole "
                 "in one window; a 30-word run that begins late in a window "
                 "is split in every window it touches.",
            "B": "Yes: every run shorter than a window, 100 words, fits "
                 "whole in some window.",
            "C": "Yes: with overlap every word lies in two windows, so "
                 "every run does too.",
            "D": "No: overlap repeats words but never keeps together a run "
                 "that a window's edge splits.",
        },
        right="A",
        why={
            "A": "a run that begins 79 words into a window runs past its "
                 "end, and the next window begins one word after the run "
                 "does; only a run no longer than the overlap plus one word "
                 "is safe wherever it starts.",
            "B": "being shorter than a window is not enough: a 30-word run "
                 "that begins 75 words into one window crosses its end and "
                 "starts before the next window does.",
            "C": "only the words near a window's edges lie in two windows; "
                 "those in the middle 60 lie in one, and a run needs all of "
                 "its words in the same window.",
            "D": "overlap does keep short runs together: any run of up to "
                 "21 words that one window cuts sits whole in the next.",
        },
    ),
    Item(
        number=4,
        topic="BM25",
        text=(
            "Two chunks are exactly as long as the collection's average "
            "chunk. The query word `lathe` occurs 10 times in chunk P and "
            "once in chunk Q. With BM25 at k1 = 1.5 and b = 0.75 [4], how "
            "does P's score for that word compare with Q's?"
        ),
        options={
            "A": "Ten times Q's: every occurrence adds the same weight.",
            "B": "Equal to Q's: BM25 only records whether a word occurs.",
            "C": "About 2.2 times Q's: each extra occurrence adds less than "
                 "the one before.",
            "D": "Below Q's: BM25 treats repetition as keyword stuffing and "
                 "takes points off for it.",
        },
        right="C",
        why={
            "A": "a linear count would let one repeated word outweigh the "
                 "rest of the query; BM25's term part f(k1 + 1) / (f + k1) "
                 "at average length levels off as f grows.",
            "B": "that would be a binary model; BM25 does count "
                 "occurrences, with less weight for each further one.",
            "C": "at average length the term part is 2.5 f / (f + 1.5): 1.0 "
                 "for one occurrence and 25 / 11.5 ≈ 2.17 for ten, each "
                 "times the same IDF.",
            "D": "the term part never falls as f grows; it climbs towards "
                 "k1 + 1 = 2.5 times the IDF without reaching it.",
        },
    ),
    Item(
        number=5,
        topic="dense retrieval",
        text=(
            "A member asks \"Can I get my money back for a class I "
            "missed?\" The page that answers it says \"Refunds are given "
            "for cancelled workshops.\" Which retriever is more likely to "
            "rank that page near the top, and why [2]?"
        ),
        options={
            "A": "BM25: the question's rare words carry a high IDF, which "
                 "lifts the page.",
            "B": "A trained dense retriever: it puts texts of related "
                 "meaning close together even when they share no word, "
                 "while BM25 finds none of the query's terms in the page "
                 "and scores it 0.",
            "C": "Neither: a retriever can only match texts that share "
                 "words, so the page has to be rewritten.",
            "D": "BM25 with a larger k1, since a larger k1 rewards partial "
                 "matches.",
        },
        right="B",
        why={
            "A": "IDF only weights words the page contains; after stemming "
                 "and stop words the question's terms (get, money, back, "
                 "class, miss) occur nowhere in the page, so BM25 gives "
                 "it 0.",
            "B": "this vocabulary gap is what dense retrievers such as DPR "
                 "are trained to bridge: 'money back' and 'refund', "
                 "'class' and 'workshop' end up near each other.",
            "C": "learned embeddings do match paraphrases; sharing words is "
                 "what BM25 needs, not what every retriever needs.",
            "D": "k1 decides how quickly repeated occurrences stop adding "
                 "weight; with no shared term it has nothing to act on.",
        },
    ),
    Item(
        number=6,
        topic="hybrid search with RRF",
        text=(
            "Reciprocal Rank Fusion merges a keyword list and a dense list "
            "by adding 1 / (k + rank) over the lists [5]. Document X is "
            "first in the keyword list and missing from the dense list; "
            "document Y is third in both. Which document comes first with "
            "k = 60, and which with k = 0?"
        ),
        options={
            "A": "Y with k = 60, X with k = 0: a large k shrinks the gaps "
                 "between ranks, so being found by both lists counts for "
                 "more.",
            "B": "X with both values: a first place always beats two third "
                 "places.",
            "C": "Y with both values: a document found by both lists always "
                 "ends above one found by a single list.",
            "D": "The same document with both values, since k only sets how "
                 "many documents the fused list keeps.",
        },
        right="A",
        why={
            "A": "with k = 60, Y has 2/63 ≈ 0.0317 against X's 1/61 ≈ "
                 "0.0164; with k = 0, X has 1/1 = 1 against Y's 1/3 + 1/3 "
                 "≈ 0.667.",
            "B": "with k = 60 the terms 1/61 and 1/63 are nearly equal, so "
                 "Y's two of them add up to almost twice X's one.",
            "C": "with k = 0 a first place is worth 1 and a third only 1/3, "
                 "so X's single first place beats Y's two thirds.",
            "D": "k sits inside every term 1 / (k + rank); how long the "
                 "fused list is, is a separate setting.",
        },
    ),
    Item(
        number=7,
        topic="reranking with MaxSim",
        text=(
            "A late-interaction model turns a query into two token vectors, "
            "q1 and q2, and a passage into three, p1, p2 and p3. Their dot "
            "products are:\n"
            "\n"
            "| | p1 | p2 | p3 |\n"
            "|---|---|---|---|\n"
            "| q1 | 0.9 | 0.2 | 0.4 |\n"
            "| q2 | 0.1 | 0.3 | 0.7 |\n"
            "\n"
            "What is the passage's MaxSim score for this query [3]?"
        ),
        options={"A": "0.9", "B": "2.6", "C": "1.6", "D": "1.9"},
        right="C",
        why={
            "A": "0.9 is the single best pair; MaxSim gives every query "
                 "token its own best match and adds those up.",
            "B": "2.6 adds all six dot products; MaxSim keeps only the best "
                 "one in each query token's row.",
            "C": "q1 matches p1 best (0.9) and q2 matches p3 best (0.7); "
                 "the score is their sum, 1.6.",
            "D": "1.9 takes the best query token for each passage token; "
                 "MaxSim runs over the query's tokens, not the passage's.",
        },
    ),
    Item(
        number=8,
        topic="the agentic loop",
        text=(
            "Notebook 06's loop searches and reads; when the reader "
            "abstains, it rewrites the query and searches again with a "
            "wider k. Asked a question the pages cannot answer, what makes "
            "the loop stop?"
        ),
        options={
            "A": "Sooner or later the reader quotes some sentence, and an "
                 "answer ends the loop.",
            "B": "The search returns fewer chunks each round, until it "
                 "returns none.",
            "C": "The model's temperature is lowered each round until two "
                 "replies agree.",
            "D": "A limit on the number of rounds, and a stop as soon as a "
                 "rewritten query brings no word the last query lacked.",
        },
        right="D",
        why={
            "A": "for a question with no answer in the pages the reader may "
                 "abstain in every round; a loop that waits for an answer "
                 "could wait forever.",
            "B": "it is the other way round: round r asks for k × r chunks, "
                 "so each search is wider than the one before.",
            "C": "nothing is sampled in the loop, and replies that agree "
                 "say nothing about whether more searching would help.",
            "D": "the round limit caps the cost whatever happens, and a "
                 "rewrite without a new word would search for the same "
                 "terms again, which is no progress.",
        },
    ),
    Item(
        number=9,
        topic="metrics",
        text=(
            "A system returns `[d3, d1, d7]`, best first, for a question "
            "whose only relevant passage is `d1`. With binary relevance, "
            "what is nDCG@3?"
        ),
        options={"A": "0.5", "B": "1.0", "C": "0.63", "D": "0.33"},
        right="C",
        why={
            "A": "0.5 is the reciprocal rank; nDCG discounts a hit at rank "
                 "r by 1 / log2(r + 1), not by 1 / r.",
            "B": "1.0 is hit@3, which ignores where in the top 3 the hit "
                 "sits; nDCG reaches 1 only when d1 is first.",
            "C": "the hit at rank 2 is worth 1 / log2(3) ≈ 0.63, and the "
                 "best possible list, d1 first, is worth 1, so nDCG@3 is "
                 "0.63.",
            "D": "0.33 is precision@3, one relevant passage among three "
                 "results; nDCG compares the list with its best ordering.",
        },
    ),
    Item(
        number=10,
        topic="failure modes",
        text=(
            "A wide search puts the only chunk that holds the answer at "
            "rank 12, the reader is handed the top 5, and its reply is "
            "wrong. Which stage failed, and what would you try first [22]?"
        ),
        options={
            "A": "The reader: it missed an answer it was shown, so work on "
                 "the prompt.",
            "B": "The ranking: the chunk was found but placed below the cut "
                 "(missed top-ranked documents); rerank the wide list or "
                 "hand over more chunks, and watch recall@5.",
            "C": "Missing content: the corpus has no answer, so the system "
                 "should have abstained.",
            "D": "The chunking: the answer was cut in two, so cut the pages "
                 "again.",
        },
        right="B",
        why={
            "A": "the reader never saw that chunk: it got ranks 1 to 5, and "
                 "the answer sat at rank 12.",
            "B": "the chunk exists, is whole and was retrieved; it only "
                 "failed to reach the top 5, which a reranker or a larger "
                 "k can change.",
            "C": "the corpus does hold the answer, since the search found "
                 "a chunk with it at rank 12.",
            "D": "the chunk at rank 12 holds the whole answer, so the "
                 "cutting kept it together; what went wrong is the order.",
        },
    ),
)


def question(number: int) -> Item:
    """The practice question numbered ``number`` (1 to 10)."""
    for item in QUESTIONS:
        if item.number == number:
            return item
    raise ValueError(f"number must be one of 1..{len(QUESTIONS)} "
                     f"(got {number!r})")
