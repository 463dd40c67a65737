"""Plausible mistakes in notebook 08 (see autograder/mutants.py)."""
MUTANTS = [
    # Part A: triage
    Mutant("08_failure_modes", "nb08_triage",
           "'ranked too low' tested before 'not retrieved' (absent = low)",
           "    if rank is None:\n        return \"not retrieved\"\n"
           "    if rank > record[\"k\"]:\n",
           "    if rank is None or rank > record[\"k\"]:\n"),
    Mutant("08_failure_modes", "nb08_triage",
           "citations checked only after the answer looked right",
           "    if not record[\"citations_ok\"]:\n"
           "        return \"bad citation\"\n"
           "    if record[\"answerable\"] and record[\"correct\"]:\n"
           "        return \"ok\"\n",
           "    if record[\"answerable\"] and record[\"correct\"]:\n"
           "        return \"ok\"\n"
           "    if not record[\"citations_ok\"]:\n"
           "        return \"bad citation\"\n"),
    Mutant("08_failure_modes", "nb08_triage",
           "search budget counted as spent only when exceeded",
           'record["searches"] >= limit', 'record["searches"] > limit'),
    Mutant("08_failure_modes", "nb08_triage",
           "loop rule tested after the retrieval rules",
           "    limit = record[\"max_searches\"]\n"
           "    if limit is not None and record[\"searches\"] >= limit:\n"
           "        return \"too many searches\"\n"
           "    rank = record[\"gold_rank\"]\n",
           "    rank = record[\"gold_rank\"]\n"
           "    limit = record[\"max_searches\"]\n"
           "    if rank is not None and rank <= record[\"k\"] and \\\n"
           "            limit is not None and record[\"searches\"] >= limit:\n"
           "        return \"too many searches\"\n"),
    Mutant("08_failure_modes", "nb08_triage",
           "a missing key not reported",
           "        if key not in record:\n"
           "            raise ValueError(f\"record has no {key!r}\")\n",
           "        pass\n"),
    # Part B: abstention_counts
    Mutant("08_failure_modes", "nb08_counts",
           "any answer to an answerable question counted as correct",
           "    elif record[\"correct\"]:", "    elif record[\"answered\"]:"),
    Mutant("08_failure_modes", "nb08_counts",
           "a Counter that drops the outcomes that never happened",
           "    counts = {outcome: 0 for outcome in OUTCOMES}\n",
           "    counts = Counter()\n"),
    Mutant("08_failure_modes", "nb08_counts",
           "unanswerable outcomes swapped",
           "            key = (\"answered unanswerable\" if record[\"answered\"]\n"
           "                   else \"refused unanswerable\")\n",
           "            key = (\"refused unanswerable\" if record[\"answered\"]\n"
           "                   else \"answered unanswerable\")\n"),
    Mutant("08_failure_modes", "nb08_counts",
           "keys built in the order they are first met",
           "    counts = {outcome: 0 for outcome in OUTCOMES}\n",
           "    counts = {}\n"),
    # Part C: looks_injected and guarded_answer
    Mutant("08_failure_modes", "nb08_guard",
           "the guard only matches the exact case of the patterns",
           "    flat = \" \".join(text.lower().split())\n",
           "    flat = \" \".join(text.split())\n"),
    Mutant("08_failure_modes", "nb08_guard",
           "whitespace not squashed before the search",
           "    flat = \" \".join(text.lower().split())\n",
           "    flat = text.lower()\n"),
    Mutant("08_failure_modes", "nb08_guard",
           "only the reply is checked, the chunks all reach the reader",
           "    kept = [chunk for chunk in chunks if not looks_injected(chunk.text)]\n",
           "    kept = list(chunks)\n"),
    Mutant("08_failure_modes", "nb08_guard",
           "the reply is never checked",
           "    if looks_injected(answer.text):\n",
           "    if False:\n"),
    Mutant("08_failure_modes", "nb08_guard",
           "min_overlap not passed on to the reader",
           "    answer = grounded_answer(question, kept, min_overlap)\n",
           "    answer = grounded_answer(question, kept)\n"),
    # Part D: refresh
    Mutant("08_failure_modes", "nb08_refresh",
           "every page cut again, changed or not",
           "        if hashes.get(doc.doc_id) == now:\n",
           "        if False:\n"),
    Mutant("08_failure_modes", "nb08_refresh",
           "hashes handed back unchanged",
           "    return new_chunks, new_hashes\n",
           "    return new_chunks, dict(hashes)\n"),
    Mutant("08_failure_modes", "nb08_refresh",
           "chunks of removed pages kept",
           "    return new_chunks, new_hashes\n",
           "    listed = {doc.doc_id for doc in docs}\n"
           "    new_chunks += [c for c in chunks if c.doc_id not in listed]\n"
           "    return new_chunks, new_hashes\n"),
    Mutant("08_failure_modes", "nb08_refresh",
           "a new page (no old hash) is never cut",
           "        if hashes.get(doc.doc_id) == now:\n",
           "        if hashes.get(doc.doc_id, now) == now:\n"),
    Mutant("08_failure_modes", "nb08_refresh",
           "the caller's hashes updated in place",
           "    new_chunks, new_hashes = [], {}\n",
           "    new_chunks, new_hashes = [], hashes\n"),
    # Part E: search_as
    Mutant("08_failure_modes", "nb08_search_as",
           "filter applied after taking the top k",
           "    for chunk_id in retriever.search(query, k=n, depth=n):\n",
           "    for chunk_id in retriever.search(query, k=k, depth=n):\n"),
    Mutant("08_failure_modes", "nb08_search_as",
           "asker sees only their own audience",
           "        if AUDIENCES.index(audience) <= clearance:\n",
           "        if audience == asker:\n"),
    Mutant("08_failure_modes", "nb08_search_as",
           "chunks without an audience treated as staff-only",
           "audience_of.get(chunk_id, \"members\")",
           "audience_of.get(chunk_id, \"staff\")"),
    Mutant("08_failure_modes", "nb08_search_as",
           "an unknown asker is not rejected",
           "    if asker not in AUDIENCES:\n",
           "    if asker is None:\n"),
    Mutant("08_failure_modes", "nb08_search_as",
           "depth left at its default, so only the top few are filtered",
           "retriever.search(query, k=n, depth=n)",
           "retriever.search(query, k=n)"),
]
