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


# ---------------------------------------------------------------------------
# 01 and 02: why retrieval, the pipeline
# ---------------------------------------------------------------------------

import math as _math
from collections import Counter as _Counter

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import FancyBboxPatch

from . import cost as _cost
from .answer import concepts_of, grounded_answer, sentence_pool
from .metrics import relevant_chunk_ids
from .rag_models import answer_is_correct, grade_answers
from .retrieval import Retriever


def cost_figure(documents, title: str, tokens_per_word: float = _cost.TOKENS_PER_WORD,
                k: int = _cost.TOP_K, chunk_words: int = _cost.CHUNK_WORDS) -> dict:
    """Draw notebook 01's cost plot: prompt tokens per question with the
    whole corpus and with the top `k` chunks, for corpora of 100 words to
    about three million, under ragkit.cost's assumptions (the three that
    an exercise changes are arguments); the help centre (`documents`) is
    the star. Returns the numbers its caption and prose state, rounded as
    they state them."""
    rules = {"k": k, "chunk_words": chunk_words, "tokens_per_word": tokens_per_word}
    sizes = np.logspace(2, 6.5, 200)
    curve = _cost.cost_table(sizes, **rules)
    limit = _cost.stuffing_limit(tokens_per_word=tokens_per_word)
    words = sum(len(doc.text.split()) for doc in documents)
    stuffed, retrieved = _cost.prompt_tokens(words, **rules)
    budget = _cost.CONTEXT_RULE_TOKENS
    pages = limit / _cost.WORDS_PER_PAGE
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    ax.loglog(sizes, curve["stuff_tokens"], color="C3", label="stuff the whole corpus")
    ax.loglog(sizes, curve["retrieve_tokens"], color="C0",
              label=f"retrieve the top {k} chunks of {chunk_words} words")
    ax.axhline(budget, color="grey", ls="--",
               label=f"{budget:,} tokens: the size rule of thumb [6]")
    ax.axvline(limit, color="grey", ls=":")
    ax.plot(words, stuffed, "k*", ms=12, label="the help centre")
    ax.annotate(f"stuffing stops fitting\nat {limit:,.0f} words\n(about {pages:.0f} pages)",
                xy=(limit, budget), xytext=(limit * 1.6, 8_000),
                arrowprops={"arrowstyle": "->"})
    ax.set(xlabel="corpus size (words)", ylabel="prompt tokens per question", title=title)
    ax.text(0.01, 0.97, f"the notebook's own arithmetic: {tokens_per_word} tokens per word, "
            f"{_cost.QUESTION_WORDS}-word question", transform=ax.transAxes, va="top",
            style="italic", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(0, 0.92), fontsize=9)
    plt.show()
    at_limit = _cost.prompt_tokens(limit, **rules)  # stuffing fills the budget here
    return {"limit words": round(limit), "limit pages": round(pages),
            "retrieved tokens": round(at_limit[1], 1),
            "times smaller": round(at_limit[0] / at_limit[1]),
            "help words": words, "help stuffed": round(stuffed, 1),
            "help retrieved": round(retrieved, 1),
            "budget %": round(100 * stuffed / budget, 1),
            "help ratio": round(stuffed / retrieved, 1)}


def feed_table(questions, feeds: dict) -> pd.DataFrame:
    """One row per feed (name -> a function from a question's text to its
    chunks): how many questions the mock reader answers, how many right,
    and the mean words handed over, from ragkit.rag_models.grade_answers."""
    rows = {}
    for name, fetch in feeds.items():
        graded = grade_answers(questions, fetch)
        rows[name] = {"answered": sum(graded["answered"]),
                      "correct": sum(graded["correct"]),
                      "words per question": float(np.mean(
                          graded["context_words"]))}
    return pd.DataFrame.from_dict(rows, orient="index")


