"""The Fernhill help-centre corpus: its loaders, its shape, and the effects it shows.

The effects (a)-(e) are the lab's claims; each test states the claim and checks
it on the real files with the package defaults (sentence chunks, 25 words).
"""

import json
import re

import pytest

from ragkit import corpus
from ragkit.chunking import chunk_documents
from ragkit.corpus import (
    DATA_DIR,
    load_documents,
    load_questions,
    load_unanswerable,
)
from ragkit.metrics import first_relevant_rank, relevant_chunk_ids
from ragkit.retrieval import Retriever, evaluate
from ragkit.text import split_sentences, tokenize


@pytest.fixture(scope="module")
def docs():
    return load_documents()


@pytest.fixture(scope="module")
def questions():
    return {q.qid: q for q in load_questions()}


@pytest.fixture(scope="module")
def chunks(docs):
    return chunk_documents(docs)


@pytest.fixture(scope="module")
def retriever(chunks):
    return Retriever(chunks)


def rank(retriever, question, mode):
    """Rank of the first chunk holding the answer, None when not in the top 10."""
    relevant = relevant_chunk_ids(retriever.chunks, question.answer)
    return first_relevant_rank(retriever.search(question.question, 10, mode), relevant)


# ---------------------------------------------------------------- shape


def test_data_dir_is_the_repo_folder():
    """The default folder is data/helpcentre next to the package."""
    assert DATA_DIR.parts[-2:] == ("data", "helpcentre")
    assert (DATA_DIR / "documents.json").is_file()


# the first pages and questions of the lab; later ones were added after them
FIRST_PAGES = ["booking", "laser", "printers", "billing",
               "guests", "induction", "lockers", "hours"]
FIRST_QIDS = [f"q{n:02d}" for n in range(1, 13)]


def test_documents_shape(docs):
    """12+ pages of 60-260 words, the first 8 in their old order, unique
    slugs, plain sentences, no markdown; some pages well past 150 words."""
    assert len(docs) >= 12
    assert [d.doc_id for d in docs[: len(FIRST_PAGES)]] == FIRST_PAGES
    assert len({d.doc_id for d in docs}) == len(docs)
    assert any(len(d.text.split()) > 150 for d in docs)
    for d in docs:
        assert re.fullmatch(r"[a-z]+", d.doc_id)
        assert 60 <= len(d.text.split()) <= 260, d.doc_id
        assert not re.search(r"[#*`_\[\]>|]", d.text), d.doc_id
        assert all(s[-1] in ".!?" for s in split_sentences(d.text)), d.doc_id


def test_questions_shape(docs, questions):
    """36+ questions, q01..q12 first; answers of 2-12 words, each inside
    exactly one sentence of its page and on no other page."""
    assert len(questions) >= 36
    assert list(questions)[: len(FIRST_QIDS)] == FIRST_QIDS
    pages = {d.doc_id: d for d in docs}
    for q in questions.values():
        assert 2 <= len(q.answer.split()) <= 12, q.qid
        holders = [s for s in split_sentences(pages[q.doc_id].text)
                   if q.answer.lower() in s.lower()]
        assert len(holders) == 1, q.qid
        elsewhere = [d.doc_id for d in docs
                     if d.doc_id != q.doc_id and q.answer.lower() in d.text.lower()]
        assert not elsewhere, (q.qid, elsewhere)
    assert {q.kind for q in questions.values()} == {"literal", "paraphrase", "plain"}
    # answers of several lengths, some inside long sentences of 30+ words
    assert len({len(q.answer.split()) for q in questions.values()}) >= 5
    long_homes = [q.qid for q in questions.values()
                  if any(q.answer.lower() in s.lower() and len(s.split()) >= 30
                         for s in split_sentences(pages[q.doc_id].text))]
    assert len(long_homes) >= 3


def test_relevant_chunks_come_from_the_right_page(chunks, questions):
    """Every answer is whole in some sentence chunk, and only on its own page."""
    for q in questions.values():
        relevant = relevant_chunk_ids(chunks, q.answer)
        assert relevant, q.qid
        assert all(cid.split("#")[0] == q.doc_id for cid in relevant), q.qid


