"""ragkit.squad: the SQuAD 2.0 subset, and the retrieval figures it anchors."""
import json

import numpy as np
import pytest

from ragkit.bm25 import BM25Index
from ragkit.dense import DenseIndex
from ragkit.encoder import MiniLMEncoder
from ragkit.fusion import rrf
from ragkit.metrics import mrr
from ragkit.squad import (SQUAD_FILE, SQUAD_VECTORS, load_squad,
                          squad_vectors)


@pytest.fixture(scope="module")
def squad():
    return load_squad()


def test_the_subset_has_its_documented_size(squad):
    docs, questions = squad
    assert len(docs) == 87 and len(questions) == 626
    assert sum(not q.is_impossible for q in questions) == 293
    assert len({d.doc_id for d in docs}) == 87
    assert {d.title for d in docs} == {"Normans",
                                       "Computational_complexity_theory"}


def test_every_question_points_at_the_paragraph_that_holds_it(squad):
    docs, questions = squad
    text_of = {d.doc_id: d.text for d in docs}
    for q in questions:
        if q.is_impossible:
            assert q.answers == () and q.answer == ""
        else:
            assert q.answers and all(a in text_of[q.doc_id] for a in q.answers)


def test_paragraph_ids_follow_the_article_and_position(squad):
    docs, questions = squad
    assert docs[0].doc_id == "normans-00"
    assert docs[-1].doc_id == "computational-complexity-theory-47"
    assert questions[0].question == "In what country is Normandy located?"
    assert questions[0].answers == ("France",)  # four identical spans, once


def test_an_answer_off_its_offset_is_refused(tmp_path):
    raw = json.loads(SQUAD_FILE.read_text())
    qa = raw["data"][0]["paragraphs"][0]["qas"][0]
    qa["answers"][0]["answer_start"] += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=qa["id"]):
        load_squad(bad)


def test_an_answerable_question_without_answers_is_refused(tmp_path):
    raw = json.loads(SQUAD_FILE.read_text())
    qa = raw["data"][1]["paragraphs"][3]["qas"][0]
    qa["is_impossible"], qa["answers"] = False, []
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="no answer"):
        load_squad(bad)


def test_retrieval_figures_match_the_anchors(squad):
    """MRR@10 of the 293 answerable questions against the 87 paragraphs.

    Anchors measured with an independent numpy forward pass of the same
    model: BM25 0.872, toy dense 0.689, MiniLM 0.79, RRF (k = 60, top 10 of
    each list) of BM25 with the toy 0.803 and with MiniLM 0.856. Encoding
    the 380 texts cold takes tens of seconds; later runs read the cache.
    """
    docs, questions = squad
    asked = [q for q in questions if not q.is_impossible]
    texts, ids = [d.text for d in docs], [d.doc_id for d in docs]
    bm25, toy = BM25Index(texts, ids), DenseIndex(texts, ids)
    minilm = DenseIndex(texts, ids, embedder=MiniLMEncoder())
    runs = {name: [] for name in
            ("bm25", "toy", "minilm", "bm25+toy", "bm25+minilm")}
    for q in asked:
        lists = {name: [i for i, _ in index.search(q.question, 10)]
                 for name, index in (("bm25", bm25), ("toy", toy),
                                     ("minilm", minilm))}
        lists["bm25+toy"] = [i for i, _ in rrf([lists["bm25"], lists["toy"]])]
        lists["bm25+minilm"] = [
            i for i, _ in rrf([lists["bm25"], lists["minilm"]])]
        for name, ranked in lists.items():
            runs[name].append(mrr(ranked, {q.doc_id}, 10))
    got = {name: float(np.mean(v)) for name, v in runs.items()}
    anchors = {"bm25": 0.872, "toy": 0.689, "minilm": 0.79,
               "bm25+toy": 0.803, "bm25+minilm": 0.856}
    off = {n: (round(got[n], 3), a) for n, a in anchors.items()
           if abs(got[n] - a) > 0.01}
    assert off == {}, f"(got, anchor) beyond 0.01: {off}"
    # the ordering the anchors tell: words first, the real model between
    assert got["bm25"] > got["bm25+minilm"] > got["minilm"] > got["toy"]


# ------------------------------------------------- the shipped MiniLM vectors

def test_shipped_vectors_equal_a_fresh_encoding(squad):
    """float16 on disk: within 1e-3 of what the encoder gives (cached)."""
    docs, questions = squad
    paragraphs, asked = squad_vectors()
    assert paragraphs.shape == (87, 384) and asked.shape == (626, 384)
    assert paragraphs.dtype == asked.dtype == np.float32
    encoder = MiniLMEncoder()
    fresh_p = encoder.embed_many([d.text for d in docs])
    fresh_q = encoder.embed_many([q.question for q in questions])
    assert np.abs(paragraphs - fresh_p).max() < 1e-3
    assert np.abs(asked - fresh_q).max() < 1e-3
    assert SQUAD_VECTORS.stat().st_size < 1_000_000


def _rewritten(tmp_path, **changes):
    with np.load(SQUAD_VECTORS) as npz:
        stored = {key: npz[key] for key in npz.files}
    for key, value in changes.items():
        if value is None:
            del stored[key]
        else:
            stored[key] = value
    out = tmp_path / "vectors.npz"
    np.savez(out, **stored)
    return out


def test_vectors_of_another_model_are_refused(tmp_path):
    bad = _rewritten(tmp_path, model_sha256=np.array("0" * 64))
    with pytest.raises(ValueError, match="installed model"):
        squad_vectors(bad)


def test_vectors_of_other_texts_are_refused(tmp_path):
    bad = _rewritten(tmp_path, question_digest=np.array("f" * 64))
    with pytest.raises(ValueError, match="question texts"):
        squad_vectors(bad)


def test_a_file_without_its_checksum_is_refused(tmp_path):
    bad = _rewritten(tmp_path, model_sha256=None)
    with pytest.raises(ValueError, match="model_sha256"):
        squad_vectors(bad)
