"""No idle waits, no false time-outs, and an interrupt that ends every
sandbox (issue 53, item 4), run for real with grade.py.

A project submission whose corpus holds one string just over the wire's cap
(judge_kernel.MAX_BYTES) used to cost five cells their full time limit each,
the kernel idle: the judge sent the corpus, the kernel's request loop died
on it unread, and the judge waited for an answer that could not come. Now a
judged cell either gets its answer or fails at once, saying the value was too
large to send. A call that sleeps still runs past the time limit, and
SIGINT or SIGTERM to grade.py ends every process of its sandboxes.
"""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from autograder.run import judge_kernel as wire
from tests.test_grading import GRADE, SAMPLE, auto_cells, expected_auto, single_master
from tests.test_hostile import HOSTILE, mh, tree_digest

TOO_LARGE = ("needed a value too large to send between the kernel and the judge "
             "(more than 32 MB of JSON); scored 0")
PAST = "ran past the time limit"
# the uids of these tests' sandboxes (grade.py --sandbox-uid): their own, so
# a look for processes left behind never sees another test's
UID = 64600


def grade(subs: Path, out: Path, *extra: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(GRADE), "--submissions", str(subs),
                             "--out", str(out), "--no-report", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)


def problems_of(out: Path, student: str) -> list[str]:
    problems = pd.read_csv(out / "problems.csv", keep_default_na=False)
    return sorted(problems.loc[problems.student == student, "problem"])


def scores_of(out: Path) -> dict[str, float]:
    scores = pd.read_csv(out / "scores.csv")
    return {s: float(v) for s, v in scores.groupby("student")["score"].sum().items()}


@pytest.fixture(scope="module")
def huge_string(tmp_path_factory):
    """ada_complete's project, as the honest control, and the same with one
    more document whose text is blank but for a few words and just over the
    wire's cap long: every piece the student computes from it is small, and
    the corpus itself is not (the judge sends it to chunker_table)."""
    tmp = tmp_path_factory.mktemp("huge")
    subs = tmp / "subs"
    for name in ("honest", "huge_string"):
        shutil.copytree(SAMPLE / "ada_complete" / "project", subs / name / "project")
    docs = subs / "huge_string" / "project" / "corpus" / "documents.json"
    rows = json.loads(docs.read_text(encoding="utf-8"))
    rows.append({"doc_id": "archive", "title": "Archive",
                 "text": "Old notes." + " " * wire.MAX_BYTES + "The end."})
    docs.write_text(json.dumps(rows), encoding="utf-8")
    proc = grade(subs, tmp / "out", "--assignment", "project", "--jobs", "2",
                 "--sandbox-uid", str(UID))
    stdout, stderr = proc.communicate(timeout=1800)
    assert proc.returncode == 0, stdout + stderr
    return tmp / "out"


def test_a_value_too_large_to_send_fails_its_cells_at_once(huge_string):
    """The honest control keeps every point; the huge string's submission
    loses exactly the cells that could not send it, each named with that
    cause and none with the time limit, and its grading takes far less
    than those cells' time limits would."""
    out = huge_string
    full = expected_auto("project")["ada_complete"]
    scores = scores_of(out)
    assert scores["honest"] == full
    assert problems_of(out, "honest") == []
    lines = problems_of(out, "huge_string")
    assert lines and not [line for line in lines if PAST in line], lines
    assert all(line.endswith(TOO_LARGE) for line in lines), lines
    failed = {line.split("'")[1] for line in lines}
    points = {gid: p for gid, p, _, _ in auto_cells(single_master("project"))}
    assert failed <= set(points)
    assert scores["huge_string"] == full - sum(points[gid] for gid in failed)
    # each such cell waited out its limit (120 s) before: the student's
    # whole grading now takes less than half of what those waits alone took
    seconds = json.loads((out / ".students" / "huge_string" / "outcome.json")
                         .read_text())["seconds"]
    assert seconds < 0.5 * 120 * len(failed), seconds


def sleeper(subs: Path, name: str = "sleeps_when_called") -> None:
    """The hostile class's correct submission, whose Part A sleeps (the
    kernel idle, the student's code busy) once a test calls it."""
    folder = subs / name / mh.ASSIGNMENT
    folder.mkdir(parents=True)
    nb = nbformat.read(HOSTILE / "submissions" / "correct" / mh.ASSIGNMENT / mh.NOTEBOOK,
                       as_version=4)
    mh.cell(nb, "tiny_a").source = ("import time\n\ndef word_count(text):\n"
                                    "    time.sleep(600)\n    return 0")
    nbformat.write(nb, folder / mh.NOTEBOOK)


