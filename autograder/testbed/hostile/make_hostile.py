"""Write the hostile class: submissions that attack the grader, with the
score and the problems.csv lines each must get.

    python autograder/testbed/hostile/make_hostile.py

The assignment is a five-part notebook of its own (source/hostile/tiny.ipynb
here, 13 points: A 2+1, B 2+1, C 2, D 2+1, E 1+1), small so that the whole
class grades in about a minute. Part D has a twin in ragkit under another
name (split_sentences, twins.TWINS); Part E builds on Parts A and D, and its
tests call it with the reference's A and D swapped in, so a slip in A or D
costs points only there. Every case starts from the release nbgrader makes
of it and changes it the way an attacker, or a careless student, would.
The output is committed: source/, submissions/<case>/hostile/ and
expected.csv. The cases in AT_TEST_TIME are not: `at_test_time` writes them
when the test runs (a 200 MB notebook, 20,000 files, symbolic links that
point out of the repository, a named pipe: nothing git should hold).
tests/test_hostile.py grades the class in one batch and checks every row.

A case's expected score is what a correct grader must give, worked out
here from which parts the attack breaks, never copied from a grading run.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
from autograder.scoring.editions import answer_code  # noqa: E402
from autograder.intake.intake import (  # noqa: E402  (the documented default)
    LINK_REFUSED, MAX_FILES)
from autograder.run.nbgrader_cli import course_folder, nbgrader_command, nbgrader_env  # noqa: E402

ASSIGNMENT = "hostile"
NOTEBOOK = "tiny.ipynb"
POINTS = {"a": 3.0, "b": 3.0, "c": 2.0, "d": 3.0, "e": 2.0}  # per part: visible + hidden
FULL = sum(POINTS.values())
PORT = 47613  # the test listens here on the grader's loopback
BIG_MB = 200
MANY = 20_000  # small files beside the notebook of too_many_files
# test_hostile.py grades with these (--max-output KB, --max-notebook-output
# MB, --max-cells N): notebook_output_flood's cells each print just under
# the cell's cap, FLOOD_CELLS of them pass the notebook's
MAX_OUTPUT_KB, MAX_NOTEBOOK_OUTPUT_MB, MAX_CELLS = 256, 1, 100
FLOOD_PRINT = 250_000  # characters each flood cell prints (and a newline)
FLOOD_CELLS = MAX_NOTEBOOK_OUTPUT_MB * 2 ** 20 // (FLOOD_PRINT + 1) + 1


def meta(gid: str, kind: str, points: int | None = None) -> dict:
    base = {"grade": False, "grade_id": gid, "locked": True,
            "schema_version": 3, "solution": False, "task": False}
    if kind == "solution":
        base.update(locked=False, solution=True)
    elif kind == "test":
        base.update(grade=True, points=points)
    return {"nbgrader": base}


def code(source: str, gid: str, kind: str, points: int | None = None):
    cell = new_code_cell(source.strip("\n"), metadata=meta(gid, kind, points))
    cell.id = gid.replace("_", "-")
    return cell


def text(source: str, slug: str):
    cell = new_markdown_cell(source.strip("\n"))
    cell.id = slug
    return cell


def master() -> nbformat.NotebookNode:
    """Three small graded parts; the hidden tests compare with a private
    copy of ragkit, like the lab's."""
    nb = new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"}})
    nb.cells = [
        text("# A tiny assignment for testing the grader", "title"),
        code("from ragkit.reference import fresh, using\n"
             "from ragkit.text import tokenize", "tiny_setup", "locked"),
        text("## Part A (3 points)\n\n`word_count(text)` returns how many "
             "tokens `tokenize` finds in `text`.", "part-a"),
        code("def word_count(text):\n    ### BEGIN SOLUTION\n"
             "    return len(tokenize(text))\n    ### END SOLUTION",
             "tiny_a", "solution"),
        code('got = word_count("Laser cutters need a booking")\n'
             'assert got == 4, f"expected 4 tokens, got {got!r}"',
             "tiny_test_a", "test", 2),
        code('"""(hidden) word_count agrees with the package on more texts"""\n'
             'word_count("a")\n### BEGIN HIDDEN TESTS\nREF = fresh()\n'
             'for sample in ["", "The 3D printer jams", "Opening hours on Sunday"]:\n'
             '    want = len(REF.text.tokenize(sample))\n'
             '    assert isinstance(word_count(sample), int) and '
             'word_count(sample) == want, sample\n### END HIDDEN TESTS',
             "tiny_hidden_a", "test", 1),
        text("## Part B (3 points)\n\n`longest(words)` returns the longest "
             "word of a non-empty list; a tie goes to the earlier word.",
             "part-b"),
        code("def longest(words):\n    ### BEGIN SOLUTION\n"
             "    return max(words, key=len)\n    ### END SOLUTION",
             "tiny_b", "solution"),
        code('got = longest(["ab", "abc", "xyz"])\n'
             'assert got == "abc", f"expected \'abc\', got {got!r}"',
             "tiny_test_b", "test", 2),
        code('"""(hidden) longest on one word and on ties"""\nlongest(["a"])\n'
             '### BEGIN HIDDEN TESTS\nassert longest(["a"]) == "a"\n'
             'assert longest(["bb", "aa", "c"]) == "bb"\n### END HIDDEN TESTS',
             "tiny_hidden_b", "test", 1),
        text("## Part C (2 points)\n\n`shout(text)` returns `text` in capitals "
             "with one `!` added.", "part-c"),
        code("def shout(text):\n    ### BEGIN SOLUTION\n"
             "    return text.upper() + \"!\"\n    ### END SOLUTION",
             "tiny_c", "solution"),
        code('got = shout("hi")\nassert got == "HI!", f"expected \'HI!\', got {got!r}"',
             "tiny_test_c", "test", 2),
        text("## Part D (3 points)\n\n`split_into_sentences(text)` cuts `text` after "
             "every `.`, `!` or `?` that whitespace follows; each sentence is "
             "stripped, and empty ones are dropped.", "part-d"),
        code("import re\n\ndef split_into_sentences(text):\n    ### BEGIN SOLUTION\n"
             "    pieces = re.split(r\"(?<=[.!?])\\s+\", text)\n"
             "    return [p.strip() for p in pieces if p.strip()]\n    ### END SOLUTION",
             "tiny_d", "solution"),
        code('got = split_into_sentences("Book a slot. Bring goggles!  Done")\n'
             'assert got == ["Book a slot.", "Bring goggles!", "Done"], got',
             "tiny_test_d", "test", 2),
        code('"""(hidden) split_into_sentences agrees with the package"""\n'
             'split_into_sentences("a")\n### BEGIN HIDDEN TESTS\nREF = fresh()\n'
             'for sample in ["", "  ", "Wait... what? Yes", "e.g. this. Or\\nthat!"]:\n'
             '    assert split_into_sentences(sample) == REF.text.split_sentences(sample), '
             'sample\n### END HIDDEN TESTS',
             "tiny_hidden_d", "test", 1),
        text("## Part E (2 points)\n\n`sentence_sizes(text)` returns the `word_count` "
             "of each sentence `split_into_sentences` finds in `text`, in order. Its "
             "tests use the reference's Parts A and D, so a slip there costs "
             "points only there.", "part-e"),
        code("def sentence_sizes(text):\n    ### BEGIN SOLUTION\n"
             "    return [word_count(s) for s in split_into_sentences(text)]\n"
             "    ### END SOLUTION", "tiny_e", "solution"),
        code('REF = fresh()\n'
             'with using(globals(), word_count=lambda t: len(REF.text.tokenize(t)),\n'
             '           split_into_sentences=REF.text.split_sentences):  # A, D not re-graded\n'
             '    got = sentence_sizes("Laser cutters need a booking. Ask staff!")\n'
             'assert got == [4, 2], f"expected [4, 2], got {got!r}"',
             "tiny_test_e", "test", 1),
        code('"""(hidden) sentence_sizes on more texts"""\nREF = fresh()\n'
             'with using(globals(), word_count=lambda t: len(REF.text.tokenize(t)),\n'
             '           split_into_sentences=REF.text.split_sentences):\n'
             '    sentence_sizes("a")\n### BEGIN HIDDEN TESTS\n'
             '    for sample in ["", "One. Two three!", "The 3D printer jams. Call us? Yes"]:\n'
             '        want = [len(REF.text.tokenize(x)) for x in REF.text.split_sentences(sample)]\n'
             '        assert sentence_sizes(sample) == want, sample\n### END HIDDEN TESTS',
             "tiny_hidden_e", "test", 1),
    ]
    return nb


