# Alternative answers for notebook 08, written differently from the master, in
# the `# %% grade_id` format that autograder/make_sample_class.py reads. Each
# section is the whole source of that solution cell.

# %% nb08_triage
RULES = [
    ("bad citation", lambda r: not r["citations_ok"]),
    ("ok", lambda r: r["correct"] if r["answerable"] else not r["answered"]),
    ("should have abstained", lambda r: not r["answerable"]),
    ("too many searches", lambda r: r["max_searches"] is not None
     and r["searches"] >= r["max_searches"]),
    ("not retrieved", lambda r: r["gold_rank"] is None),
    ("ranked too low", lambda r: r["gold_rank"] > r["k"]),
    ("not in context", lambda r: not r["in_prompt"]),
]


def triage(record):
    """Walk an ordered list of (stage, test) pairs; the first match wins."""
    if not hasattr(record, "keys") or not hasattr(record, "__getitem__"):
        raise TypeError("record should be a mapping such as a dict")
    missing = [key for key in RECORD_KEYS if key not in record]
    if missing:
        raise ValueError(f"the record is missing the key {missing[0]}")
    return next((stage for stage, test in RULES if test(record)),
                "reader missed it")

# %% nb08_counts
def abstention_counts(records):
    """Tally (answerable, answered, correct) patterns, then name them."""
    tally = Counter((bool(r["answerable"]), bool(r["answered"]),
                     bool(r["correct"])) for r in records)
    names = {
        "correct": [(True, True, True), (True, False, True)],
        "incorrect": [(True, True, False)],
        "refused answerable": [(True, False, False)],
        "refused unanswerable": [(False, False, False), (False, False, True)],
        "answered unanswerable": [(False, True, False), (False, True, True)],
    }
    return {name: sum(tally[p] for p in names[name]) for name in OUTCOMES}

# %% nb08_guard
import re

SQUASH = re.compile(r"\s+")


def looks_injected(text):
    """Search a squashed, lower-cased copy for every listed phrase."""
    if type(text) is not str and not isinstance(text, str):
        raise TypeError("text should be a string")
    squashed = SQUASH.sub(" ", text).casefold()
    for phrase in INJECTION_PATTERNS:
        if squashed.find(phrase) >= 0:
            return True
    return False


def guarded_answer(question, chunks, min_overlap=2):
    """Split the chunks into clean and suspect, answer from the clean."""
    clean, suspect = [], []
    for chunk in chunks:
        if looks_injected(chunk.text):
            suspect.append(chunk.chunk_id)
        else:
            clean.append(chunk)
    reply = grounded_answer(question, clean, min_overlap=min_overlap)
    safe = reply if not looks_injected(reply.text) else \
        Answer(NO_ANSWER, (), True)
    return safe, suspect

# %% nb08_refresh
def refresh(chunks, hashes, docs):
    """Compare fingerprints page by page; cut again only what moved."""
    now = {doc.doc_id: content_hash(doc.text) for doc in docs}
    unchanged = {d for d, h in now.items() if d in hashes and hashes[d] == h}
    result = []
    for doc in docs:
        if doc.doc_id in unchanged:
            result += [c for c in chunks if c.doc_id == doc.doc_id]
        else:
            result += chunk_pages([doc])
    return result, now

# %% nb08_search_as
import itertools


def search_as(retriever, query, k, asker, audience_of):
    """Rank everything, then walk down the list skipping what is locked."""
    try:
        rank = AUDIENCES.index(asker)
    except ValueError:
        raise ValueError(f"unknown asker {asker!r}") from None
    if not k >= 1:
        raise ValueError(f"k should be 1 or more, not {k}")
    readable = set(AUDIENCES[:rank + 1])
    everything = len(retriever.chunks)
    ranked = retriever.search(query, k=everything, depth=everything)
    return list(itertools.islice(
        (i for i in ranked if audience_of.get(i, "members") in readable), k))
