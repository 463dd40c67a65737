"""Benchmark ragkit's BM25 and vector search against rank_bm25, bm25s and faiss.

Four parts, all measured side by side in one run on this machine, with one
thread everywhere (BLAS, OpenMP, faiss) so that no library gets more cores
than another and a busy neighbour disturbs the figures less:

1. BM25 on a synthetic corpus: Zipf-distributed words, chunk lengths drawn
   from the help centre's own chunks (tokens per chunk), and queries as long
   as the help centre's questions. Build time, memory held by the index,
   query throughput, and a check that the three libraries agree on the top
   10 of every query (ties may come in another order).
2. Dense search over clustered unit vectors (a stand-in for real
   embeddings, which are clustered): ragkit's exact search, ragkit's IVF
   (``ragkit.ann.IVFIndex``) and faiss's ``IndexIVFFlat`` with the same
   number of lists, recall@10 against exact search and queries per second
   for several ``nprobe``; faiss's ``IndexHNSWFlat`` (M 16) on the same
   vectors, its build time, bytes and recall@10 and speed for several
   ``efSearch``. Then the same IVF on uniformly random vectors,
   which have no clusters, to show what that costs in recall.
3. Cost growth: query time of BM25 and of exact dense search at three
   corpus sizes, drawn as a log-log plot to ``--out``.
4. Encoding: texts per second of the real sentence encoder
   (``ragkit.encoder.MiniLMEncoder``, numpy, cache off) on the help
   centre's chunks, and the one-off time to load its weights.

usage: python tools/bench.py [--quick] [--parts bm25,dense,growth,encode]
                             [--out PATH] [--seed N]
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from threadpoolctl import threadpool_limits  # noqa: E402

from ragkit import chunk_documents, load_documents, load_questions, tokenize  # noqa: E402
from ragkit.ann import IVFIndex, exact_search, neighbour_recall  # noqa: E402
from ragkit.bm25 import BM25Index  # noqa: E402

FULL = {
    "bm25_docs": 100_000, "bm25_queries": 1000, "okapi_queries": 100,
    "vocab": 50_000, "dense_n": 1_000_000, "dense_queries": 1000,
    "dense_centres": 1000, "n_lists": 1024, "uniform_n": 100_000,
    "growth": (10_000, 100_000, 1_000_000), "growth_queries": 200,
    "encode_repeats": 3,
}
QUICK = {
    "bm25_docs": 10_000, "bm25_queries": 200, "okapi_queries": 50,
    "vocab": 10_000, "dense_n": 50_000, "dense_queries": 200,
    "dense_centres": 250, "n_lists": 224, "uniform_n": 20_000,
    "growth": (1_000, 10_000, 100_000), "growth_queries": 100,
    "encode_repeats": 1,
}
NPROBES = (1, 2, 4, 8, 16, 32)
PARTS = ("bm25", "dense", "growth", "encode")
ZIPF_EXPONENT = 1.07
# per-dimension noise of a cluster: the nearest neighbour of a query then has
# a cosine near 0.8 and its tenth near 0.75, as with sentence embeddings
SPREAD = (0.06, 0.12)
DIM = 64
TOP = 10


def say(text: str = "") -> None:
    print(text, flush=True)


def machine() -> str:
    cpu = platform.processor() or "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = "unknown memory"
    return (f"{cpu}, {os.cpu_count()} cores, {memory}; Python "
            f"{platform.python_version()}, numpy {np.__version__}")


def timed(fn):
    """``fn()`` and the CPU time it took.

    CPU time of this process, not the wall clock: every library runs on one
    thread here, so the two agree on an idle machine, and on a busy one the
    time spent waiting for a core does not count against whoever was
    unlucky enough to be running then.
    """
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def fastest(fn, repeats=3):
    """The first run's result and the shortest of ``repeats`` run times.

    Other programs on the machine only ever slow a run down, so the
    shortest time is the least disturbed one.
    """
    out, best = timed(fn)
    for _ in range(repeats - 1):
        best = min(best, timed(fn)[1])
    return out, best


def held_memory(build):
    """Bytes still allocated after ``build()`` (the index), and the peak."""
    gc.collect()
    tracemalloc.start()
    obj = build()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del obj
    gc.collect()
    return current, peak


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB"


# ------------------------------------------------------------------ corpus


def helpcentre_lengths() -> tuple[np.ndarray, np.ndarray]:
    """Tokens per help-centre chunk and per question (ragkit's tokenizer)."""
    chunks = chunk_documents(load_documents())
    chunk_len = np.array([len(tokenize(c.indexed_text)) for c in chunks])
    query_len = np.array([len(tokenize(q.question)) for q in load_questions()])
    return chunk_len, np.maximum(query_len, 1)


def zipf_corpus(n_docs, n_queries, vocab, rng):
    """Token lists of ``n_docs`` chunks and ``n_queries`` queries."""
    chunk_len, query_len = helpcentre_lengths()
    words = np.array([f"w{i:05d}" for i in range(vocab)])
    prob = 1.0 / np.arange(1, vocab + 1) ** ZIPF_EXPONENT
    prob /= prob.sum()

    def draw(lengths):
        flat = words[rng.choice(vocab, size=int(lengths.sum()), p=prob)].tolist()
        ends = np.cumsum(lengths).tolist()
        return [flat[a:b] for a, b in zip([0] + ends[:-1], ends)]

    docs = draw(rng.choice(chunk_len, size=n_docs))
    queries = draw(rng.choice(query_len, size=n_queries))
    return docs, queries, chunk_len, query_len


def rank_bm25_lucene():
    """rank_bm25's Okapi with ragkit's (Lucene's) IDF, so scores are equal."""
    from rank_bm25 import BM25Okapi

    class OkapiLucene(BM25Okapi):
        def _calc_idf(self, nd):
            n = self.corpus_size
            self.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5))
                        for t, df in nd.items()}

    return OkapiLucene


