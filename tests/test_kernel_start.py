"""How a student's kernels start: forked from one zygote per student, or anew.

grade.py's default (`--kernel-start fork`) imports what the masters import
once per student and forks each notebook's kernel from there
(kernel_sandbox.py). These tests grade for real and check the two promises
that make it safe: a notebook computes exactly what it computes in a kernel
of its own, and a kernel leaves nothing behind for the next notebook.
"""
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_notebook

from tests.test_grading import ROOT, SAMPLE, run_grader

sys.path.insert(0, str(ROOT / "autograder" / "hostile"))
from make_hostile import code, text  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="the zygote lives in a bubblewrap sandbox")

STDERR = re.compile(r'<div class="output_area">\s*<div class="prompt"></div>\s*'
                    r'<div class="output_subarea output_stream output_stderr '
                    r'output_text">.*?</div>\s*</div>', re.S)
PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def what_it_shows(html: str) -> str:
    """A feedback page without its pictures' bytes and its warnings (an
    import warning is printed where the import ran: the zygote's log)."""
    return re.sub(r"\n\s*\n", "\n", PNG.sub("PNG", STDERR.sub("", html)))


def test_forked_kernels_compute_what_new_kernels_compute(tmp_path):
    """Two notebooks that print pandas tables and draw: the same scores,
    outputs and figures either way."""
    subs = tmp_path / "subs"
    shutil.copytree(SAMPLE / "ada_complete", subs / "ada_complete")
    only = ["--notebook", "02_pipeline", "--notebook", "07_measuring", "--no-report"]
    pages = {}
    for how in ("exec", "fork"):
        proc = run_grader(subs, tmp_path / how, "--kernel-start", how, *only)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        folder = tmp_path / how / "feedback" / "ada_complete" / "lab"
        pages[how] = {p.name: what_it_shows(p.read_text(encoding="utf-8"))
                      for p in sorted(folder.glob("*.html"))}
        assert len(pages[how]) == 2
        assert all("PNG" in page for page in pages[how].values())
    for name, page in pages["exec"].items():
        assert pages["fork"][name] == page, name
    assert (tmp_path / "exec" / "scores.csv").read_text() == \
        (tmp_path / "fork" / "scores.csv").read_text()


LEAVE = '''import os, pathlib, subprocess
subprocess.Popen(["sleep", "600"], start_new_session=True)
pathlib.Path("left.txt").write_text("x")
pathlib.Path("/tmp/left.txt").write_text("x")
os.environ["LEFT"] = "x"
import builtins
builtins.LEFT = "x"'''
FIND = '''import os, pathlib
others = [p.name for p in pathlib.Path("/proc").iterdir() if p.name.isdigit()
          and b"sleep" in (p / "cmdline").read_bytes()]
assert others == [], f"processes left: {others}"
assert not pathlib.Path("left.txt").exists(), "a file left in the folder"
assert not pathlib.Path("/tmp/left.txt").exists(), "a file left in /tmp"
assert "LEFT" not in os.environ, "an environment variable left"
assert "LEFT" not in dir(__builtins__), "a builtin left"'''


def two_notebooks(source: Path) -> None:
    """Notebook one leaves a process, files, a variable and a builtin behind;
    notebook two gets a point for finding none of them."""
    folder = source / "leftovers"
    folder.mkdir(parents=True)
    kernelspec = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}, "language_info": {"name": "python"}}
    for name, cells in {
        "one": [text("# One", "one"), code("import numpy", "one_setup", "locked"),
                code("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "one_a", "solution"),
                code("assert x == 1", "one_test", "test", 1)],
        "two": [text("# Two", "two"), code("import numpy", "two_setup", "locked"),
                code("### BEGIN SOLUTION\ny = 1\n### END SOLUTION", "two_a", "solution"),
                code(FIND, "two_test", "test", 1)],
    }.items():
        nb = new_notebook(metadata=kernelspec)
        nb.cells = cells
        nbformat.write(nb, folder / f"{name}.ipynb")


def test_a_kernel_leaves_nothing_for_the_next_notebook(tmp_path):
    """Processes, files in the folder and in /tmp, environment and builtins
    of one notebook's kernel are gone when the next notebook runs; and a
    kernel that kills the zygote costs only its own notebook."""
    source = tmp_path / "source"
    two_notebooks(source)
    first = {"kim": LEAVE + "\nx = 1",
             # every process in the sandbox but bwrap and this kernel: the zygote too
             "lou": "import os, signal\nos.kill(-1, signal.SIGKILL)\nx = 1"}
    for student, answer in first.items():
        subs = tmp_path / "subs" / student / "leftovers"
        subs.mkdir(parents=True)
        for name in ("one", "two"):
            nb = nbformat.read(source / "leftovers" / f"{name}.ipynb", as_version=4)
            if name == "one":
                nb.cells[2].source = answer
            nbformat.write(nb, subs / f"{name}.ipynb")
    out = tmp_path / "out"
    proc = run_grader(tmp_path / "subs", out, "--source", str(source),
                      "--assignment", "leftovers", "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = {s: json.loads((out / ".students" / s / "outcome.json").read_text())["cells"]
             for s in first}
    assert cells["kim"]["two.ipynb:two_test"] == [1.0, 1.0], \
        (out / "feedback" / "kim" / "leftovers" / "two.html").read_text()[-3000:]
    assert cells["kim"]["one.ipynb:one_test"] == [1.0, 1.0]
    # whether lou's own kernel dies with the zygote depends on timing; the
    # next notebook must score either way
    assert cells["lou"]["two.ipynb:two_test"] == [1.0, 1.0]


THREADS = '''import os
from threadpoolctl import threadpool_info
blas = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
assert os.environ.get("OPENBLAS_NUM_THREADS") == "1", os.environ.get("OPENBLAS_NUM_THREADS")
assert blas.get("openblas") == 1, blas'''


def test_parallel_kernels_get_one_blas_thread_per_core(tmp_path):
    """With one student per core (--jobs = cores), each kernel's BLAS runs
    one thread, so kernels do not fight over the cores; --kernel-threads
    sets another count, which the same check then sees."""
    import os

    source = tmp_path / "source" / "threads"
    source.mkdir(parents=True)
    nb = new_notebook(metadata={"kernelspec": {"display_name": "Python 3",
                                               "language": "python", "name": "python3"}})
    nb.cells = [text("# Threads", "intro"), code("import numpy", "setup", "locked"),
                code("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", "solution"),
                code(THREADS, "check", "test", 1)]
    nbformat.write(nb, source / "threads.ipynb")
    subs = tmp_path / "subs" / "tia" / "threads"
    subs.mkdir(parents=True)
    nbformat.write(nb, subs / "threads.ipynb")
    scores = {}
    for run, extra in {"default": ["--jobs", str(os.cpu_count() or 1)],
                       "two": ["--kernel-threads", "2"]}.items():
        out = tmp_path / run
        proc = run_grader(tmp_path / "subs", out, "--source", str(tmp_path / "source"),
                          "--assignment", "threads", "--no-report", *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outcome = json.loads((out / ".students" / "tia" / "outcome.json").read_text())
        scores[run] = outcome["cells"]["threads.ipynb:check"][0]
    assert scores == {"default": 1.0, "two": 0.0}
