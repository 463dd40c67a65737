"""The judge's wire format and its choice of cells, without a kernel.

The judge (autograder/run/judge.py) is exercised for real by every grading test;
here are the properties its verdicts rest on: an answer crosses as plain
data of the built-in types whatever class it came in, what is not data does
not cross, and the cells the judge copies are the ones the tests need.
"""
import ast
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.run import judge  # noqa: E402
from autograder.run import judge_kernel as wire  # noqa: E402

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
    got = crossed(chunks)
    assert got == chunks and type(got[0]) is type(chunks[0])


def test_a_deep_or_unknown_answer_is_refused():
    deep = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.NotPlain):
        wire.to_plain(deep)
    for bad in ({"$float": "1e999"}, {"$unknown": 1}, {}, {"$obj": "os:system", "fields": {}},
                {"plain": "mapping"}, {"$tuple": "abc"}, {"$dict": [[1, 2, 3]]}):
        with pytest.raises(ValueError):
            wire.from_plain(bad)


def test_a_name_in_an_answer_is_never_imported_or_walked(monkeypatch):
    """The attack of issue 30: a class that claims a ragkit module, whose
    dotted name leads through modules ragkit imports to os.system. The
    decoder takes only names of its own table, and imports nothing else."""
    imported = []
    real = __import__("importlib").import_module
    monkeypatch.setattr("importlib.import_module",
                        lambda name, *a: imported.append(name) or real(name, *a))
    for name in ("ragkit.reference:os.system", "ragkit.corpus:json.loads",
                 "ragkit.chunking:Chunk.__init__.__globals__", "ragkit:reference",
                 "ragkit.chunking:Chunk ", ["ragkit.chunking:Chunk"]):
        with pytest.raises(ValueError, match="value types"):
            wire.from_plain({"$obj": name, "fields": {"command": "true"}})
    assert imported == []
    # a known type with fields it does not have is refused too
    with pytest.raises(ValueError, match="fields"):
        wire.from_plain({"$obj": "ragkit.chunking:Chunk", "fields": {"command": "true"}})


@pytest.mark.parametrize("answer", [
    {"$nd": "<U1000000000", "shape": [4], "data": ["a", "b", "c", "d"]},
    {"$nd": "<f8", "shape": [100000, 100000], "b64": ""},
    {"$nd": "|V99999999", "shape": [1], "b64": "AAAA"},
    {"$nd": "O", "shape": [10 ** 9], "data": []},
    {"$nd": "O", "shape": [200000], "data": ["x" * 2000] + ["y"] * 199999},
    {"$np": "<U999999999", "v": "x"},
    {"$series": {"values": [], "dtype": "string[pyarrow]", "index": [], "name": None}},
    {"$index": {"values": [1], "dtype": "category", "name": None}},
    {"$f8": "A" * (200 * 2 ** 20)},
])
def test_a_description_is_checked_before_memory_is_taken(answer):
    """Each describes far more memory than its JSON holds, or a type the
    grader does not take: refused, or (the long strings) kept as objects,
    without taking more than a few MB."""
    import tracemalloc

    tracemalloc.start()
    try:
        try:
            got = wire.from_plain(answer)
        except ValueError:
            got = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2 ** 20, f"decoding took {peak / 2 ** 20:.0f} MB"
    if isinstance(got, np.ndarray):  # the 200,000 strings: objects, not 1.6 GB of <U2000
        assert got.dtype == object and got.shape == (200000,)