def missed_questions(questions, feeds: dict, chunks) -> pd.DataFrame:
    """The questions that at least one feed does not answer right, one row
    each (index: qid, in the questions' order). Per feed, what the reader
    did (`right`, `wrong`: it quoted a sentence without the gold answer,
    or `declined`) and whether the chunks it was handed hold the gold
    chunk of `chunks`; then `most shared`, the most concept words any
    sentence of `chunks` shares with the question (the reader needs 2)."""
    if not questions:
        raise ValueError("questions must hold at least one question")
    pool = sentence_pool(chunks)
    rows = {}
    for q in questions:
        gold = set(relevant_chunk_ids(chunks, q.answer))
        row = {}
        for name, fetch in feeds.items():
            handed = fetch(q.question)
            answer = grounded_answer(q.question, handed)
            right, said = answer_is_correct(answer, q.answer), not answer.abstained
            row[name] = "right" if right else "wrong" if said else "declined"
            row[f"gold in {name}"] = bool(gold & {c.chunk_id for c in handed})
        wanted = concepts_of(q.question)
        row["most shared"] = max(len(wanted & found) for _, _, found in pool)
        rows[q.qid] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table[(table[list(feeds)] != "right").any(axis=1)]


def reader_table(question: str, contexts: dict, words, sentences: dict
                 ) -> pd.DataFrame:
    """How the mock reader weighs sentences in different company: one row
    per context (label -> the chunks handed over), with the number of
    candidate sentences, how many of them hold each concept of `words`,
    the score of each sentence named in `sentences` (column -> chunk id;
    NaN when it shares fewer than 2 concepts with the question) and the
    chunk the reader quotes. A shared concept c weighs ln(1 + n / df[c])
    for n sentences of which df[c] hold it, as in ragkit.answer."""
    wanted = concepts_of(question)
    rows = {}
    for label, chunks in contexts.items():
        pool = sentence_pool(chunks)
        df = _Counter(c for _, _, found in pool for c in found)
        scores = {}
        for chunk_id, _, found in pool:
            shared = sorted(wanted & found)
            if len(shared) >= 2:  # fewer shared concepts: not a candidate
                score = _math.fsum(_math.log(1 + len(pool) / df[c])
                                   for c in shared)
                scores[chunk_id] = max(score, scores.get(chunk_id, 0.0))
        row = {"sentences": len(pool)}
        row.update({f"df {word}": df[word] for word in words})
        row.update({name: scores.get(chunk_id, float("nan"))
                    for name, chunk_id in sentences.items()})
        row["quoted"] = (grounded_answer(question, chunks).citations or [None])[0]
        rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def trap_table(unanswerable, fetch) -> pd.DataFrame:
    """The reader's reply to each question the corpus cannot answer, from
    the chunks `fetch` hands it (index: qid), and the page of the chunk it
    cites (None when it abstains)."""
    rows = {}
    for u in unanswerable:
        answer = grounded_answer(u.question, fetch(u.question))
        page = None if answer.abstained else answer.citations[0].split("#")[0]
        rows[u.qid] = {"question": u.question, "reply": answer.text,
                       "page": page}
    return pd.DataFrame.from_dict(rows, orient="index")



