"""Plausible mistakes in notebook 09 (see autograder/mutants.py)."""
MUTANTS = [
    # Part A: score_step
    Mutant("09_project", "nb09_score_step", "recall divided by k instead of the relevant chunks",
           "recall = found / len(relevant) if relevant else 0.0",
           "recall = found / k if relevant else 0.0"),
    Mutant("09_project", "nb09_score_step", "gold text matched with its case kept",
           "q.answer.lower() in reply.text.lower()",
           "q.answer in reply.text"),
    Mutant("09_project", "nb09_score_step", "a reply to an unanswerable question counted as correct",
           "elif answerable and q.answer.lower() in reply.text.lower():",
           "elif not answerable or q.answer.lower() in reply.text.lower():"),
    Mutant("09_project", "nb09_score_step", "the answerer handed all ten ids, not the first k",
           "shown = [retriever.by_id[i] for i in ranked[:k]]",
           "shown = [retriever.by_id[i] for i in ranked]"),
    Mutant("09_project", "nb09_score_step", "rr only looks inside the first k ids",
           "for rank, i in enumerate(ranked[:10], start=1):",
           "for rank, i in enumerate(ranked[:k], start=1):"),
    Mutant("09_project", "nb09_score_step", "unanswerable questions listed before the answerable ones",
           "    labelled = [(q, True) for q in questions]\n"
           "    labelled += [(q, False) for q in unanswerable]\n",
           "    labelled = [(q, False) for q in unanswerable]\n"
           "    labelled += [(q, True) for q in questions]\n"),
    # Part B: run_ablation
    Mutant("09_project", "nb09_run_ablation", "the last step searches the plain index",
           "\"hybrid+rerank+context\": (noted, \"hybrid+rerank\")}",
           "\"hybrid+rerank+context\": (plain, \"hybrid+rerank\")}"),
    Mutant("09_project", "nb09_run_ablation", "context notes put in front of every step's chunks",
           "    plain = Retriever(chunks)\n",
           "    plain = Retriever(add_context(chunks, titles))\n"),
    Mutant("09_project", "nb09_run_ablation", "steps run in alphabetical order",
           "for step in STEPS:", "for step in sorted(STEPS):"),
    Mutant("09_project", "nb09_run_ablation", "the context note added to the query instead of the chunks",
           "        part = score_step(retriever, mode, questions, unanswerable, k=k)\n",
           "        if retriever is noted:\n"
           "            retriever = plain\n"
           "            questions = [type(q)(q.qid, f\"[{titles[q.doc_id]}] \"\n"
           "                                 + q.question, q.answer, q.doc_id,\n"
           "                                 q.kind) for q in questions]\n"
           "        part = score_step(retriever, mode, questions, unanswerable, k=k)\n"),
    Mutant("09_project", "nb09_run_ablation", "k not passed on to score_step",
           "score_step(retriever, mode, questions, unanswerable, k=k)",
           "score_step(retriever, mode, questions, unanswerable)"),
    # Part C: summarise
    Mutant("09_project", "nb09_summarise", "steps grouped with groupby, which sorts them by name",
           "for step in runs[\"step\"].unique():  # unique keeps the order seen",
           "for step in sorted(runs[\"step\"].unique()):"),
    Mutant("09_project", "nb09_summarise", "abstentions counted as wrong answers too",
           "            row[name] = (sure[\"outcome\"] == name).mean()\n",
           "            row[name] = (sure[\"outcome\"] == name).mean()\n"
           "        row[\"wrong\"] = (sure[\"outcome\"] != \"correct\").mean()\n"),
    Mutant("09_project", "nb09_summarise", "shares taken over every question, unanswerable ones included",
           "            row[name] = (sure[\"outcome\"] == name).mean()\n",
           "            row[name] = (part[\"outcome\"] == name).mean()\n"),
    Mutant("09_project", "nb09_summarise", "refused counted as the share of unanswerable rows answered",
           "row[\"refused\"] = (unsure[\"outcome\"] == \"abstained\").mean()",
           "row[\"refused\"] = (unsure[\"outcome\"] != \"abstained\").mean()"),
    Mutant("09_project", "nb09_summarise", "refused set to 0.0 when a step has no unanswerable rows",
           "            row[\"refused\"] = float(\"nan\")\n",
           "            row[\"refused\"] = 0.0\n"),
]