def test_an_answer_too_large_or_deep_is_refused_as_text():
    with pytest.raises(ValueError, match="larger"):
        wire.loads(" " * (wire.MAX_BYTES + 1))
    with pytest.raises(ValueError, match="deep"):
        wire.loads("[" * 100000 + "]" * 100000)
    many = [0] * (wire.MAX_VALUES // 2 + 1)
    with pytest.raises(ValueError, match="values"):
        wire.from_plain({"$tuple": [many, many]})


def test_arrays_cross_as_their_bytes_in_a_known_dtype():
    arr = np.arange(12, dtype=">i4").reshape(3, 4)  # big-endian: crosses little-endian
    sent = wire.to_plain(arr)
    assert set(sent) == {"$nd", "shape", "b64"} and sent["$nd"] == "<i4"
    got = wire.from_plain(json.loads(json.dumps(sent)))
    assert got.dtype == np.dtype("<i4") and (got == arr).all() and got.flags.writeable
    with pytest.raises(ValueError, match="bytes"):
        wire.from_plain({**sent, "b64": sent["b64"][:-8]})  # fewer bytes than its shape
    with pytest.raises(wire.NotPlain):
        wire.to_plain(np.zeros(2, dtype=np.complex128))


def test_a_foreign_exception_keeps_its_name_and_kind():
    class CorpusError(ValueError):
        pass

    sent = json.loads(json.dumps(wire._exception(CorpusError("questions.json: item 2"))))
    err = judge.Judge.rebuild(sent)
    assert isinstance(err, ValueError) and type(err).__name__ == "CorpusError"
    assert str(err) == "questions.json: item 2"
    stop = judge.Judge.rebuild(wire._exception(SystemExit(3)))
    assert not isinstance(stop, SystemExit)
    # a base that is not a built-in exception is no lookup: a plain Exception
    odd = judge.Judge.rebuild({"name": "system", "base": "os", "message": "x"})
    assert type(odd).__name__ == "system" and type(odd).__mro__[1] is Exception


def test_the_kernel_reads_attributes_only_of_ragkit_objects():
    chunk = chunk_documents(load_documents()[:1], "sentence", size=25)[0]
    assert judge.Judge.member(chunk, "text") == chunk.text
    for obj, name in ((chunk, "__class__"), (chunk, "_private"), (chunk, "nope"),
                      (json, "loads"), (len, "__self__"), (chunk, 3)):
        with pytest.raises(AttributeError):
            judge.Judge.member(obj, name)


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
    from autograder.run.python_tree import parse

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


def test_frames_of_many_numbers_cross():
    """A column of more than eight floats crosses as bytes ($f8)."""
    frame = pd.DataFrame({"k1=1.5": pd.array([1, None] * 6, dtype="Int64"),
                          "mrr": np.linspace(0, 1, 12)},
                         index=[f"q{i:02d}" for i in range(12)])
    got = crossed(frame)
    pd.testing.assert_frame_equal(got, frame)
    index = pd.Index(np.linspace(0, 1, 20), name="x")
    pd.testing.assert_index_equal(crossed(index), index)


def test_a_fault_of_the_judge_costs_that_cell_only(tmp_path, monkeypatch):
    """A bug of the grader's own on one test (here: run_test raising on
    tiny_test_a) fails that cell with GraderFault and a problems line; the
    other cells of the notebook are still judged, and pass."""
    import nbformat
    from autograder.scoring.release_check import limits_hit
    sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
    import mutants

    honest = judge.Judge.run_test

    def broken(self, source, label, hidden):
        if "tiny_test_a" in label:
            raise RuntimeError("a bug of the judge's")
        return honest(self, source, label, hidden)

    monkeypatch.setattr(judge.Judge, "run_test", broken)
    source = ROOT / "autograder" / "testbed" / "hostile" / "source" / "hostile"
    nb = nbformat.read(source / "tiny.ipynb", as_version=4)
    step = mutants.GuardedExecute(timeout=60, kernel_name="python3", allow_errors=True,
                                  config=mutants.nbgrader_settings())
    nb, _ = step.preprocess(nb, {"metadata": {"path": str(source)}})
    graded = {c.metadata["nbgrader"]["grade_id"]: c.outputs for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    assert [o.ename for o in graded["tiny_test_a"]] == ["GraderFault"]
    assert all(not [o for o in outs if o.output_type == "error"]
               for gid, outs in graded.items() if gid != "tiny_test_a"), graded
    nbformat.write(nb, tmp_path / "tiny.ipynb")
    assert limits_hit(tmp_path) == [
        "tiny.ipynb: cell 'tiny_test_a' the grader itself failed on this test (see the "
        "student's log); scored 0 until an instructor grades it again"]


PLOTLESS = """
import sys
sys.path.insert(0, sys.argv[1])
from autograder.run import judge

j = judge.Judge(None, [], sys.argv[1])
j._exec("%matplotlib inline\\nimport matplotlib.pyplot as plt\\n"
        "from matplotlib import pyplot\\nimport matplotlib\\nimport numpy as np", "<setup>")
print("after the imports:", sorted(m for m in sys.modules if m.startswith("matplotlib")))
j._exec("DRAWN = matplotlib.figure.__name__, type(plt.subplots()[0]).__name__", "<a plot>")
print("after a plot:", "matplotlib.pyplot" in sys.modules, j.ns["DRAWN"])
"""


def test_the_judge_imports_matplotlib_only_when_a_cell_draws():
    """A setup cell the judge copies imports pyplot (about 1 s) for nothing
    unless it draws: the import waits for the first use, which then works."""
    proc = subprocess.run([sys.executable, "-c", PLOTLESS, str(ROOT)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "after the imports: []", "after a plot: True ('matplotlib.figure', 'Figure')"]


def test_the_deadline_waits_for_wire_work_under_way_then_fails_the_cell():
    """The alarm at a cell's deadline never cuts a message to the kernel in
    half: work on the wire finishes, and the cell fails right after it."""
    j = judge.Judge(None, [], str(ROOT), timeout=0.2)
    done = []
    with pytest.raises(judge.OutOfTime):
        with j._alarm():
            with j._wire():
                time.sleep(0.6)  # the alarm rings in here, at 0.2 s
                done.append("the send finished")
            done.append("went on after the deadline")
    assert done == ["the send finished"]
    assert isinstance(j.fault, judge.OutOfTime)


def sent_to_kernel(j: judge.Judge, value, kept: dict):
    """`value` as the judge sends it, built as the kernel builds it."""
    return wire.Decoder(lambda tag, v: None, kept=kept)(json.loads(json.dumps(j.plain(value))))


def test_a_value_that_cannot_change_crosses_whole_once_then_as_the_same_again():
    """A long list of frozen chunks (a retriever's `chunks`, asked for on
    every question) goes whole the first time and as `$again` after; the
    kernel gets an equal, fresh list each time, so a student's function that
    sorts it in place spoils nothing for the next call."""
    chunks = chunk_documents(load_documents(), "sentence", size=25)[:40]
    j, kept = judge.Judge(None, [], str(ROOT)), {}
    first = j.plain(chunks)
    assert "$keep" in first
    again = j.plain(chunks)
    assert again == {"$again": id(chunks)}
    assert len(json.dumps(again)) < len(json.dumps(first)) / 100
    j.kept.clear()  # (a new loop: the kernel below has kept nothing yet)
    got = sent_to_kernel(j, chunks, kept)
    got.reverse()  # what a student's function may do to its argument
    twice = sent_to_kernel(j, chunks, kept)
    assert twice == chunks and twice is not got
    # an item replaced: the list goes whole again, and arrives as it is now
    chunks[0] = chunks[1]
    assert "$keep" in j.plain(chunks)
    j.kept.clear()
    assert sent_to_kernel(j, chunks, kept)[0] == chunks[1]
    assert sent_to_kernel(j, chunks, kept) == chunks


def test_a_send_that_fails_half_way_leaves_nothing_noted_as_kept():
    """A value the kernel never got (the judge's encoding stopped at
    something that is not data) is not sent as `$again` later."""
    j = judge.Judge(None, [], str(ROOT))
    words = [f"w{i}" for i in range(20)]
    with pytest.raises(wire.NotPlain):
        j.plain([words, json])  # a module cannot cross
    assert "$keep" in j.plain(words)


def test_what_can_change_is_always_sent_whole():
    """A list holding lists, or a value sent to a new loop, crosses whole
    each time: the kernel's copy of it could be out of date."""
    j = judge.Judge(None, [], str(ROOT))
    rows = [[i] for i in range(20)]
    assert "$keep" not in j.plain(rows) and "$again" not in json.dumps(j.plain(rows))
    words = [f"w{i}" for i in range(20)]
    assert "$keep" in j.plain(words) and j.plain(words) == {"$again": id(words)}
    j.kept.clear()  # what start_loop does: the kernel's loop forgot it too
    assert "$keep" in j.plain(words)
    by_id = {w: i for i, w in enumerate(words)}  # a dict: its keys and values
    assert "$keep" in j.plain(by_id) and j.plain(by_id) == {"$again": id(by_id)}
    assert "$keep" not in j.plain({w: [w] for w in words})


@pytest.mark.parametrize("answer", [{"$again": 1}, {"$keep": 1, "v": [1, 2]}])
def test_the_judge_never_takes_a_kept_value_from_the_kernel(answer):
    """`$keep` and `$again` run one way, judge to kernel: the judge's own
    decoder refuses them, as it refuses any other tag it does not know."""
    with pytest.raises(ValueError):
        wire.Decoder(judge.Judge(None, [], str(ROOT)).resolve)(answer)


def test_what_a_test_raised_becomes_one_error_line_named_for_the_student():
    """judge.verdict: the grader's own failures keep names of their own (a
    time limit, a dead kernel, an answer that is not data), so
    release_check can word problems.csv for each; anything else is the
    test's own exception, its message on one line."""
    assert judge.verdict(judge.OutOfTime("x"))[0] == "CellTimeoutError"
    died = judge.verdict(judge.KernelDied("the kernel died"))
    assert died[0] == "KernelDied" and "while running" in died[1]
    assert judge.verdict(judge.JudgeError("no reply")) == ("JudgeError", "no reply")
    assert judge.verdict(judge.NotData("too deep")) == ("NotData", "too deep")
    assert judge.verdict(judge.TooLarge("33 MB")) == ("TooLarge", "33 MB")
    assert judge.verdict(judge.LoopEnded("gone")) == ("LoopEnded", "gone")
    assert judge.verdict(AssertionError("expected 4,\n got 5")) == (
        "AssertionError", "expected 4, got 5")
    assert len(judge.verdict(ValueError("v" * 5000))[1]) == 2000


def _cell(kind: str, gid: str, source: str):
    """A code cell of a made-up master: 'setup' (locked), 'answer' or 'test'."""
    import nbformat
    meta = {"grade": kind == "test", "grade_id": gid, "locked": kind != "answer",
            "schema_version": 3, "solution": kind == "answer", "task": False}
    if kind == "test":
        meta["points"] = 1
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta})


def judged_errors(nb, folder: Path, timeout: float = 60) -> dict:
    """Each graded cell's errors [(name, message)] by grade id, once `nb` has
    run in a real kernel with its test cells judged."""
    sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
    import mutants

    step = mutants.GuardedExecute(timeout=timeout, kernel_name="python3", allow_errors=True,
                                  config=mutants.nbgrader_settings())
    nb, _ = step.preprocess(nb, {"metadata": {"path": str(folder)}})
    return {c.metadata["nbgrader"]["grade_id"]: [(o.ename, o.evalue) for o in c.outputs
                                                if o.output_type == "error"]
            for c in nb.cells if c.metadata["nbgrader"]["grade"]}


def test_a_batch_of_calls_fails_as_the_same_loop_would(tmp_path, monkeypatch):
    """ragkit.reference.each in the judge, with a real kernel: many cases
    go in few round trips, yet each verdict is the one the loop it stands
    for gives: a wrong answer before a raise fails on the answer, a raise
    first fails on the raise, a call of ragkit's twin fails as delegated,
    and answers larger than a batch may hold all arrive in order."""
    import nbformat

    requests = {}
    honest = judge.Judge.run_test

    def counted(self, source, label, hidden):
        before = self.calls
        outputs = honest(self, source, label, hidden)
        requests[label] = self.calls - before
        return outputs

    monkeypatch.setattr(judge.Judge, "run_test", counted)
    loop = "for x, got in zip(CASES, each({fn}, CASES)):\n    assert got == x * x, f'wrong at {{x}}'"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("setup", "setup", "from ragkit.reference import each\nimport ragkit.text\n"
                                "CASES = list(range(600))"),
        _cell("answer", "answers",
              "def square(x):\n    return x * x\n\n"
              "def slips(x):\n    if x == 7:\n        raise ValueError('seven')\n"
              "    return x * x + (x == 3)\n\n"
              "def breaks(x):\n    raise KeyError('never')\n\n"
              "def tokenize(text):\n    return ragkit.text.tokenize(text)\n\n"
              "def wide(n):\n    return [n] * 1_000_000"),
        _cell("test", "t_square", loop.format(fn="square")),
        _cell("test", "t_slips", loop.format(fn="slips")),
        _cell("test", "t_breaks", loop.format(fn="breaks")),
        _cell("test", "t_twin", "list(each(tokenize, ['a laser'] * 5))"),
        _cell("test", "t_wide", "got = list(each(wide, range(8)))\n"
                                "assert [g[0] for g in got] == list(range(8))\n"
                                "assert all(len(g) == 1_000_000 for g in got)"),
    ]
    errors = judged_errors(nb, tmp_path)
    assert errors["t_square"] == []
    assert errors["t_slips"] == [("AssertionError", "wrong at 3")]
    assert errors["t_breaks"] == [("KeyError", "'never'")]
    assert [e[0] for e in errors["t_twin"]] == ["DelegatedToPackage"]
    assert errors["t_wide"] == [], errors["t_wide"]
    count = {gid: n for label, n in requests.items() for gid in errors if gid in label}
    # the name's lookup, 600 cases in batches of 1, 2, 4, ..., 256 and the
    # 89 left (10 requests instead of 600), and the test's end
    assert count["t_square"] == 1 + 10 + 1
    # 8 answers of 3 MB: batches of 1, 2 and 4, where the kernel stops at
    # 3 (BATCH_BYTES) and the fourth is asked again, then the last one
    assert count["t_wide"] == 1 + 5 + 1


