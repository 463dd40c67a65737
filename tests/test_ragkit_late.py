"""MiniLM's token vectors, their projection, the shipped files, and
reranking with stored vectors (ragkit.encoder, ragkit.rerank.rerank_vectors)."""
import numpy as np
import pytest

from ragkit.encoder import (TOKEN_FILES, MiniLMEncoder, load_token_vectors,
                            projection, shipped_token_vectors, token_texts)
from ragkit.rerank import maxsim, rerank_vectors

SOLDER = "Let the soldering iron cool on its stand before you leave the bench."
FABRIC = "Press the fabric with the clothes iron on a low setting."


@pytest.fixture(scope="module")
def enc():
    return MiniLMEncoder(cache=False)


def test_one_unit_row_per_word_piece_without_the_two_markers(enc):
    full, short = enc.token_vectors([SOLDER]), enc.token_vectors([SOLDER], 128)
    pieces = enc.word_pieces(SOLDER)
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    assert full[0].shape == (len(pieces) - 2, 384)
    assert short[0].shape == (len(pieces) - 2, 128)
    for rows in (full[0], short[0]):
        assert rows.dtype == np.float32
        assert np.allclose(np.linalg.norm(rows, axis=1), 1, atol=1e-5)


def test_a_text_gets_the_same_rows_alone_and_in_a_padded_batch(enc):
    alone = enc.token_vectors([FABRIC])[0]
    batch = enc.token_vectors([" ".join(["lathe"] * 40), FABRIC, "Hi."])
    assert batch[1].shape == alone.shape
    assert np.abs(batch[1] - alone).max() < 1e-5
    assert batch[2].shape == (len(enc.word_pieces("Hi.")) - 2, 384)


def test_the_same_word_gets_another_vector_in_another_sentence(enc):
    """Contextual: 'iron' by a soldering stand is not 'iron' by fabric."""
    rows = enc.token_vectors([SOLDER, FABRIC, SOLDER])
    where = [enc.word_pieces(t)[1:-1].index("iron") for t in (SOLDER, FABRIC)]
    solder_iron, fabric_iron = rows[0][where[0]], rows[1][where[1]]
    assert solder_iron @ fabric_iron < 0.9
    # same text, same rows (to rounding: a batch may use other BLAS blocks)
    assert np.allclose(rows[0], rows[2], atol=1e-6)


def test_projected_rows_are_the_full_rows_times_the_matrix(enc):
    full = enc.token_vectors([SOLDER])[0]
    short = enc.token_vectors([SOLDER], 64, seed=3)[0]
    want = full @ projection(64, seed=3)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.abs(short - want).max() < 1e-5


def test_the_projection_is_seeded_and_keeps_dot_products_roughly():
    a, b = projection(128, seed=1), projection(128, seed=1)
    assert a.shape == (384, 128) and np.array_equal(a, b)
    assert not np.array_equal(a, projection(128, seed=2))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 384))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = x[::-1] * 0.5 + x * 0.5  # pairs with dot products spread over [0, 1]
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    before = (x * y).sum(axis=1)
    after = ((x @ a) * (y @ a)).sum(axis=1)
    assert np.abs(after - before).mean() < 0.1  # about 1/sqrt(128) = 0.088


@pytest.mark.parametrize("kwargs, error, name", [
    ({"dim": 0}, ValueError, "dim"), ({"dim": 2.5}, TypeError, "dim"),
    ({"dim": True}, TypeError, "dim"), ({"dim": 8, "seed": -1}, ValueError, "seed")])
def test_a_bad_projection_is_refused_by_name(kwargs, error, name):
    with pytest.raises(error, match=name):
        projection(**kwargs)


def test_token_vectors_refuse_a_text_that_is_not_a_str(enc):
    with pytest.raises(TypeError, match="texts"):
        enc.token_vectors(["fine", 3])
    assert enc.token_vectors([]) == []