def test_unanswerable_questions(docs):
    """At least 8, and most of them share words with the pages on purpose."""
    items = load_unanswerable()
    assert len(items) >= 8
    assert [u.qid for u in items[:7]] == [f"u{n:02d}" for n in range(1, 8)]
    assert len({u.qid for u in items}) == len(items)
    vocab = {t for d in docs for t in tokenize(d.text)}
    sharing = [u for u in items if set(tokenize(u.question)) & vocab]
    assert len(sharing) >= len(items) // 2
    assert all(u.why.strip() for u in items)


# ---------------------------------------------------------------- effects


def test_a_literal_code_bm25_first_dense_not(retriever, questions):
    """(a) q01 quotes LC-0417: BM25 puts the gold chunk first, the dense stand-in
    does not (the look-alike codes LC-0411/16/18 pull it elsewhere)."""
    q = questions["q01"]
    assert q.kind == "literal"
    assert re.search(r"\b[A-Z]{2}-\d{4}\b", q.question)
    assert rank(retriever, q, "bm25") == 1
    assert rank(retriever, q, "dense") != 1
    assert rank(retriever, q, "hybrid") == 1


def test_b_paraphrase_dense_first_bm25_blind(chunks, retriever, questions):
    """(b) q03 shares no token with its gold chunk: BM25 finds nothing at all,
    the dense stand-in ranks the gold chunk first through the synonym table."""
    q = questions["q03"]
    assert q.kind == "paraphrase"
    by_id = {c.chunk_id: c for c in chunks}
    for cid in relevant_chunk_ids(chunks, q.answer):
        assert not set(tokenize(q.question)) & set(tokenize(by_id[cid].text))
    assert retriever.search(q.question, 10, "bm25") == []
    assert rank(retriever, q, "dense") == 1


def test_c_hybrid_is_at_least_as_good_as_each_retriever(retriever, questions):
    """(c) Over all questions RRF is never worse than either list alone, and
    on the lab's first twelve it finds every gold chunk in the top 3."""
    qs = list(questions.values())
    scores = {m: evaluate(retriever, qs, m, k=3) for m in ("bm25", "dense", "hybrid")}
    hybrid = scores["hybrid"]
    first = [questions[qid] for qid in FIRST_QIDS]
    assert evaluate(retriever, first, "hybrid", k=3)["hit"] == 1.0
    for single in ("bm25", "dense"):
        assert hybrid["hit"] >= scores[single]["hit"]
        assert hybrid["mrr"] >= scores[single]["mrr"]
    # and BM25 alone really misses something, so the comparison means something
    assert scores["bm25"]["hit"] < 1.0


def test_d_fixed_windows_cut_an_answer_sentence_chunks_do_not(docs, questions):
    """(d) 12-word windows split at least one answer; sentence chunks split none."""
    fixed = chunk_documents(docs, "fixed", size=12)
    cut = [q.qid for q in questions.values() if not relevant_chunk_ids(fixed, q.answer)]
    assert cut
    # q01 by hand: word 24 of the laser page ends "... LC-0417 means the"
    assert "q01" in cut
    # smaller windows cut more answers: the chunk-size study has a real curve
    kept = [sum(bool(relevant_chunk_ids(chunk_documents(docs, "fixed", size=n),
                                        q.answer)) for q in questions.values())
            for n in (4, 12, 60)]
    assert kept[0] < kept[1] < kept[2]
    sentence = chunk_documents(docs, "sentence", size=25)
    assert all(relevant_chunk_ids(sentence, q.answer) for q in questions.values())


