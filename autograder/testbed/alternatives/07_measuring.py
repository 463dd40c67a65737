# Alternative answers for notebook 07, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb07_hit_recall
def hit_at_k(ids, gold, k):
    """1.0 when a gold id is among the first k of ids, else 0.0."""
    check_int(k, "k", least=1)
    wanted = set(gold)
    hit = len(wanted & set(ids[:k])) > 0
    return 1.0 if hit else 0.0


def recall_at_k(ids, gold, k):
    """Share of the distinct gold ids found in the first k of ids."""
    check_int(k, "k", least=1)
    wanted = set(gold)
    if not wanted:
        return 0.0  # nothing to find, and no division by zero
    found = {doc for rank, doc in enumerate(ids, 1) if rank <= k} & wanted
    return len(found) / len(wanted)

# %% nb07_mrr
def mrr(ids, gold, k=None):
    """Reciprocal rank of the earliest gold id (0.0 if out of reach)."""
    if k is not None and (type(k) is not int):
        raise TypeError(f"k: expected an int or None, got {k!r}")
    if k is not None and k < 1:
        raise ValueError(f"k: expected at least 1, got {k}")
    limit = len(ids) if k is None else min(k, len(ids))
    positions = [i for i in range(limit) if ids[i] in set(gold)]
    return 1.0 / (positions[0] + 1) if positions else 0.0

# %% nb07_ndcg
def ndcg_at_k(ids, gold, k):
    """Discounted gain of the top k, scaled so a perfect list gives 1."""
    if type(k) is not int:
        raise TypeError(f"k: expected an int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k: expected at least 1, got {k}")
    wanted = set(gold)
    discounts = [1 / math.log2(r) for r in range(2, k + 2)]
    gains = [1.0 if doc in wanted else 0.0 for doc in ids[:k]]
    dcg = sum(g * d for g, d in zip(gains, discounts))
    ideal = sum(discounts[:min(len(wanted), k)])
    return dcg / ideal if ideal > 0 else 0.0

# %% nb07_study
def chunk_size_study(sizes, chunkers=("fixed", "overlap", "sentence"), k=3):
    """hit@k, recall@k, MRR and storage for every (chunker, size) pair."""
    recipes = {
        "fixed": lambda n: {"strategy": "fixed", "size": n},
        "overlap": lambda n: {"strategy": "overlap", "size": n,
                              "overlap": n // 4},
        "sentence": lambda n: {"strategy": "sentence", "size": n},
    }
    table = {name: [] for name in ["chunker", "size", "chunks",
                                   "words_stored", "hit", "recall", "mrr"]}
    for name in chunkers:
        if name not in recipes:
            raise ValueError(f"chunker must be fixed, overlap or sentence, "
                             f"not {name!r}")
        for n in sizes:
            pieces = chunk_documents(DOCS, **recipes[name](n))
            index = Retriever(pieces)
            total_hit = total_recall = total_rr = 0.0
            for question in QUESTIONS:
                wanted = relevant_chunk_ids(pieces, question.answer)
                got = index.search(question.question, 10, "hybrid")
                total_hit += hit_at_k(got, wanted, k)
                total_recall += recall_at_k(got, wanted, k)
                total_rr += mrr(got, wanted, 10)
            count = len(QUESTIONS)
            table["chunker"].append(name)
            table["size"].append(n)
            table["chunks"].append(len(pieces))
            table["words_stored"].append(
                sum(len(p.text.split()) for p in pieces))
            table["hit"].append(total_hit / count)
            table["recall"].append(total_recall / count)
            table["mrr"].append(total_rr / count)
    return pd.DataFrame(table)
