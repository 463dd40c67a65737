# Alternative answers for the project, written differently from the master,
# in the `# %% grade_id` format that autograder/make_sample_class.py reads.
# Each section is the whole source of that solution cell. They go with the
# sample student's own corpus in alternatives/project_corpus (a choir's
# handbook), so MY_QID and the memos talk about that corpus.

# %% proj_chunker
def chunk_paragraphs(text, size):
    """Heading and paragraph blocks packed into chunks of <= size words.

    A block longer than size is handed to chunk_sentences, so its sentences
    are packed on their own; a single sentence over size stays whole.
    """
    if not size >= 1:
        raise ValueError("size has to be 1 or more")
    blocks, lines = [], []
    for line in text.splitlines() + [""]:
        if line.strip():
            lines.append(line)
        elif lines:
            blocks.append(" ".join(" ".join(lines).split()))
            lines = []
    pieces = []
    for block in blocks:
        if len(block.split()) > size:
            pieces += chunk_sentences(block, size)
        else:
            pieces.append(block)
    out = []
    for piece in pieces:
        if out and len(out[-1].split()) + len(piece.split()) <= size:
            out[-1] = out[-1] + " " + piece
        else:
            out.append(piece)
    return out

# %% proj_chunker_table
def chunker_table(documents, questions, size):
    """Chunk count, mean length, hybrid recall@3 and MRR per chunker."""
    cutters = [
        ("fixed", lambda t: chunk_fixed(t, size)),
        ("overlap", lambda t: chunk_fixed(t, size, size // 5)),
        ("sentence", lambda t: chunk_sentences(t, size)),
        ("paragraph", lambda t: chunk_paragraphs(t, size)),
    ]
    records = []
    for label, cut in cutters:
        chunks = [c for d in documents for c in make_chunks(d.doc_id,
                                                            cut(d.text))]
        index = Retriever(chunks)
        recalls, rrs = [], []
        for q in questions:
            top = index.search(q.question, k=10, mode="hybrid")
            gold = relevant_chunk_ids(index.chunks, q.answer)
            recalls.append(recall_at_k(top, gold, 3))
            rrs.append(mrr(top, gold, 10))
        lengths = [len(c.text.split()) for c in chunks]
        records.append((label, len(chunks), sum(lengths) / len(lengths),
                        sum(recalls) / len(recalls), sum(rrs) / len(rrs)))
    frame = pd.DataFrame(records, columns=["row", "chunks", "mean_words",
                                           "recall", "mrr"])
    return frame.set_index("row").rename_axis(None)

# %% proj_unit_tests
def check_no_words_lost(chunker):
    sample = ("Rehearsal\n\nWe sing on Wednesdays. Bring water.\n\n"
              "Tea is at eight.")
    for size in (2, 3, 6):
        joined = []
        for piece in chunker(sample, size):
            joined.extend(piece.split())
        assert joined == sample.split(), f"size={size}: words changed"


def check_size_limit(chunker):
    sample = "Sing up. Breathe in.\n\nStand tall. Smile now. Watch me."
    sizes = [len(p.split()) for p in chunker(sample, 3)]
    assert max(sizes, default=0) <= 3, f"chunk sizes {sizes} with size=3"


def check_empty_text(chunker):
    result = chunker("", 3)
    assert isinstance(result, list) and not result, \
        f"expected [] for '', got {result!r}"

# %% proj_methods
def method_table(retriever, questions):
    """One row per mode: mean hit@3, recall@3, MRR over 10 and nDCG@3."""
    metrics = {"hit": lambda r, g: hit_at_k(r, g, 3),
               "recall": lambda r, g: recall_at_k(r, g, 3),
               "mrr": lambda r, g: mrr(r, g, 10),
               "ndcg": lambda r, g: ndcg_at_k(r, g, 3)}
    gold = [relevant_chunk_ids(retriever.chunks, q.answer) for q in questions]
    out = pd.DataFrame(index=MODES, columns=list(metrics), dtype=float)
    for mode in MODES:
        ranked = [retriever.search(q.question, k=10, mode=mode)
                  for q in questions]
        for name, score in metrics.items():
            out.loc[mode, name] = float(np.mean(
                [score(r, g) for r, g in zip(ranked, gold)]))
    return out

# %% proj_rrf
def rrf_sweep(retriever, questions, ks=(1, 10, 60, 200)):
    """Hybrid recall@3 and MRR with each fusion constant."""
    lists = []
    for q in questions:
        words = [d for d, _ in retriever.bm25.search(q.question, 10)]
        vecs = [d for d, _ in retriever.dense.search(q.question, 10)]
        lists.append((words, vecs,
                      relevant_chunk_ids(retriever.chunks, q.answer)))
    recall_col, mrr_col = [], []
    for const in ks:
        fused = [[d for d, _ in rrf([w, v], k=const, top=10)]
                 for w, v, _ in lists]
        recall_col.append(np.mean([recall_at_k(f, g, 3)
                                   for f, (_, _, g) in zip(fused, lists)]))
        mrr_col.append(np.mean([mrr(f, g, 10)
                                for f, (_, _, g) in zip(fused, lists)]))
    return pd.DataFrame({"recall": recall_col, "mrr": mrr_col},
                        index=list(ks))

# %% proj_ndcg
MY_QID = "q06"
MY_NDCG = 0.631

# %% proj_memo_a
Paragraph and sentence chunks kept the short answers of my choir handbook
whole, while fixed windows sometimes split one across two chunks. Overlap
repaired a few of those splits but stored about a fifth more words (my
own arithmetic from the table: overlap chunks x mean words against fixed
chunks x mean words), the same order as the 24.8% in the lecture.

# %% proj_memo_b_trace
For q01 the gold chunk shares only "Wednesday" with the question, and
the question word is "day", which no chunk holds. BM25 ranks the concert
and committee chunks first because they share "the" and "is" weighted by
rarity. The dense list holds the same look-alikes. Fusion and reranking
only reorder those lists, so the gold chunk never reaches the top 3.

# %% proj_memo_b_ndcg
My own arithmetic for q06: the top 3 is [no, yes, no] with one relevant
chunk. DCG = 1 / log2(3) = 0.631, IDCG = 1, nDCG@3 = 0.631.

# %% proj_memo_b_caveat
Fifteen answerable questions: one question is 1/15 = 0.067 of hit@3, so
a 0.05 gap is less than one question and means nothing. The RRF constant
did not change the order of the methods, as [5] says.

# %% proj_counts
def grounding_counts(retriever, questions, unanswerable, min_overlap=2,
                     k=3):
    """Five counts of what the grounded answerer did."""
    def reply_to(q):
        shown = [retriever.by_id[i]
                 for i in retriever.search(q.question, k=k, mode="hybrid")]
        return grounded_answer(q.question, shown, min_overlap=min_overlap)

    right = wrong = refused = 0
    for q in questions:
        a = reply_to(q)
        if a.abstained:
            refused += 1
        elif q.answer.lower() in a.text.lower():
            right += 1
        else:
            wrong += 1
    declined = sum(reply_to(q).abstained for q in unanswerable)
    return {"answered_right": right, "answered_wrong": wrong,
            "wrongly_refused": refused, "rightly_refused": int(declined),
            "wrongly_answered": len(unanswerable) - int(declined)}

# %% proj_sweep
def overlap_sweep(retriever, questions, unanswerable, settings=(1, 2, 3, 4)):
    """grounding_counts for every min_overlap in settings."""
    table = pd.DataFrame.from_dict(
        {m: grounding_counts(retriever, questions, unanswerable, m)
         for m in settings}, orient="index")
    return table.loc[list(settings)]

# %% proj_citation
def check_cited(answer, chunks):
    """Fail when the answer cites a chunk it was not shown."""
    if not check_citations(answer, chunks):
        raise AssertionError("a citation points outside the chunks shown")

# %% proj_loop
def loop_stats(retriever, questions, unanswerable, max_rounds=3, k=3):
    """Rounds, correct multi-round runs and search calls of the agent loop."""
    calls = []

    def search(query, n):
        calls.append(query)
        return retriever.search(query, k=n, mode="hybrid")

    many = many_ok = 0
    cases = [(q, q.answer) for q in questions] + \
        [(q, None) for q in unanswerable]
    for q, gold in cases:
        reply, trace = agent_answer(q.question, search, retriever.by_id,
                                    max_rounds=max_rounds, k=k)
        if gold is None:
            ok = reply.abstained
        else:
            ok = (not reply.abstained) and gold.lower() in reply.text.lower()
        if len(trace) >= 2:
            many += 1
            many_ok += bool(ok)
    return {"multi_round": many, "multi_round_correct": many_ok,
            "searches": len(calls)}

# %% proj_size
def index_gigabytes(n, dim, bytes_per_number=4):
    """Flat index size in GB (10**9 bytes)."""
    total_bytes = n * dim * bytes_per_number
    return float(total_bytes) / 1_000_000_000

# %% proj_memo_c
I keep min_overlap=2: a wrong rehearsal time sends a singer to an empty
hall, which is worse than a refusal. Failures: q01 retrieval (no chunk
says "day"), q02 retrieval (the warm-up chunk ranked low), u01 reader
(quoted the director sentence), u02 reader (quoted the ticket price),
u04 reader (quoted the winter concert).

# %% proj_memo_d_scale
My own arithmetic: 5,000,000 x 768 x 4 bytes = 15.36 GB. I would use
HNSW [8] tuned to recall@10 of 0.95 against exact search, add changed
chunks nightly and rebuild weekly, make contextual prefixes only for
changed chunks [6], and rerank the top 50 with a ColBERT-style model
[3] [13].

# %% proj_memo_d_honesty
Risk: a shared handbook page could hide instructions for the model
(prompt injection); control: quote retrieved text as data and review new
pages before indexing. Limits: 9 pages and 19 questions; I wrote the
questions knowing the answers; the mock reader only quotes sentences. I
wrote the documents myself.
