"""The grader under attack: the hostile class graded for real, in one batch.

autograder/testbed/hostile/make_hostile.py wrote the submissions and, for each, the
score and the problems.csv lines a correct grader gives (expected.csv). Here
the whole class, plus the cases written now (a 200 MB notebook, 20,000
files, symbolic links out of the submission, a named pipe), is graded at
once with low limits and short timeouts, beside a correct submission that
must keep full marks. Then: the re-run after a real kill mid-batch grades only the
students not yet finished, and ends where a clean run ends.
"""
import base64
import csv
import html
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from tests.test_grading import GRADE, ROOT, tree_digest

HOSTILE = ROOT / "autograder" / "testbed" / "hostile"
sys.path.insert(0, str(HOSTILE))
import make_hostile as mh  # noqa: E402

# low limits keep the bombs small and the batch short
FLAGS = ["--source", str(HOSTILE / "source"), "--assignment", mh.ASSIGNMENT,
         "--timeout", "10", "--jobs", "2", "--memory", "1024", "--processes", "64",
         "--file-size", "50", "--scratch", "100", "--max-output", str(mh.MAX_OUTPUT_KB),
         "--max-notebook", "50", "--student-timeout", "300",
         "--max-notebook-output", str(mh.MAX_NOTEBOOK_OUTPUT_MB),
         "--max-cells", str(mh.MAX_CELLS)]
# where write_outside tries to leave a file
TRACE = "HOSTILE_WAS_HERE.txt"


# `make test` grades these (about a minute); `make hostile` grades every case
SAMPLE = ["correct", "ast_transformer", "lying_str", "leak_hidden",
          "patch_fresh_code", "endless_loop", "memory_bomb", "fork_bomb",
          "output_flood", "segfault", "network_outside", "read_source",
          "read_ssh", "write_outside", "patch_ragkit", "patch_fresh",
          "patch_builtins", "lower_points", "too_many_files", "link_student",
          "link_assignment", "link_inside", "named_pipe", "ignore_interrupt",
          "notebook_output_flood", "too_many_cells", "judge_object_by_name",
          "judge_huge_array", "judge_callback_flood", "judge_flood_swallows_interrupt",
          "judge_code_execution", "exit_when_called", "twin_by_other_name",
          "blank_part_a", "blank_part_d", "foreign_labels"]
EVERY_CASE = os.environ.get("RAGKIT_ALL_HOSTILE") == "1"


def expected(every: bool = False) -> dict[str, tuple[float, list[str]]]:
    """case -> (score, problems.csv lines) of the cases this run grades."""
    with (HOSTILE / "expected.csv").open() as fh:
        rows = {r["case"]: (float(r["score"]),
                            sorted(filter(None, r["problems"].split(" | "))))
                for r in csv.DictReader(fh)}
    if os.geteuid() != 0:  # the judge runs in a sandbox of its own only as root
        rows.pop("judge_code_execution")
    if every or EVERY_CASE:
        return rows
    return {case: rows[case] for case in SAMPLE if case in rows}


def grade(subs: Path, out: Path, *extra: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(GRADE), "--submissions", str(subs),
                             "--out", str(out), *FLAGS, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)


