"""Shared fixtures: one fresh build of the generated folders per test
session, and one grading of the whole sample class (lab, quiz, project)."""
import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The files that take minutes, in the order pytest-xdist hands them out
# (pytest.ini: --dist loadfile, --no-loadscope-reorder). Longest first, so
# that the last minutes of a run are short files on both workers rather
# than one long file on one of them; the two that grade a whole class first
# of all, one per worker. test_class_report.py reads graded_course, which
# test_grading.py's worker grades from the start: placed after two more
# long files, it finds the class graded instead of holding its worker idle
# on the lock (146 s of waiting in the last fresh-clone run).
LONG_FILES = ["test_grading.py", "test_hostile.py", "test_grading_edges.py", "test_hub.py",
              "test_class_report.py", "test_mutants.py", "test_site.py", "test_build.py",
              "test_kernel_start.py", "test_formgrader_browser.py", "test_course_report.py"]


def pytest_collection_modifyitems(items):
    """The long files first, in LONG_FILES's order; every other file after
    them, most tests first (what xdist's own reordering did for all of
    them). Tests keep their order inside a file."""
    count: dict[Path, int] = {}
    for item in items:
        count[item.path] = count.get(item.path, 0) + 1

    def rank(item) -> tuple[int, int]:
        name = item.path.name if item.path.parent == ROOT / "tests" else ""
        if name in LONG_FILES:
            return LONG_FILES.index(name), 0
        return len(LONG_FILES), -count[item.path]

    items.sort(key=rank)


@pytest.fixture(scope="session")
def fresh_build(tmp_path_factory) -> Path:
    """release/ rebuilt from source/ into a temporary folder, and of the
    reading edition the first lab notebook (the whole edition's outputs are
    compared with a fresh run by nbval, which re-executes every notebook)."""
    out = tmp_path_factory.mktemp("build")
    first = sorted((ROOT / "source" / "lab").glob("*.ipynb"))[0].stem
    for args in (["--only", "release"], ["--only", "notebooks", "--notebook", first]):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build.py"),
                               "--out", str(out), *args], capture_output=True, text=True)
        assert proc.returncode == 0, f"the build failed:\n{proc.stderr[-5000:]}"
    return out


@pytest.fixture(scope="session")
def noted_retriever():
    """The help centre as the answerer and the agent read it: sentence chunks
    of at most 25 words with their title note in front, and both indexes."""
    from ragkit.chunking import chunk_documents
    from ragkit.corpus import load_documents
    from ragkit.retrieval import Retriever

    return Retriever(chunk_documents(load_documents(), "sentence", size=25, contextual=True))


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def graded_course(tmp_path_factory):
    """autograder/commands/course.py grade on the sample class, once per test
    run: (the finished process, its --out folder, the class's digest before).

    pytest-xdist gives each worker its own session, so a plain session
    fixture graded the class once in every worker whose files asked for it
    (290 s each). The first worker to ask grades it, under a lock in the
    folder all workers share; the others wait for it and read what it kept."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # this run's folder, above every worker's
        shared = shared.parent
    sample = ROOT / "autograder" / "testbed" / "sample_class"
    out, kept = shared / "graded_course", shared / "graded_course.json"
    with (shared / "graded_course.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not kept.exists():
            before = tree_digest(sample)
            proc = subprocess.run([sys.executable,
                                   str(ROOT / "autograder" / "commands" / "course.py"),
                                   "grade", "--submissions", str(sample), "--out", str(out)],
                                  capture_output=True, text=True)
            kept.write_text(json.dumps({"args": proc.args, "returncode": proc.returncode,
                                        "stdout": proc.stdout, "stderr": proc.stderr,
                                        "before": before}))
    done = json.loads(kept.read_text())
    proc = subprocess.CompletedProcess(done["args"], done["returncode"], done["stdout"],
                                       done["stderr"])
    return proc, out, done["before"]
