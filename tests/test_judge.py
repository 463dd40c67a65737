"""The judge's wire format and its choice of cells, without a kernel.

The judge (autograder/judge.py) is exercised for real by every grading test;
here are the properties its verdicts rest on: an answer crosses as plain
data of the built-in types whatever class it came in, what is not data does
not cross, and the cells the judge copies are the ones the tests need.
"""
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "autograder"))
import judge  # noqa: E402
import judge_kernel as wire  # noqa: E402

from ragkit.chunking import chunk_documents  # noqa: E402
from ragkit.corpus import load_documents  # noqa: E402


def crossed(value, **kw):
    """`value` sent through JSON as the kernel sends an answer."""
    return wire.from_plain(json.loads(json.dumps(wire.to_plain(value))), **kw)


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2.5, float("inf"), "padlock", [1, "a", [2.0]], (1, (2, 3)),
    {"a": 1, 2: [3]}, {("q1", 1): 0.5}, {1, 2, 3}, frozenset({"x"}), [],
])
def test_plain_values_cross_unchanged(value):
    got = crossed(value)
    assert got == value and type(got) is type(value)


def test_arrays_and_frames_cross_with_their_labels():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = crossed(arr)
    assert got.dtype == np.float32 and got.shape == (2, 3) and (got == arr).all()
    frame = pd.DataFrame({"hit@3": [0.5, 1.0], "mode": ["bm25", "dense"]},
                         index=pd.Index(["q1", "q2"], name="qid"))
    frame.columns.name = "measure"
    back = crossed(frame)
    pd.testing.assert_frame_equal(back, frame)
    series = pd.Series([3, 1], index=["a", "b"], name="rank")
    pd.testing.assert_series_equal(crossed(series), series)
    # numpy's float64 is a float: it arrives as one; other scalars keep their type
    assert type(crossed(np.float64(0.25))) is float
    assert type(crossed(np.int64(4))) is np.int64 and crossed(np.int64(4)) == 4


def test_a_value_that_lies_arrives_as_the_plain_value_it_holds():
    class Yes(str):
        pass

    Yes.__eq__ = lambda self, other: True  # noqa: E731
    Yes.__hash__ = str.__hash__

    class Big(float):
        def __eq__(self, other):
            return True

        def __float__(self):
            return 1e9

    class Rows(list):
        def __iter__(self):
            return iter(["forged"])

    said = crossed(Yes(""))
    assert type(said) is str and said == "" and said != "C"
    number = crossed(Big(0.5))
    assert type(number) is float and number == 0.5
    rows = crossed(Rows(["real"]))
    assert type(rows) is list and rows == ["real"]


def test_what_is_not_data_does_not_cross():
    with pytest.raises(wire.NotPlain):
        wire.to_plain(lambda x: x)
    with pytest.raises(wire.NotPlain):
        wire.to_plain(np.array(["2026-12-01"], dtype="datetime64[D]"))
    handles = []
    named = wire.to_plain([len, 3], handle=lambda obj: handles.append(obj) or {"$ref": 1})
    assert named == [{"$ref": 1}, 3] and handles == [len]


def test_ragkit_objects_cross_as_ragkit_objects():
    chunks = chunk_documents(load_documents()[:1], "sentence", size=25)
    got = crossed(chunks, make=judge.Judge.make)
    assert got == chunks and type(got[0]) is type(chunks[0])


def test_a_deep_or_unknown_answer_is_refused():
    deep = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.NotPlain):
        wire.to_plain(deep)
    for bad in ({"$float": "1e999"}, {"$unknown": 1}, {}, {"$obj": "os:system", "fields": {}}):
        with pytest.raises((ValueError, AttributeError)):
            wire.from_plain(bad, make=judge.Judge.make)


def test_a_foreign_exception_keeps_its_name_and_kind():
    class CorpusError(ValueError):
        pass

    sent = json.loads(json.dumps(wire._exception(CorpusError("questions.json: item 2"))))
    err = judge.Judge.rebuild(sent)
    assert isinstance(err, ValueError) and type(err).__name__ == "CorpusError"
    assert str(err) == "questions.json: item 2"
    stop = judge.Judge.rebuild(wire._exception(SystemExit(3)))
    assert not isinstance(stop, SystemExit)


def test_the_judge_copies_only_the_cells_the_tests_need():
    cells = [("setup", "import random\nDOCS = load()\n"),
             ("setup", "TABLE = build(DOCS)\nassert len(TABLE) == 3"),
             ("setup", "plt.plot(TABLE)"),
             ("other", "def answer(x):\n    return x"),
             ("test", "assert answer(TABLE) == 1"),
             ("setup", "LATE = 1"),
             ("test", "assert answer(2) == 2")]
    assert judge.needed_cells(cells) == {0, 1}


class _Finalised:
    """Garbage whose finaliser is Python code, so a collection that starts
    in the middle of a parse can hand the interpreter to another thread."""

    def __del__(self):
        time.sleep(0)


def _parse_while_collecting(parse, source: str, rounds: int, errors: list) -> None:
    for _ in range(rounds):
        for _ in range(40):
            a, b = _Finalised(), _Finalised()
            a.other, b.other = b, a
        try:
            parse(source)
        except SystemError as err:
            errors.append(err)
            return


def test_two_threads_can_parse_at_once():
    """grade.py and the mutant runs grade students in threads, and each
    parses cells (judge, release_check, rag_feedback). Python 3.11's ast.parse,
    called from two threads while the collector runs finalisers, raises
    'AST constructor recursion depth mismatch' (CI met it); the grader's
    parse must not."""
    from python_tree import parse

    source = "\n".join(f"def f{i}(x):\n    return [[(a, b) for a in x] for b in ({{1: 2}},)]"
                       for i in range(150))
    errors: list = []
    threads = [threading.Thread(target=_parse_while_collecting,
                                args=(parse, source, 40, errors)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
