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

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import FancyBboxPatch

from . import ann, chunking, rerank
from .bm25 import BM25Index
from .metrics import first_relevant_rank, relevant_chunk_ids
from .retrieval import evaluate
from .text import split_sentences, tokenize


def _check_title(title: object) -> None:
    """A figure's title is a str that starts with its label, "Figure N.M:"
    (the site reads a figure's alt text from it)."""
    if not isinstance(title, str):
        raise TypeError(f"title must be a str (got {type(title).__name__})")
    if not title.startswith("Figure "):
        raise ValueError(f"title must start with 'Figure N.M:' (got {title[:30]!r})")


# ---------------------------------------------------------------------------
# 01 and 02: why retrieval, the pipeline
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 03: indexing
# ---------------------------------------------------------------------------

def _word_spans(words: list[str], pieces: list[str]) -> list[tuple[int, int]]:
    """(first, end) word positions of each piece in `words`, searched left
    to right (a piece of an overlapping chunker starts inside the last)."""
    spans, low = [], 0
    for piece in pieces:
        part = piece.split()
        first = next(i for i in range(low, len(words))
                     if words[i:i + len(part)] == part)
        spans.append((first, first + len(part)))
        low = first + 1
    return spans


def chunker_figure(notice: str, title: str) -> dict:
    """Figure 3.1: the package's three chunkers on one notice, one row each,
    one bar per chunk over the word positions it covers (overlapping
    windows alternate between two lanes), dotted lines at sentence ends.
    Returns the counts the prose reads off it."""
    _check_title(title)
    words = notice.split()
    rows = [("fixed, size 10", chunking.chunk_fixed(notice, 10)),
            ("overlap 3, size 10", chunking.chunk_fixed(notice, 10, 3)),
            ("sentences, max 12", chunking.chunk_sentences(notice, 12))]
    ends = np.cumsum([len(s.split()) for s in split_sentences(notice)])
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for row, (label, pieces) in enumerate(rows):
        for n, (first, end) in enumerate(_word_spans(words, pieces)):
            lane = (0.1 if n % 2 else -0.1) if "overlap" in label else 0.0
            ax.barh(row + lane, end - first, left=first, height=0.32,
                    color=f"C{n}", alpha=0.75, edgecolor="black")
            ax.text((first + end) / 2, row + lane, str(n), ha="center",
                    va="center", fontsize=8)
    for end in ends[:-1]:
        ax.axvline(end, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("word position in the notice")
    ax.set_title(title)
    plt.tight_layout()
    plt.show()
    return {"words": len(words), "sentences": len(ends),
            "chunks": [len(pieces) for _, pieces in rows],
            "last window words": len(rows[0][1][-1].split())}


def answer_survival(questions: list, docs: list, size: int = 12) -> pd.DataFrame:
    """Section 3's table: per question (index `qid`), its gold answer and
    whether some chunk of its page still holds the whole answer (case
    ignored) after fixed windows of `size` words and after the sentence
    chunker with a budget of `size`. Prints the two counts."""
    pages = {doc.doc_id: doc.text for doc in docs}

    def holds(pieces: list[str], answer: str) -> bool:
        return any(answer.lower() in piece.lower() for piece in pieces)

    table = pd.DataFrame([
        {"qid": q.qid, "answer": q.answer,
         f"fixed_{size}": holds(chunking.chunk_fixed(pages[q.doc_id], size), q.answer),
         f"sentence_{size}": holds(chunking.chunk_sentences(pages[q.doc_id], size),
                                   q.answer)}
        for q in questions]).set_index("qid")
    held = table[[f"fixed_{size}", f"sentence_{size}"]].sum().to_dict()
    print("answers held whole by some chunk:", held, "of", len(table))
    return table


def cut_windows(question, docs: list, size: int = 12) -> list[int]:
    """Print the fixed windows of `size` words of the question's page
    that the first occurrence of its gold answer spans (case ignored),
    then the answer; return the windows' numbers."""
    page = next(doc.text for doc in docs if doc.doc_id == question.doc_id)
    at = page.lower().find(question.answer.lower())
    if at < 0:
        raise ValueError("question's answer does not occur on its page")
    first_word = len(page[:at].split())
    last_word = first_word + len(question.answer.split()) - 1
    windows = chunking.chunk_fixed(page, size)
    numbers = list(range(first_word // size, last_word // size + 1))
    for n in numbers:
        print(f"window {n}: {windows[n]}")
    print("gold answer:", question.answer)
    return numbers


def failure_drops(failure_pct: dict[str, float]) -> pd.DataFrame:
    """A failure rate (%) per set-up, first the baseline, and its drop
    against the baseline in per cent, rounded to whole per cent."""
    rate = pd.Series(failure_pct, dtype=float)
    return pd.DataFrame({"failure %": rate,
                         "drop vs plain %": ((1 - rate / rate.iloc[0]) * 100).round(0)})


def bm25_top(chunks: list, query: str, k: int = 3) -> list[str]:
    """Ids of BM25's top `k` chunks, searching each chunk's indexed text."""
    index = BM25Index([c.indexed_text for c in chunks], [c.chunk_id for c in chunks])
    return [chunk_id for chunk_id, _ in index.search(query, k)]


def overlap_three_ways(n_words: int, size: int, overlap: int) -> pd.DataFrame:
    """Section 5's overlap arithmetic done three ways, one column each: by
    the formula of the prose, by `chunking.overlap_storage`, and by
    chunking a real text of `n_words` words (the numbers 0, 1, 2, ...).
    Rows: windows, windows without overlap, the last window's first word
    and its length, word slots (every window counted full), words stored,
    and the two extra shares in per cent."""
    step = size - overlap
    windows = 1 + math.ceil((n_words - size) / step)
    last_start = (windows - 1) * step
    formula = [windows, math.ceil(n_words / size), last_start, n_words - last_start,
               windows * size, (windows - 1) * size + n_words - last_start]
    stats = chunking.overlap_storage(n_words, size, overlap)
    package_last = stats["words_stored"] - (stats["chunks"] - 1) * size
    package = [stats["chunks"], stats["chunks_no_overlap"], n_words - package_last,
               package_last, stats["word_slots"], stats["words_stored"]]
    text = " ".join(map(str, range(n_words)))
    cut = chunking.chunk_fixed(text, size, overlap)
    chunked = [len(cut), len(chunking.chunk_fixed(text, size)), int(cut[-1].split()[0]),
               len(cut[-1].split()), len(cut) * size, sum(len(w.split()) for w in cut)]
    table = pd.DataFrame({"by formula": formula, "overlap_storage": package,
                          "by chunking": chunked},
                         index=["windows", "windows without overlap", "last window starts at",
                                "words in the last window", "word slots", "words stored"],
                         dtype=float)
    table.loc["slot share extra %"] = 100 * (table.loc["word slots"] / n_words - 1)
    table.loc["stored share extra %"] = 100 * (table.loc["words stored"] / n_words - 1)
    return table


def overlap_per_page(docs: list, size: int, overlap: int) -> pd.DataFrame:
    """What fixed windows of `size` sharing `overlap` words store, page by
    page (index: the page id), shortest page first; prints the share a
    very long text would approach, overlap / stride."""
    rows = []
    for doc in docs:
        n = len(doc.text.split())
        cost = chunking.overlap_storage(n, size, overlap)
        rows.append({"page": doc.doc_id, "words": n, "windows": cost["chunks"],
                     "words_stored": cost["words_stored"],
                     "extra_pct": 100 * cost["extra_fraction"]})
    limit = 100 * overlap / (size - overlap)
    print(f"long-text limit: {overlap} / {size - overlap} = {limit:.1f}%")
    return pd.DataFrame(rows).sort_values(["words", "page"]).set_index("page")


def exact_search_cost(n_chunks: int, dim: int) -> dict:
    """Print and return what exact search over `n_chunks` float32 vectors
    of `dim` numbers costs: multiply-adds per query, the index's bytes,
    and the bytes of a collection 100 times larger."""
    cost = {"multiply-adds": n_chunks * dim,
            "bytes": chunking.exact_index_bytes(n_chunks, dim),
            "bytes, 100 times the chunks": chunking.exact_index_bytes(100 * n_chunks, dim)}
    print(f"multiply-adds per query: {cost['multiply-adds']:,}")
    print(f"float32 index: {cost['bytes']:,} bytes = {cost['bytes'] / 1e9:.2f} GB "
          f"({cost['bytes'] / 2**30:.2f} GiB)")
    print(f"100 times more chunks: {cost['bytes, 100 times the chunks'] / 1e9:.1f} GB")
    return cost


def topic_vectors(n: int, dim: int, n_topics: int, spread: float, seed: int) -> np.ndarray:
    """`n` float32 unit vectors of `dim` numbers, each a random one of
    `n_topics` random unit directions plus Gaussian noise of scale
    `spread`, scaled back to length 1: texts on one topic sit close."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((n_topics, dim))
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    points = topics[rng.integers(0, n_topics, n)] + spread * rng.standard_normal((n, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32)


def nprobe_sweep(index, queries: np.ndarray, truth: np.ndarray,
                 settings: list[int]) -> pd.DataFrame:
    """One row per `nprobe` in `settings` (the index): recall@k of
    `index.search` against the exact top k `truth`, the true neighbours
    missed, the share of the collection scored (%), and the speed-up in
    comparisons over exact search (every vector, against the centroids
    plus the probed lists)."""
    n_stored, k = int(index.list_sizes.sum()), truth.shape[1]
    gap = ((queries[:, None, :] - index.centroids[None]) ** 2).sum(axis=2)
    probe_order = np.argsort(gap, axis=1, kind="stable")  # as the index ranks lists
    rows = []
    for nprobe in settings:
        found, _ = index.search(queries, k, nprobe)
        scanned = index.list_sizes[probe_order[:, :nprobe]].sum(axis=1).mean()
        recall = ann.neighbour_recall(found, truth)
        rows.append({"nprobe": nprobe, "recall@10": recall,
                     "missed": int(np.rint((1 - recall) * truth.size)),
                     "scored_pct": 100 * scanned / n_stored,
                     "speedup": n_stored / (index.n_lists + scanned)})
    return pd.DataFrame(rows).set_index("nprobe")


def nprobe_figure(sweep: pd.DataFrame, title: str) -> tuple:
    """Figure 3.2: recall@10 against the share scored (log scale, left)
    and against the speed-up (right), each point labelled with its
    nprobe; recall from 0 to 1 and speed-up from 0. Returns the axes."""
    _check_title(title)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    for panel, column, colour in ((left, "scored_pct", "C0"), (right, "speedup", "C1")):
        panel.plot(sweep[column], sweep["recall@10"], marker="o", color=colour)
        for nprobe, row in sweep.iterrows():
            panel.annotate(str(nprobe), (row[column], row["recall@10"]),
                           textcoords="offset points", xytext=(4, -10), fontsize=8)
        panel.set_ylim(0, 1.02)
    left.set_xscale("log")
    left.set_xticks([2, 5, 10, 20], labels=["2", "5", "10", "20"])
    left.xaxis.set_minor_locator(plt.NullLocator())
    left.set_xlabel("share of the vectors scored (%, log scale)")
    right.set_xlabel("speed-up over exact search (comparisons per query)")
    left.set_ylabel("recall@10 against exact search")
    right.set_xlim(left=0)
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()
    return left, right


def uniform_recall(sweep: pd.DataFrame, n_stored: int, dim: int, n_lists: int,
                   settings: list[int], seed: int) -> pd.DataFrame:
    """recall@10 of section 6's index settings on `n_stored` vectors of
    `dim` numbers drawn uniformly on the sphere (200 more as queries,
    `n_lists` lists trained on 4,000 of them), beside the clustered
    recalls of `sweep`, one row per nprobe in `settings`."""
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal((n_stored + 200, dim))
    pool = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).astype(np.float32)
    flat, queries = pool[:n_stored], pool[n_stored:]
    index = ann.IVFIndex(flat, n_lists, train_size=4_000, seed=0)
    truth, _ = ann.exact_search(flat, queries, k=10)
    return pd.DataFrame({
        "clustered": [sweep.loc[p, "recall@10"] for p in settings],
        "uniform": [ann.neighbour_recall(index.search(queries, 10, p)[0], truth)
                    for p in settings]}, index=pd.Index(settings, name="nprobe"))


# ---------------------------------------------------------------------------
# 04: retrievers
# ---------------------------------------------------------------------------




# ---------------------------------------------------------------------------
# 05: reranking
# ---------------------------------------------------------------------------

RERANK_MODES = ["hybrid", "hybrid+rerank"]  # the first stage, then both stages


def two_stage_lists(retriever, question: str, k: int = 10) -> pd.DataFrame:
    """Section 1: the first stage's top `k` chunk ids for `question`
    (hybrid search) beside the same search reranked, ranks from 1.
    Prints the question."""
    print(question)
    return pd.DataFrame({"hybrid": retriever.search(question, k, "hybrid"),
                         "hybrid + rerank": retriever.search(question, k, "hybrid+rerank")},
                        index=pd.RangeIndex(1, k + 1, name="rank"))


def _box(ax, x: float, y: float, label: str, colour: str, width: float = 0.36,
         height: float = 0.11) -> None:
    """A rounded box centred on (x, y) with a label inside."""
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0.012", fc=colour, ec="0.3", lw=0.8))
    ax.text(x, y, label, ha="center", va="center", fontsize=8)


def _arrow(ax, start: tuple, end: tuple) -> None:
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": "->", "lw": 0.9, "color": "0.3"})


def _token_squares(ax, x: float, y: float, n: int, colour: str) -> None:
    """n small squares centred on (x, y): one vector per token."""
    for i in range(n):
        ax.add_patch(plt.Rectangle((x - n * 0.035 + i * 0.07, y - 0.03), 0.055, 0.06,
                                   fc=colour, ec="0.3", lw=0.6))


def meeting_points_figure(title: str) -> list[str]:
    """Figure 5.1: a bi-encoder, a cross-encoder and late interaction side
    by side, the step that sees both query and passage in green. Returns
    the three panels' titles."""
    _check_title(title)
    query, passage, meet = "#cfe2f3", "#fce5cd", "#d9ead3"
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.2))
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.axis("off")
        _box(ax, 0.24, 0.07, "query", query, 0.3)
        _box(ax, 0.76, 0.07, "passage", passage, 0.3)
    bi, cross, late = axes
    for ax, top in ((bi, "dot product\n(one number)"), (late, "MaxSim")):
        _box(ax, 0.24, 0.34, "query\nencoder", query, 0.3, 0.14)
        _box(ax, 0.76, 0.34, "passage\nencoder", passage, 0.3, 0.14)
        ax.text(0.79, 0.2, "offline", ha="left", fontsize=7, style="italic")
        _box(ax, 0.5, 0.88, top, meet, 0.42, 0.13)
        for x in (0.24, 0.76):
            _arrow(ax, (x, 0.13), (x, 0.27))
    _box(bi, 0.24, 0.6, "1 vector", query, 0.26)
    _box(bi, 0.76, 0.6, "1 vector", passage, 0.26)
    _token_squares(late, 0.24, 0.6, 3, query)
    _token_squares(late, 0.76, 0.6, 4, passage)
    late.text(0.5, 0.5, "one vector per token", ha="center", fontsize=7)
    for ax in (bi, late):
        for x in (0.24, 0.76):
            _arrow(ax, (x, 0.41), (x, 0.55))
            _arrow(ax, (x, 0.65), (0.5 + (x - 0.5) * 0.4, 0.81))
    _box(cross, 0.5, 0.34, "[query ; passage]", meet, 0.5)
    _box(cross, 0.5, 0.6, "one model reads\nboth together", meet, 0.5, 0.14)
    _box(cross, 0.5, 0.88, "relevance score", meet, 0.42, 0.11)
    cross.text(0.53, 0.46, "one run per candidate", ha="left", fontsize=7, style="italic")
    for x in (0.24, 0.76):
        _arrow(cross, (x, 0.13), (0.5 + (x - 0.5) * 0.5, 0.28))
    _arrow(cross, (0.5, 0.4), (0.5, 0.52))
    _arrow(cross, (0.5, 0.68), (0.5, 0.82))
    bi.set_title("bi-encoder: meet at the very end", fontsize=10)
    cross.set_title("cross-encoder: meet at the input", fontsize=10)
    late.set_title("late interaction: meet token by token", fontsize=10)
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()
    return [ax.get_title() for ax in axes]


def scorer_table() -> pd.DataFrame:
    """Section 2's summary of the three designs, one column each."""
    return pd.DataFrame({
        "bi-encoder": ["1", "yes", "lowest: encode the query once", "small",
                       "first stage"],
        "cross-encoder": ["none: it reads the pair", "no",
                          "highest: one model run per candidate", "small",
                          "final rerank"],
        "late interaction": ["one per token", "yes", "low to medium", "large",
                             "rerank, or first stage"],
    }, index=pd.Index(["vectors per passage", "precomputable", "cost per query",
                       "storage", "typical job"], name="property"))


def model_runs(candidates: int) -> pd.Series:
    """Model runs to score `candidates` passages for one question: one per
    (question, passage) pair for a cross-encoder, one query encoding for
    the two designs whose passage side is computed offline."""
    return pd.Series({"bi-encoder": 1, "cross-encoder": candidates, "late interaction": 1},
                     name=f"model runs to score {candidates} candidates")


def passage_bytes(tokens: int, token_dim: int, token_float: int, single_dim: int,
                  single_float: int) -> dict:
    """Bytes of one passage of `tokens` tokens stored as token vectors of
    `token_dim` numbers of `token_float` bytes, against one vector of
    `single_dim` numbers of `single_float` bytes. Prints the sums; returns
    them with the bytes per token vector and the break-even length."""
    per_token = token_dim * token_float
    sums = {"per token": per_token, "token vectors": tokens * per_token,
            "one vector": single_dim * single_float}
    sums["ratio"] = sums["token vectors"] / sums["one vector"]
    sums["break-even tokens"] = sums["one vector"] / per_token
    print(f"token vectors: {tokens} x {token_dim} x {token_float} = "
          f"{sums['token vectors']:,} bytes")
    print(f"one vector:    {single_dim} x {single_float} = {sums['one vector']:,} bytes")
    print(f"ratio: {sums['ratio']:.1f}")
    print(f"break-even: {sums['break-even tokens']:g} tokens per passage")
    return sums


def token_storage(texts: list[str], sums: dict, big: int, big_tokens: int) -> pd.DataFrame:
    """Gigabytes of one vector per passage and of token vectors (priced as
    in `sums`, from `passage_bytes`), and the token vectors shrunk 6 and
    10 times (ColBERTv2), for `texts` (tokens as `tokenize` keeps them)
    and for `big` passages of `big_tokens` tokens."""
    gb = 1e9
    scale = pd.DataFrame({
        "passages": [len(texts), big],
        "tokens": [sum(len(tokenize(text)) for text in texts), big * big_tokens],
    }, index=["help centre", f"{big / 1e6:g}M chunks of {big_tokens} tokens"])
    scale["one vector (GB)"] = scale["passages"] * sums["one vector"] / gb
    scale["token vectors (GB)"] = scale["tokens"] * sums["per token"] / gb
    scale["ColBERTv2, /6 (GB)"] = scale["token vectors (GB)"] / 6
    scale["ColBERTv2, /10 (GB)"] = scale["token vectors (GB)"] / 10
    return scale


def tokens_by_pages(docs: list, chunks: list, n_first: int) -> pd.DataFrame:
    """Chunks, tokens and tokens per chunk on the first `n_first` pages
    and on the rest (chunks as their indexed text)."""
    first = {doc.doc_id for doc in docs[:n_first]}
    rows = pd.DataFrame([{"group": f"first {n_first} pages" if c.doc_id in first
                          else f"last {len(docs) - n_first} pages",
                          "tokens": len(tokenize(c.indexed_text))} for c in chunks])
    table = rows.groupby("group", sort=False).agg(chunks=("tokens", "size"),
                                                  tokens=("tokens", "sum"))
    table["tokens per chunk"] = table["tokens"] / table["chunks"]
    return table


def gold_ranks(retriever, chunks: list, questions: list,
               modes: list[str] = RERANK_MODES) -> pd.DataFrame:
    """Rank of the first gold chunk in the top 10 of each mode, one row
    per question (index: its qid), <NA> when no gold chunk is there."""
    rows = {}
    for q in questions:
        gold = relevant_chunk_ids(chunks, q.answer)
        rows[q.qid] = {mode: first_relevant_rank(retriever.search(q.question, 10, mode),
                                                 gold) for mode in modes}
    return pd.DataFrame.from_dict(rows, orient="index").astype("Int64")


def rerank_summary(retriever, questions: list) -> pd.DataFrame:
    """hit@3 and MRR (top 10) of hybrid search, and of it reranked."""
    summary = pd.DataFrame({mode: evaluate(retriever, questions, mode, k=3)
                            for mode in RERANK_MODES}).T[["hit", "mrr"]]
    summary.columns = ["hit@3", "MRR"]
    return summary


def best_matches(query: str, texts: dict[str, str], chunk_ids: list[str],
                 dim: int = 64) -> pd.DataFrame:
    """For each query token (the index), its best passage token and their
    dot product, in the chunks `chunk_ids` (one column pair each) of
    `texts`, by the package's token vectors. Prints the query."""
    print(query)
    q_vecs = rerank.token_vectors(query, dim)
    parts = {}
    for chunk_id in chunk_ids:
        d_tokens = tokenize(texts[chunk_id])
        # rounded: a tie off by the last bit of a float would pick its
        # token by the BLAS path; argmax takes the first of equal dots
        dots = (q_vecs @ rerank.token_vectors(texts[chunk_id], dim).T).round(9)
        parts[chunk_id] = pd.DataFrame(
            {"match": [d_tokens[j] for j in dots.argmax(axis=1)],
             "dot": dots.max(axis=1).round(3)},
            index=pd.Index(tokenize(query), name="query token"))
    return pd.concat(parts, axis=1)


def chunk_count(word: str, texts: dict[str, str]) -> int:
    """In how many of `texts` the token `word` occurs."""
    return sum(word in tokenize(text) for text in texts.values())


def rescue_table(retriever, chunks: list, questions: list) -> pd.DataFrame:
    """Section 8's own questions: each one's gold chunk, the first stage's
    first chunk, and the gold chunk's rank before and after reranking."""
    table = gold_ranks(retriever, chunks, questions)
    table.insert(0, "gold", [relevant_chunk_ids(chunks, q.answer)[0] for q in questions])
    table.insert(1, "hybrid first", [retriever.search(q.question, 1, "hybrid")[0]
                                     for q in questions])
    return table


def ranks_by_dim(retriever, chunks: list, questions: list,
                 dims: tuple[int, ...] = (64, 128)) -> pd.DataFrame:
    """The gold chunk's rank in the hybrid top 10 and after reranking it
    with `LateInteractionReranker` at each of `dims` (columns `hybrid`,
    `dim=64`, ...), one row per question."""
    texts = {c.chunk_id: c.indexed_text for c in chunks}
    shortlists = {q.qid: (relevant_chunk_ids(chunks, q.answer),
                          retriever.search(q.question, 10, "hybrid"), q.question)
                  for q in questions}
    ranks = {"hybrid": {qid: first_relevant_rank(shortlist, gold)
                        for qid, (gold, shortlist, _) in shortlists.items()}}
    for dim in dims:
        reranker = rerank.LateInteractionReranker(list(texts.values()), list(texts), dim)
        ranks[f"dim={dim}"] = {
            qid: first_relevant_rank([c for c, _ in reranker.rerank(text, shortlist)], gold)
            for qid, (gold, shortlist, text) in shortlists.items()}
    return pd.DataFrame(ranks).astype("Int64")


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