def best_of(scores, k=TOP):
    """Top ``k`` positive scores as (indices, values), best first."""
    n = len(scores)
    pos = np.argpartition(scores, n - k)[n - k:] if n > k else np.arange(n)
    pos = pos[np.lexsort((pos, -scores[pos]))]
    keep = scores[pos] > 0
    return pos[keep], scores[pos][keep]


def agree(ours_scores, ref_idx, ref_vals, rel_tol):
    """The same top scores rank by rank, and every id the other library gave
    has that score in ragkit too: so the lists differ at most among ties."""
    mine_idx, mine_vals = best_of(ours_scores)
    keep = ref_vals > 0
    ref_idx, ref_vals = ref_idx[keep], ref_vals[keep]
    if len(mine_vals) != len(ref_vals):
        return False, False
    tol = rel_tol * np.maximum(1.0, np.abs(mine_vals))
    same_scores = bool(np.all(np.abs(mine_vals - ref_vals) <= tol))
    same_ids_up_to_ties = bool(np.all(np.abs(ours_scores[ref_idx] - ref_vals) <= tol))
    identical = same_scores and list(mine_idx) == list(ref_idx)
    return same_scores and same_ids_up_to_ties, identical


def bench_bm25(cfg, rng):
    import bm25s

    docs, queries, chunk_len, query_len = zipf_corpus(
        cfg["bm25_docs"], cfg["bm25_queries"], cfg["vocab"], rng)
    n_tokens = sum(map(len, docs))
    # bm25s and rank_bm25 add a repeated query term again, ragkit once:
    # all three get each query's distinct terms, so the scores must be equal
    queries = [list(dict.fromkeys(q)) for q in queries]
    say(f"## 1. BM25: {len(docs):,} synthetic chunks, {len(queries):,} queries")
    say(f"vocabulary {cfg['vocab']:,} words, Zipf exponent {ZIPF_EXPONENT}; "
        f"chunk lengths drawn from the help centre's {len(chunk_len)} chunks "
        f"(mean {chunk_len.mean():.1f} tokens), query lengths from its "
        f"{len(query_len)} questions (mean {query_len.mean():.1f}); "
        f"{n_tokens:,} tokens in all; k1 = 1.5, b = 0.75; every library gets "
        "the same token lists.")
    okapi_cls = rank_bm25_lucene()
    builders = {
        "ragkit": lambda: BM25Index(docs, tokenizer=None),
        "bm25s": lambda: _bm25s_index(bm25s, docs),
        "rank_bm25": lambda: okapi_cls(docs),
    }
    built, build_s, memory = {}, {}, {}
    for name, build in builders.items():
        built[name], build_s[name] = timed(build)
    for name, build in builders.items():
        memory[name] = held_memory(build)
    ours, lib, okapi = built["ragkit"], built["bm25s"], built["rank_bm25"]

    # warm-up: bm25s compiles its numba top-k on first use
    for q in queries[:5]:
        ours.search(q, TOP)
    lib.retrieve(queries[:5], k=TOP, show_progress=False, n_threads=0)
    _, t_ours = fastest(lambda: [ours.search(q, TOP) for q in queries])
    (b_idx, b_val), t_lib = fastest(lambda: lib.retrieve(
        queries, k=TOP, show_progress=False, n_threads=0))
    sub = queries[: cfg["okapi_queries"]]
    o_scores, t_okapi = timed(lambda: [okapi.get_scores(q) for q in sub])
    o_top = [best_of(s) for s in o_scores]
    t_okapi_full = t_okapi  # scoring is all rank_bm25 does; top-k is ours

    # agreement, tie-aware (bm25s scores in float32: compare to 1e-5)
    ok_b = ok_o = same_b = same_o = 0
    for n, q in enumerate(queries):
        s = ours.scores(q)
        good, same = agree(s, b_idx[n], b_val[n].astype(np.float64), 1e-5)
        ok_b += good
        same_b += same
        if n < len(sub):
            good, same = agree(s, o_top[n][0], o_top[n][1], 1e-9)
            ok_o += good
            same_o += same

    per_q = {"ragkit": t_ours / len(queries), "bm25s": t_lib / len(queries),
             "rank_bm25": t_okapi_full / len(sub)}
    say()
    say(f"{'library':<10} {'build s':>8} {'held':>11} {'peak':>11} "
        f"{'ms/query':>9} {'queries/s':>10}  queries timed")
    for name in builders:
        n_timed = len(sub) if name == "rank_bm25" else len(queries)
        say(f"{name:<10} {build_s[name]:8.2f} {mib(memory[name][0]):>11} "
            f"{mib(memory[name][1]):>11} {per_q[name] * 1e3:9.3f} "
            f"{1 / per_q[name]:10,.0f}  {n_timed}")
    say()
    say("ratios (higher = ragkit better):")
    say(f"  query speed, ragkit vs rank_bm25: {per_q['rank_bm25'] / per_q['ragkit']:8.1f}x"
        "   (goal >= 10x)")
    say(f"  query speed, ragkit vs bm25s:     {per_q['bm25s'] / per_q['ragkit']:8.2f}x"
        "   (goal >= 0.5x, within 2x)")
    say(f"  build speed, ragkit vs bm25s:     {build_s['bm25s'] / build_s['ragkit']:8.2f}x"
        "   (goal >= 0.5x, within 2x)")
    say(f"  build speed, ragkit vs rank_bm25: {build_s['rank_bm25'] / build_s['ragkit']:8.2f}x")
    say(f"  memory held, ragkit / bm25s:      {memory['ragkit'][0] / memory['bm25s'][0]:8.2f}"
        "   (goal <= 1; per entry ragkit keeps a row and a 1-2 byte kind, "
        "bm25s a row and a float32 score)")
    say(f"  memory held, ragkit / rank_bm25:  {memory['ragkit'][0] / memory['rank_bm25'][0]:8.2f}")
    say(f"  peak while building, ragkit / bm25s: {memory['ragkit'][1] / memory['bm25s'][1]:6.2f}"
        "   (goal <= 1; ragkit reads one text's tokens at a time and keeps only their columns)")
    say("top-10 agreement (same scores rank by rank; ids equal up to ties):")
    say(f"  bm25s     {ok_b}/{len(queries)} queries agree, "
        f"{same_b} with the very same id order")
    say(f"  rank_bm25 {ok_o}/{len(sub)} queries agree, "
        f"{same_o} with the very same id order")
    return docs, queries


