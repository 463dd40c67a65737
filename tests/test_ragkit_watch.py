"""ragkit_watch.py: the grading kernel's ragkit counts its functions' calls
and is otherwise the package as it is (the same docstrings, line numbers and
answers). Each check runs in a new interpreter, as a kernel does: install()
changes sys.meta_path and drops modules."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCH = ROOT / "autograder" / "ragkit_watch.py"

PROBE = r'''
import importlib, inspect, json, pkgutil, sys, traceback, types
import ragkit.text                     # imported before: install() drops it
before = ragkit.text
m = types.ModuleType("_ragkit_watch")
sys.modules["_ragkit_watch"] = m
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), m.__dict__)
m.install()
import ragkit
from ragkit.reference import fresh
names = [i.name for i in pkgutil.iter_modules(ragkit.__path__)]
counted = {n: importlib.import_module("ragkit." + n) for n in names}
plain = fresh()                        # a copy the loader leaves alone
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
out["twin_tokens"] = plain.text.tokenize("Booking the laser cutter")
out["counts"] = dict(m.calls)
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
    proc = subprocess.run([sys.executable, "-c", PROBE, str(WATCH)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["dropped"]
    assert out["functions"] > 50 and out["differ"] == []
    assert out["tokens"] == out["twin_tokens"] and out["tokens"]
    assert out["counts"]["tokenize"] == 1
    assert out["counts"]["stem"] >= len(out["tokens"])
    assert out["copy_counts"] == {}
    assert out["raise_line"][0] == out["raise_line"][1] is not None
    assert out["after_reload"].get("stem") == 1