def answers(nb) -> dict[str, str]:
    out = {}
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if m.get("solution"):
            out[m["grade_id"]] = answer_code(cell.source)
    return out


def release(source: Path) -> nbformat.NotebookNode:
    """The student edition, made by nbgrader itself."""
    with tempfile.TemporaryDirectory() as tmp:
        course = course_folder(Path(tmp), source)
        proc = subprocess.run(nbgrader_command("generate_assignment", ASSIGNMENT,
                                               "--force"),
                              cwd=course, env=nbgrader_env(), capture_output=True,
                              text=True)
        if proc.returncode:
            raise SystemExit(proc.stdout + proc.stderr)
        return nbformat.read(course / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)


def cell(nb, gid: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)


# --- the attacks: the source they put in a solution cell ---------------------

A_OK = "def word_count(text):\n    return len(tokenize(text))"
SABOTAGE = ("\n    word_count = None  # got through: the grader must not "
            "give these points\n")

ATTACKS = {
    "endless_loop": ("tiny_a", "while True:\n    pass"),
    "memory_bomb": ("tiny_a", "def grow():\n    blocks = []\n    while True:\n"
                              "        blocks.append(bytearray(2 ** 26))\n\ngrow()"),
    "fork_bomb": ("tiny_a", "import os, time\nwhile True:\n    if os.fork() == 0:\n"
                            "        while True:\n            try:\n"
                            "                os.fork()\n            except OSError:\n"
                            "                time.sleep(0.5)"),
    "disk_filler_files": ("tiny_a", "n = 0\nwhile True:\n"
                                    "    with open(f'fill{n}.bin', 'wb') as fh:\n"
                                    "        fh.write(bytes(2 ** 24))\n    n += 1"),
    "disk_filler_one_file": ("tiny_a", "with open('/tmp/fill.bin', 'wb') as fh:\n"
                                       "    while True:\n"
                                       "        fh.write(bytes(2 ** 24))"),
    "output_flood": ("tiny_a", "for _ in range(10 ** 6):\n    print('x' * 999, flush=True)"),
    "os_exit": ("tiny_b", "import os\nos._exit(3)"),
    "sys_exit": ("tiny_a", "import sys\nsys.exit(1)"),
    "segfault": ("tiny_b", "import ctypes\nctypes.string_at(0)"),
    "keyboard_interrupt": ("tiny_a", "raise KeyboardInterrupt"),
    "kernel_killed": ("tiny_b", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
    "network_local": ("tiny_a", A_OK + "\n\nimport socket\ntry:\n"
                      f"    socket.create_connection(('127.0.0.1', {PORT}), timeout=3).close()"
                      + SABOTAGE + "except OSError:\n    pass"),
    "network_outside": ("tiny_a", A_OK + "\n\nimport socket\n"
                        "names = [n for _, n in socket.if_nameindex()]\ntry:\n"
                        "    socket.create_connection(('1.1.1.1', 443), timeout=3).close()\n"
                        "    reached = True\nexcept OSError:\n    reached = False\n"
                        "if reached or names != ['lo']:" + SABOTAGE),
    "read_source": ("tiny_a", A_OK + "\n\nimport pathlib, ragkit\n"
                    "repo = pathlib.Path(ragkit.__file__).resolve().parents[1]\n"
                    "found = [n for n in ('source', 'release', 'autograder', '.git', "
                    "'tests', 'notebooks') if (repo / n).exists()]\nif found:" + SABOTAGE),
    "read_other_students": ("tiny_a", A_OK + "\n\nimport os, sys\n"
                            "mine, skip = os.getcwd(), ('/proc', '/sys', '/dev', '/usr', "
                            "'/etc', sys.prefix, sys.base_prefix)\nothers = []\n"
                            "for top, dirs, files in os.walk('/'):\n"
                            "    dirs[:] = [d for d in dirs if not "
                            "os.path.join(top, d).startswith(skip)]\n"
                            "    if top != mine:\n"
                            "        others += [f for f in files if f.endswith('.ipynb')]\n"
                            "if others:" + SABOTAGE),
    "read_gradebook": ("tiny_a", A_OK + "\n\nimport os, sys\nbooks = []\n"
                       "for top, dirs, files in os.walk('/'):\n"
                       "    dirs[:] = [d for d in dirs if not os.path.join(top, d).startswith(\n"
                       "        ('/proc', '/sys', '/usr', sys.prefix, sys.base_prefix))]\n"
                       "    books += [f for f in files if f == 'gradebook.db']\n"
                       "if books:" + SABOTAGE),
    "read_ssh": ("tiny_a", A_OK + "\n\nimport glob, os\n"
                 "keys = glob.glob('/root/.ssh') + glob.glob('/home/*/.ssh')\n"
                 "keys += glob.glob(os.path.expanduser('~root/.ssh'))\n"
                 "if keys:" + SABOTAGE),
    "write_outside": ("tiny_a", A_OK + "\n\nimport os, pathlib, ragkit\n"
                      "repo = pathlib.Path(ragkit.__file__).resolve().parents[1]\n"
                      "targets = [repo / 'ragkit', repo / 'data', repo, "
                      "pathlib.Path.cwd().parent, pathlib.Path('/')]\nwrote = []\n"
                      "for folder in targets:\n    try:\n"
                      "        (folder / 'HOSTILE_WAS_HERE.txt').write_text('x')\n"
                      "        wrote.append(folder)\n    except OSError:\n        pass\n"
                      "if wrote:" + SABOTAGE),
    "patch_ragkit": ("tiny_a", "import ragkit.text\n"
                     "ragkit.text.tokenize = lambda text, drop_stopwords=True: text.split()\n"
                     "tokenize = ragkit.text.tokenize\n\n"
                     "def word_count(text):\n    return len(text.split())"),
    "patch_fresh": ("tiny_a", "import types\n\n"
                    "def word_count(text):\n"
                    "    if text.startswith('Laser'):\n        return 4\n"
                    "    return len(text.split())\n\n"
                    "def fresh():\n    fake = types.SimpleNamespace(tokenize=str.split)\n"
                    "    return types.SimpleNamespace(text=fake)"),
    "patch_builtins": ("tiny_a", "import builtins, sys\n\n"
                       "real_len = len\n\n"
                       "def fake_len(things):\n"
                       "    # lie only to the notebook's cells: IPython itself needs len\n"
                       "    if sys._getframe(1).f_globals.get('__name__') == '__main__' \\\n"
                       "            and isinstance(things, list):\n"
                       "        return 4\n"
                       "    return real_len(things)\n\n"
                       "builtins.len = fake_len\n\n"
                       "def word_count(text):\n    return 4"),
    # the judge (judge.py) decides test cells outside the kernel; each of
    # these forged part A's points when the tests ran in the student's kernel
    "ast_transformer": ("tiny_a", "import ast\n\n"
                        "class Swallow(ast.NodeTransformer):\n"
                        "    def visit_Module(self, node):\n"
                        "        catch = ast.ExceptHandler(type=ast.Name('BaseException', ast.Load()),\n"
                        "                                  name=None, body=[ast.Pass()])\n"
                        "        wrapped = ast.Try(body=node.body or [ast.Pass()], handlers=[catch],\n"
                        "                          orelse=[], finalbody=[])\n"
                        "        return ast.fix_missing_locations(ast.Module([wrapped], []))\n\n"
                        "get_ipython().ast_transformers.append(Swallow())\n\n"
                        "def word_count(text):\n    raise NotImplementedError()"),
    "pre_run_hook": ("tiny_a", "import sys\n\n"
                     "def say_ok(*_):\n    sys.displayhook('ok')\n\n"
                     "get_ipython().events.register('pre_run_cell', say_ok)\n\n"
                     "def word_count(text):\n    raise NotImplementedError()"),
    "displayhook_call": ("tiny_a", "import sys\n\n"
                         "def word_count(text):\n    sys.displayhook('ok')\n"
                         "    raise NotImplementedError()"),
    "lying_lambda_eq": ("tiny_a", "class Liar(int):\n    pass\n\n"
                        "Liar.__eq__ = lambda self, other: True\n"
                        "Liar.__hash__ = int.__hash__\n\n"
                        "def word_count(text):\n    return Liar(0)"),
    "lying_str": ("tiny_c", "class Yes(str):\n    pass\n\n"
                  "Yes.__eq__ = lambda self, other: True\n\n"
                  "def shout(text):\n    return Yes('')"),
    "patch_fresh_code": ("tiny_a", "import ragkit.reference\n\n"
                         "def word_count(text):\n"
                         "    if text.startswith('Laser'):\n        return 4\n"
                         "    return len(text.split())\n\n"
                         "def fake_fresh():\n    import types\n"
                         "    words = types.SimpleNamespace(tokenize=str.split)\n"
                         "    return types.SimpleNamespace(text=words)\n\n"
                         "ragkit.reference.fresh.__code__ = fake_fresh.__code__"),
    # tries to copy the hidden tests into the feedback (test_hostile.py
    # looks for them in the page, plain and base64): the judge never sends
    # a test's code to the kernel
    "leak_hidden": ("tiny_a", "import base64, linecache\n\n"
                    "def show(info):\n"
                    "    print(base64.b64encode(info.raw_cell.encode()).decode())\n\n"
                    "get_ipython().events.register('pre_run_cell', show)\n\n"
                    "def word_count(text):\n"
                    "    for entry in list(linecache.cache.values()):\n"
                    "        if len(entry) > 2:\n"
                    "            print(base64.b64encode(''.join(entry[2]).encode()).decode())\n"
                    "    return len(tokenize(text))"),
    "lying_equality": ("tiny_a", "class Anything(int):\n"
                       "    def __eq__(self, other):\n        return True\n\n"
                       "def word_count(text):\n    return Anything(0)"),
    # the interrupt at the time limit does nothing: the kernel is stopped
    # instead of every later cell waiting out its own time limit behind it
    "ignore_interrupt": ("tiny_a", "import signal\n"
                         "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                         "while True:\n    pass"),
    # the same two, but only once the judge calls the function
    "exit_when_called": ("tiny_a", "import os\n\n"
                         "def word_count(text):\n    os._exit(3)"),
    "hang_when_called": ("tiny_a", "import signal\n\n"
                         "def word_count(text):\n"
                         "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                         "    while True:\n        pass"),
    # round four (issue 30): the wire between kernel and judge. An answer
    # whose class claims a ragkit module and whose name leads to os.system:
    # decoded by looking the name up, it ran as the grader; it is data or
    # nothing now, and the file it would leave in the repository stays away
    "judge_object_by_name": ("tiny_a", "import dataclasses, pathlib, ragkit\n\n"
                             "@dataclasses.dataclass\nclass system:\n    command: str\n\n"
                             "system.__module__ = 'ragkit.reference'\n"
                             "system.__qualname__ = 'os.system'\n"
                             "TARGET = pathlib.Path(ragkit.__file__).resolve().parents[1]\n\n"
                             "def word_count(text):\n"
                             "    return system(f'touch {TARGET}/HOSTILE_WAS_HERE.txt')"),
    # the kernel's half of the wire rewritten to describe an array of a few
    # GB in a few bytes: refused before anything is allocated
    "judge_huge_array": ("tiny_a", "import sys\n\nwire = sys.modules['_rag_judge']\n"
                         "honest = wire.to_plain\n\n"
                         "def inflated(value, *args, **kwargs):\n"
                         "    if type(value) is int:\n"
                         "        return {'$nd': '<U1000000000', 'shape': [4], "
                         "'data': ['4', '4', '4', '4']}\n"
                         "    return honest(value, *args, **kwargs)\n\n"
                         "wire.to_plain = inflated\n\n"
                         "def word_count(text):\n    return len(tokenize(text))"),
    # a call that asks the judge back without end: the judge's answers count
    # against the cell's time limit, which holds
    "judge_callback_flood": ("tiny_a", "import json, sys\n\n"
                             "ASK = sys.modules['_rag_judge'].ASK\n\n"
                             "def word_count(text):\n    while True:\n        try:\n"
                             "            input(ASK + json.dumps({'op': 'len', 'ref': 1}))\n"
                             "        except Exception:\n            pass"),
    # the same, but the first interrupt at the time limit is swallowed, as
    # if it had been lost: the judge interrupts again while the kernel keeps
    # asking, the loop ends, and only the part whose time ran out is lost
    "judge_flood_swallows_interrupt": ("tiny_a", "import json, sys\n\n"
                                       "ASK = sys.modules['_rag_judge'].ASK\n\n"
                                       "def word_count(text):\n    swallowed = False\n"
                                       "    while True:\n        try:\n"
                                       "            input(ASK + json.dumps({'op': 'len', "
                                       "'ref': 1}))\n"
                                       "        except KeyboardInterrupt:\n"
                                       "            if swallowed:\n                raise\n"
                                       "            swallowed = True\n"
                                       "        except Exception:\n            pass"),
    # code that reached the judge's process on purpose (the test-only hole
    # judge.HOLE_VARIABLE, set by tests/test_hostile.py): it runs there as
    # the grader's user in the grader's sandbox, and finds nothing to read
    # or write; if it did, word_count would be wrong and part A lost
    "judge_code_execution": ("tiny_a", "PROBE = r\'\'\'#run-in-the-judge\n"
                             "import os, pathlib, socket, sys\nimport ragkit\n"
                             "from ragkit.text import tokenize\nfound = []\n"
                             "if os.getuid() == 0 or os.geteuid() == 0:\n"
                             "    found.append('root')\n"
                             "repo = pathlib.Path(ragkit.__file__).resolve().parents[1]\n"
                             "found += [n for n in ('source', 'release', 'autograder', '.git', "
                             "'tests', 'notebooks') if (repo / n).exists()]\n"
                             "here = pathlib.Path.cwd()\n"
                             "home = str(next(p for p in [here, *here.parents] "
                             "if p.name == 'course'))  # the student's own course folder\n"
                             "skip = ('/proc', '/sys', '/dev', '/usr', '/etc', "
                             "sys.prefix, sys.base_prefix, home, str(repo))\n"
                             "for top, dirs, files in os.walk('/'):\n"
                             "    dirs[:] = [d for d in dirs if not os.path.join(top, d)"
                             ".startswith(skip)]\n"
                             "    found += [f for f in files if f.endswith(('.ipynb', '.db', "
                             "'.csv'))]\n"
                             "for folder in (repo, repo / 'ragkit', repo / 'data', "
                             "pathlib.Path(sys.prefix), pathlib.Path('/'), "
                             "pathlib.Path(home).parent):\n    try:\n"
                             "        (folder / 'HOSTILE_WAS_HERE.txt').write_text('x')\n"
                             "        found.append(str(folder))\n    except OSError:\n"
                             "        pass\ntry:\n"
                             f"    socket.create_connection(('127.0.0.1', {PORT}), timeout=2)"
                             ".close()\n    found.append('network')\nexcept OSError:\n"
                             "    pass\nanswer = -1 if found else len(tokenize(TEXT))\n"
                             "\'\'\'\n\n\ndef word_count(text):\n"
                             "    return PROBE.replace('TEXT', repr(text))"),
    # Part D's answer from ragkit's function of another name (twins.TWINS):
    # the part scores 0 and the feedback names the function that ran
    "twin_by_other_name": ("tiny_d", "from ragkit.text import split_sentences\n\n"
                           "def split_into_sentences(text):\n"
                           "    return split_sentences(text)"),
    # the same through a private copy of the package under another name,
    # which counts its calls as the package does (ragkit_watch.py)
    "twin_by_fresh_copy": ("tiny_d", "import ragkit.reference\n\n"
                           "def split_into_sentences(text):\n"
                           "    return ragkit.reference.fresh().text.split_sentences(text)"),
}

# which parts each attack should cost; "died_in" = the part whose cell kills
# the kernel (it and every later part score 0)
LOST = {"endless_loop": "a", "memory_bomb": "a", "fork_bomb": "a",
        "disk_filler_files": "a", "disk_filler_one_file": "a",
        "sys_exit": "a", "keyboard_interrupt": "a",
        "patch_ragkit": "a", "lying_equality": "a", "ast_transformer": "a",
        "pre_run_hook": "a", "displayhook_call": "a", "lying_lambda_eq": "a",
        "lying_str": "c", "judge_object_by_name": "a", "judge_huge_array": "a",
        "judge_callback_flood": "a", "judge_flood_swallows_interrupt": "a",
        "twin_by_other_name": "d", "twin_by_fresh_copy": "d"}
# cheats that pass part A's visible test and lose only its hidden point
HIDDEN_LOST = {"patch_fresh": "a", "patch_builtins": "a", "patch_fresh_code": "a"}
# attacks on the kernel's own machinery that break Part E's tests too: its
# calls reach the kernel's copy of the reference (patch_fresh_code broke
# it) and its answers are ints (which judge_huge_array inflates)
ALSO_LOST = {"patch_fresh_code": "e", "judge_huge_array": "e"}
DIED_IN = {"os_exit": "b", "segfault": "b", "kernel_killed": "b", "output_flood": "a",
           "ignore_interrupt": "a", "exit_when_called": "a", "hang_when_called": "a"}
# what the grader must write down for each (besides nothing)
NB = NOTEBOOK
NOTES = {
    "patch_fresh": [f"{NB}: cell 'tiny_a' redefines fresh, which the tests take from "
                    "a cell you cannot edit; graded with that cell's"],
    "endless_loop": [f"{NB}: cell 'tiny_a' ran past the time limit"],
    "memory_bomb": [f"{NB}: cell 'tiny_a' hit the memory limit"],
    "fork_bomb": [f"{NB}: cell 'tiny_a' hit the process limit"],
    "disk_filler_files": [f"{NB}: cell 'tiny_a' filled its scratch space"],
    "disk_filler_one_file": [f"{NB}: cell 'tiny_a' wrote a file over the size limit"],
    "output_flood": [f"{NB}: cell 'tiny_a' printed more than the output limit",
                     f"{NB}: cell 'tiny_a' killed the kernel; later cells scored 0"],
    "os_exit": [f"{NB}: cell 'tiny_b' killed the kernel; later cells scored 0"],
    "segfault": [f"{NB}: cell 'tiny_b' killed the kernel; later cells scored 0"],
    "kernel_killed": [f"{NB}: cell 'tiny_b' killed the kernel; later cells scored 0"],
    "ignore_interrupt": [f"{NB}: cell 'tiny_a' ran past the time limit",
                         f"{NB}: cell 'tiny_a' ignored the interrupt at its time limit; "
                         "the kernel was stopped, later cells scored 0"],
    "exit_when_called": [f"{NB}: cell 'tiny_test_a' killed the kernel; later cells scored 0"],
    **{case: [f"{NB}: cell '{gid}' answered with something that is not plain data; "
              "scored 0" for gid in cells]
       for case, cells in (("judge_object_by_name", ("tiny_test_a", "tiny_hidden_a")),
                           ("judge_huge_array", ("tiny_test_a", "tiny_hidden_a",
                                                 "tiny_test_e", "tiny_hidden_e")))},
    **{case: [f"{NB}: cell '{gid}' ran past the time limit"
              for gid in ("tiny_test_a", "tiny_hidden_a")]
       for case in ("judge_callback_flood", "judge_flood_swallows_interrupt")},
    **{case: [f"{NB}: cell '{gid}' tests a function that runs ragkit's own "
              "twin of the piece it builds; scored 0"
              for gid in ("tiny_test_d", "tiny_hidden_d")]
       for case in ("twin_by_other_name", "twin_by_fresh_copy")},
    "hang_when_called": [f"{NB}: cell 'tiny_test_a' ran past the time limit",
                         f"{NB}: cell 'tiny_test_a' ignored the interrupt at its time limit; "
                         "the kernel was stopped, later cells scored 0"],
}
# the patches and lies above lose their points without a line in
# problems.csv: the tests run in the judge, with its own builtins and
# reference, on answers that crossed as plain data


def score_after(case: str) -> float:
    if case in DIED_IN:
        parts = list(POINTS)
        return sum(POINTS[p] for p in parts[:parts.index(DIED_IN[case])])
    score = FULL - POINTS[ALSO_LOST[case]] if case in ALSO_LOST else FULL
    if case in HIDDEN_LOST:
        return score - 1.0  # every part's hidden test is worth 1 point
    return score - POINTS[LOST[case]] if case in LOST else score


def build(out: Path = HERE) -> list[dict]:
    source = out / "source"
    shutil.rmtree(source, ignore_errors=True)
    (source / ASSIGNMENT).mkdir(parents=True)
    nb = master()
    nbformat.write(nb, source / ASSIGNMENT / NOTEBOOK)
    blank = release(source)
    good = answers(nb)
    subs = out / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    rows = []

    def write(case: str, score: float, problems: list[str], files: dict) -> None:
        folder = subs / case / ASSIGNMENT
        folder.mkdir(parents=True)
        for name, content in files.items():
            if isinstance(content, bytes):
                (folder / name).write_bytes(content)
            else:
                nbformat.write(content, folder / name)
        rows.append({"case": case, "score": score, "problems": " | ".join(problems)})

    def filled(**replace: str) -> nbformat.NotebookNode:
        copy = nbformat.from_dict(json.loads(json.dumps(blank)))
        for gid, src in {**good, **replace}.items():
            cell(copy, gid).source = src
        return copy

    write("correct", FULL, [], {NOTEBOOK: filled()})
    # one slip costs once: Part E's tests swap in the reference's A and D
    for part in ("a", "d"):
        stub = {f"tiny_{part}": cell(blank, f"tiny_{part}").source}
        write(f"blank_part_{part}", FULL - POINTS[part], [], {NOTEBOOK: filled(**stub)})
    for case, (gid, src) in ATTACKS.items():
        write(case, score_after(case), NOTES.get(case, []), {NOTEBOOK: filled(**{gid: src})})

    # graded cells edited, deleted, duplicated, retyped, re-labelled
    stub = cell(blank, "tiny_a").source
    nb = filled(tiny_a=stub)
    for gid in ("tiny_test_a", "tiny_hidden_a"):
        cell(nb, gid).source = '"""I made this test pass."""\npass'
    write("edit_tests", FULL - POINTS["a"],
          [f"{NB}: cell 'tiny_hidden_a' was edited; graded with the master's",
           f"{NB}: cell 'tiny_test_a' was edited; graded with the master's"],
          {NOTEBOOK: nb})
    nb = filled(tiny_b="def longest(words):\n    return words[-1]")
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                not in ("tiny_test_b", "tiny_hidden_b")]
    write("delete_tests", FULL - POINTS["b"],
          [f"{NB}: graded cell 'tiny_hidden_b' was deleted; restored from the master",
           f"{NB}: graded cell 'tiny_test_b' was deleted; restored from the master"],
          {NOTEBOOK: nb})
    nb = filled()
    index = nb.cells.index(cell(nb, "tiny_test_c"))
    twin = nbformat.from_dict(json.loads(json.dumps(nb.cells[index])))
    twin.id = "tiny-test-c-again"
    nb.cells.insert(index + 1, twin)
    write("duplicate_test", FULL, [f"{NB}: cell 'tiny_test_c' appears more than once; "
                                   "graded once"],
          {NOTEBOOK: nb})
    # a cell pasted from another notebook keeps that notebook's nbgrader
    # labels (nbgrader alone fails the whole assignment on it), and one
    # labelled locked by hand: both are the student's own cells
    nb = filled()
    index = nb.cells.index(cell(nb, "tiny_c"))
    pasted = code("print('from the week before')", "nb03_chunk_fixed", "solution")
    pasted.id = "pasted-from-elsewhere"
    hand = code("note = 'mine'", "tiny_hand", "locked")
    hand.id = "labelled-by-hand"
    del hand.metadata["nbgrader"]["grade_id"]
    nb.cells[index + 1:index + 1] = [pasted, hand]
    write("foreign_labels", FULL,
          [f"{NB}: cell 'nb03_chunk_fixed' carries nbgrader labels of no cell of this "
           "notebook; graded as your own cell",
           f"{NB}: cell {index + 2} carries nbgrader labels of no cell of this "
           "notebook; graded as your own cell"], {NOTEBOOK: nb})
    nb = filled()
    retyped = cell(nb, "tiny_test_a")
    retyped.cell_type = "markdown"
    del retyped["outputs"], retyped["execution_count"]
    write("retype_test", FULL, [f"{NB}: cell 'tiny_test_a' was turned into markdown; "
                                "graded as code"], {NOTEBOOK: nb})
    nb = filled(tiny_a=stub)
    cell(nb, "tiny_test_a").metadata.nbgrader.points = 0
    cell(nb, "tiny_hidden_a").metadata.nbgrader.points = 0
    write("lower_points", FULL - POINTS["a"],
          [f"{NB}: nbgrader metadata of cell 'tiny_hidden_a' was edited; graded with "
           "the master's",
           f"{NB}: nbgrader metadata of cell 'tiny_test_a' was edited; graded with "
           "the master's"], {NOTEBOOK: nb})
    nb = filled(tiny_a=stub)
    test = cell(nb, "tiny_test_a")
    test.metadata.nbgrader.update(grade=False, solution=True, locked=False, points=None)
    test.source = "pass"
    write("test_as_solution", FULL - POINTS["a"],
          [f"{NB}: cell 'tiny_test_a' was edited; graded with the master's",
           f"{NB}: nbgrader metadata of cell 'tiny_test_a' was edited; graded with "
           "the master's"], {NOTEBOOK: nb})

    # files that are not the notebook they should be
    unreadable = "{}: not a readable notebook ({}), scored 0"
    write("invalid_json", 0.0, [unreadable.format(NB, "NotJSONError")],
          {NOTEBOOK: b'{"cells": [ this is not json'})
    write("empty_file", 0.0, [unreadable.format(NB, "NotJSONError")], {NOTEBOOK: b""})
    good_json = nbformat.writes(filled()).encode()
    write("non_utf8", 0.0, [unreadable.format(NB, "UnicodeDecodeError")],
          {NOTEBOOK: good_json.replace(b"Laser", b"L\xe4\xff\xfeser", 1)})
    v3 = nbformat.convert(filled(), 3)
    write("nbformat_3", FULL, [], {NOTEBOOK: nbformat.writes(v3, version=3).encode()})
    write("wrong_name", 0.0, [f"{NB}: missing, scored 0",
                              f"Tiny (1).ipynb: not part of the assignment, ignored"],
          {"Tiny (1).ipynb": filled()})
    write("extra_notebook", FULL, ["scratch.ipynb: not part of the assignment, ignored"],
          {NOTEBOOK: filled(), "scratch.ipynb": new_notebook()})

    # the size of a notebook's output and of the notebook itself
    nb = filled()
    at = nb.cells.index(cell(nb, "tiny_hidden_b")) + 1
    for i in range(FLOOD_CELLS + 1):  # each under the cell's cap
        flood = new_code_cell(f"print('x' * {FLOOD_PRINT})")
        flood.id = f"flood-{i}"
        nb.cells.insert(at + i, flood)
    # the cell in which the notebook's output passes its cap stops the
    # kernel: parts C to E (after it) score 0, parts A and B (before it) keep theirs
    stopped = at + FLOOD_CELLS - 1
    write("notebook_output_flood", POINTS["a"] + POINTS["b"],
          [f"{NB}: cell {stopped} printed past the notebook's output limit",
           f"{NB}: cell {stopped} killed the kernel; later cells scored 0"], {NOTEBOOK: nb})
    nb = filled()
    for i in range(MAX_CELLS + 1 - len(nb.cells)):
        extra = new_code_cell("pass")
        extra.id = f"extra-{i}"
        nb.cells.append(extra)
    write("too_many_cells", 0.0, [f"{NB}: {MAX_CELLS + 1} cells, more than the "
                                  f"{MAX_CELLS} allowed; not run, scored 0"], {NOTEBOOK: nb})

    rows += test_time_rows()
    rows.sort(key=lambda r: r["case"])
    with (out / "expected.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["case", "score", "problems"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def test_time_rows() -> list[dict]:
    """The expected rows of the cases written at test time (at_test_time)."""
    def row(case: str, score: float, problems: list[str]) -> dict:
        return {"case": case, "score": score, "problems": " | ".join(problems)}

    return [
        row("huge_notebook", 0.0, [f"{NB}: {BIG_MB} MB, more than the 50 MB allowed; "
                                   "not run, scored 0"]),
        # the notebook and MANY files, more than --max-files (default): not run
        row("too_many_files", 0.0, [f"(submission): {MANY + 1} files and folders, more "
                                    f"than the {MAX_FILES} allowed; not graded, scored 0"]),
        # a student folder that is a link (to a submission with full marks),
        # an assignment folder that is a link (to the masters): never followed
        row("link_student", 0.0, [LINK_REFUSED]),
        row("link_assignment", 0.0, [LINK_REFUSED]),
        # the notebook is a link to the master, corpus/x.json to /etc/os-release:
        # neither is copied, so the notebook is missing and scores 0
        row("link_inside", 0.0, ["corpus/x.json: a symbolic link; refused",
                                 f"{NB}: a symbolic link; refused",
                                 f"{NB}: missing, scored 0"]),
        # a named pipe beside a correct notebook (copying it would hang or fail)
        row("named_pipe", FULL, ["answers.fifo: a named pipe; refused"]),
    ]


AT_TEST_TIME = {r["case"] for r in test_time_rows()}


def at_test_time(subs: Path, case: str) -> None:
    """Write the submission of a case of AT_TEST_TIME into `subs`."""
    folder = subs / case / ASSIGNMENT
    correct = HERE / "submissions" / "correct" / ASSIGNMENT / NOTEBOOK
    masters = HERE / "source" / ASSIGNMENT
    if case == "huge_notebook":
        big_notebook(folder)
    elif case == "too_many_files":
        folder.mkdir(parents=True)
        shutil.copy(correct, folder / NOTEBOOK)
        for i in range(MANY):
            (folder / f"note{i:05}.txt").write_text("x")
    elif case == "link_student":
        (subs / case).symlink_to(correct.parents[1], target_is_directory=True)
    elif case == "link_assignment":
        (subs / case).mkdir()
        folder.symlink_to(masters, target_is_directory=True)
    elif case == "link_inside":
        (folder / "corpus").mkdir(parents=True)
        (folder / NOTEBOOK).symlink_to(masters / NOTEBOOK)
        # (not /etc/passwd: the hub test adds and removes accounts meanwhile)
        (folder / "corpus" / "x.json").symlink_to("/etc/os-release")
    elif case == "named_pipe":
        folder.mkdir(parents=True)
        shutil.copy(correct, folder / NOTEBOOK)
        os.mkfifo(folder / "answers.fifo")
    else:
        raise ValueError(f"{case} is not written at test time")


def big_notebook(folder: Path) -> None:
    """The correct submission padded to BIG_MB with a markdown cell (written
    at test time: 200 MB does not belong in git)."""
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(HERE / "submissions" / "correct" / ASSIGNMENT / NOTEBOOK,
                       as_version=4)
    pad = BIG_MB * 2 ** 20 - len(nbformat.writes(nb)) - 2 ** 16
    nb.cells.append(new_markdown_cell("x" * pad))
    nbformat.write(nb, folder / NOTEBOOK)


if __name__ == "__main__":
    rows = build()
    print(f"wrote {len(rows) - len(AT_TEST_TIME)} submissions and expected.csv to "
          f"{HERE} ({', '.join(sorted(AT_TEST_TIME))} are written at test time)")
