# Alternative answers for notebook 05, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb05_token_vectors
def token_vectors(text, dim=64):
    """One unit-length list of `dim` floats per token of `text`."""
    if type(text) is not str:
        raise TypeError("text has to be a string")
    if type(dim) is not int:
        raise TypeError("dim has to be a whole number (int)")
    if dim <= 0:
        raise ValueError("dim has to be positive")
    out = []
    for word in map(concept, tokenize(text)):
        vec = dict.fromkeys(range(dim), 0.0)
        named = [("w:" + word, WORD_WEIGHT)]
        marked = "<" + word + ">"
        named += [("g:" + marked[k:k + 3], TRIGRAM_WEIGHT)
                  for k in range(len(marked) - 2)]
        for name, weight in named:
            where, sign = feature_bucket(name, dim)
            vec[where] = vec[where] + weight * sign
        norm = math.fsum(v * v for v in vec.values()) ** 0.5
        scale = 1.0 / norm if norm else 1.0
        out.append([vec[k] * scale for k in range(dim)])
    return out

# %% nb05_maxsim
def maxsim(query_rows, passage_rows):
    """Sum over query rows of the best dot product with any passage row."""
    if len(query_rows) == 0 or len(passage_rows) == 0:
        return 0.0
    widths = {len(row) for row in passage_rows}
    if widths != {len(query_rows[0])}:
        raise ValueError("passage_rows: row width differs from the query's")
    best_per_row = []
    for q in query_rows:
        dots = [math.fsum(x * y for x, y in zip(q, d)) for d in passage_rows]
        dots.sort()
        best_per_row.append(dots[-1])
    return math.fsum(best_per_row)

# %% nb05_maxsim_rerank
def maxsim_rerank(query, ids, texts, dim=64):
    """(id, MaxSim) for every candidate, best first, ties by id."""
    ids, texts = list(ids), list(texts)
    if len(ids) != len(texts) or len(ids) != len(set(ids)):
        raise ValueError("ids must be distinct and match texts one to one")
    encoded = token_vectors(query, dim)
    score_of = {}
    for i in range(len(ids)):
        score_of[ids[i]] = maxsim(encoded, token_vectors(texts[i], dim))
    by_id = sorted(score_of)
    by_id.sort(key=score_of.get, reverse=True)  # stable: ties stay by id
    return [(i, score_of[i]) for i in by_id]

# %% nb05_dot_table
def dot_table(query, passage, dim=64):
    """Dot products of every query token vector with every passage one."""
    left = np.array(token_vectors(query, dim), dtype=float)
    right = np.array(token_vectors(passage, dim), dtype=float)
    frame = pd.DataFrame(left.reshape(-1, dim) @ right.reshape(-1, dim).T)
    frame.index = pd.Index(tokenize(query), name="query token")
    frame.columns = pd.Index(tokenize(passage), name="passage token")
    return frame

# %% nb05_row_maxima
def row_maxima(table):
    """(best value per row, its column label, their sum as a float)."""
    values = table.to_numpy()
    where = values.argmax(axis=1)
    best = pd.Series(values[np.arange(len(values)), where],
                     index=table.index)
    match = pd.Series([table.columns[j] for j in where], index=table.index)
    return best, match, float(np.sum(best.to_numpy()))
