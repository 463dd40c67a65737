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