class Listener(threading.Thread):
    """A server on the grader's loopback that no kernel may reach."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", mh.PORT))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.hits = 0
        self.running = True

    def run(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
                self.hits += 1
                conn.close()
            except OSError:
                continue

    def stop(self):
        self.running = False
        self.join()
        self.sock.close()


def outside_files() -> set[Path]:
    """Where a kernel that escaped would leave write_outside's file."""
    return {p for folder in (ROOT, ROOT / "ragkit", ROOT / "data", Path("/"))
            for p in [folder / TRACE] if p.exists()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    subs = tmp / "subs"
    subs.mkdir()
    for case in expected():
        if case in mh.AT_TEST_TIME:  # the 200 MB notebook, the links, ...
            mh.at_test_time(subs, case)
        else:
            subprocess.run(["cp", "-r", str(HOSTILE / "submissions" / case),
                            str(subs / case)], check=True)
    before = tree_digest(subs)
    traces = outside_files()
    listener = Listener()
    listener.start()
    started = time.monotonic()
    try:  # the judge's test-only hole open (judge_code_execution)
        proc = grade(subs, tmp / "out", env={**os.environ, "RAGKIT_TEST_JUDGE_RUNS_ANSWERS": "1"})
        stdout, stderr = proc.communicate(timeout=1800)
    finally:
        listener.stop()
    return {"proc": proc, "stdout": stdout, "stderr": stderr, "out": tmp / "out",
            "subs": subs, "before": before, "tmp": tmp, "traces": traces,
            "hits": listener.hits, "seconds": time.monotonic() - started}


def test_hostile_class_is_current(tmp_path):
    """autograder/testbed/hostile/ is what make_hostile.py writes today."""
    mh.build(tmp_path)
    for part in ("source", "submissions"):
        assert tree_digest(tmp_path / part) == tree_digest(HOSTILE / part), \
            "run python autograder/testbed/hostile/make_hostile.py"
    assert (tmp_path / "expected.csv").read_text() == (HOSTILE / "expected.csv").read_text()


def test_the_readmes_count_the_class_as_it_is():
    """The numbers the two READMEs give for the hostile class are counted
    here: its submissions and the sample make test grades."""
    with (HOSTILE / "expected.csv").open() as fh:
        cases = len(list(csv.DictReader(fh)))
    top = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    grader = " ".join((ROOT / "autograder" / "README.md").read_text(encoding="utf-8").split())
    assert f"`autograder/testbed/hostile/` holds {cases} submissions" in top
    assert f"`make test` a sample of {len(SAMPLE)}." in top
    assert f"a five-part assignment and {cases} submissions" in grader


def test_the_batch_finishes_and_grades_everyone(batch):
    """No bomb stops the class: every student is graded, the run exits 0."""
    cases = expected()
    assert batch["proc"].returncode == 0, \
        batch["stdout"] + batch["stderr"] + failed_logs(batch["out"])
    assert f"graded {len(cases)} of {len(cases)} students" in batch["stdout"]


def failed_logs(out: Path) -> str:
    """The end of each log whose grading failed, so that a failure on a
    machine we cannot log into says why."""
    marks = ("There was an error processing", "stopped after", "the judge failed",
             "Traceback")
    return "".join(
        f"\n--- {log.name} (its last 80 lines) ---\n" + "\n".join(text.splitlines()[-80:])
        for log in sorted((out / "logs").glob("*.log"))
        for text in [log.read_text(errors="replace")] if any(m in text for m in marks))


def test_every_case_gets_exactly_its_score(batch):
    """Each attack costs what it should, and nothing else changes."""
    scores = pd.read_csv(batch["out"] / "scores.csv").groupby("student")["score"].sum()
    got = {case: float(scores.get(case, -1)) for case in expected()}
    want = {case: score for case, (score, _) in expected().items()}
    assert got == want, failed_logs(batch["out"])
    assert got["correct"] == mh.FULL


def test_every_case_gets_exactly_its_problems(batch):
    """problems.csv says what each submission did, in the words expected."""
    problems = pd.read_csv(batch["out"] / "problems.csv", keep_default_na=False)
    got = {case: sorted(problems.loc[problems.student == case, "problem"])
           for case in expected()}
    assert got == {case: lines for case, (_, lines) in expected().items()}


def test_submissions_are_unchanged_byte_for_byte(batch):
    assert tree_digest(batch["subs"]) == batch["before"]


def test_nothing_is_written_outside_out(batch):
    """No file outside --out, no connection to the grader's machine."""
    assert outside_files() == batch["traces"]
    assert sorted(p.name for p in batch["tmp"].iterdir()) == ["out", "subs"]
    assert batch["hits"] == 0


def hidden_lines() -> set[str]:
    """Every line of the master's hidden tests worth hiding (not `)` or `else:`)."""
    master = nbformat.read(HOSTILE / "source" / mh.ASSIGNMENT / mh.NOTEBOOK, as_version=4)
    lines, inside = set(), False
    for cell in master.cells:
        for line in cell.source.splitlines():
            if "HIDDEN TESTS" in line:
                inside = "BEGIN" in line
            elif inside and len(line.strip()) >= 12:
                lines.add(line.strip())
    return lines


def readable_forms(page: str) -> list[str]:
    """The page's text, plus every run of it that decodes from base64."""
    text = html.unescape(page)
    forms = [text]
    for run in re.findall(r"[A-Za-z0-9+/]{16,}={0,2}", text):
        try:
            forms.append(base64.b64decode(run + "=" * (-len(run) % 4)).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
    return forms


def test_feedback_never_shows_hidden_tests(batch):
    """No hidden test's code in any page, not even base64-encoded by a
    student's hook (leak_hidden tries; the check does not trust a marker)."""
    pages = list((batch["out"] / "feedback").rglob("*.html"))
    assert pages
    secret = hidden_lines()
    assert len(secret) >= 3
    for page in pages:
        for form in readable_forms(page.read_text(encoding="utf-8")):
            shown = [line for line in secret if line in form]
            assert not shown, f"{page.name} shows hidden code: {shown[:2]}"


def test_report_links_only_its_own_files(batch):
    """report.html shows figures and tables of the class, no feedback page
    and no test code."""
    page = (batch["out"] / "report.html").read_text(encoding="utf-8")
    for name in ("totals.png", "tests.png", "totals.csv", "tests.csv", "problems.csv"):
        assert (batch["out"] / "report" / name).exists()
        assert f"report/{name}" in page
    assert "feedback/" not in page and "assert " not in page
    tests = pd.read_csv(batch["out"] / "report" / "tests.csv").set_index("cell")
    assert tests.loc[f"{mh.NOTEBOOK}:tiny_test_c", "students"] == len(expected())


def test_a_killed_run_resumes_without_regrading(tmp_path):
    """Kill the grader mid-batch (SIGKILL to its whole process group); the same
    command again grades only the rest, and the results equal a clean run's."""
    subs = tmp_path / "subs"
    subs.mkdir()
    cases = ["correct", "sys_exit", "os_exit"]
    for case in cases:
        subprocess.run(["cp", "-r", str(HOSTILE / "submissions" / case), str(subs / case)],
                       check=True)
    out = tmp_path / "out"
    proc = grade(subs, out, "--jobs", "1", start_new_session=True)
    done = out / ".students"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if done.exists() and any((d / "key").exists() for d in done.iterdir()):
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the grader finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    finished = {d.name: (d / "outcome.json").stat().st_mtime_ns
                for d in done.iterdir() if (d / "key").exists()}
    assert 1 <= len(finished) < len(cases)
    again = grade(subs, out, "--jobs", "2")
    stdout, stderr = again.communicate(timeout=1200)
    assert again.returncode == 0, stdout + stderr
    assert f"({len(finished)} kept from an earlier run)" in stdout
    for name, mtime in finished.items():  # not graded a second time
        assert (done / name / "outcome.json").stat().st_mtime_ns == mtime
    scores = pd.read_csv(out / "scores.csv").groupby("student")["score"].sum()
    assert {c: float(scores[c]) for c in cases} == {c: expected(every=True)[c][0] for c in cases}
    problems = pd.read_csv(out / "problems.csv", keep_default_na=False)
    for case in cases:
        assert sorted(problems.loc[problems.student == case, "problem"]) == expected(every=True)[case][1]