@pytest.mark.parametrize("reply, cases", [
    ({"values": [1, 4, 9]}, 2),                        # more answers than cases
    ({"values": []}, 2),                               # none, and no error
    ({"values": "1, 4"}, 2),                           # not a list
    ({"values": [{"$obj": "os.system", "fields": {}}]}, 1),  # not data
])
def test_a_forged_batch_fails_the_cell_as_not_data(reply, cases):
    """A kernel whose request loop was rewritten to answer a batch with more
    answers than cases, with none (which would have the judge ask again
    forever), or with what is not data, fails the test with NotData."""
    j = judge.Judge(None, [], str(ROOT))
    j.looping = "a loop"  # (as if the kernel were in its request loop)
    j._nested = lambda request, name: json.dumps(reply)
    fn = judge.StudentName(j, 1, "square")
    with pytest.raises(judge.NotData):
        list(j.each(fn, (range(cases),)))
    assert isinstance(j.fault, judge.NotData)


def test_what_cannot_cross_or_be_answered_fails_at_once(tmp_path):
    """With a real kernel: a value over the wire's cap, either way, fails
    its cell at once with TooLarge (the judge used to send it, the kernel's
    loop died on it, and the cell waited out its time limit); the next cell
    is judged as usual; and a request loop that ends without answering
    (here replaced by a student) fails its cell at once with LoopEnded."""
    import nbformat
    sys.path.insert(0, str(ROOT / "autograder" / "testbed"))
    import mutants

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("setup", "setup", f"BIG = ' ' * {wire.MAX_BYTES}"),
        _cell("answer", "answers", "def size(text):\n    return len(text)\n\n"
                                   f"def big(n):\n    return ' ' * {wire.MAX_BYTES}"),
        _cell("test", "t_sent", "assert size(BIG) == len(BIG)"),
        _cell("test", "t_answered", "assert len(big(1)) > 0"),
        _cell("test", "t_small", "assert size('abc') == 3"),
        _cell("answer", "no_loop", "import sys\n"
                                   "sys.modules['_rag_judge'].loop = lambda nonce='': None"),
        _cell("test", "t_no_loop", "assert size('abc') == 3"),
    ]
    limit = 30
    step = mutants.GuardedExecute(timeout=limit, kernel_name="python3", allow_errors=True,
                                  config=mutants.nbgrader_settings())
    started = time.monotonic()
    nb, _ = step.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    seconds = time.monotonic() - started
    errors = {c.metadata["nbgrader"]["grade_id"]: [o.ename for o in c.outputs
                                                  if o.output_type == "error"]
              for c in nb.cells if c.metadata["nbgrader"]["grade"]}
    assert errors == {"t_sent": ["TooLarge"], "t_answered": ["TooLarge"], "t_small": [],
                      "t_no_loop": ["LoopEnded"]}
    assert seconds < limit, seconds  # (each of three cells waited `limit` before)


