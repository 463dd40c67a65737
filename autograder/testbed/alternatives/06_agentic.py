# Alternative answers for notebook 06, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb06_sentence_pool
def sentence_pool(chunks):
    """Each sentence with the concepts of its window: note, previous, itself."""
    def concept_set(text):
        return set(map(concept, tokenize(text)))

    result = []
    for chunk in chunks:
        sentences = split_sentences(chunk.text)
        own = [concept_set(s) for s in sentences]
        base = concept_set(chunk.context)
        for i, sentence in enumerate(sentences):
            window = base | own[i]
            if i > 0:
                window |= own[i - 1]
            result.append((chunk.chunk_id, sentence, window))
    return result

# %% nb06_grounded_answer
def grounded_answer(question, chunks, min_overlap=2):
    """Best sentence by rarity-weighted concept overlap, else abstain."""
    if not min_overlap >= 1:
        raise ValueError("min_overlap has to be 1 or more")
    asked = set(map(concept, tokenize(question)))
    pool = sentence_pool(chunks)
    df = {}
    for _, _, window in pool:
        for c in window:
            df[c] = df.get(c, 0) + 1
    n = len(pool)
    scored = []
    for position, (chunk_id, sentence, window) in enumerate(pool):
        shared = asked.intersection(window)
        if len(shared) >= min_overlap:
            weight = math.fsum([math.log(1 + n / df[c]) for c in shared])
            scored.append((weight, -position, sentence, chunk_id))
    if not scored:
        return Answer(NO_ANSWER, (), True)
    _, _, sentence, chunk_id = max(scored)  # -position: earlier wins ties
    return Answer(sentence, (chunk_id,), False)

# %% nb06_check_citations
def check_citations(answer, chunks):
    """False as soon as one citation is not a retrieved chunk id."""
    allowed = [c.chunk_id for c in chunks]
    for cited in answer.citations:
        if cited not in allowed:
            return False
    return True

# %% nb06_needs_retrieval
def needs_retrieval(message):
    """Search when something is left after removing the small talk."""
    leftover = set(tokenize(message)) - SMALL_TALK
    return len(leftover) > 0

# %% nb06_rewrite_query
def rewrite_query(question, chunks):
    """Concept words of the question, then two frequent new words."""
    asked = tokenize(question)
    extra = []
    for word in map(concept, asked):
        if word not in asked and word not in extra:
            extra.append(word)
    skip = set(asked) | set(extra)
    seen = {}
    for chunk in chunks[:2]:
        for tok in tokenize(chunk.text):
            if tok in skip or any(map(str.isdigit, tok)):
                continue
            seen[tok] = seen.get(tok, 0) + 1
    # a stable sort by count, applied to an alphabetical list, keeps a-z ties
    best = sorted(sorted(seen), key=seen.get, reverse=True)[:2]
    words = extra + best
    return question + " " + " ".join(words) if words else question

# %% nb06_agent_answer
def agent_answer(question, search, chunks_by_id,
                 max_rounds=3, k=3, min_overlap=2):
    """A while loop that ends with exactly one stop reason."""
    for name, value in (("max_rounds", max_rounds), ("k", k)):
        if value < 1:
            raise ValueError(f"{name} has to be 1 or more, not {value}")
    if not needs_retrieval(question):
        return (Answer(REPLY_TO_SMALL_TALK, (), False),
                [dict(round=0, query=question, k=0, ids=[],
                      outcome="small talk", stop="small talk")])
    trace, query, rnd, reason = [], question, 0, None
    while reason is None:
        rnd += 1
        hits = [i for i in search(query, rnd * k)]
        found = [chunks_by_id[i] for i in hits]
        reply = grounded_answer(question, found, min_overlap)
        trace.append(dict(round=rnd, query=query, k=rnd * k, ids=hits,
                          outcome="abstained" if reply.abstained
                          else "answered", stop=None))
        if not reply.abstained:
            reason = "answered"
        elif rnd >= max_rounds:
            reason = "round limit"
        else:
            candidate = rewrite_query(question, found)
            if set(tokenize(candidate)).issubset(tokenize(query)):
                reason = "no new words"
            else:
                query = candidate
    trace[-1]["stop"] = reason
    if reason == "answered":
        return reply, trace
    return Answer(NO_ANSWER, (), True), trace

# %% nb06_limit_table
def limit_table(question, search, chunks_by_id, limits):
    """One row per round limit: calls made, why it stopped, abstained."""
    records = []
    for m in limits:
        counter = [0]

        def counted(query, n, counter=counter):
            counter[0] += 1
            return search(query, n)

        reply, steps = agent_answer(question, counted, chunks_by_id,
                                    max_rounds=m)
        records.append((counter[0], steps[-1]["stop"], bool(reply.abstained)))
    return pd.DataFrame(records, columns=["search calls", "stop", "abstained"],
                        index=pd.Index(list(limits), name="max_rounds"))
