"""Figures and bookkeeping the lab notebooks draw, kept out of their cells.

A notebook's lecture is in its prose and in the code a student writes; the
matplotlib calls that lay out a figure, and the loops that gather a table
for it, are not what the week teaches. They live here, one function per
figure or table, called in one line from the notebook (the way d2l keeps
its plotting in its package). Each function takes the numbers to show and
returns what the notebook's check cell asserts, so the figure's claims are
still computed and checked where the student reads them.

This module imports matplotlib and the rest of ragkit; no other ragkit
module imports it, so the grader and the retrieval code never load it.
The sections follow the notebooks.
"""
from __future__ import annotations

import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import FancyBboxPatch

from .agent import agent_answer
from .answer import concepts_of, grounded_answer, sentence_pool
from .bm25 import BM25Index
from .checks import check_int, check_str
from .fusion import rrf
from .metrics import first_relevant_rank, relevant_chunk_ids
from .reference import fresh
from .text import split_sentences, tokenize


# ---------------------------------------------------------------------------
# 01 and 02: why retrieval, the pipeline
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 03: indexing
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 04: retrievers
# ---------------------------------------------------------------------------

def idf_forms(n_chunks: int) -> pd.DataFrame:
    """The classic IDF and the course's "1 +" IDF of a word found in
    `n_t` of `n_chunks` chunks, for every `n_t` from 0 to `n_chunks`
    (index `n_t`; columns "classic" and "with 1 +")."""
    check_int(n_chunks, "n_chunks")
    n_t = np.arange(n_chunks + 1)
    ratio = (n_chunks - n_t + 0.5) / (n_t + 0.5)
    return pd.DataFrame({"classic": np.log(ratio), "with 1 +": np.log1p(ratio)},
                        index=pd.Index(n_t, name="n_t"))


def show_hits(hits, text_of: dict, width: int = 60) -> None:
    """Print a search's `(chunk_id, score)` pairs, one a line, with the
    start of each chunk's text."""
    for chunk_id, score in hits:
        print(f"{score:6.3f}  {chunk_id:9s} {text_of[chunk_id][:width]}")


def rank_table(chunks, questions, rankers: dict, k: int = 10) -> pd.DataFrame:
    """The rank of the first gold chunk of every question (the first chunk
    of `chunks` that holds its answer) in each ranker's top `k`, `<NA>`
    when none is there. `rankers` maps a column name to a function
    `(text, k)` that returns ids, or `(id, score)` pairs, best first.
    One row per question (index `qid`), a column "kind", then one Int64
    column per ranker."""
    rows = {}
    for q in questions:
        gold = relevant_chunk_ids(chunks, q.answer)
        rows[q.qid] = {"kind": q.kind}
        for name, ranker in rankers.items():
            ranked = [hit[0] if isinstance(hit, tuple) else hit
                      for hit in ranker(q.question, k)]
            rows[q.qid][name] = first_relevant_rank(ranked, gold)
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "qid"
    return table.astype({name: "Int64" for name in rankers})


def mrr_by_kind(ranks: pd.DataFrame) -> pd.DataFrame:
    """The mean reciprocal rank (a miss counts 0) of each ranker of a
    `rank_table`, by kind of question, and over all of them (row "all")."""
    recip = (1 / ranks.drop(columns="kind").astype(float)).fillna(0.0)
    by_kind = recip.groupby(ranks["kind"]).mean()
    by_kind.loc["all"] = recip.mean()
    return by_kind


def rrf_figure(lists: dict, title: str, k: int = 60) -> pd.DataFrame:
    """Fuse the ranked lists in `lists` (a name -> ids, best first) with
    RRF and draw each fused score as stacked bars, one part per list,
    labelled with its sum. Returns the fused table: one row per id in
    fused order, the rank in each list (`<NA>` when absent, columns
    "<name> rank") and the column "rrf score"."""
    check_str(title, "title")
    fused = rrf(list(lists.values()), k=k)
    ids = [doc for doc, _ in fused]
    table = pd.DataFrame(
        {f"{name} rank": pd.array([ranked.index(d) + 1 if d in ranked else None
                                   for d in ids], dtype="Int64")
         for name, ranked in lists.items()}, index=ids)
    table["rrf score"] = [score for _, score in fused]
    fig, ax = plt.subplots(figsize=(8, 3.4))
    left = np.zeros(len(ids))
    for colour, (name, ranked) in enumerate(lists.items()):
        share = [0.0 if pd.isna(r) else 1 / (k + r) for r in table[f"{name} rank"]]
        ax.barh(ids, share, left=left, color=f"C{colour}",
                label=f"{name} list: " + ", ".join(ranked))
        left += share
    for row, doc in enumerate(ids):
        terms = " + ".join(f"1/{k + r}" for r in table.iloc[row, :len(lists)]
                           if not pd.isna(r))
        ax.text(left[row] + 0.0004, row, f"{terms} = {left[row]:.4f}",
                va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.48 * left.max())  # room for the sums written after the bars
    ax.set_xlabel("fused score")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    plt.tight_layout()
    plt.show()
    return table