TINY = ["--source", str(HOSTILE / "source"), "--assignment", mh.ASSIGNMENT]


def test_a_call_that_sleeps_still_runs_past_the_time_limit(tmp_path):
    """No false negative: a judged call that sleeps past --timeout fails as
    past the time limit, and the rest of the notebook keeps its points."""
    sleeper(tmp_path / "subs")
    proc = grade(tmp_path / "subs", tmp_path / "out", *TINY, "--timeout", "3",
                 "--jobs", "1", "--sandbox-uid", str(UID + 10))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout + stderr
    assert problems_of(tmp_path / "out", "sleeps_when_called") == [
        f"{mh.NOTEBOOK}: cell '{gid}' {PAST}" for gid in ("tiny_hidden_a", "tiny_test_a")]
    assert scores_of(tmp_path / "out")["sleeps_when_called"] == mh.FULL - mh.POINTS["a"]


def ours(uids: set[int], marks: tuple[str, ...]) -> dict[int, str]:
    """Every living process that runs as one of `uids`, or whose command
    line names one of `marks` (a folder only this test's grading used):
    pid -> what it is."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_bytes()
            if stat.rpartition(b")")[2].split()[0] == b"Z":
                continue
            owner = Path("/proc", entry).stat().st_uid
            line = Path("/proc", entry, "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except (OSError, IndexError):
            continue
        if owner in uids or any(mark in line for mark in marks):
            found[int(entry)] = f"uid {owner}: {line[:200]}"
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_ends_every_sandbox(tmp_path, signum):
    """SIGINT or SIGTERM while a kernel sleeps in a judged call: grade.py
    exits non-zero saying so, no process of its sandboxes (grader, zygote,
    kernels, bwrap) is left, the submissions are untouched, the student
    finished before is kept and the interrupted one is not."""
    subs = tmp_path / "subs"
    sleeper(subs)
    shutil.copytree(HOSTILE / "submissions" / "correct", subs / "correct")
    before = tree_digest(subs)
    # grade.py's temporary folders, named in its sandboxes' argv (a short
    # path: the kernels' Unix sockets lie in there)
    scratch = Path(tempfile.mkdtemp(prefix="rag-int-"))
    # as root, student i's kernel runs as uid + i and the rest of their
    # grading as uid + i + 100,000 (the students in the order of their names)
    uid = UID + 20 + signum
    out = tmp_path / "out"
    proc = grade(subs, out, *TINY, "--timeout", "120", "--jobs", "2",
                 "--sandbox-uid", str(uid), env={**os.environ, "TMPDIR": str(scratch)},
                 start_new_session=True)
    uids = {uid, uid + 1, uid + 100_000, uid + 100_001} if os.geteuid() == 0 else set()
    try:
        interrupt(proc, signum, out, uids, scratch)
        assert tree_digest(subs) == before
    finally:  # (a grade.py that did not stop, or left something: nothing stays)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        for pid in ours(uids, (str(scratch),)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(scratch, ignore_errors=True)


def interrupt(proc: subprocess.Popen, signum: int, out: Path, uids: set[int],
              scratch: Path) -> None:
    """Send `signum` to grade.py once the correct student is done and the
    sleeper's sandbox runs; then look for what is left of it."""
    done = out / ".students" / "correct" / "key"
    deadline = time.monotonic() + 300
    # the correct student is finished, and the sleeper's sandbox is running
    while time.monotonic() < deadline and proc.poll() is None:
        if done.exists() and ours(uids, (str(scratch),)):
            break
        time.sleep(0.5)
    assert proc.poll() is None, "grade.py finished before it was interrupted"
    time.sleep(3)  # (into the judged call's sleep: its time limit is 120 s)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, stdout + stderr
    assert f"grade.py stopped by {signal.Signals(signum).name}" in stderr
    left = ours(uids, (str(scratch),))
    assert left == {}, left
    assert done.exists()
    assert not (out / ".students" / "sleeps_when_called" / "key").exists()