def pipeline_figure(index_steps, query_steps, title: str) -> tuple[int, int]:
    """Draw notebook 02's pipeline: the index-time steps as a lane of boxes
    above, the query-time steps below, read left to right, and a dashed
    arrow where the second query step (retrieval) reads the last index
    step's output. Returns the boxes drawn in each lane."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    lanes = [("index time: once per document change", index_steps, 1.0, "C0"),
             ("query time: for every question", query_steps, 0.0, "C1")]
    drawn = []
    for label, steps, y, colour in lanes:
        ax.text(-0.1, y + 0.34, label, fontsize=10, weight="bold")
        for n, step in enumerate(steps):
            x = 1.95 * n
            ax.add_patch(FancyBboxPatch((x, y - 0.2), 1.5, 0.4, boxstyle="round,pad=0.04",
                                        facecolor=colour, alpha=0.25, edgecolor=colour))
            ax.text(x + 0.75, y, step, ha="center", va="center", fontsize=9)
            if n:  # an arrow from the previous box
                ax.annotate("", xy=(x - 0.06, y), xytext=(x - 0.39, y),
                            arrowprops={"arrowstyle": "->"})
        drawn.append(sum(isinstance(p, FancyBboxPatch) for p in ax.patches) - sum(drawn))
    index_x = 1.95 * (len(index_steps) - 1)
    ax.annotate("", xy=(1.95 + 0.75, 0.25), xytext=(index_x + 0.75, 0.74),
                arrowprops={"arrowstyle": "->", "ls": "--"})
    ax.text(index_x + 0.95, 0.5, "query-time retrieval\nreads the index", fontsize=9,
            style="italic")
    ax.set(xlim=(-0.2, 1.95 * max(len(index_steps), len(query_steps)) - 0.15),
           ylim=(-0.35, 1.5))
    ax.axis("off")
    ax.set_title(title)
    plt.show()
    return tuple(drawn)


def fates(questions, chunks, mode: str, ks) -> pd.DataFrame:
    """What became of each question (rows: qid) when the top k chunks of a
    `mode` search over `chunks` go to the mock reader, one column per k:
    `right`; `reader` when a relevant chunk was handed over and the answer
    is still wrong or declined; `retrieval` when none was."""
    retriever = Retriever(chunks)
    rows = {}
    for q in questions:
        gold = set(relevant_chunk_ids(retriever.chunks, q.answer))
        row = {}
        for k in ks:
            ids = retriever.search(q.question, k=k, mode=mode)
            answer = grounded_answer(q.question, [retriever.by_id[i] for i in ids])
            right = answer_is_correct(answer, q.answer)
            row[k] = "right" if right else "reader" if gold & set(ids) else "retrieval"
        rows[q.qid] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def ceiling_figure(fates_by_mode: dict, title: str) -> dict:
    """Draw notebook 02's ceiling plot from `fates` tables (mode -> table):
    per k, the share of questions whose relevant chunk was handed over
    (recall@k when each question has one relevant chunk) and the share
    answered right, with the reader's and retrieval's failures shaded.
    Returns, per mode, the counts of questions (found, right) per k."""
    if not fates_by_mode:
        raise ValueError("fates_by_mode must hold at least one mode's table")
    fig, axes = plt.subplots(1, len(fates_by_mode), figsize=(10, 3.8), sharey=True,
                             layout="constrained")
    counts = {}
    for ax, (mode, table) in zip(np.atleast_1d(axes), fates_by_mode.items()):
        ks = list(table.columns)
        found = [(table[k] != "retrieval").sum() for k in ks]
        right = [(table[k] == "right").sum() for k in ks]
        recall, accuracy = np.divide(found, len(table)), np.divide(right, len(table))
        ax.plot(ks, recall, "o-", color="C0", label="recall@k")
        ax.plot(ks, accuracy, "s-", color="C1", label="answer accuracy")
        ax.fill_between(ks, accuracy, recall, color="C1", alpha=0.15, label="reader failures")
        ax.fill_between(ks, recall, 1, color="grey", alpha=0.15, label="retrieval failures")
        ax.set(title=mode, xlabel="k (chunks handed to the reader)", xticks=ks,
               ylim=(0, 1.05))
        counts[mode] = {"found": [int(n) for n in found], "right": [int(n) for n in right]}
    first = np.atleast_1d(axes)[0]
    first.set_ylabel(f"share of the {len(table)} questions")
    first.legend(loc="lower right")
    fig.suptitle(title)
    plt.show()
    return counts




# ---------------------------------------------------------------------------
# 03: indexing
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 04: retrievers
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 05: reranking
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 06: agentic RAG
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 07: measuring
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 08: failure modes
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 09: the project
# ---------------------------------------------------------------------------

from .evaluation import cluster_bootstrap_interval, paired_difference
from .failures import COLUMN, record_question, triage


def outcome_counts(table: pd.DataFrame, n_answerable: int, n_unanswerable: int
                   ) -> pd.DataFrame:
    """The ablation table's outcome shares as counts of questions (a small
    test set reads better in questions than in shares)."""
    counts = {"step": table["step"]}
    for column, n in [("correct", n_answerable), ("wrong", n_answerable),
                      ("abstained", n_answerable), ("refused", n_unanswerable)]:
        counts[column] = (table[column] * n).round().astype(int)
    return pd.DataFrame(counts)


def per_question(runs: pd.DataFrame, step: str, score: str) -> tuple[np.ndarray, list]:
    """One step's score on each answerable question of `runs` (`recall`, or
    `correct` as 1.0 / 0.0), in the runs' order, and those questions' qids."""
    if score not in ("recall", "correct"):
        raise ValueError(f"score must be 'recall' or 'correct' (got {score!r})")
    part = runs[(runs["step"] == step) & runs["answerable"]]
    if part.empty:
        raise ValueError(f"step {step!r} has no answerable rows in runs")
    values = (part["outcome"] == "correct") if score == "correct" else part["recall"]
    return values.to_numpy(dtype=float), list(part["qid"])


def _pages_of(qids, pages: dict) -> list:
    """The page of each question, in order; every question needs one."""
    missing = [q for q in qids if q not in pages]
    if missing:
        raise ValueError(f"pages gives no page for {len(missing)} question(s), "
                         f"such as {missing[0]!r}")
    return [pages[q] for q in qids]


def ablation_figure(runs: pd.DataFrame, pages: dict, title: str) -> pd.DataFrame:
    """Draw notebook 09's ablation bars: per step, recall@3 and the share of
    right replies over the answerable questions, each with a 95% bootstrap
    interval that redraws whole pages (`pages`: qid -> page; 2,000 draws,
    seed 9). Returns the bars: step, score, mean, low, high."""
    steps = list(dict.fromkeys(runs["step"]))
    rows = []
    for step in steps:
        for score in ["recall", "correct"]:
            values, qids = per_question(runs, step, score)
            low, high = cluster_bootstrap_interval(values, _pages_of(qids, pages),
                                                   level=0.95, n_boot=2000, seed=9)
            rows.append({"step": step, "score": score, "mean": values.mean(),
                         "low": low, "high": high})
    bands = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    x = np.arange(len(steps))
    for shift, score, colour, label in [(-0.2, "recall", "#6fa8dc", "recall@3"),
                                        (0.2, "correct", "#93c47d", "replies correct")]:
        part = bands[bands["score"] == score]
        errors = [part["mean"] - part["low"], part["high"] - part["mean"]]
        ax.bar(x + shift, part["mean"], width=0.4, color=colour, label=label,
               yerr=errors, capsize=3)
    ax.set_xticks(x, [s.replace("+", "+\n") for s in steps], fontsize=8)
    ax.set_ylim(0, 1.2)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel(f"share of the {len(values)} answerable questions")
    ax.legend(loc="upper left", ncol=2)
    ax.set_title(title)
    plt.tight_layout()
    plt.show()
    return bands


def paired_gains(runs: pd.DataFrame, pairs, pages: dict) -> pd.DataFrame:
    """For each (before, after) pair of steps and each score, the mean gain
    per answerable question, its paired 95% bootstrap interval drawing
    whole pages (`pages`: qid -> page; seed 9), the same interval had
    single questions been drawn (for comparison only), and how many
    questions went up and down."""
    rows = []
    for before, after in pairs:
        for score in ["recall", "correct"]:
            (a, qids), (b, _) = per_question(runs, after, score), per_question(runs, before,
                                                                              score)
            mean, low, high = paired_difference(a, b, seed=9,
                                                clusters=_pages_of(qids, pages))
            _, q_low, q_high = paired_difference(a, b, seed=9)  # beside the clustered one
            rows.append({"from": before, "to": after, "score": score, "gain": mean,
                         "low": low, "high": high, "low by question": q_low,
                         "high by question": q_high, "up": int((a > b).sum()),
                         "down": int((a < b).sum())})
    return pd.DataFrame(rows)


def failure_table(retriever, runs: pd.DataFrame, step: str, questions: dict) -> pd.DataFrame:
    """Every question one step of `runs` got wrong (an answerable one without
    a right reply, or an unanswerable one it answered), re-run through
    ragkit.failures.record_question with `step` as the search mode (so a
    step named after a Retriever mode, such as "bm25"; k=3, depth 50) and
    triaged: qid, the first gold chunk's rank, the stage and its column of
    notebook 08's Figure 8.1. `questions` maps qid -> question."""
    part = runs[runs["step"] == step]
    if part.empty:
        raise ValueError(f"step {step!r} has no rows in runs")
    failed = part[part["answerable"] & (part["outcome"] != "correct")
                  | ~part["answerable"] & (part["outcome"] != "abstained")]
    rows = []
    for qid in failed["qid"]:
        q = questions[qid]
        record = record_question(retriever, q, getattr(q, "answer", None), mode=step,
                                 k=3, depth=50)
        stage = triage(record)
        rows.append({"qid": qid, "gold rank": record["gold_rank"], "stage": stage,
                     "column": COLUMN[stage]})
    return pd.DataFrame(rows)