def test_a_retriever_handed_to_the_student_is_used_in_the_kernel(tmp_path, monkeypatch):
    """A Retriever the judge built (as nb09_hidden_score_step builds
    `ref_plain`) crosses as a recipe, its chunks and its dim: the kernel
    builds the same retriever from its own private copy of ragkit, so the
    student's function searches it with no call back to the judge (it used
    to call back for every `search`, `by_id[...]` and `chunks`), and ranks
    exactly as the judge's does, ties included, in every mode. The student's
    own `ragkit`, patched here, is not what it is built from; the same
    object of the judge is one object in the kernel, within a call and
    across calls, and goes back to the judge as itself. The route the object
    opens to the private copy's modules counts like any other: a
    `score_step` that hands its work to that copy's `score_questions`
    fails as delegated."""
    import nbformat

    counts, back = {}, []
    honest, answer = judge.Judge.run_test, judge.Judge.answer_callback

    def counted(self, source, label, hidden):
        calls, callbacks = self.calls, len(back)
        outputs = honest(self, source, label, hidden)
        counts[label] = (self.calls - calls, len(back) - callbacks)
        return outputs

    def answered(self, prompt):
        back.append(prompt)
        return answer(self, prompt)

    monkeypatch.setattr(judge.Judge, "run_test", counted)
    monkeypatch.setattr(judge.Judge, "answer_callback", answered)
    every = ("[[(i, round(s, 9)) for i, s in r.bm25.search(q, len(r.chunks))]\n"
             "         + [r.search(q, k=len(r.chunks), mode=mode, depth=len(r.chunks))\n"
             "            for mode in ('bm25', 'dense', 'hybrid', 'hybrid+rerank')]\n"
             "         + [[r.by_id[i].text for i in r.search(q, 3)]] for q in questions]")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("setup", "setup",
              "from ragkit.corpus import load_documents, load_questions\n"
              "from ragkit.reference import fresh\n"
              "REF = fresh()\n"
              "ASKED = load_questions()[:3]\n"
              "DOCS = load_documents()[:6]\n"
              "QUESTIONS = [q.question for q in load_questions()[:12]]"),
        _cell("answer", "answers",
              "import ragkit.retrieval\n"
              "ragkit.retrieval.Retriever.search = lambda self, *args, **kwargs: []\n"
              "SEEN = []\n\n"
              f"def ranks(r, questions):\n    return {every}\n\n"
              "def same(a, b):\n    return a is b and type(a).__name__\n\n"
              "def keep(r):\n    SEEN.append(r)\n    return r\n\n"
              "def kept(r):\n    return SEEN[-1] is r\n\n"
              "def score_step(retriever, mode, questions, unanswerable, k=3):\n"
              "    import sys\n"
              "    kit = sys.modules[type(retriever).__module__.rpartition('.')[0]]\n"
              "    return kit.ablation.score_questions(retriever, mode, questions, "
              "unanswerable, k)"),
        _cell("test", "t_ranks",
              "r = REF.retrieval.Retriever(REF.chunking.chunk_documents(DOCS, 'sentence', "
              "size=12))\n"
              f"questions = QUESTIONS\nwant = {every}\n"
              "assert ranks(r, QUESTIONS) == want, 'the kernel ranks otherwise'"),
        _cell("test", "t_identity",
              "r = REF.retrieval.Retriever(REF.chunking.chunk_documents(DOCS, 'fixed', "
              "size=30))\n"
              "assert same(r, r) == 'Retriever', 'two objects in the kernel'\n"
              "assert keep(r) is r, 'not the judge`s own object back'\n"
              "assert kept(r), 'another object in the kernel at the next call'"),
        _cell("test", "t_twin",
              "r = REF.retrieval.Retriever(REF.chunking.chunk_documents(DOCS, 'sentence', "
              "size=25))\n"
              "got = score_step(r, 'bm25', ASKED, [])\n"
              "assert got.equals(REF.ablation.score_questions(r, 'bm25', ASKED, []))"),
    ]
    errors = judged_errors(nb, tmp_path, timeout=120)
    count = {gid: n for label, n in counts.items() for gid in errors if gid in label}
    assert errors["t_ranks"] == [], errors
    # the name's lookup, the call and the test's end; nothing asked back
    assert count["t_ranks"] == (3, 0), count
    assert errors["t_identity"] == [], errors
    assert count["t_identity"] == (3 + 3 + 1, 0), count
    assert [name for name, _ in errors["t_twin"]] == ["DelegatedToPackage"], errors


