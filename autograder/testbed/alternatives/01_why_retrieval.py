# Alternative answers for notebook 01, written differently from the master,
# in the `# %% grade_id` format that autograder/make_sample_class.py reads.
# Each section is the whole source of that solution cell.

# %% nb01_prompt_tokens
def prompt_tokens(corpus_words, k=5, chunk_words=200, tokens_per_word=1.3,
                  question_words=20):
    """(stuffed, retrieved): prompt tokens per question, two floats."""
    lowest = {"corpus_words": (corpus_words, 0), "k": (k, 1),
              "chunk_words": (chunk_words, 1),
              "question_words": (question_words, 0)}
    for name, (value, least) in lowest.items():
        if value < least:
            raise ValueError(f"{name}={value} is below {least}")
    if not tokens_per_word > 0:
        raise ValueError("tokens_per_word has to be positive")
    top_k_words = k * chunk_words
    sent = corpus_words if corpus_words < top_k_words else top_k_words
    return (float(tokens_per_word * (corpus_words + question_words)),
            float(tokens_per_word * (sent + question_words)))

# %% nb01_cost_table
def cost_table(corpus_sizes, budget=200_000, k=5, chunk_words=200,
               tokens_per_word=1.3, question_words=20):
    """Stuffed and retrieved prompt tokens, one row per corpus size."""
    if not budget > 0:
        raise ValueError("budget has to be positive")
    sizes = list(corpus_sizes)
    pairs = [prompt_tokens(w, k=k, chunk_words=chunk_words,
                           tokens_per_word=tokens_per_word,
                           question_words=question_words) for w in sizes]
    table = pd.DataFrame({"corpus_words": sizes,
                          "stuff_tokens": [p[0] for p in pairs],
                          "retrieve_tokens": [p[1] for p in pairs]})
    table["stuff_fits"] = [s <= budget for s in table["stuff_tokens"]]
    return table

# %% nb01_stuffing_limit
def stuffing_limit(budget=200_000, tokens_per_word=1.3, question_words=20):
    """Largest corpus (in words) whose stuffed prompt fits in `budget`."""
    if budget <= 0:
        raise ValueError("budget has to be positive")
    if tokens_per_word <= 0:
        raise ValueError("tokens_per_word has to be positive")
    room = budget - tokens_per_word * question_words  # tokens left over
    if room < 0:
        raise ValueError("budget leaves no room: the question is larger")
    return float(room / tokens_per_word)

# %% nb01_answer_table
def answer_table(questions, fetch):
    """One row per question: answered, correct, words handed over."""
    if not questions:
        raise ValueError("questions is empty")
    columns = {"qid": [], "answered": [], "correct": [], "context_words": []}
    for item in questions:
        handed = list(fetch(item.question))
        reply = grounded_answer(item.question, handed)
        found = reply.text.casefold().find(item.answer.casefold()) >= 0
        columns["qid"].append(item.qid)
        columns["answered"].append(not reply.abstained)
        columns["correct"].append(found and not reply.abstained)
        columns["context_words"].append(
            sum(len(chunk.text.split()) for chunk in handed))
    return pd.DataFrame(columns)
