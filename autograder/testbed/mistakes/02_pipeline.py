"""Plausible mistakes in notebook 02 (see autograder/mutants.py)."""
MUTANTS = [
    # Part A: stem
    Mutant("02_pipeline", "nb02_stem", "\"es\" stripped after any letter",
           "        if suffix == \"es\" and not rest.endswith((\"ss\", \"x\", \"ch\", \"sh\")):\n"
           "            continue\n",
           ""),
    Mutant("02_pipeline", "nb02_stem", "search stops at a suffix that does not fit",
           "        if len(rest) < 3:\n            continue\n",
           "        if len(rest) < 3:\n            return word\n"),
    Mutant("02_pipeline", "nb02_stem", "stems of two letters allowed",
           "if len(rest) < 3:", "if len(rest) < 2:"),
    Mutant("02_pipeline", "nb02_stem", "words ending in ss lose an s",
           "        if suffix == \"s\" and word.endswith(\"ss\"):\n            continue\n",
           ""),
    # Part B: tokenize
    Mutant("02_pipeline", "nb02_tokenize", "hyphenated codes split",
           "r\"[a-z0-9]+(?:-[a-z0-9]+)*\"", "r\"[a-z0-9]+\""),
    Mutant("02_pipeline", "nb02_tokenize", "stray hyphens kept in tokens",
           "r\"[a-z0-9]+(?:-[a-z0-9]+)*\"", "r\"[a-z0-9-]+\""),
    Mutant("02_pipeline", "nb02_tokenize", "stop words dropped after stemming",
           "    if drop_stopwords:\n"
           "        found = [token for token in found if token not in STOPWORDS]\n"
           "    return [stem(token) for token in found]\n",
           "    found = [stem(token) for token in found]\n"
           "    if drop_stopwords:\n"
           "        found = [token for token in found if token not in STOPWORDS]\n"
           "    return found\n"),
    Mutant("02_pipeline", "nb02_tokenize", "text not lower-cased",
           "text.lower())", "text)"),
    # Part C: split_sentences
    Mutant("02_pipeline", "nb02_split_sentences", "cut after every mark",
           "r\"(?<=[.!?])\\s+\"", "r\"(?<=[.!?])\\s*\""),
    Mutant("02_pipeline", "nb02_split_sentences", "end mark dropped",
           "r\"(?<=[.!?])\\s+\"", "r\"[.!?]\\s+\""),
    Mutant("02_pipeline", "nb02_split_sentences", "pieces not stripped",
           "return [piece.strip() for piece in pieces if piece.strip()]",
           "return [piece for piece in pieces if piece]"),
    Mutant("02_pipeline", "nb02_split_sentences", "empty pieces kept",
           "return [piece.strip() for piece in pieces if piece.strip()]",
           "return [piece.strip() for piece in pieces]"),
    # Part D: concept
    Mutant("02_pipeline", "nb02_concept", "table keys not stemmed",
           "stemmed = {stem(word): shared", "stemmed = {word: shared"),
    Mutant("02_pipeline", "nb02_concept", "token stemmed a second time",
           "return stemmed.get(token, token)", "return stemmed.get(stem(token), token)"),
    Mutant("02_pipeline", "nb02_concept", "unknown tokens become None",
           "return stemmed.get(token, token)", "return stemmed.get(token)"),
    # Part E: rag_sequence
    Mutant("02_pipeline", "nb02_rag_sequence", "passages weighted equally",
           "total += p_doc * math.prod(row)",
           "total += math.prod(row) / len(doc_probs)"),
    Mutant("02_pipeline", "nb02_rag_sequence", "only the best passage kept",
           "total += p_doc * math.prod(row)",
           "total = max(total, p_doc * math.prod(row))"),
    Mutant("02_pipeline", "nb02_rag_sequence", "token probabilities added",
           "total += p_doc * math.prod(row)", "total += p_doc * sum(row)"),
    Mutant("02_pipeline", "nb02_rag_sequence", "tables never checked",
           "    check_tables(doc_probs, token_probs)\n", ""),
    # Part F: rag_token
    Mutant("02_pipeline", "nb02_rag_token", "RAG-Sequence written instead",
           "    result = 1.0\n"
           "    for i in range(len(token_probs[0])):\n"
           "        mixed = sum(p_doc * row[i]\n"
           "                    for p_doc, row in zip(doc_probs, token_probs))\n"
           "        result *= mixed\n",
           "    result = sum(p_doc * math.prod(row)\n"
           "                 for p_doc, row in zip(doc_probs, token_probs))\n"),
    Mutant("02_pipeline", "nb02_rag_token", "best passage per token",
           "mixed = sum(p_doc * row[i]", "mixed = max(p_doc * row[i]"),
    Mutant("02_pipeline", "nb02_rag_token", "passages weighted equally",
           "mixed = sum(p_doc * row[i]", "mixed = sum(row[i] / len(doc_probs)"),
    Mutant("02_pipeline", "nb02_rag_token", "mixtures added over the tokens",
           "        result *= mixed\n", "        result += mixed\n"),
    # Part G: ceiling_table
    Mutant("02_pipeline", "nb02_ceiling_table", "mode ignored (search default)",
           "retriever.search(q.question, k=k, mode=mode)",
           "retriever.search(q.question, k=k)"),
    Mutant("02_pipeline", "nb02_ceiling_table", "gold answer compared with case",
           "and q.answer.lower() in answer.text.lower())",
           "and q.answer in answer.text)"),
    Mutant("02_pipeline", "nb02_ceiling_table", "any answer counted as correct",
           "correct.append(not answer.abstained\n"
           "                           and q.answer.lower() in answer.text.lower())",
           "correct.append(not answer.abstained)"),
    Mutant("02_pipeline", "nb02_ceiling_table", "rows sorted by k",
           "    for k in ks:\n", "    for k in sorted(ks):\n"),
    Mutant("02_pipeline", "nb02_ceiling_table", "reader given 10 chunks whatever k",
           "given = [retriever.by_id[i] for i in ids]",
           "given = [retriever.by_id[i]\n"
           "                     for i in retriever.search(q.question, 10, mode)]"),
]