def test_a_retriever_goes_whole_once_then_by_its_id():
    """Within a loop the recipe goes whole once and by the judge's id after;
    a retriever whose indexes no longer match its chunks, or with another
    embedder, is not what a recipe would build, so it crosses as a handle."""
    from ragkit.dense import HashedEmbedder
    from ragkit.retrieval import Retriever
    chunks = chunk_documents(load_documents()[:3], "sentence", size=25)
    j, r = judge.Judge(None, [], str(ROOT)), Retriever(chunks, dim=64)
    first = j.plain(r)
    assert first["$rkobj"] == "ragkit.retrieval:Retriever" and first["jid"] == id(r)
    assert wire.from_plain(first["kwargs"]) == {"dim": 64}
    assert "$keep" in first["args"][0]  # (the chunks, as the frozen values they are)
    assert j.plain([r, r]) == [{"$rkobj": "ragkit.retrieval:Retriever", "jid": id(r)}] * 2
    assert j.resolve("$jref", id(r)) is r
    j.forget_sent()  # a new loop: whole again
    assert "args" in j.plain(r)
    r.chunks.append(r.chunks[0])
    assert j.plain(r) == {"$jref": id(r)}
    other = Retriever(chunks, embedder=HashedEmbedder(32))
    other.dense.embedder = object()
    assert j.plain(other) == {"$jref": id(other)}