def _bm25s_index(bm25s, docs):
    lib = bm25s.BM25(method="atire", idf_method="lucene")
    lib.index(docs, show_progress=False)
    return lib


# ------------------------------------------------------------------- dense


def clustered_vectors(n, n_centres, rng):
    """Unit vectors around ``n_centres`` random directions.

    Cluster sizes are uneven (Dirichlet weights) and so is their spread,
    like topics in a real collection.
    """
    centres = rng.standard_normal((n_centres, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    weights = rng.dirichlet(np.full(n_centres, 2.0))
    which = rng.choice(n_centres, size=n, p=weights)
    spread = rng.uniform(SPREAD[0], SPREAD[1], n_centres).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    step = 200_000
    for a in range(0, n, step):
        w = which[a:a + step]
        noise = rng.standard_normal((len(w), DIM)).astype(np.float32)
        out[a:a + step] = centres[w] + spread[w, None] * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def uniform_vectors(n, rng):
    out = rng.standard_normal((n, DIM)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def faiss_ivf(vectors, n_lists, train):
    import faiss

    quantizer = faiss.IndexFlatL2(DIM)
    index = faiss.IndexIVFFlat(quantizer, DIM, n_lists, faiss.METRIC_INNER_PRODUCT)
    index.train(train)
    index.add(vectors)
    return index


def exact_time(vectors, queries, sample=200, repeats=2):
    """Time of exact search for all ``queries``, from the fastest of
    ``repeats`` runs on the first ``sample`` of them (scaled up)."""
    part = queries[:sample]
    _, best = fastest(lambda: exact_search(vectors, part, TOP), repeats)
    return best * len(queries) / len(part)


def ivf_table(name, vectors, queries, truth, n_lists, t_exact, rng, with_faiss):
    n_train = min(len(vectors), 40 * n_lists)  # faiss asks for >= 39 per list
    train_rows = np.sort(rng.choice(len(vectors), n_train, replace=False))
    ivf, t_build = timed(lambda: IVFIndex(vectors, n_lists, train_size=n_train, seed=0))
    say(f"{name}: ragkit IVF built in {t_build:.1f} s ({n_lists} lists, k-means "
        f"on {n_train:,} vectors; list sizes {ivf.list_sizes.min()}.."
        f"{ivf.list_sizes.max()})")
    fx = None
    if with_faiss:
        import faiss

        fx, t_fbuild = timed(lambda: faiss_ivf(vectors, n_lists, vectors[train_rows]))
        say(f"{name}: faiss IndexIVFFlat built in {t_fbuild:.1f} s "
            "(same lists count, same training size)")
    nq = len(queries)
    say(f"{'nprobe':>6} {'ragkit recall@10':>17} {'speed-up':>9} {'q/s':>8}"
        + (f" {'faiss recall@10':>16} {'speed-up':>9} {'q/s':>8} "
           f"{'ragkit/faiss q/s':>16}" if fx else ""))
    rows, versus_faiss = [], []
    for nprobe in NPROBES:
        if nprobe > n_lists:
            continue
        (found, _), t_ivf = fastest(lambda: ivf.search(queries, TOP, nprobe))
        rec = neighbour_recall(found, truth)
        line = (f"{nprobe:>6} {rec:17.4f} {t_exact / t_ivf:8.1f}x "
                f"{nq / t_ivf:8,.0f}")
        if fx is not None:
            fx.nprobe = nprobe
            (_, f_found), t_f = fastest(lambda: fx.search(queries, TOP))
            f_rec = neighbour_recall(f_found, truth)
            line += (f" {f_rec:16.4f} {t_exact / t_f:8.1f}x {nq / t_f:8,.0f} "
                     f"{t_f / t_ivf:16.2f}")
            versus_faiss.append(t_f / t_ivf)
        say(line)
        rows.append((nprobe, rec, t_exact / t_ivf))
    if versus_faiss:
        say(f"ragkit IVF against faiss: {min(versus_faiss):.2f}x to "
            f"{max(versus_faiss):.2f}x its queries per second (goal >= 0.5x, "
            "within 2x, at every nprobe)")
    return rows


EF_SEARCH = (16, 32, 64, 128, 256)


def hnsw_table(vectors, queries, truth, t_exact, m=16, ef_construction=40):
    """faiss's IndexHNSWFlat on the same vectors: build time, bytes against
    the raw vectors, and recall@10 and speed for each efSearch."""
    import faiss

    def build():
        index = faiss.IndexHNSWFlat(DIM, m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(vectors)
        return index

    hnsw, t_build = timed(build)
    stored = len(faiss.serialize_index(hnsw))
    say(f"faiss IndexHNSWFlat (M {m}, efConstruction {ef_construction}) built "
        f"in {t_build:.1f} s; {mib(stored)} serialized, "
        f"{stored / vectors.nbytes:.2f}x the raw vectors")
    nq = len(queries)
    say(f"{'efSearch':>8} {'recall@10':>10} {'speed-up':>9} {'q/s':>8}")
    for ef in EF_SEARCH:
        hnsw.hnsw.efSearch = ef
        (_, found), t_h = fastest(lambda: hnsw.search(queries, TOP))
        say(f"{ef:>8} {neighbour_recall(found, truth):10.4f} "
            f"{t_exact / t_h:8.1f}x {nq / t_h:8,.0f}")


def bench_dense(cfg, rng):
    n, nq = cfg["dense_n"], cfg["dense_queries"]
    say(f"## 2. Dense: {n:,} vectors of {DIM} dims (float32), {nq:,} queries, top {TOP}")
    both = clustered_vectors(n + nq, cfg["dense_centres"], rng)
    vectors, queries = both[:n], both[n:]
    say(f"clustered data: {cfg['dense_centres']:,} centres, uneven sizes and "
        "spreads; queries drawn from the same clusters; inner product on unit "
        "vectors (= cosine)")
    (truth, true_sims), t_exact = timed(lambda: exact_search(vectors, queries, TOP))
    t_exact = min(t_exact, exact_time(vectors, queries))
    say(f"ragkit exact search: {t_exact / nq * 1e3:.2f} ms/query, "
        f"{nq / t_exact:,.0f} queries/s; mean cosine of the nearest "
        f"neighbour {true_sims[:, 0].mean():.2f}, of the tenth "
        f"{true_sims[:, -1].mean():.2f}")
    rows = ivf_table("clustered", vectors, queries, truth, cfg["n_lists"],
                     t_exact, rng, with_faiss=True)
    hnsw_table(vectors, queries, truth, t_exact)
    good = [r for r in rows if r[1] >= 0.95 and r[2] >= 10]
    if good:
        nprobe, rec, speed = good[0]
        say(f"goal met: ragkit IVF recall@10 {rec:.4f} at {speed:.1f}x the "
            f"speed of exact search (nprobe {nprobe})")
    else:
        say("goal NOT met: no nprobe gave recall@10 >= 0.95 at >= 10x "
            "(the goal is set for the full run, 1,000,000 vectors)")
    say()
    m = cfg["uniform_n"]
    lists = int(round(math.sqrt(m) * 2 / 16) * 16) or 16
    say(f"uniform random unit vectors (no clusters) against the same kind of "
        f"clustered data, both {m:,} vectors, {lists} lists:")
    for name, data in (("clustered", clustered_vectors(m + nq, cfg["dense_centres"], rng)),
                       ("uniform", uniform_vectors(m + nq, rng))):
        x, q = data[:m], data[m:]
        (exact_idx, sims), t_ex = timed(lambda: exact_search(x, q, TOP))
        t_ex = min(t_ex, exact_time(x, q))
        say(f"{name}: mean cosine of the nearest neighbour {sims[:, 0].mean():.2f}, "
            f"of the tenth {sims[:, -1].mean():.2f}")
        ivf_table(name, x, q, exact_idx, lists, t_ex, rng, with_faiss=False)
    return vectors, queries


# ------------------------------------------------------------------ growth


def bench_growth(cfg, rng, vectors, out_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = cfg["growth"]
    nq = cfg["growth_queries"]
    say(f"## 3. Cost growth: {nq} queries at {', '.join(f'{s:,}' for s in sizes)} items")
    docs, queries, _, _ = zipf_corpus(max(sizes), nq, cfg["vocab"], rng)
    dense_q = clustered_vectors(nq, cfg["dense_centres"], rng)
    if len(vectors) < max(sizes):
        vectors = clustered_vectors(max(sizes), cfg["dense_centres"], rng)
    bm25_ms, dense_ms = [], []
    say(f"{'items':>10} {'BM25 build s':>13} {'BM25 ms/query':>14} {'exact dense ms/query':>21}")
    for size in sizes:
        index, t_build = timed(lambda: BM25Index(docs[:size], tokenizer=None))
        _, t_q = fastest(lambda: [index.search(q, TOP) for q in queries], 2)
        del index
        _, t_d = fastest(lambda: exact_search(vectors[:size], dense_q, TOP), 2)
        bm25_ms.append(t_q / nq * 1e3)
        dense_ms.append(t_d / nq * 1e3)
        say(f"{size:>10,} {t_build:13.2f} {bm25_ms[-1]:14.3f} {dense_ms[-1]:21.3f}")
    slope_b = np.polyfit(np.log10(sizes), np.log10(bm25_ms), 1)[0]
    slope_d = np.polyfit(np.log10(sizes), np.log10(dense_ms), 1)[0]
    say(f"log-log slopes: BM25 {slope_b:.2f}, exact dense {slope_d:.2f} "
        "(1.0 = time grows in proportion to the corpus)")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(sizes, bm25_ms, "o-", label="BM25 (ragkit)")
    ax.loglog(sizes, dense_ms, "s-", label=f"exact dense, {DIM} dims (ragkit)")
    # a guide of slope 1: time in proportion to the number of items
    guide = [dense_ms[0] * s / sizes[0] for s in sizes]
    ax.loglog(sizes, guide, ":", color="grey", label="slope 1 (linear growth)")
    ax.set_xlabel("items in the index")
    ax.set_ylabel("ms per query (1 thread)")
    ax.set_title("Query time against corpus size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    say(f"plot saved to {out_path}")


# ------------------------------------------------------------------ encoding


def bench_encode(cfg):
    from ragkit.encoder import MiniLMEncoder, load_model

    texts = [c.indexed_text for c in chunk_documents(load_documents())]
    say(f"## 4. Encoding: all-MiniLM-L6-v2 in numpy, {len(texts)} help-centre "
        "chunks, cache off")
    model, t_load = timed(load_model)
    pieces = sum(len(e.ids) for e in model["tokenizer"].encode_batch(texts))
    say(f"weights and tokenizer loaded (and checksummed) in {t_load:.2f} s")
    encoder = MiniLMEncoder(cache=False)
    _, t_enc = fastest(lambda: encoder.embed_many(texts), cfg["encode_repeats"])
    say(f"encode: {len(texts) / t_enc:,.1f} texts/s, {pieces / t_enc:,.0f} "
        f"word pieces/s ({pieces / len(texts):.0f} per chunk, batches of "
        f"{encoder.batch_size})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds")
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragkit_bench_growth.png"),
                        help="where to save the log-log plot (PNG)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated parts to run (default: all; "
                        "leaving one out changes the data of those after it)")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if not set(parts) <= set(PARTS):
        parser.error(f"--parts takes some of {', '.join(PARTS)} (got {args.parts})")
    cfg = QUICK if args.quick else FULL
    import faiss

    faiss.omp_set_num_threads(1)
    started = time.perf_counter()
    say(f"# ragkit benchmark ({'quick' if args.quick else 'full'} run, seed {args.seed})")
    say(f"machine: {machine()}")
    say("threads: 1 everywhere (threadpoolctl for BLAS and OpenMP, "
        "faiss.omp_set_num_threads(1), bm25s n_threads=0)")
    say("times: CPU seconds of this process, the fastest of 3 runs (2 for "
        "exact search and growth; one for rank_bm25 and for builds)")
    say()
    rng = np.random.default_rng(args.seed)
    vectors = np.empty((0, DIM), dtype=np.float32)
    with threadpool_limits(1):
        if "bm25" in parts:
            bench_bm25(cfg, rng)
            say()
        if "dense" in parts:
            vectors, _ = bench_dense(cfg, rng)
            say()
        if "growth" in parts:
            bench_growth(cfg, rng, vectors, args.out)
            say()
        if "encode" in parts:
            bench_encode(cfg)
            say()
    say(f"total time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
