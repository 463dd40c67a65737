# Alternative answers for notebook 03, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

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
        raise TypeError("summarize has to return a string")
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


# %% nb03_ivf_search
def ivf_search(vectors, queries, n_lists, nprobe, k=10, seed=0):
    """Top-k ids and inner products found in the `nprobe` nearest lists."""
    from sklearn.cluster import KMeans

    def whole(value, name):
        if type(value) is not int:
            raise TypeError(f"{name} should be an int, not {value!r}")
        return value

    n_lists = whole(n_lists, "n_lists")
    nprobe, k = whole(nprobe, "nprobe"), whole(k, "k")
    data = np.asarray(vectors, dtype=np.float32)
    asked = np.asarray(queries, dtype=np.float32)
    if n_lists < 1 or n_lists > data.shape[0]:
        raise ValueError(f"n_lists={n_lists} is out of range")
    if nprobe < 1 or nprobe > n_lists:
        raise ValueError(f"nprobe={nprobe} is out of range")
    if k <= 0:
        raise ValueError(f"k={k} is out of range")
    model = KMeans(n_clusters=n_lists, init="random", n_init=1, max_iter=20,
                   random_state=seed)
    model.fit(data)
    owner = model.predict(data)
    buckets = {j: [] for j in range(n_lists)}
    for vid, j in enumerate(owner):
        buckets[int(j)].append(vid)
    out_ids = -np.ones((asked.shape[0], k), dtype=int)
    out_scores = np.full((asked.shape[0], k), float("-inf"))
    for r in range(asked.shape[0]):
        dist = np.linalg.norm(model.cluster_centers_ - asked[r], axis=1)
        chosen = sorted(range(n_lists), key=lambda j: (dist[j], j))[:nprobe]
        cand = np.array([v for j in chosen for v in buckets[j]], dtype=int)
        if cand.size == 0:
            continue
        sc = data[cand] @ asked[r]
        order = np.lexsort((cand, -sc))[:k]
        out_ids[r, :order.size] = cand[order]
        out_scores[r, :order.size] = sc[order]
    return out_ids, out_scores
