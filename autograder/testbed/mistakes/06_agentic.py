"""Plausible mistakes in notebook 06 (see autograder/mutants.py)."""
MUTANTS = [
    # Part A: sentence_pool
    Mutant("06_agentic", "nb06_sentence_pool",
           "window reaches back into the previous chunk",
           "    pool = []\n    for chunk in chunks:\n"
           "        note = concepts(chunk.context)\n"
           "        previous = set()  # reset: a window stays inside its chunk\n",
           "    pool = []\n    previous = set()\n    for chunk in chunks:\n"
           "        note = concepts(chunk.context)\n"),
    Mutant("06_agentic", "nb06_sentence_pool", "context note left out",
           "note | previous | own", "previous | own"),
    Mutant("06_agentic", "nb06_sentence_pool",
           "window keeps every earlier sentence",
           "            previous = own", "            previous = previous | own"),
    Mutant("06_agentic", "nb06_sentence_pool", "raw tokens, no concept map",
           "return {concept(token) for token in tokenize(text)}",
           "return set(tokenize(text))"),
    # Part B: grounded_answer
    Mutant("06_agentic", "nb06_grounded_answer",
           "counts matches instead of weighing them",
           "score = math.fsum(math.log(1 + len(pool) / df[c]) for c in matches)",
           "score = len(matches)"),
    Mutant("06_agentic", "nb06_grounded_answer", "ties go to the later sentence",
           "score > best_score", "score >= best_score"),
    Mutant("06_agentic", "nb06_grounded_answer",
           "needs more than min_overlap matches",
           "if len(matches) < min_overlap:", "if len(matches) <= min_overlap:"),
    Mutant("06_agentic", "nb06_grounded_answer", "weight without the 1 +",
           "math.log(1 + len(pool) / df[c])", "math.log(len(pool) / df[c])"),
    # Part C: check_citations
    Mutant("06_agentic", "nb06_check_citations", "any instead of all",
           "return all(", "return any("),
    Mutant("06_agentic", "nb06_check_citations", "only the first citation checked",
           "return all(cited in retrieved for cited in answer.citations)",
           "return not answer.citations or answer.citations[0] in retrieved"),
    Mutant("06_agentic", "nb06_check_citations", "page ids instead of chunk ids",
           "retrieved = {chunk.chunk_id for chunk in chunks}",
           "retrieved = {chunk.doc_id for chunk in chunks}"),
    Mutant("06_agentic", "nb06_check_citations", "an abstention fails the check",
           "    retrieved = ",
           "    if not answer.citations:\n        return False\n    retrieved = "),
    # Part D: needs_retrieval
    Mutant("06_agentic", "nb06_needs_retrieval", "all instead of any",
           "return any(token not in SMALL_TALK", "return all(token not in SMALL_TALK"),
    Mutant("06_agentic", "nb06_needs_retrieval", "unstemmed words",
           "for token in tokenize(message))",
           "for token in message.lower().split())"),
    Mutant("06_agentic", "nb06_needs_retrieval", "empty text searched anyway",
           "    return any(",
           "    if not tokenize(message):\n        return True\n    return any("),
    # Part E: rewrite_query
    Mutant("06_agentic", "nb06_rewrite_query", "feedback from every chunk",
           "for chunk in chunks[:2]:", "for chunk in chunks:"),
    Mutant("06_agentic", "nb06_rewrite_query", "ties in first-seen order",
           "ranked = sorted(counts, key=lambda word: (-counts[word], word))",
           "ranked = [word for word, _ in counts.most_common()]"),
    Mutant("06_agentic", "nb06_rewrite_query", "tokens with digits kept",
           "if not known and not any(ch.isdigit() for ch in token):",
           "if not known:"),
    Mutant("06_agentic", "nb06_rewrite_query", "a shared concept added twice",
           " and word not in added:", ":"),
    Mutant("06_agentic", "nb06_rewrite_query",
           "question words come back as feedback",
           "known = token in tokens or token in added",
           "known = token in added"),
    # Part F: agent_answer
    Mutant("06_agentic", "nb06_agent_answer", "search never widens",
           "ids = list(search(query, k * round_no))",
           "ids = list(search(query, k))"),
    Mutant("06_agentic", "nb06_agent_answer", "rewrites the current query",
           "new_query = rewrite_query(question, chunks)",
           "new_query = rewrite_query(query, chunks)"),
    Mutant("06_agentic", "nb06_agent_answer", "answers the rewritten query",
           "answer = grounded_answer(question, chunks, min_overlap)",
           "answer = grounded_answer(query, chunks, min_overlap)"),
    Mutant("06_agentic", "nb06_agent_answer", "string equality as the no-change test",
           "if set(tokenize(new_query)) <= set(tokenize(query)):",
           "if new_query == query:"),
    Mutant("06_agentic", "nb06_agent_answer", "round limit checked after the rewrite",
           "        if round_no == max_rounds:\n"
           "            trace[-1][\"stop\"] = \"round limit\"\n"
           "            break\n"
           "        new_query = rewrite_query(question, chunks)\n"
           "        if set(tokenize(new_query)) <= set(tokenize(query)):\n"
           "            trace[-1][\"stop\"] = \"no new words\"\n"
           "            break\n",
           "        new_query = rewrite_query(question, chunks)\n"
           "        if set(tokenize(new_query)) <= set(tokenize(query)):\n"
           "            trace[-1][\"stop\"] = \"no new words\"\n"
           "            break\n"
           "        if round_no == max_rounds:\n"
           "            trace[-1][\"stop\"] = \"round limit\"\n"
           "            break\n"),
    Mutant("06_agentic", "nb06_agent_answer", "small talk searched anyway",
           "    if not needs_retrieval(question):", "    if False:"),
    # Part G: limit_table
    Mutant("06_agentic", "nb06_limit_table", "one counter for all limits",
           "    for limit in limits:\n        calls = []\n",
           "    calls = []\n    for limit in limits:\n"),
    Mutant("06_agentic", "nb06_limit_table", "stop read from the first round",
           'trace[-1]["stop"]', 'trace[0]["stop"]'),
    Mutant("06_agentic", "nb06_limit_table", "index not named",
           'pd.Index(list(limits), name="max_rounds")', "list(limits)"),
    Mutant("06_agentic", "nb06_limit_table", "max_rounds not passed on",
           "                                     max_rounds=limit)",
           "                                     )"),
]
