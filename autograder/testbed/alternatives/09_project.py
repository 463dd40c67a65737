# Alternative answers for notebook 09, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb09_score_step
def score_step(retriever, mode, questions, unanswerable, k=3):
    """Score every question for one step; answerable questions come first."""
    def first_ids(text):
        if retriever is None:
            return []
        return list(retriever.search(text, k=max(k, 10), mode=mode))

    def judged(reply, gold):
        if reply.abstained:
            return "abstained"
        if gold is not None and gold.lower() in reply.text.lower():
            return "correct"
        return "wrong"

    table = {"qid": [], "answerable": [], "recall": [], "rr": [],
             "outcome": []}
    everything = list(questions) + list(unanswerable)
    for n, item in enumerate(everything):
        gold = item.answer if n < len(questions) else None
        ids = first_ids(item.question)
        top = [retriever.by_id[x] for x in ids[:k]] if ids else []
        recall, rr = math.nan, math.nan
        if gold is not None:
            pool = retriever.chunks if retriever is not None else []
            wanted = relevant_chunk_ids(pool, gold)
            hits = [x for x in ids[:k] if x in wanted]
            recall = len(set(hits)) / len(set(wanted)) if wanted else 0.0
            ranks = [pos for pos, x in enumerate(ids[:10], 1)
                     if x in wanted]
            rr = 1.0 / ranks[0] if ranks else 0.0
        table["qid"].append(item.qid)
        table["answerable"].append(gold is not None)
        table["recall"].append(recall)
        table["rr"].append(rr)
        table["outcome"].append(judged(grounded_answer(item.question, top),
                                       gold))
    return pd.DataFrame(table)

# %% nb09_run_ablation
def run_ablation(documents, questions, unanswerable, k=3):
    """Stack the per-question rows of every step, in the order of STEPS."""
    base = chunk_documents(documents, "sentence", size=25)
    by_doc = {d.doc_id: d.title for d in documents}
    indexes = {False: Retriever(base),
               True: Retriever(add_context(base, by_doc))}
    frames = []
    for name in STEPS:
        if name == "no retrieval":
            found = score_step(None, None, questions, unanswerable, k=k)
        else:
            noted = name.endswith("+context")
            how = name[:-len("+context")] if noted else name
            found = score_step(indexes[noted], how, questions,
                               unanswerable, k=k)
        found = found.assign(step=name)
        frames.append(found[["step"] + [c for c in found.columns
                                        if c != "step"]])
    stacked = pd.concat(frames)
    return stacked.reset_index(drop=True)

# %% nb09_summarise
def summarise(runs):
    """Aggregate per-question rows into one row per step, order kept."""
    names = list(dict.fromkeys(runs["step"].tolist()))
    records = []
    for name in names:
        mine = runs.loc[runs["step"] == name]
        sure = mine.loc[mine["answerable"].astype(bool)]
        unsure = mine.loc[~mine["answerable"].astype(bool)]
        tally = sure["outcome"].value_counts()
        n = len(sure)
        searches, calls = COST[name]
        records.append([
            name,
            float(np.mean(sure["recall"])),
            float(np.mean(sure["rr"])),
            tally.get("correct", 0) / n,
            tally.get("wrong", 0) / n,
            tally.get("abstained", 0) / n,
            (float(np.mean(unsure["outcome"] == "abstained"))
             if len(unsure) > 0 else math.nan),
            searches,
            calls,
        ])
    return pd.DataFrame.from_records(records, columns=[
        "step", "recall", "mrr", "correct", "wrong", "abstained", "refused",
        "searches", "model_calls"])