@pytest.mark.parametrize("name", sorted(TOKEN_FILES))
def test_shipped_vectors_equal_a_fresh_encoding(enc, name):
    """Float16 on disk: a sample of texts, encoded again, agrees to 2e-3."""
    passages, questions = token_texts(name)
    stored = shipped_token_vectors(name)
    assert list(stored.passage_tokens) == list(passages)
    assert list(stored.question_tokens) == list(questions)
    for texts, tokens, whole in ((passages, stored.passage_tokens,
                                  stored.passage_vectors),
                                 (questions, stored.question_tokens,
                                  stored.question_vectors)):
        ids = list(texts)
        sample = ids[:2] + ids[-2:]
        fresh = enc.token_vectors([texts[i] for i in sample], 128, seed=0)
        pooled = enc.embed_many([texts[i] for i in sample])
        for i, rows, vec in zip(sample, fresh, pooled):
            assert tokens[i].shape == rows.shape
            assert np.abs(tokens[i] - rows).max() < 2e-3
            assert np.abs(whole[i] - vec).max() < 2e-3
    # sizes the data README and notebook 05 justify
    assert TOKEN_FILES["helpcentre"].stat().st_size < 1_000_000
    assert TOKEN_FILES["squad"].stat().st_size < 4_000_000


def _rewritten(tmp_path, name, **changes):
    with np.load(TOKEN_FILES[name]) as npz:
        stored = {key: npz[key] for key in npz.files}
    stored.update(changes)
    out = tmp_path / "tokens.npz"
    np.savez(out, **stored)
    return out


def test_vectors_of_other_texts_another_model_or_other_ids_are_refused(tmp_path):
    passages, questions = token_texts("helpcentre")
    bad = _rewritten(tmp_path, "helpcentre", question_digest=np.array("f" * 64))
    with pytest.raises(ValueError, match="question texts changed"):
        load_token_vectors(bad, passages, questions)
    bad = _rewritten(tmp_path, "helpcentre", model_sha256=np.array("0" * 64))
    with pytest.raises(ValueError, match="installed model is all-MiniLM-L6-v2"):
        load_token_vectors(bad, passages, questions)
    fewer = dict(list(passages.items())[:-1])
    with pytest.raises(ValueError, match="passage ids"):
        load_token_vectors(TOKEN_FILES["helpcentre"], fewer, questions)
    edited = dict(questions, q01=questions["q01"] + " Really?")
    with pytest.raises(ValueError, match="question texts changed"):
        load_token_vectors(TOKEN_FILES["helpcentre"], passages, edited)
    with pytest.raises(ValueError, match="name"):
        token_texts("wikipedia")


# ------------------------------------------------------ rerank_vectors

QUERY = [[1.0, 0.0], [0.0, 1.0]]
STORE = {"a": [[1.0, 0.0]], "b": [[0.6, 0.8]], "c": [[1.0, 0.0], [0.0, 1.0]],
         "d": [[0.0, 1.0]], "e": [[-1.0, 0.0]]}


def test_stored_vectors_rerank_by_maxsim_with_ties_by_id():
    # by hand: a 1 + 0, b 0.6 + 0.8, c 1 + 1, d 0 + 1, e -1 + 0
    got = rerank_vectors(QUERY, ["e", "d", "b", "a", "c"], STORE)
    assert [i for i, _ in got] == ["c", "b", "a", "d", "e"]
    assert [s for _, s in got] == pytest.approx([2.0, 1.4, 1.0, 1.0, -1.0])
    assert [i for i, _ in rerank_vectors(QUERY, ["d", "a"], STORE)] == ["a", "d"]


def test_one_row_a_side_is_a_bi_encoder():
    rng = np.random.default_rng(4)
    q = rng.standard_normal(6)
    store = {f"p{n}": rng.standard_normal((1, 6)) for n in range(8)}
    got = rerank_vectors(q[None, :], sorted(store), store)
    want = sorted(((i, float(store[i][0] @ q)) for i in store),
                  key=lambda pair: -pair[1])
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert got[0][1] == pytest.approx(maxsim(q[None, :], store[got[0][0]]))


def test_rerank_vectors_refuses_bad_ids_and_stores_by_name():
    with pytest.raises(ValueError, match="ids"):
        rerank_vectors(QUERY, ["a", "a"], STORE)
    with pytest.raises(ValueError, match="'z'"):
        rerank_vectors(QUERY, ["a", "z"], STORE)
    with pytest.raises(TypeError, match="ids"):
        rerank_vectors(QUERY, "a", STORE)
    with pytest.raises(TypeError, match="vectors"):
        rerank_vectors(QUERY, ["a"], list(STORE.values()))
    with pytest.raises(ValueError, match="columns"):
        rerank_vectors([[1.0, 0.0, 0.0]], ["a"], STORE)
