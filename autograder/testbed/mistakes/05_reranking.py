"""Plausible mistakes in notebook 05 (see autograder/mutants.py)."""
MUTANTS = [
    # Part A: token_vectors
    Mutant("05_reranking", "nb05_token_vectors", "rows left unnormalised",
           "rows.append([x / length for x in row] if length > 0 else row)",
           "rows.append(row)"),
    Mutant("05_reranking", "nb05_token_vectors",
           "raw token hashed instead of its concept (synonyms differ)",
           "c = concept(token)", "c = token"),
    Mutant("05_reranking", "nb05_token_vectors",
           "trigrams of the bare word, without the < > markers",
           "for g in trigrams(c)]",
           "for g in [c[i:i + 3] for i in range(len(c) - 2)]]"),
    Mutant("05_reranking", "nb05_token_vectors", "repeated tokens dropped",
           "for token in tokenize(text):",
           "for token in dict.fromkeys(tokenize(text)):"),
    Mutant("05_reranking", "nb05_token_vectors",
           "every trigram given the word's sign, not its own",
           "        for feature, weight in features:\n"
           "            slot, sign = feature_bucket(feature, dim)\n"
           "            row[slot] += sign * weight\n",
           "        _, word_sign = feature_bucket(features[0][0], dim)\n"
           "        for feature, weight in features:\n"
           "            slot, _ = feature_bucket(feature, dim)\n"
           "            row[slot] += word_sign * weight\n"),
    Mutant("05_reranking", "nb05_token_vectors", "dim's type not checked",
           "    if isinstance(dim, bool) or not isinstance(dim, int):\n"
           "        raise TypeError(f\"dim must be an int (got {type(dim).__name__})\")\n",
           ""),
    # Part B: maxsim
    Mutant("05_reranking", "nb05_maxsim",
           "running maximum starts at 0 (negative best matches clipped)",
           "total += max(sum(a * b for a, b in zip(q_row, d_row))\n"
           "                     for d_row in passage_rows)",
           "total += max([0.0] + [sum(a * b for a, b in zip(q_row, d_row))\n"
           "                     for d_row in passage_rows])"),
    Mutant("05_reranking", "nb05_maxsim",
           "loops over the passage rows instead of the query rows",
           "    total = 0.0\n",
           "    query_rows, passage_rows = passage_rows, query_rows\n    total = 0.0\n"),
    Mutant("05_reranking", "nb05_maxsim",
           "adds every dot product instead of each row's best",
           "total += max(", "total += sum("),
    Mutant("05_reranking", "nb05_maxsim", "mean of the maxima instead of sum",
           "return float(total)", "return float(total / len(query_rows))"),
    Mutant("05_reranking", "nb05_maxsim", "row widths not checked",
           "    if any(len(row) != width for row in passage_rows):\n"
           "        raise ValueError(f\"every row of passage_rows must hold {width} \"\n"
           "                         \"numbers, as many as a query row\")\n",
           ""),
    # Part C: maxsim_rerank
    Mutant("05_reranking", "nb05_maxsim_rerank", "sorted lowest score first",
           "key=lambda pair: (-pair[1], pair[0])",
           "key=lambda pair: (pair[1], pair[0])"),
    Mutant("05_reranking", "nb05_maxsim_rerank",
           "equal scores left in input order, not id order",
           "key=lambda pair: (-pair[1], pair[0])",
           "key=lambda pair: -pair[1]"),
    Mutant("05_reranking", "nb05_maxsim_rerank",
           "candidates scoring 0.0 dropped",
           "    return sorted(",
           "    scored = [pair for pair in scored if pair[1] > 0]\n"
           "    return sorted("),
    Mutant("05_reranking", "nb05_maxsim_rerank", "dim not passed on",
           "encoded_query = token_vectors(query, dim)",
           "encoded_query = token_vectors(query)"),
    Mutant("05_reranking", "nb05_maxsim_rerank", "repeated ids accepted",
           "    if len(set(ids)) != len(ids):\n"
           "        raise ValueError(\"ids must not repeat an id\")\n",
           ""),
    # Part D: dot_table and the row maxima
    Mutant("05_reranking", "nb05_dot_table",
           "table transposed (passage tokens as rows)",
           "for d in d_rows]\n              for q in q_rows]",
           "for q in q_rows]\n              for d in d_rows]"),
    Mutant("05_reranking", "nb05_dot_table", "index left as 0 .. n-1",
           "index=pd.Index(tokenize(query), name=\"query token\"),", ""),
    Mutant("05_reranking", "nb05_dot_table", "dim ignored",
           "q_rows = token_vectors(query, dim)\n"
           "    d_rows = token_vectors(passage, dim)",
           "q_rows = token_vectors(query)\n"
           "    d_rows = token_vectors(passage)"),
    Mutant("05_reranking", "nb05_row_maxima",
           "column maxima instead of row maxima",
           "best = table.max(axis=1)", "best = table.max(axis=0)"),
    Mutant("05_reranking", "nb05_row_maxima",
           "a tie goes to the rightmost column",
           "match = table.idxmax(axis=1)",
           "match = table.iloc[:, ::-1].idxmax(axis=1)"),
    Mutant("05_reranking", "nb05_row_maxima", "total sums the whole table",
           "return best, match, float(best.sum())",
           "return best, match, float(table.to_numpy().sum())"),
    Mutant("05_reranking", "nb05_row_maxima",
           "match holds column positions, not token labels",
           "match = table.idxmax(axis=1)",
           "match = pd.Series(table.to_numpy().argmax(axis=1),\n"
           "                      index=table.index)"),
    Mutant("05_reranking", "nb05_row_maxima",
           "match taken from the column of the table-wide maximum",
           "match = table.idxmax(axis=1)",
           "match = pd.Series(table.stack().idxmax()[1], index=table.index)"),
    # a student who also overwrites the package's twin with their own version,
    # so that a check against the imported ragkit would compare it with itself
    Mutant("05_reranking", "nb05_maxsim",
           "sums every dot product, and overwrites ragkit.rerank.maxsim with it",
           "        total += max(sum(a * b for a, b in zip(q_row, d_row))\n"
           "                     for d_row in passage_rows)\n        ### END SOLUTION\n"
           "    return float(total)",
           "        total += sum(sum(a * b for a, b in zip(q_row, d_row))\n"
           "                     for d_row in passage_rows)\n        ### END SOLUTION\n"
           "    return float(total)\n\n\n"
           "ragkit.rerank.maxsim = lambda q, d: maxsim(q.tolist(), d.tolist())"),
]
