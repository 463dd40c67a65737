"""ragkit.reference: a private copy for hidden tests, and swapping pieces in."""
import ragkit
import ragkit.fusion
import ragkit.text
from ragkit.reference import fresh, using


def test_a_patched_package_does_not_reach_the_fresh_copy(monkeypatch):
    """Overwriting ragkit functions from a notebook leaves fresh() as on disk."""
    monkeypatch.setattr(ragkit.fusion, "rrf", lambda *a, **k: ["patched"])
    monkeypatch.setattr(ragkit.text, "tokenize", lambda text, **k: ["patched"])
    ref = fresh()
    assert ref.fusion.rrf([["a", "b"]]) == [("a", 1 / 61), ("b", 1 / 62)]
    # and the modules inside the copy use each other, not the patched ones
    assert ref.bm25.BM25Index(["laser lid", "bench"]).search("laser")[0][0] == "0"
    assert ref.text.tokenize("Laser lids") == ["laser", "lid"]
    assert ragkit.fusion.rrf([["a"]]) == ["patched"]


def test_every_fresh_copy_is_a_new_one():
    """A copy that a test has changed is never handed out again."""
    first = fresh()
    first.fusion.rrf = None
    assert fresh().fusion.rrf is not None
    assert first.__name__ != fresh().__name__


def test_using_swaps_names_in_and_puts_them_back():
    """Pieces bound for a test are restored afterwards, even after an error."""
    space = {"bm25_idf": "mine"}
    try:
        with using(space, bm25_idf="reference", helper=1):
            assert space == {"bm25_idf": "reference", "helper": 1}
            raise RuntimeError("a failing check")
    except RuntimeError:
        pass
    assert space == {"bm25_idf": "mine"}
