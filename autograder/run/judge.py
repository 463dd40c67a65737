"""The judge: graded test cells run where the student's code never ran.

nbgrader runs a notebook's test cells in the student's kernel and scores a
cell by the outputs that kernel sends back. Everything in that kernel is the
student's to change (IPython's hooks, the display hook, builtins, the
reference copy of ragkit, the values a function returns), so a verdict read
from it can be forged, and the hidden tests' own code, which that kernel
runs, can be printed into the student's feedback.

Here, GuardedExecute hands every graded test cell to a Judge instead. The
judge is a namespace in nbgrader's process (which, as root, runs as an
unprivileged user in a sandbox of its own: grader_sandbox.py) that runs the master's test
code (nbgrader has already put the master's source back into every graded
cell) beside the master's own locked cells that the tests need (the setup
cell's imports and data, fixtures). When a test reads a name the judge does
not have, the name is the student's: the judge asks the kernel for it
(judge_kernel.py). A value crosses as plain data; a function stays in the
kernel and is called across, its arguments and answer crossing as plain
data. So:

* the verdict (did the test code raise?) is decided in a process the
  student's code never ran in, and the cell's outputs are that verdict:
  nothing for a pass, one error line for a failure;
* an answer is a plain `str`, `float`, list, numpy array or DataFrame by the
  time a test compares it; a subclass that lies about `==` arrives as the
  plain value it holds; what crosses is decoded as data and nothing else
  (judge_kernel.Decoder: no import, attribute walk or call by a name the
  kernel sent, every size checked before it is allocated), and a cell's
  time limit holds for all the work done for it, the judge's included;
* the hidden tests' code never enters the kernel (only their inputs do), so
  no hook or `linecache` trick there can print it;
* the reference (`fresh()`) is the judge's own copy;
* a student function that runs ragkit's own twin of the piece its task asks
  for is caught by what runs, not by its text (the kernel's ragkit counts
  its calls: ragkit_watch.py, judge_kernel._call), and the test fails with
  DelegatedToPackage.

`using(globals(), name=reference)`, the "one mistake costs once" swap, binds
the name in both places: in the judge, and in the kernel as a stand-in that
calls the judge's reference back through the kernel's input() channel (or,
for a function of ragkit, as the same function of the kernel's own private
copy). A reference object of RECIPES that a test hands to the student's
function (a Retriever) is built again in the kernel from its arguments.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import importlib
import io
import itertools
import json
import os
import signal
import sys
import threading
import time
import types
import uuid
from pathlib import Path
from queue import Empty


from autograder.run import judge_kernel as wire
from autograder.run.cell_limit import CELL_TIMEOUT
from autograder.run.python_tree import names_loaded, parse, transform
from autograder.run.twins import delegated, forbidden

HERE = Path(__file__).resolve().parent

KERNEL_SOURCE = (HERE / "judge_kernel.py").read_text(encoding="utf-8")
WATCH_SOURCE = (HERE / "ragkit_watch.py").read_text(encoding="utf-8")
BUILTIN_NAMES = set(vars(builtins))
# values that cannot change, so one sent before may be sent as "the same
# again" (Judge.known); a container shorter than KEEP_FROM goes whole
ATOMS = (str, int, float, bool, type(None))
KEEP_FROM = 8
# ragkit.reference.each: the most cases asked in one request
BATCH_MOST = 256
# A hole made on purpose, for the hostile class only: with the environment
# variable below set to 1 (tests/test_hostile.py sets it for one batch), an
# answer that is a string starting with HOLE_MARK is run as code here. It
# shows what code that reached the judge could do where the judge runs
# (grader_sandbox.py): nothing. Never set it when grading a class.
HOLE_VARIABLE = "RAGKIT_TEST_JUDGE_RUNS_ANSWERS"
HOLE_MARK = "#run-in-the-judge\n"
# a kernel that did not start in the sandbox (grade.py --no-sandbox) gets
# ragkit's call counting here, before the student's first cell
LOAD = ("import sys, types\n"
        "if '_ragkit_watch' not in sys.modules:\n"
        "    _m = types.ModuleType('_ragkit_watch')\n"
        "    sys.modules['_ragkit_watch'] = _m\n"
        "    exec(compile({watch!r}, '<ragkit-watch>', 'exec'), _m.__dict__)\n"
        "    _m.install()\n"
        "_m = types.ModuleType('_rag_judge')\n"
        "exec(compile({src!r}, '<rag-judge>', 'exec'), _m.__dict__)\n"
        "sys.modules['_rag_judge'] = _m\n"
        "del _m")
LOOP = "__import__('sys').modules['_rag_judge'].loop({nonce!r})"


def retriever_recipe(retriever):
    """The arguments of the `Retriever(chunks, dim=...)` call that built
    `retriever`, read back from it: ([chunks], {"dim": dim}). None when it is
    not what that call builds from them (another embedder than the toy one,
    an index over other chunks than its `chunks`): it then crosses as a
    handle, as before."""
    chunks, dense = retriever.chunks, retriever.dense
    embedder = dense.embedder
    if type(chunks) is not list or type(getattr(embedder, "dim", None)) is not int or \
            wire._qualified(type(embedder)) != "ragkit.dense:HashedEmbedder":
        return None
    if not all(wire._qualified(type(c)) == "ragkit.chunking:Chunk" for c in chunks):
        return None
    order = [chunk.chunk_id for chunk in chunks]
    if list(retriever.bm25.ids) != order or list(dense.ids) != order or \
            list(retriever.by_id) != order:
        return None
    return [chunks], {"dim": embedder.dim}


# The judge's reference objects that go to the kernel as a recipe instead of
# a handle (judge_kernel.REBUILT): their class's name, and how to read the
# arguments that build them back from one. A retriever handed to a student's
# function as a handle cost a round trip back to the judge for every
# `search`, `by_id[...]` and `chunks` (2,226 in a complete student's
# nb09_hidden_score_step, 3,416 in the project's tests); the kernel builds
# the same Retriever, from the same chunks, with its own private copy of
# ragkit, and the student's function uses it there. Why that is safe:
# * it crosses one way only. The judge's decoder has no `build`, so a
#   recipe in the kernel's answer is refused as not data; a kernel object
#   made from a recipe goes back as the judge's handle (`$jref`), which the
#   judge looks up among the objects it sent. Nothing the student wrote
#   reaches the judge as anything but data;
# * the kernel's copy is the student's to spoil (its code patched, the
#   object changed by their function), and that changes only the answers
#   their own function computes. The test's expected values are computed
#   here, with the judge's own objects and its own fresh() copy, so a spoilt
#   copy can make the answers differ from them, never match them without
#   the work;
# * it gives the student's function nothing new to reach: the methods and
#   the modules of a private copy of ragkit were in the kernel already
#   (`ragkit.reference.fresh()`), and every copy counts its calls
#   (ragkit_watch.py), so a function that reaches its own twin through the
#   retriever's modules fails with DelegatedToPackage as before. The
#   retriever's own methods count there too: none of the names they run
#   may be a name that a task handed a retriever must not run
#   (tests/test_judge.py checks the masters' tasks);
# * only a class whose state is a function of its constructor's arguments
#   alone belongs here, and its reader returns None for an object that is
#   not what those arguments build, so the kernel's copy answers exactly as
#   the judge's object would (the same code on the same chunks: the same
#   ranks and the same ties).
RECIPES = {"ragkit.retrieval:Retriever": retriever_recipe}


class JudgeError(Exception):
    """The kernel gave no usable answer (it died, hung or was tampered with)."""


class OutOfTime(JudgeError):
    """The cell's time limit passed (the kernel's time and the judge's own)."""


