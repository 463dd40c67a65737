# Alternative answers for notebooks 03 and 04, written differently from the
# masters, in the `# %% grade_id` format that autograder/make_sample_class.py
# reads. Each section is the whole cell source.

# %% nb03_chunk_fixed
def chunk_fixed(text, size, overlap=0):
    """Cut `text` into windows of `size` words that share `overlap` words."""
    if type(text) is not str:
        raise TypeError("text must be a str")
    if type(size) is not int:
        raise TypeError("size must be an int")
    if type(overlap) is not int:
        raise TypeError("overlap must be an int")
    if size <= 0:
        raise ValueError("size must be positive")
    if not (0 <= overlap <= size - 1):
        raise ValueError(f"overlap must be in [0, {size - 1}], got {overlap}")
    words = text.split()
    out, start = [], 0
    while words:
        out.append(" ".join(words[start:start + size]))
        if start + size >= len(words):
            break
        start = start + size - overlap
    return out

# %% nb03_chunk_sentences
def chunk_sentences(text, max_words):
    """Greedily pack whole sentences into chunks of <= `max_words` words."""
    if type(text) is not str:
        raise TypeError("text must be a str")
    if type(max_words) is not int:
        raise TypeError("max_words must be an int")
    if max_words <= 0:
        raise ValueError("max_words must be positive")
    chunks = []
    for sentence in split_sentences(text):
        n = len(sentence.split())
        if chunks and len(chunks[-1].split()) + n <= max_words:
            chunks[-1] = chunks[-1] + " " + sentence
        else:
            chunks.append(sentence)
    return chunks

# %% nb03_contextual_text
def contextual_text(text, title, summarize=None):
    """Return a context note, one space, then the chunk text."""
    if not isinstance(title, str):
        raise TypeError("title should be a string")
    if not isinstance(text, str):
        raise TypeError("text should be a string")
    if summarize is None:
        return "[%s] %s" % (title, text)
    note = summarize(text, title)
    if not isinstance(note, str):
        raise TypeError("a summariser has to return a string")
    return " ".join([note, text])

# %% nb03_situate
def situate(text, title):
    """Title note plus the page sentence that comes right before `text`."""
    doc = DOC_BY_TITLE.get(title)
    if doc is None:
        raise ValueError("unknown title")
    sentences = split_sentences(doc.text)
    mine = split_sentences(text)
    for i, sentence in enumerate(sentences):
        if mine and sentence == mine[0]:
            return "[" + title + "]" + ("" if i == 0 else " " + sentences[i - 1])
    raise ValueError("this text is not on the page")

# %% nb03_storage_table
def storage_table(texts, size, overlaps):
    """Chunks and words stored by fixed windows, one row per overlap."""
    n_words = sum(len(t.split()) for t in texts)
    rows = []
    for ov in overlaps:
        windows = []
        for t in texts:
            windows.extend(ragkit.chunking.chunk_fixed(t, size, ov))
        stored = sum(len(w.split()) for w in windows)
        rows.append([ov, len(windows), stored, (stored - n_words) / n_words * 100])
    return pd.DataFrame(rows, columns=["overlap", "chunks", "words_stored", "extra_pct"])

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
knob_grid = bm25_rank_grid(CHUNKS, QUESTIONS, SETTINGS)
MOVED = [qid for qid, row in knob_grid.iterrows()
         if len(set(row.fillna(-1).tolist())) > 1]
MOVED.sort()
knob_grid

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
k_table = rrf_k_table([BM25_LIST, DENSE_LIST], KS)
leader = ["d7" if k_table.loc[k, "d7"] > k_table.loc[k, "d4"] else "d4" for k in KS]
SWAP_BETWEEN = None
for a, b, la, lb in zip(KS, KS[1:], leader, leader[1:]):
    if la != lb and SWAP_BETWEEN is None:
        SWAP_BETWEEN = (a, b)
k_table.round(6)