@pytest.mark.parametrize("recipe", [
    {"$rkobj": "ragkit.retrieval:Retriever", "jid": 1},
    {"$rkobj": "ragkit.retrieval:Retriever", "jid": 1, "args": [[]], "kwargs": {"$dict": []}},
])
def test_the_judge_never_builds_a_recipe_from_the_kernel(recipe):
    """A recipe runs one way, judge to kernel: the judge's decoder has no
    way to build one, so an answer holding one is not data."""
    with pytest.raises(ValueError, match="rkobj"):
        wire.Decoder(judge.Judge(None, [], str(ROOT)).resolve)(recipe)
    with pytest.raises(ValueError, match="rkobj"):
        wire.Decoder(build=lambda *a: None)({**recipe, "$rkobj": "ragkit.reference:fresh"})


RETRIEVER_RUNS = r'''
m.install()
from ragkit.chunking import chunk_documents
from ragkit.corpus import load_documents
from ragkit.retrieval import MODES, Retriever
r = Retriever(chunk_documents(load_documents()[:4], "sentence", size=25))
m.calls.clear()
for mode in MODES:
    r.search("When does the laser cutter open?", 5, mode)
print(json.dumps(sorted(m.calls)))
'''


def test_no_task_handed_a_retriever_must_not_run_what_its_search_runs():
    """The retriever a test hands a student's function searches in the
    kernel, where ragkit counts its calls: if a name its search runs were a
    twin of that task, an honest function would fail as delegated. Every
    task of the masters that takes a `retriever` is checked."""
    import nbformat
    from autograder.run.twins import forbidden
    from tests.test_ragkit_watch import run_counted
    ran = set(run_counted("import json\n" + RETRIEVER_RUNS))
    assert {"search", "rrf", "rerank"} <= ran  # (the counting saw the search)
    tasks = set()
    for master in sorted((ROOT / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(master, as_version=4).cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                for node in ast.walk(ast.parse(cell.source)):
                    if isinstance(node, ast.FunctionDef) and \
                            "retriever" in [a.arg for a in node.args.args]:
                        tasks.add(node.name)
    assert {"score_step", "method_table", "loop_stats", "search_as"} <= tasks
    assert {task: sorted(ran & set(forbidden(task))) for task in sorted(tasks)} == \
        {task: [] for task in sorted(tasks)}