def rival_table(texts, ids, question: str, rivals: list[str]) -> pd.DataFrame:
    """Why BM25 orders the chunks `rivals` as it does for `question`, over
    the corpus `texts` (named by `ids`): each one's token count, the query
    tokens it shares, in how many chunks each of those is found, and its
    score with counts ignored (k1 = 0) and with the default settings."""
    ids = list(ids)
    default, flat = BM25Index(texts, ids), BM25Index(texts, ids, k1=0.0)
    text_of = dict(zip(ids, texts))
    asked = set(tokenize(question))
    shared = {c: sorted(set(tokenize(text_of[c])) & asked) for c in rivals}
    rows = [ids.index(c) for c in rivals]
    return pd.DataFrame({
        "tokens": [len(tokenize(text_of[c])) for c in rivals],
        "shared with the question": [shared[c] for c in rivals],
        "chunks holding each": [[int(default.df[default.vocab[t]]) for t in shared[c]]
                                for c in rivals],
        "score, k1=0": [round(float(flat.scores(question)[r]), 3) for r in rows],
        "score, default": [round(float(default.scores(question)[r]), 3) for r in rows],
    }, index=rivals)




# ---------------------------------------------------------------------------
# 05: reranking
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 06: agentic RAG
# ---------------------------------------------------------------------------

def top_chunks_table(cases, by_id: dict, k: int = 3) -> pd.DataFrame:
    """What a single search hands over for each case `(text, stage name,
    search)`: the ids of the top `k` and the text of the first chunk (one
    row per case, in order)."""
    rows = []
    for text, stage, search in cases:
        ids = list(search(text, k))
        rows.append({"input": text, "first stage": stage, f"top {k}": ids,
                     "top chunk says": by_id[ids[0]].text if ids else "(nothing retrieved)"})
    return pd.DataFrame(rows)


# Figure 6.1's boxes: name -> (x, y, label, colour); red marks a stop rule
LOOP_BOXES = {
    "ask": (2.6, 9.2, "question", "#dddddd"),
    "d1": (2.6, 7.8, "decision 1: needs_retrieval?", "#cfe2f3"),
    "chat": (7.4, 7.8, "reply without searching", "#d9ead3"),
    "search": (2.6, 6.4, "round r: search(query, k * r)", "#fff2cc"),
    "d3": (2.6, 5.0, "decision 3: grounded_answer\nenough evidence?", "#cfe2f3"),
    "done": (7.4, 5.0, "answer + citation", "#d9ead3"),
    "limit": (2.6, 3.6, "r = max_rounds?", "#fff2cc"),
    "stop1": (7.4, 3.6, "stop rule 1: round limit\nabstain", "#f4cccc"),
    "d2": (2.6, 2.2, "decision 2: rewrite_query\nany new word?", "#cfe2f3"),
    "stop2": (7.4, 2.2, "stop rule 2: no new words\nabstain", "#f4cccc"),
}
LOOP_ARROWS = [("ask", "d1", ""), ("d1", "chat", "no"), ("d1", "search", "yes"),
               ("search", "d3", ""), ("d3", "done", "yes"), ("d3", "limit", "no"),
               ("limit", "stop1", "yes"), ("limit", "d2", "no"), ("d2", "stop2", "no")]
STOP_COLOUR = "#f4cccc"