def test_e_title_prefix_lets_bm25_find_a_chunk_that_never_names_its_subject(
    docs, questions
):
    """(e) 'Each one costs twelve pounds a quarter ...' never says locker.
    q04 asks about a locker: without the prefix BM25 prefers a chunk that says
    'Lockers'; with '[Member Lockers]' in front the gold chunk comes first."""
    q = questions["q04"]
    plain = Retriever(chunk_documents(docs))
    [gold] = relevant_chunk_ids(plain.chunks, q.answer)
    assert "locker" not in tokenize(plain.by_id[gold].text)
    assert "locker" in tokenize(q.question)
    assert rank(plain, q, "bm25") > 1
    contextual = Retriever(chunk_documents(docs, contextual=True))
    assert contextual.by_id[gold].context == "[Member Lockers]"
    assert rank(contextual, q, "bm25") == 1


def test_retriever_modes(retriever, questions):
    """hybrid is RRF of the two top-10 lists; an unknown mode is refused."""
    from ragkit.fusion import rrf

    text = questions["q05"].question
    lists = [retriever.search(text, 10, "bm25"), retriever.search(text, 10, "dense")]
    assert retriever.search(text, 5, "hybrid") == [i for i, _ in rrf(lists, top=5)]
    with pytest.raises(ValueError, match="mode"):
        retriever.search(text, mode="colbert")


# ---------------------------------------------------------------- loader errors


def write(folder, name, data):
    path = folder / name
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    return path


DOC = {
    "doc_id": "saw",
    "title": "Saws",
    "text": "The bandsaw is by the door. Ask first.",
}
QUESTION = {
    "qid": "q01",
    "question": "Where is the bandsaw?",
    "answer": "by the door",
    "doc_id": "saw",
    "kind": "plain",
}


def test_loaders_read_a_folder_or_a_file(tmp_path, monkeypatch):
    """A folder gets the usual file name; RAGKIT_DATA moves the default folder."""
    write(tmp_path, "documents.json", [DOC])
    write(tmp_path, "questions.json", [QUESTION])
    pets = {"qid": "u1", "question": "Pets?", "why": "never mentioned"}
    write(tmp_path, "unanswerable.json", [pets])
    assert load_documents(tmp_path)[0].title == "Saws"
    assert load_questions(tmp_path / "questions.json")[0].answer == "by the door"
    monkeypatch.setenv("RAGKIT_DATA", str(tmp_path))
    assert corpus.data_dir() == tmp_path
    assert load_unanswerable()[0].qid == "u1"


@pytest.mark.parametrize(
    "name, content, pattern",
    [
        ("documents.json", [{"doc_id": "saw", "title": "x"}], "missing field 'text'"),
        ("documents.json", [DOC, DOC], r"duplicate doc_id 'saw'"),
        ("documents.json", "{not json", r"not valid JSON"),
        ("documents.json", {"doc_id": "saw"}, r"JSON list"),
        ("documents.json", [dict(DOC, title="")], r"field 'title'"),
        ("questions.json", [dict(QUESTION, answer="by the window")], r"field 'answer'"),
        ("questions.json", [dict(QUESTION, doc_id="lathe")], r"field 'doc_id'"),
        ("questions.json", [dict(QUESTION, kind="tricky")], r"field 'kind'"),
        ("questions.json", [QUESTION, QUESTION], r"duplicate qid 'q01'"),
        # the answer spans two sentences, so no sentence chunk could hold it
        ("questions.json", [dict(QUESTION, answer="door. Ask")], r"one sentence"),
    ],
)
def test_malformed_files_name_the_file_and_field(tmp_path, name, content, pattern):
    """Each broken file raises ValueError naming the file and what is wrong."""
    write(tmp_path, "documents.json", [DOC])
    write(tmp_path, "questions.json", [QUESTION])
    write(tmp_path, name, content)
    loader = load_documents if name == "documents.json" else load_questions
    with pytest.raises(ValueError, match=pattern) as err:
        loader(tmp_path)
    assert name in str(err.value)


def test_missing_file_is_reported(tmp_path):
    """A folder without the file gives FileNotFoundError with the path."""
    with pytest.raises(FileNotFoundError, match="unanswerable.json"):
        load_unanswerable(tmp_path)