class KernelDied(JudgeError):
    """The kernel exited, crashed or was killed during the cell's calls."""


class NotData(Exception):
    """The kernel's answer is not data this grader decodes."""


class TooLarge(Exception):
    """A request or an answer over the wire's cap (judge_kernel.MAX_BYTES):
    it is never sent, and the cell fails at once instead of waiting for an
    answer that cannot come."""


class LoopEnded(JudgeError):
    """The kernel's request loop ended while the judge waited for its answer."""


class DelegatedToPackage(Exception):
    """The student's function ran the package's twin of the piece it builds."""


class CountingTurnedOff(Exception):
    """The student's code switched off the counting of ragkit's calls."""


def names_bound(source: str) -> set[str]:
    try:
        tree = parse(transform(source))
    except SyntaxError:
        return set()
    bound = set()
    for node in tree.body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                bound.add(sub.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound


def needed_cells(cells: list[tuple[str, str]]) -> set[int]:
    """Indices of the instructor cells ('setup') the test cells ('test')
    need, directly or through each other: a cell is needed when it binds a
    name that a later needed cell or test reads."""
    wanted: set[str] = set()
    chosen: set[int] = set()
    for index in range(len(cells) - 1, -1, -1):
        kind, source = cells[index]
        if kind == "test":
            wanted |= names_loaded(source)
        elif kind == "setup" and names_bound(source) & wanted:
            chosen.add(index)
            wanted |= names_loaded(source)
    return chosen


class _Shell:
    """What `get_ipython()` gives the judge's copies of the locked cells."""

    def run_line_magic(self, *args, **kwargs):
        return None

    run_cell_magic = system = run_line_magic


class _Deferred:
    """matplotlib as the judge's copies of the locked cells import it: the
    real module is imported only when one of them uses it. The judge draws
    nothing, and pyplot's import was about 1 s of every student's grading."""

    __slots__ = ("_path",)

    def __init__(self, path: str):
        object.__setattr__(self, "_path", path)

    def _real(self):
        # pyplot first, as the cell's own import would have loaded it (and
        # with it matplotlib.figure and the other submodules it imports)
        importlib.import_module("matplotlib.pyplot")
        return importlib.import_module(self._path)

    def __getattr__(self, name):
        if self._path == "matplotlib" and name == "pyplot" \
                and "matplotlib.pyplot" not in sys.modules:
            return _Deferred("matplotlib.pyplot")
        return getattr(self._real(), name)

    def __setattr__(self, name, value):
        setattr(self._real(), name, value)

    def __repr__(self):
        return f"<{self._path}, imported when used>"


def _import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """__import__ for the judge's namespace: `import matplotlib.pyplot as
    plt` (or `import matplotlib`) binds a _Deferred until it is used."""
    if level == 0 and name in ("matplotlib", "matplotlib.pyplot") \
            and name not in sys.modules:
        return _Deferred(name if fromlist else "matplotlib")
    return builtins.__import__(name, globals, locals, fromlist, level)


class StudentName:
    """A function or object of the student's, left in the kernel."""

    __slots__ = ("_judge", "_ref", "_name")

    def __init__(self, judge: Judge, ref: int, name: str):
        object.__setattr__(self, "_judge", judge)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_name", name)

    def __call__(self, *args, **kwargs):
        return self._judge.call(self, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._judge.ask({"op": "getattr", "ref": self._ref, "name": name},
                               name=f"{self._name}.{name}")

    def __repr__(self):
        return f"<{self._name} (in the student's kernel)>"

    def _each(self, *iterables):
        """ragkit.reference.each(self, *iterables): batched (Judge.each)."""
        return self._judge.each(self, iterables)


class Namespace(dict):
    """The judge's globals: a name it lacks is looked up in the kernel."""

    def __init__(self, judge: Judge):
        super().__init__()
        self.judge = judge
        self.fetched: dict[str, object] = {}

    def __missing__(self, name):
        if name in BUILTIN_NAMES:
            raise KeyError(name)
        if name not in self.fetched:
            self.fetched[name] = self.judge.lookup(name)
        return self.fetched[name]


def verdict(err: Exception) -> tuple[str, str]:
    """A failed test's error line (name, message) for what it raised."""
    if isinstance(err, (NotData, TooLarge, LoopEnded)):
        return type(err).__name__, str(err)
    if isinstance(err, OutOfTime):
        return "CellTimeoutError", "the student's code ran past the time limit"
    if isinstance(err, KernelDied):
        return "KernelDied", ("the kernel died while running this cell's calls "
                              "(exit, crash, or a resource limit)")
    if isinstance(err, JudgeError):
        return "JudgeError", str(err)
    return type(err).__name__, " ".join(str(err).split())[:2000]


class Judge:
    """Runs one notebook's test cells outside the kernel `km` runs it in."""

    def __init__(self, km, cells: list[tuple[str, str]], folder: str,
                 timeout: float = CELL_TIMEOUT):
        self.km = km
        self.folder = folder
        self.timeout = timeout
        self.needed = needed_cells(cells)
        self.kc = None
        self.mine: dict[int, object] = {}
        # what the kernel keeps of this loop's values (id -> (value, how its
        # items looked)); each is sent whole once, then as `$again`
        self.kept: dict[int, tuple] = {}
        # the reference objects sent as a recipe in this loop (id -> (object,
        # how its arguments looked)); each is sent whole once, then by its id
        self.built: dict[int, tuple] = {}
        self._inner = None  # the container being sent whole just now
        self.serving = 0  # callbacks of the kernel being answered, nested
        self.looping = None  # the kernel's request loop, while a test runs
        self.stopped_loop = False  # _abandon_loop saw that loop end (this cell)
        self.abandoned: list[str] = []  # what _abandon_loop did (this cell), for the log
        # execute requests the kernel has finished: an input() one of them
        # asked and nobody answered is stale, and an answer to it would be
        # read by whichever input() the kernel is in now (ipykernel does not
        # match answers to requests), a new loop's first one say
        self.ended: set[str] = set()
        # when the cell's time is up: everything done for it counts, the
        # kernel's work, the traffic and the judge's own (decoding, callbacks)
        self.deadline = time.monotonic() + self.timeout
        self.fault = None  # a failure no test code may catch (Judge.fail)
        self._held = 0  # wire work under way, which the alarm waits for
        self._rang = False  # the alarm rang while it waited
        self.ns = Namespace(self)
        self.reference = None  # the notebook's private copy of ragkit (Judge.fresh)
        # the grading helpers are the judge's own, never looked up in the kernel
        self.ns.update(__builtins__={**vars(builtins), "__import__": _import},
                       __name__="__main__",
                       get_ipython=lambda: _Shell(), fresh=self.fresh, using=self.using)
        self.calls = 0  # requests to the kernel
        self.callbacks = 0  # requests of the kernel's, to use one of the judge's objects
        self.hole = os.environ.get(HOLE_VARIABLE) == "1"

    def fresh(self):
        """ragkit.reference.fresh() once per notebook: the student's code never
        runs here, so nothing but the master's own cells can touch the copy,
        and a setup cell's `REF = fresh()` shares it with every test anyway.
        Loading the package anew is 0.06 s, and a test that calls fresh()
        inside a stand-in (05's token vectors) did it on every call."""
        if self.reference is None:
            from ragkit.reference import fresh
            self.reference = fresh()
        return self.reference

    # --- the wire -------------------------------------------------------

    def connect(self) -> None:
        from jupyter_client.blocking.client import BlockingKernelClient
        info = dict(self.km.get_connection_info(session=True))
        for key in ("curve_publickey", "curve_secretkey"):
            if isinstance(info.get(key), str):
                info[key] = info[key].encode("ascii")
        kc = BlockingKernelClient(**info)
        kc.session.session = str(uuid.uuid4())  # a peer of its own on the kernel's sockets
        kc.start_channels(shell=True, iopub=False, stdin=True, hb=False, control=False)
        self.kc = kc
        self._wait_reply(kc.execute(LOAD.format(src=KERNEL_SOURCE, watch=WATCH_SOURCE), silent=True,
                                    store_history=False))

    def start_loop(self) -> None:
        """Put the kernel in its request loop (judge_kernel.loop), and wait
        for its first input(); what an earlier, interrupted loop still asks
        is answered with the end."""
        nonce = uuid.uuid4().hex
        self.forget_sent()  # (the new loop forgets what the kernel kept)
        with self._wire():
            self.looping = self.kc.execute(LOOP.format(nonce=nonce), silent=True,
                                           store_history=False, allow_stdin=True)
        ready = json.dumps({"ready": nonce})
        while self._await_result() != ready:
            self._send(json.dumps({"end": True}))

    def end_loop(self) -> None:
        """Let the loop return, and wait for its cell to finish."""
        msg_id, self.looping = self.looping, None
        if msg_id is None:
            return
        self._send(json.dumps({"end": True}))
        self._wait_reply(msg_id)

    def _wait_reply(self, msg_id: str) -> None:
        """Wait (within the cell's time) until the kernel has finished the
        execute request `msg_id`."""
        while True:
            try:
                msg = self._get(self.kc.shell_channel, self._left())
            except Empty:
                if not self._kernel("is_alive"):
                    raise self._died() from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                self.ended.add(msg_id)
                return

    def _left(self) -> float:
        """Seconds until the cell's deadline, at most 1 (so a dead kernel is
        noticed); past it the test fails."""
        left = self.deadline - time.monotonic()
        if left <= 0:  # (the caller interrupts the kernel: _abandon_loop)
            raise self.fail(OutOfTime("ran past the time limit"))
        return min(left, 1.0)

    @staticmethod
    def _run_answer(code: str):
        """The test-only hole (see HOLE_MARK): the answer's text runs here,
        in the judge's process, and its `answer` is the answer."""
        names: dict = {}
        exec(compile(code, "<answer run by the judge>", "exec"), names)  # noqa: S102
        return names.get("answer")

    def _abandon_loop(self, grace: float = 5.0) -> None:
        """After a failure mid-call (time up, an answer that is not data):
        interrupt the kernel and end its request loop, answering whatever it
        still asks with the end, for at most `grace` seconds. A kernel that
        keeps asking, or ignores the interrupt, is left to GuardedExecute,
        which stops it when it does not answer; `stopped_loop` says whether
        the loop's cell came to its end here (then the kernel is idle)."""
        # held before the loop is let go: an alarm ringing between the two
        # (the deadline's timer fires at about the time _left fails the
        # cell) left the loop forgotten and never interrupted, and a call
        # that keeps running then ate the next cell's time
        self._held += 1
        msg_id, started, interrupts, answered = None, time.monotonic(), 0, 0
        try:
            msg_id, self.looping = self.looping, None
            if msg_id is None or self.kc is None:
                return
            until = started + grace
            again = 0.0  # when to interrupt (again): a kernel still asking
            # a second after an interrupt has not had it, so it is repeated
            while time.monotonic() < until:
                if time.monotonic() >= again:
                    with contextlib.suppress(Exception):
                        self._kernel("interrupt_kernel")
                    interrupts += 1
                    again = float("inf")
                try:
                    msg = self.kc.stdin_channel.get_msg(timeout=0.05)
                    asks = msg["header"]["msg_type"] == "input_request" and \
                        msg["parent_header"].get("msg_id") not in self.ended
                except Empty:
                    asks = False
                except ValueError:
                    # frames that do not make a message ("Invalid
                    # Signature"): an interrupt that landed between the
                    # frames of a request the kernel was sending. That
                    # request waits for its answer all the same; before,
                    # this error left the loop running and the kernel was
                    # stopped as one that ignores interrupts (1 grading in
                    # 12 of judge_flood_swallows_interrupt under load)
                    asks = True
                if asks:
                    self.kc.input(json.dumps({"end": True}))
                    answered += 1
                    again = min(again, time.monotonic() + 1.0)
                with contextlib.suppress(Empty, ValueError):  # (ValueError: as above)
                    reply = self.kc.shell_channel.get_msg(timeout=0.05)
                    if reply["parent_header"].get("msg_id") == msg_id:
                        self.ended.add(msg_id)
                        self.stopped_loop = True
                        return
        except Exception as err:
            self.abandoned.append(f"{type(err).__name__}: {err}")
            raise
        finally:
            self._held -= 1
            if msg_id is not None:
                self.abandoned.append(
                    f"{interrupts} interrupt(s), {answered} request(s) answered, loop "
                    f"{'ended' if self.stopped_loop else 'not ended'} in "
                    f"{time.monotonic() - started:.2f} s")

    def _died(self) -> JudgeError:
        """The kernel is gone: the cell's verdict, whatever the test catches,
        and no request loop is left to end (waiting for one would only run
        the cell to its time limit)."""
        self.looping = None
        return self.fail(KernelDied("the kernel died"))

    def fail(self, err: Exception) -> Exception:
        """Note `err` as the cell's verdict (a test that catches every
        exception cannot pass over it), and return it to raise."""
        if self.fault is None:
            self.fault = err
        return err

    @contextlib.contextmanager
    def _alarm(self):
        """A hard stop at the deadline, whatever the judge is doing then
        (where it can be set: in the main thread)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def ring(*_):
            if self._held:  # (raised when that work is done: see _wire)
                self._rang = True
                return
            raise self.fail(OutOfTime("ran past the time limit"))

        self._rang = False
        old = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, max(self.deadline - time.monotonic(), 0.001))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    @contextlib.contextmanager
    def _wire(self):
        """Work on the kernel's sockets that the alarm must not cut in half
        (a message half sent, an event loop left mid-step): a ring during it
        waits, and the cell fails as soon as that work is done."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
        if not self._held and self._rang:
            self._rang = False
            raise self.fail(OutOfTime("ran past the time limit"))

    def _send(self, text: str) -> None:
        """`text` as the kernel's pending input()."""
        with self._wire():
            self.kc.input(text)

    def _get(self, channel, timeout: float) -> dict:
        """The next message on `channel` (Empty after `timeout` seconds, at
        most 1: see _left)."""
        with self._wire():
            return channel.get_msg(timeout=timeout)

    def _kernel(self, method: str):
        """km.<method>(), whether nbclient gave us an async kernel manager or not."""
        from jupyter_core.utils import run_sync
        async_version = getattr(self.km, f"_async_{method}", None)
        with self._wire():
            return run_sync(async_version)() if async_version else getattr(self.km, method)()

    def close(self) -> None:
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None

    def _nested(self, request: dict, name: str = "") -> str:
        """Ask the kernel while it waits in input() (in its request loop, or
        for a callback's answer): the request goes as that input, and the
        kernel's reply comes back as its next input() (or, first, further
        callbacks of its own). A request over the wire's cap is not sent:
        the kernel could not read it, and would never answer."""
        text = json.dumps({"call": request})
        if wire.too_large(text):
            raise self._too_large(f"what the test passes to {name or 'the kernel'}")
        self._send(text)
        return self._await_result()

    def _next_request(self) -> dict:
        """The kernel's next message on the stdin channel, waited for within
        the cell's time. The shell channel is watched meanwhile: when the
        cell of the request loop ends, the kernel will ask nothing more, and
        the test fails at once (it used to wait, the kernel idle, until the
        cell's time limit). Every second without either, the kernel's life is
        checked."""
        import zmq

        kc = self.kc
        while True:
            left = self._left()
            poller = zmq.Poller()
            poller.register(kc.stdin_channel.socket, zmq.POLLIN)
            poller.register(kc.shell_channel.socket, zmq.POLLIN)
            with self._wire():
                ready = dict(poller.poll(int(left * 1000)))
            if kc.stdin_channel.socket in ready:
                return self._get(kc.stdin_channel, 0)
            if kc.shell_channel.socket in ready:
                reply = self._get(kc.shell_channel, 0)
                if self.looping is not None and \
                        reply["parent_header"].get("msg_id") == self.looping:
                    raise self._loop_ended(reply)
                continue
            if not self._kernel("is_alive"):
                raise self._died()

    def _too_large(self, what: str) -> Exception:
        """The cell's verdict when `what` is over the wire's cap."""
        return self.fail(TooLarge(f"{what} is too large to send (more than "
                                  f"{wire.MAX_BYTES:,} bytes of JSON): a value this large "
                                  "cannot cross between the judge and the kernel"))

    def _loop_ended(self, reply: dict) -> JudgeError:
        """The request loop's cell has finished (its reply is `reply`): the
        kernel is idle, and the cell's verdict says so."""
        self.ended.add(self.looping)
        self.looping = None
        self.stopped_loop = True
        content = reply.get("content") if type(reply.get("content")) is dict else {}
        ename = content.get("ename")
        why = f" ({ename[:100]})" if type(ename) is str and ename.isidentifier() else ""
        return self.fail(LoopEnded(f"the kernel stopped answering the judge: its request "
                                   f"loop ended{why} before the answer came"))

    def _await_result(self) -> str:
        while True:
            msg = self._next_request()
            if msg["header"]["msg_type"] != "input_request" or \
                    msg["parent_header"].get("msg_id") in self.ended:
                continue
            prompt = msg["content"].get("prompt", "")
            if type(prompt) is not str:
                raise self.fail(NotData("the kernel sent a request that is not text"))
            if prompt.startswith(wire.RESULT):
                return prompt[len(wire.RESULT):]
            self._send(self.answer_callback(prompt))

    def _exchange(self, request: dict, name: str, cases: int = 0):
        """Send `request` to the kernel: (its reply, its answer decoded as
        data, the student's error it carries or None). With `cases`, the
        request is a batch of that many calls and the answer a list."""
        self.calls += 1
        if not (self.serving or self.looping):
            self.start_loop()
        text = self._nested(request, name)
        try:
            reply = wire.loads(text)
            if type(reply) is not dict:
                raise ValueError("not a reply")
            if "too_large" in reply:  # (the kernel's word that it did not send it)
                raise wire.TooLarge("too large")
            error = self.rebuild(reply["raise"]) if "raise" in reply else None
            value = None
            if cases:  # a batch: the answers before any stop, each
                # held to the limits of one call's answer
                value = reply.get("values")
                if type(value) is not list or len(value) > cases:
                    raise ValueError("not the answers of the cases sent")
                value = [wire.Decoder(self.resolve)(one) for one in value]
            elif error is None and not {"delegated", "tampered", "missing"} & set(reply):
                value = wire.Decoder(self.resolve)(reply.get("value"))
        except wire.TooLarge:
            raise self._too_large(f"the answer of {name or 'the kernel'}") from None
        except (ValueError, TypeError) as err:
            raise self.fail(NotData(f"the answer of {name or 'the kernel'} is not data "
                                    f"this grader takes ({str(err)[:200]})")) from None
        if error is not None:
            self.forget_sent()  # (the kernel may have failed on what was sent)
        return reply, value, error

    def _refused(self, reply: dict, request: dict, name: str) -> Exception | None:
        """What the test raises when the kernel says the call ran ragkit's
        twin, or ran with the counting switched off."""
        if "delegated" in reply:
            # the names the kernel says ran, as far as the judge asked about them
            ran = [n for n in request.get("forbid", ()) if
                   type(reply["delegated"]) is list and n in reply["delegated"]]
            return DelegatedToPackage(delegated(name, ran))
        if reply.get("tampered"):
            return CountingTurnedOff(f"{name} ran with the counting of ragkit's calls "
                                     "switched off")
        return None

    def _opened(self, value):
        if self.hole and type(value) is str and value.startswith(HOLE_MARK):
            return self._run_answer(value)
        return value

    def ask(self, request: dict, name: str = ""):
        """Send `request` to the kernel; its answer as plain data (or raise)."""
        reply, value, error = self._exchange(request, name)
        if error is None:
            error = self._refused(reply, request, name)
        if error is not None:
            raise error
        if "missing" in reply:
            raise KeyError(name)
        value = self._opened(value)
        if reply.get("callable") is not None and isinstance(value, StudentName):
            object.__setattr__(value, "_name", name)
        return value

    def each(self, fn: StudentName, iterables: tuple):
        """fn(*case) for each case of zip(*iterables), in order: what
        map(fn, *iterables) gives, in a round trip per batch of cases
        instead of one per case (ragkit.reference.each). The batches grow
        from 1 case to BATCH_MOST, so a test that fails on its first case
        has run no more than a loop would; the kernel stops a batch at the
        first case that raises (that error comes after the answers before
        it) and at BATCH_BYTES of answers (the rest is asked again)."""
        cases = zip(*iterables)
        size = 1
        while chunk := list(itertools.islice(cases, size)):
            size = min(2 * size, BATCH_MOST)
            while chunk:
                request = {"op": "calls", "ref": fn._ref, "forbid": forbidden(fn._name),
                           "cases": self.plain([list(case) for case in chunk])}
                reply, values, error = self._exchange(request, fn._name, len(chunk))
                error = error or self._refused(reply, request, fn._name)
                for value in values:
                    yield self._opened(value)
                if error is not None:
                    raise error
                if not values:
                    raise self.fail(NotData(f"the kernel answered none of the cases "
                                            f"sent to {fn._name}"))
                chunk = chunk[len(values):]

    @staticmethod
    def rebuild(exc) -> BaseException:
        """The student's exception, as a class of the judge's own named like
        theirs, whose base is the built-in exception theirs derives from
        (looked up in wire.EXCEPTIONS; anything else is an Exception)."""
        if type(exc) is not dict:
            raise ValueError("an error that is not data")
        name, base, message = (str(exc.get(k, ""))[:2000] for k in ("name", "base", "message"))
        kind = wire.EXCEPTIONS.get(base, Exception)
        if wire.EXCEPTIONS.get(name) is not kind and name.isidentifier():
            kind = type(name[:100], (kind,), {})
        return kind(message)

    def resolve(self, tag, value):
        """A handle in the kernel's answer: one of the student's objects
        (left in the kernel), or one of the judge's own it was sent."""
        if type(value) is not int:
            raise ValueError("a handle that is not a number")
        if tag == "$ref":
            return StudentName(self, value, "the student's object")
        if tag == "$jref" and value in self.mine:
            return self.mine[value]
        raise ValueError(f"not a handle the judge gave: {tag[:10]}")

    def known(self, obj):
        """The student's objects go back as themselves; ragkit's dataclasses
        go as copies that come back as the very objects sent (a test may
        check that unchanged chunks are returned, not rebuilt)."""
        if isinstance(obj, StudentName):
            return {"$ref": obj._ref}
        if isinstance(obj, types.FunctionType) and "<" not in obj.__qualname__:
            # a reference function swapped in by `using`: the kernel binds its
            # own private copy of it instead of calling back here for every
            # use (a wrong copy could only make the student's answers wrong)
            home = wire._qualified(types.SimpleNamespace(
                __module__=obj.__module__, __qualname__=obj.__qualname__))
            if home is not None:
                return {"$rkfn": home}
        kept = self.kept.get(id(obj))
        if kept is not None and kept[0] is obj and kept[1] == self._looks(obj):
            return {"$again": id(obj)}
        name = wire._qualified(type(obj))
        if name is None:
            return self._container(obj)
        if name in RECIPES:
            return self._recipe(obj, name)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            items = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        elif isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
            items = dict(zip(type(obj)._fields, obj))
        else:
            return None
        self.mine[id(obj)] = obj
        sent = {"$obj": name, "jid": id(obj),
                "fields": {k: self.plain(v) for k, v in items.items()}}
        frozen = getattr(getattr(type(obj), "__dataclass_params__", None), "frozen", False)
        if not (frozen and all(self._fixed(v) for v in items.values())):
            return sent
        self.kept[id(obj)] = (obj, None)
        return {"$keep": id(obj), "v": sent}

    def _recipe(self, obj, name: str):
        """One of the judge's reference objects (RECIPES) as the arguments
        that build it again in the kernel: whole the first time in a loop,
        then by its id alone, while the arguments are the same objects (the
        kernel keeps what it built, so the same object here is one object
        there). None, for a handle, when the object is not what its
        constructor builds from them."""
        read = RECIPES[name](obj)
        if read is None:
            return None
        args, kwargs = read
        looks = (tuple(map(id, args)), tuple(map(self._looks, args)), sorted(kwargs.items()))
        self.mine[id(obj)] = obj  # (it comes back from the kernel as `$jref`)
        sent = {"$rkobj": name, "jid": id(obj)}
        seen = self.built.get(id(obj))
        if seen is None or seen[0] is not obj or seen[1] != looks:
            sent.update(args=self.plain(list(args)), kwargs=self.plain(dict(kwargs)))
            self.built[id(obj)] = (obj, looks)
        return sent

    def forget_sent(self) -> None:
        """Send everything whole again: the kernel's loop is new, or may have
        failed on what was sent."""
        self.kept.clear()
        self.built.clear()

    def _fixed(self, value) -> bool:
        """`value` cannot change: an atom, a tuple of such, or a frozen
        ragkit value already kept."""
        if type(value) in ATOMS:
            return True
        if type(value) is tuple:
            return all(self._fixed(v) for v in value)
        kept = self.kept.get(id(value))
        return kept is not None and kept[0] is value and kept[1] is None

    @staticmethod
    def _looks(obj):
        """What a kept container's items are (None for a kept ragkit value,
        which cannot change): sent again only while they are the same."""
        if type(obj) is dict:
            return tuple(map(id, obj)), tuple(map(id, obj.values()))
        if type(obj) in (list, tuple):
            return tuple(map(id, obj))
        return None

    def _container(self, obj):
        """A long list, tuple or dict of values that cannot change goes whole
        once, for the kernel to keep, and as `$again` after; anything else is
        left to to_plain."""
        if type(obj) not in (list, tuple, dict) or len(obj) < KEEP_FROM or obj is self._inner:
            return None
        outer, self._inner = self._inner, obj
        try:
            sent = self.plain(obj)
        finally:
            self._inner = outer
        items = [*obj, *obj.values()] if type(obj) is dict else obj
        if not all(self._fixed(v) for v in items):
            return sent
        self.kept[id(obj)] = (obj, self._looks(obj))
        return {"$keep": id(obj), "v": sent}

    def plain(self, value):
        """One of the judge's values as it is sent to the kernel."""
        try:
            return wire.to_plain(value, self.handle, known=self.known)
        except BaseException:
            # what was noted as kept may never reach the kernel: send it whole
            self.forget_sent()
            raise

    def handle(self, obj):
        """How one of the judge's objects that is not data is sent: a handle
        the kernel's stand-in uses to call back."""
        if isinstance(obj, (types.ModuleType, type)):
            raise wire.NotPlain(f"a {type(obj).__name__} cannot be sent to the kernel")
        self.mine[id(obj)] = obj
        return {"$jref": id(obj)}

    def answer_callback(self, prompt: str) -> str:
        """The kernel's stand-in for a judge object asks the judge to use it:
        the object is picked by the number the judge gave it (self.mine), and
        what is sent with the request is decoded as data."""
        if not prompt.startswith(wire.ASK):
            return json.dumps({"raise": {"name": "EOFError", "base": "EOFError",
                                         "message": "input() is not available while grading"}})
        self.serving += 1
        self.callbacks += 1
        try:
            req = wire.loads(prompt[len(wire.ASK):])
            if type(req) is not dict or type(req.get("ref")) is not int:
                raise ValueError("not a request")
            obj = self.mine[req["ref"]]
            op = req.get("op")
            decode = wire.Decoder(self.resolve)
            if op == "call":
                args, kwargs = decode(req.get("args")), decode(req.get("kwargs"))
                if type(args) is not list or type(kwargs) is not dict or \
                        not all(type(k) is str for k in kwargs):
                    raise ValueError("not a call")
                value = obj(*args, **kwargs)
            elif op == "getattr":
                value = self.member(obj, req.get("name"))
            elif op == "len":
                value = len(obj)
            elif op == "list":
                value = list(obj)
            elif op == "getitem":
                value = obj[decode(req.get("key"))]
            else:
                raise ValueError("no such request")
            text = json.dumps({"value": self.plain(value)})
            if wire.too_large(text):
                # the kernel's call fails, and so does the cell, whatever
                # the student's code does with that error
                raise self._too_large("the judge's answer to a call from the kernel")
            return text
        except OutOfTime:
            raise
        except Exception as err:  # noqa: BLE001 (sent back as the student's error)
            return json.dumps({"raise": wire._exception(err)})
        finally:
            self.serving -= 1

    @staticmethod
    def member(obj, name):
        """A public attribute of one of ragkit's own objects: the kernel's
        `name` picks one from the object's own list of them, and the judge
        reads it by the name on that list."""
        module = getattr(type(obj), "__module__", "") or ""
        if not (module == "ragkit" or module.startswith(("ragkit.", "_ragkit_reference_"))):
            raise AttributeError("only ragkit's objects lend their attributes")
        members = {n: n for n in dir(obj) if not n.startswith("_")}
        if type(name) is not str or name not in members:
            raise AttributeError("no such attribute")
        return getattr(obj, members[name])

    # --- what the test code sees -----------------------------------------

    def lookup(self, name: str):
        return self.ask({"op": "lookup", "name": name}, name=name)

    def call(self, fn: StudentName, args, kwargs):
        forbid = forbidden(fn._name)
        request = {"op": "call", "ref": fn._ref, "forbid": forbid,
                   "args": self.plain(list(args)), "kwargs": self.plain(dict(kwargs))}
        return self.ask(request, name=fn._name)

    @contextlib.contextmanager
    def using(self, namespace, **pieces):
        """ragkit.reference.using, reaching into the kernel as well."""
        from ragkit.reference import using as bind_here
        tokens = []
        with bind_here(namespace, **pieces):
            try:
                for name, value in pieces.items():
                    tokens.append(self.ask({"op": "bind", "name": name,
                                            "value": self.plain(value)}))
                yield
            finally:
                for token in reversed(tokens):
                    self.ask({"op": "unbind", "token": token})

    # --- cells ------------------------------------------------------------

    def _exec(self, source: str, label: str) -> None:
        code = compile(transform(source), label, "exec")
        here = os.getcwd()
        os.chdir(self.folder)
        try:
            exec(code, self.ns)  # noqa: S102 (the master's own cells)
        finally:
            os.chdir(here)
            self.ns.update(using=self.using, fresh=self.fresh, get_ipython=lambda: _Shell())

    def run_setup(self, index: int, source: str) -> None:
        """A locked cell of the master: run here too when a test needs it."""
        if index not in self.needed:
            return
        if self.kc is None:
            self.connect()
        self.deadline = time.monotonic() + self.timeout
        self.fault = None
        self.stopped_loop = False
        self.abandoned = []
        self.serving = 0  # (an alarm that cut a callback's `serving -= 1` left it)
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), self._alarm():
                try:
                    self._exec(source, f"<setup cell {index}>")
                finally:
                    if self.fault is not None:
                        self._abandon_loop()
                    elif self.looping:
                        self.end_loop()
        except Exception:  # noqa: BLE001 (a test that needs it will say so)
            self._abandon_loop()

    def run_test(self, source: str, label: str, hidden: bool) -> list[dict]:
        """Run one test cell; its outputs: none for a pass, one error for a
        failure (and, for a visible test, what it printed)."""
        if self.kc is None:
            self.connect()
        self.ns.fetched.clear()
        self.mine.clear()
        self.deadline = time.monotonic() + self.timeout
        self.fault = None
        self.stopped_loop = False
        self.abandoned = []
        self.serving = 0  # (an alarm that cut a callback's `serving -= 1` left it)
        printed = io.StringIO()
        failure = None
        try:
            with contextlib.redirect_stdout(printed), \
                    contextlib.redirect_stderr(printed), self._alarm():
                try:
                    self._exec(source, label)
                finally:
                    if self.fault is not None:
                        self._abandon_loop()
                    elif self.looping:
                        self.ask({"op": "forget"})
                        self.end_loop()
        except Exception as err:  # noqa: BLE001 (a failing test, whatever it raised)
            if isinstance(err, JudgeError):
                self._abandon_loop()
            failure = verdict(err)
        if self.fault is not None:  # (even where the test caught it)
            failure = verdict(self.fault)
        outputs = []
        text = printed.getvalue()
        if text and not hidden:
            outputs.append({"output_type": "stream", "name": "stdout", "text": text[:20_000]})
        if failure:
            name, message = failure
            outputs.append({"output_type": "error", "ename": name, "evalue": message,
                            "traceback": [f"{name}: {message}"]})
        self.looping = None  # (after a failure, its cell was interrupted)
        return outputs