def agent_loop_figure(title: str) -> pd.DataFrame:
    """Draw the agentic loop as a flow chart of `LOOP_BOXES`, with the way
    back from decision 2 to the search. Returns the boxes as drawn: one row
    per box (index: its name), with its "label" and whether it is a
    "stop rule" (drawn in red)."""
    check_str(title, "title")
    width, height = 3.6, 0.9
    fig, ax = plt.subplots(figsize=(9, 7.2))
    for x, y, label, colour in LOOP_BOXES.values():
        ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                    boxstyle="round,pad=0.05", facecolor=colour,
                                    edgecolor="black"))
        ax.text(x, y, label, ha="center", va="center", fontsize=9)
    for start, end, label in LOOP_ARROWS:
        (x0, y0, *_), (x1, y1, *_) = LOOP_BOXES[start], LOOP_BOXES[end]
        sideways = y0 == y1  # a horizontal arrow leaves from the right side
        tail = (x0 + width / 2, y0) if sideways else (x0, y0 - height / 2)
        head = (x1 - width / 2, y1) if sideways else (x1, y1 + height / 2)
        ax.annotate("", xy=head, xytext=tail, arrowprops={"arrowstyle": "->", "lw": 1.3})
        where = ((tail[0] + head[0]) / 2, tail[1] + 0.12) if sideways else \
            (tail[0] + 0.12, (tail[1] + head[1]) / 2)
        ax.text(*where, label, fontsize=8, ha="left", va="bottom")
    # the way back: a new query, and one more round with a wider search
    left = 2.6 - width / 2
    ax.plot([left, left - 0.6, left - 0.6], [2.2, 2.2, 6.4], color="black", lw=1.3)
    ax.annotate("", xy=(left, 6.4), xytext=(left - 0.6, 6.4),
                arrowprops={"arrowstyle": "->", "lw": 1.3})
    ax.text(left - 0.7, 4.3, "yes: next round\nwith the new query", rotation=90,
            ha="right", va="center", fontsize=8)
    ax.set_xlim(-0.6, 9.6)
    ax.set_ylim(1.4, 9.9)
    ax.axis("off")
    ax.set_title(title)
    plt.tight_layout()
    plt.show()
    drawn = [patch for patch in ax.patches if isinstance(patch, FancyBboxPatch)]
    labels = [t.get_text() for t in ax.texts][:len(drawn)]
    return pd.DataFrame({"label": labels,
                         "stop rule": [box[3] == STOP_COLOUR for box in LOOP_BOXES.values()]},
                        index=list(LOOP_BOXES))


def sentence_table(chunks) -> pd.DataFrame:
    """Every sentence of `chunks`, in order, beside its chunk's id and
    context note."""
    return pd.DataFrame([{"chunk": c.chunk_id, "note": c.context, "sentence": s}
                         for c in chunks for s in split_sentences(c.text)])


def score_table(question: str, chunks, min_overlap: int = 2) -> pd.DataFrame:
    """Every candidate sentence of `chunks` as `ragkit.answer.grounded_answer`
    weighs it for `question`: the concepts it shares with the question
    ("matches", sorted), its score, and whether it is "eligible"."""
    wanted = concepts_of(question)
    pool = sentence_pool(chunks)
    df = Counter(c for _, _, found in pool for c in found)
    rows = []
    for chunk_id, sentence, found in pool:
        matches = sorted(wanted & found)
        score = math.fsum(math.log(1 + len(pool) / df[c]) for c in matches)
        rows.append({"chunk": chunk_id, "sentence": sentence, "matches": matches,
                     "score": round(score, 3), "eligible": len(matches) >= min_overlap})
    return pd.DataFrame(rows)


def verdict(q, answer, chunks) -> str:
    """"declined" when `answer` abstains; else "right" when it cites a
    chunk of `chunks` that holds `q`'s gold answer, "wrong" otherwise (an
    unanswerable question, one without `.answer`, is never right)."""
    if answer.abstained:
        return "declined"
    gold = relevant_chunk_ids(chunks, q.answer) if hasattr(q, "answer") else []
    return "right" if answer.citations[0] in gold else "wrong"


def one_shot_table(questions, top, chunks) -> pd.DataFrame:
    """One search, one answer: `grounded_answer` on `top(question)` for
    every question. One row per question (index `qid`): "answerable",
    "cited", "verdict" (see `verdict`) and the "answer" text."""
    rows = []
    for q in questions:
        answer = grounded_answer(q.question, top(q.question))
        rows.append({"qid": q.qid, "answerable": hasattr(q, "answer"),
                     "cited": ", ".join(answer.citations),
                     "verdict": verdict(q, answer, chunks), "answer": answer.text})
    return pd.DataFrame(rows).set_index("qid")


