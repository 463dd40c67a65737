"""ragkit_watch.py: the grading kernel's ragkit counts its functions' calls
and is otherwise the package as it is (the same docstrings, line numbers and
answers). Each check runs in a new interpreter, as a kernel does: install()
changes sys.meta_path and drops modules."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCH = ROOT / "autograder" / "run" / "ragkit_watch.py"

# run first in each script: ragkit_watch (argv[1]) as the kernel loads it
INSTALL = r'''
import sys, types
m = types.ModuleType("_ragkit_watch")
sys.modules["_ragkit_watch"] = m
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), m.__dict__)
'''


def run_counted(script: str) -> dict:
    """The last line of `script`'s output, run after INSTALL in a new interpreter."""
    proc = subprocess.run([sys.executable, "-c", INSTALL + script, str(WATCH)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


PROBE = r'''
import importlib, inspect, json, pkgutil, traceback
import ragkit.text                     # imported before: install() drops it
before = ragkit.text
m.install()
import ragkit
from ragkit.reference import fresh
names = [i.name for i in pkgutil.iter_modules(ragkit.__path__)]
counted = {n: importlib.import_module("ragkit." + n) for n in names}
plain = fresh()                        # a private copy: it counts too
out = {"dropped": ragkit.text is not before, "functions": 0, "differ": []}
for n, module in counted.items():
    other = importlib.import_module(plain.__name__ + "." + n)
    for name, fn in vars(module).items():
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            twin = getattr(other, name)
            out["functions"] += 1
            if (fn.__doc__, fn.__code__.co_firstlineno) != (
                    twin.__doc__, twin.__code__.co_firstlineno):
                out["differ"].append(name)
m.calls.clear()
out["tokens"] = ragkit.text.tokenize("Booking the laser cutter")
out["counts"] = dict(m.calls)
out["twin_tokens"] = plain.text.tokenize("Booking the laser cutter")
m.calls.clear()
plain.text.tokenize("Booking the laser cutter")
out["copy_counts"] = dict(m.calls)

def last_line(fn):
    try:
        fn("one two three", 2, 2)
    except ValueError:
        return traceback.extract_tb(sys.exc_info()[2])[-1].lineno
out["raise_line"] = [last_line(ragkit.chunking.chunk_fixed),
                     last_line(plain.chunking.chunk_fixed)]
importlib.reload(ragkit.text)
m.calls.clear()
ragkit.text.stem("booking")
out["after_reload"] = dict(m.calls)
print(json.dumps(out))
'''


def test_counted_ragkit_is_the_package_with_counts():
    out = run_counted(PROBE)
    assert out["dropped"]
    assert out["functions"] > 50 and out["differ"] == []
    assert out["tokens"] == out["twin_tokens"] and out["tokens"]
    assert out["counts"]["tokenize"] == 1
    assert out["counts"]["stem"] >= len(out["tokens"])
    assert out["copy_counts"] == out["counts"]
    assert out["raise_line"][0] == out["raise_line"][1] is not None
    assert out["after_reload"].get("stem") == 1


# Ways to get a task's answer from ragkit without calling the function of
# the task's own name, one per task that has one: each must count a name the
# judge forbids for that task (its own name, or twins.TWINS). Written here,
# from ragkit's API, not from the table they check.
ROUTES = r'''
import json, math
m.install()
import numpy as np
from ragkit import (ablation, answer, ann, bm25, chunking, corpus, dense,
                    failures, metrics, rag_models, rerank,
                    retrieval, text)
docs, questions = corpus.load_documents(), corpus.load_questions()[:2]
texts = [d.text for d in docs]
chunks = chunking.chunk_documents(docs, "sentence", size=25)
found = retrieval.Retriever(chunks)
q = questions[0].question
p, t = [0.6, 0.4], [[0.5, 0.2], [0.1, 0.9]]
vec = rerank.token_vectors
routes = {
    "answer_table": lambda: rag_models.grade_answers(questions, lambda q: chunks[:5]),
    "split_into_sentences": lambda: text.split_sentences("One. Two! Three"),
    "rag_sequence": lambda: math.exp(rag_models.log_rag_sequence(p, t)),
    "rag_token": lambda: math.exp(rag_models.log_rag_token(p, t)),
    "ceiling_table": lambda: rag_models.ceiling_curve(questions, chunks, [1, 3]),
    "storage_table": lambda: chunking.overlap_storage(100, 20, 5),
    "ivf_search": lambda: ann.IVFIndex(np.eye(8), 2).search(np.eye(8)[:1], k=2, nprobe=1),
    "bm25_idf": lambda: bm25.BM25Index(texts).idf("lock"),
    "bm25_scores": lambda: bm25.BM25Index(texts).scores(q),
    "embed": lambda: dense.HashedEmbedder().fit(texts).embed_many([q]),
    "maxsim": lambda: rerank.maxsim_many(vec("a lock"), [vec("lock tag")])[0],
    "maxsim_rerank": lambda: rerank.rerank_vectors(
        vec("lock"), ["a", "b"], {"a": vec("lock tag"), "b": vec("tag")}),
    "grounded_answer": lambda: answer.best_sentence(q, chunks[:20]),
    "hit_at_k": lambda: retrieval.question_scores(found, questions, "bm25"),
    "mrr": lambda: 1 / metrics.first_relevant_rank(["a", "b"], {"b"}),
    "chunk_size_study": lambda: retrieval.evaluate(found, questions, "hybrid"),
    "refresh": lambda: failures.refresh_index(
        chunks[:3], {}, docs[:1], lambda ds: chunking.chunk_documents(ds, "fixed", size=20)),
    "search_as": lambda: failures.filtered_search(found, q, 3, "staff", {}),
    "score_step": lambda: ablation.score_questions(found, "bm25", questions),
    "run_ablation": lambda: ablation.question_runs(docs, questions, steps=ablation.STEPS[:1]),
    "summarise": lambda: ablation.ablation_table(docs, questions, steps=ablation.STEPS[:1]),
}
ran = {}
for task, route in routes.items():
    m.calls.clear()
    try:
        route()
        ran[task] = sorted(m.calls)
    except Exception as err:  # a route that no longer runs is a failure too
        ran[task] = f"{type(err).__name__}: {err}"
print(json.dumps(ran))
'''


def test_every_other_route_to_a_tasks_answer_is_forbidden():
    sys.path.insert(0, str(ROOT))
    from autograder.run.twins import TWINS as twins
    ran = run_counted(ROUTES)
    broken = {task: names for task, names in ran.items() if isinstance(names, str)}
    assert not broken, broken
    missed = {task: names for task, names in ran.items()
              if not {task, *twins.get(task, ())} & set(names)}
    assert not missed, f"a route to these tasks' answers is not forbidden: {missed}"


# Copies of ragkit's modules made by hand, under names of the student's
# choosing: each counts like the package, and its cached .pyc (which holds
# the package without the counting) does not load.
BY_HAND = r'''
import importlib.machinery, importlib.util, json, os, py_compile, shutil, tempfile
m.install()
import ragkit
home = os.path.dirname(ragkit.__file__)
out = {}
spec = importlib.util.spec_from_file_location("by_hand", os.path.join(home, "text.py"))
by_hand = importlib.util.module_from_spec(spec)   # never put in sys.modules
spec.loader.exec_module(by_hand)
m.calls.clear(); by_hand.tokenize("laser cutter")
out["spec"] = sorted(m.calls)
loader = importlib.machinery.SourceFileLoader("own_loader", os.path.join(home, "text.py"))
own = loader.load_module()
m.calls.clear(); own.stem("booking")
out["loader"] = sorted(m.calls)
link = os.path.join(tempfile.mkdtemp(), "innocent.py")
os.symlink(os.path.join(home, "text.py"), link)
spec = importlib.util.spec_from_file_location("innocent", link)
linked = importlib.util.module_from_spec(spec)
spec.loader.exec_module(linked)
m.calls.clear(); linked.stem("booking")
out["symlink"] = sorted(m.calls)
cached = os.path.join(tempfile.mkdtemp(), "text.cpython.pyc")
py_compile.compile(os.path.join(home, "text.py"), cfile=cached)
inside = os.path.join(tempfile.mkdtemp(), "kit")
shutil.copytree(home, inside)   # (stands in for ragkit's own __pycache__: the
os.replace(cached, os.path.join(inside, "text.pyc"))   # copy's folder is not ragkit's)
m.home[:] = [os.path.realpath(inside)]
try:
    importlib.machinery.SourcelessFileLoader("from_pyc", os.path.join(inside, "text.pyc")).load_module()
    out["pyc"] = "loaded"
except ImportError as err:
    out["pyc"] = str(err)
print(json.dumps(out))
'''


def test_a_copy_of_ragkit_loaded_by_hand_counts_and_its_pyc_does_not_load():
    out = run_counted(BY_HAND)
    assert "tokenize" in out["spec"]
    assert "stem" in out["loader"]
    assert "stem" in out["symlink"]
    assert "loads from its source files" in out["pyc"], out["pyc"]
