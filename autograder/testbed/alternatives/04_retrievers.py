# Alternative answers for notebook 04, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb04_bm25_idf
def bm25_idf(n_docs, doc_freq):
    """ln(1 + (N - n + 0.5) / (n + 0.5)), which is always positive."""
    if not n_docs >= 1:
        raise ValueError("n_docs has to be 1 or more")
    if doc_freq < 0 or doc_freq > n_docs:
        raise ValueError("doc_freq has to lie in 0..n_docs")
    ratio = (n_docs - doc_freq + 0.5) / (doc_freq + 0.5)
    return float(math.log1p(ratio))

# %% nb04_bm25_scores
def bm25_scores(query, texts, k1=1.5, b=0.75):
    """BM25 score of every text for `query`, in the order of `texts`."""
    if not texts:
        raise ValueError("texts is empty")
    docs = [tokenize(t) for t in texts]
    avgdl = sum(map(len, docs)) / len(docs)
    df = {}
    for d in docs:
        for term in set(d):
            df[term] = df.get(term, 0) + 1
    terms = [t for t in sorted(set(tokenize(query))) if t in df]
    result = []
    for d in docs:
        total = 0.0
        for t in terms:
            f = d.count(t)
            if f == 0:
                continue
            denom = f + k1 * (1 - b + b * len(d) / avgdl)
            total += bm25_idf(len(docs), df[t]) * f * (k1 + 1) / denom
        result.append(total)
    return result

# %% nb04_embed
def embed(text, idf, dim=256):
    """Unit-length hashed vector of concept words and their trigrams."""
    out = [0.0 for _ in range(dim)]
    fallback = max(idf.values(), default=1.0)

    def add(feature, amount):
        index, sign = feature_bucket(feature, dim)
        out[index] += amount * sign

    for tok in tokenize(text):
        word = concept(tok)
        weight = idf[word] if word in idf else fallback
        add("w:" + word, WORD_WEIGHT * weight)
        marked = "<" + word + ">"
        for start in range(len(marked) - 2):
            add("g:" + marked[start:start + 3], TRIGRAM_WEIGHT * weight)
    norm = sum(v * v for v in out) ** 0.5
    if norm == 0:
        return out
    return [v / norm for v in out]

# %% nb04_rrf
def rrf(rankings, k=60):
    """Reciprocal Rank Fusion of ranked id lists; ties go by id."""
    from collections import defaultdict
    if k < 0:
        raise ValueError("k may not be negative")
    score = defaultdict(float)
    for ranked in rankings:
        for i in range(len(ranked)):
            score[ranked[i]] += 1 / (k + i + 1)
    by_id = sorted(score.items())
    return sorted(by_id, key=lambda pair: -pair[1])

# %% nb04_bm25_rank_grid
def bm25_rank_grid(chunks, questions, settings):
    """Gold-chunk rank of each question under BM25 for each (k1, b)."""
    frame = pd.DataFrame(index=[q.qid for q in questions])
    for k1, b in settings:
        idx = BM25Index([c.indexed_text for c in chunks],
                        [c.chunk_id for c in chunks], k1=k1, b=b)
        ranks = []
        for q in questions:
            hits = idx.search(q.question, 10)
            rel = set(relevant_chunk_ids(chunks, q.answer))
            found = [n for n, (cid, _) in enumerate(hits, 1) if cid in rel]
            ranks.append(found[0] if found else pd.NA)
        frame[f"k1={k1}, b={b}"] = pd.array(ranks, dtype="Int64")
    return frame

# %% nb04_moved
def moved_questions(grid):
    """Sorted qids whose rank is not the same in every column."""
    movers = []
    for qid, row in grid.iterrows():
        seen = {None if pd.isna(v) else int(v) for v in row}
        if len(seen) > 1:
            movers.append(qid)
    return sorted(movers)

# %% nb04_rrf_k_table
def rrf_k_table(rankings, ks):
    """Fused RRF score of every id (columns) for every k (rows)."""
    ids = sorted({d for r in rankings for d in r})
    rows = []
    for k in ks:
        fused = dict(ragkit.fusion.rrf(rankings, k=k))
        rows.append([fused.get(d, 0.0) for d in ids])
    return pd.DataFrame(rows, index=pd.Index(ks, name="k"), columns=ids)

# %% nb04_swap_between
def swap_interval(table, first, second):
    """The neighbouring k values between which two ids change order."""
    leaders = [first if a > b else second
               for a, b in zip(table[first], table[second])]
    ks = list(table.index)
    changes = [(ks[i], ks[i + 1]) for i in range(len(ks) - 1)
               if leaders[i] != leaders[i + 1]]
    return changes[0] if changes else None