def chain_figure(title: str, per_step=(0.99, 0.95, 0.9, 0.8), steps: int = 10) -> pd.DataFrame:
    """Draw the chance that every step of a chain is right, `p ** n`, for
    chains of 1 to `steps` steps at each `p` of `per_step`, assuming
    independent steps, with 0.9^5 marked. Returns the curves (index: the
    number of steps; one column per `p`)."""
    check_str(title, "title")
    check_int(steps, "steps")
    n = np.arange(1, steps + 1)
    curves = pd.DataFrame({p: p ** n for p in per_step}, index=pd.Index(n, name="steps"))
    fig, ax = plt.subplots(figsize=(7, 4))
    for p in per_step:
        ax.plot(n, curves[p], marker="o", label=f"{p:.0%} per step")
    ax.annotate(f"0.9^5 = {0.9 ** 5:.2f}", xy=(5, 0.9 ** 5), xytext=(6.2, 0.78),
                arrowprops={"arrowstyle": "->"})
    ax.set_xlabel("number of steps in the chain")
    ax.set_ylabel("probability that every step is right")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend()
    plt.tight_layout()
    plt.show()
    return curves


def frozen_rewrite_run(question: str, search, by_id: dict, max_rounds: int):
    """Run the loop of a private copy of `ragkit.agent` whose rewriter
    hands the question back unchanged. Returns the width of every search
    it made, its answer and its trace."""
    frozen = fresh().agent
    frozen.rewrite_query = lambda question, chunks: question
    widths = []

    def counted(query, n):
        widths.append(n)
        return search(query, n)

    answer, trace = frozen.agent_answer(question, counted, by_id, max_rounds=max_rounds)
    return widths, answer, trace


def loop_runs(settings: dict, questions, by_id: dict, chunks) -> dict:
    """`agent_answer` on every question under each setting (a name ->
    `(search, max_rounds)`). Returns a name -> a DataFrame with one row per
    question (index `qid`): "answerable", "rounds" (the searches it made)
    and the "verdict" of its final answer."""
    runs = {}
    for name, (search, max_rounds) in settings.items():
        rows = []
        for q in questions:
            answer, trace = agent_answer(q.question, search, by_id, max_rounds=max_rounds)
            rows.append({"qid": q.qid, "answerable": hasattr(q, "answer"),
                         "rounds": len(trace), "verdict": verdict(q, answer, chunks)})
        runs[name] = pd.DataFrame(rows).set_index("qid")
    return runs


def loop_counts(runs: dict) -> pd.DataFrame:
    """The counts Figure 6.3 draws, one row per run of `loop_runs`."""
    def count(run, answerable, said):
        return int(((run["answerable"] == answerable) & (run["verdict"] == said)).sum())

    return pd.DataFrame({name: {
        "answerable answered right": count(run, True, "right"),
        "answerable answered wrong": count(run, True, "wrong"),
        "unanswerable declined": count(run, False, "declined"),
        "unanswerable answered": count(run, False, "wrong"),
        "questions with 2+ rounds": int((run["rounds"] > 1).sum()),
        "search calls": int(run["rounds"].sum()),
    } for name, run in runs.items()}).T


def loop_figure(stats: pd.DataFrame, n_answerable: int, n_unanswerable: int,
                title: str) -> list[float]:
    """Draw `loop_counts` in three panels: the answerable questions, the
    unanswerable ones (each panel scaled to its own population), and the
    search calls against one search per question. Returns the top of the
    first two panels' y axes."""
    check_str(title, "title")
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    x = np.arange(len(stats.index))
    panels = [("answerable", n_answerable,
               [("answerable answered right", "right", "C0"),
                ("answerable answered wrong", "wrong", "C4")]),
              ("unanswerable", n_unanswerable,
               [("unanswerable declined", "declined", "C1"),
                ("unanswerable answered", "answered (all wrong)", "C3")])]
    for ax, (population, n, bars) in zip(axes, panels):
        for shift, (column, label, colour) in zip([-0.2, 0.2], bars):
            ax.bar(x + shift, stats[column], 0.4, color=colour, label=label)
        ax.set_ylim(0, 1.3 * n)
        ax.set_ylabel(f"{population} questions (of {n})")
        ax.set_title(f"the {n} {population} questions", fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
    calls = axes[2]
    calls.bar(x, stats["search calls"], 0.5, color="C2")
    calls.axhline(n_answerable + n_unanswerable, color="grey", ls="--",
                  label="one search per question")
    calls.set_ylabel(f"search calls, all {n_answerable + n_unanswerable} questions")
    calls.set_title("what it spends", fontsize=10)
    calls.legend(fontsize=8, loc="lower right")
    for ax in axes:
        ax.set_xticks(x, list(stats.index), rotation=15)
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()
    return [axes[0].get_ylim()[1], axes[1].get_ylim()[1]]




# ---------------------------------------------------------------------------
# 07: measuring
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 08: failure modes
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 09: the project
# ---------------------------------------------------------------------------
