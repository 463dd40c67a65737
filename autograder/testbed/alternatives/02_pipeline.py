# Alternative answers for notebook 02, written differently from the master,
# in the `# %% grade_id` format that autograder/make_sample_class.py reads.
# Each section is the whole source of that solution cell.

# %% nb02_stem
def stem(word):
    """`word` without its first fitting suffix (ing, ly, ed, es, s)."""
    if not isinstance(word, str):
        raise TypeError("word has to be a str")
    rules = [("ing", ()), ("ly", ()), ("ed", ()),
             ("es", ("ss", "x", "ch", "sh")), ("s", ())]
    for suffix, needed_ends in rules:
        cut = len(word) - len(suffix)
        if cut < 3 or word[cut:] != suffix:
            continue
        base = word[:cut]
        if needed_ends and not any(base.endswith(e) for e in needed_ends):
            continue
        if suffix == "s" and base.endswith("s"):  # the word ends in "ss"
            continue
        return base
    return word

# %% nb02_tokenize
def tokenize(text, drop_stopwords=True):
    """Lower-case tokens of `text`, stop words dropped, then stemmed."""
    if not isinstance(text, str):
        raise TypeError(f"text has to be a str, not {type(text).__name__}")
    words = []
    for piece in re.split(r"[^a-z0-9-]+", text.lower()):
        group = []
        for part in piece.split("-") + [""]:  # "" closes the last group
            if part:
                group.append(part)
            elif group:
                words.append("-".join(group))
                group = []
    if drop_stopwords:
        words = [w for w in words if w not in STOPWORDS]
    return list(map(stem, words))

# %% nb02_split_sentences
def split_into_sentences(text):
    """Pieces of `text` that end at . ! or ? followed by whitespace."""
    if not isinstance(text, str):
        raise TypeError("text has to be a str")
    pieces, start = [], 0
    for i in range(1, len(text)):
        if text[i - 1] in ".!?" and text[i].isspace():
            pieces.append(text[start:i])
            start = i
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]

# %% nb02_concept
def concept(token):
    """The concept word of `token` in SYNONYMS (keys stemmed), or `token`."""
    for word, shared in SYNONYMS.items():
        if stem(word) == token:
            return shared
    return token

# %% nb02_rag_sequence
def rag_sequence(doc_probs, token_probs):
    """p(y|x) when one passage serves the whole answer."""
    check_tables(doc_probs, token_probs)
    per_passage = []
    for k, row in enumerate(token_probs):
        chance = doc_probs[k]
        for p in row:
            chance *= p
        per_passage.append(chance)
    return float(sum(per_passage))

# %% nb02_rag_token
def rag_token(doc_probs, token_probs):
    """p(y|x) when every token may draw on another passage."""
    check_tables(doc_probs, token_probs)
    mixtures = np.asarray(doc_probs, float) @ np.asarray(token_probs, float)
    return float(np.prod(mixtures))

# %% nb02_ceiling_table
def ceiling_table(questions, chunks, ks, mode="bm25"):
    """Mean recall@k and answer accuracy, one row per k."""
    questions = list(questions)
    if not questions:
        raise ValueError("questions: there is nothing to measure")
    engine = Retriever(chunks)
    ks = list(ks)
    recall_sum = [0.0] * len(ks)
    right = [0] * len(ks)
    for q in questions:
        gold = relevant_chunk_ids(chunks, q.answer)
        for pos, k in enumerate(ks):
            ranked = engine.search(q.question, k=k, mode=mode)
            recall_sum[pos] += recall_at_k(ranked, gold, k)
            reply = grounded_answer(q.question,
                                    [engine.by_id[c] for c in ranked])
            if not reply.abstained and q.answer.casefold() in \
                    reply.text.casefold():
                right[pos] += 1
    n = len(questions)
    return pd.DataFrame({"k": ks,
                         "recall": [s / n for s in recall_sum],
                         "accuracy": [r / n for r in right]})
