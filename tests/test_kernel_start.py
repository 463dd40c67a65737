"""How a student's kernels start: forked from one zygote per student, or anew.

grade.py's default (`--kernel-start fork`) imports what the masters import
once per student and forks each notebook's kernel from there
(kernel_sandbox.py). These tests grade for real and check the two promises
that make it safe: a notebook computes exactly what it computes in a kernel
of its own, and a kernel leaves nothing behind for the next notebook.
"""
import difflib
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbformat.v4 import new_notebook

from tests.test_grading import ROOT, SAMPLE, run_grader

sys.path.insert(0, str(ROOT / "autograder" / "testbed" / "hostile"))
from make_hostile import code, text  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="the zygote lives in a bubblewrap sandbox")

PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def what_it_shows(html: str) -> str:
    """A feedback page without its pictures' bytes (the autograded
    notebooks' outputs are compared with them)."""
    return re.sub(r"\n\s*\n", "\n", PNG.sub("PNG", html))


def cell_outputs(notebook: Path) -> dict[str, list[dict]]:
    """Each code cell's outputs in an autograded notebook, by grade_id (or
    position and first line), without execution counts and metadata; a
    picture by the hash of its bytes."""
    nb = nbformat.read(notebook, as_version=4)
    cells = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        m = cell.metadata.get("nbgrader", {})
        kind = "graded" if m.get("grade") else "locked" if m.get("locked") else "cell"
        first = (cell.source.strip().splitlines() or [""])[0][:60]
        name = f"{kind} {m['grade_id']}" if m.get("grade_id") else f"cell {i} ({first})"
        outs = []
        for out in cell.get("outputs", []):
            out = {k: v for k, v in out.items() if k not in ("metadata", "execution_count")}
            if "data" in out:
                out["data"] = {k: hashlib.sha256(v.encode()).hexdigest()[:12]
                               if k.startswith("image/") else v
                               for k, v in out["data"].items()}
            outs.append(out)
        cells[name] = outs
    return cells


def as_lines(outputs: list[dict] | None) -> list[str]:
    """A cell's outputs as lines of text, each output headed by its kind."""
    lines = []
    for i, out in enumerate(outputs or []):
        kind = out["output_type"]
        if kind == "stream":
            lines += [f"[{i}] {out['name']}", *out["text"].splitlines()]
        elif kind == "error":
            lines += [f"[{i}] error {out['ename']}: {out['evalue']}"]
        else:
            for mime, value in out.get("data", {}).items():
                text = value if isinstance(value, str) else json.dumps(value)
                lines += [f"[{i}] {kind} {mime}", *text.splitlines()]
    return lines


def differences(exec_cells: dict[str, list], fork_cells: dict[str, list]) -> list[str]:
    """What differs between two notebooks' cell outputs, cell by cell."""
    found = []
    for name in [*exec_cells, *(n for n in fork_cells if n not in exec_cells)]:
        a, b = exec_cells.get(name), fork_cells.get(name)
        if a != b:
            diff = difflib.unified_diff(as_lines(a), as_lines(b), "exec", "fork",
                                        lineterm="", n=1)
            found.append(f"{name}: {len(a or [])} outputs (exec) / {len(b or [])} (fork)\n"
                         + "\n".join(list(diff)[:40]))
    return found


def test_forked_kernels_compute_what_new_kernels_compute(graded_course, tmp_path):
    """A notebook that prints pandas tables and draws (07): the same scores,
    and every code cell (graded, locked or not) shows the same outputs and
    figures in the autograded notebook and on the feedback page either way.
    The forked side is ada's 07 from the session's grading of the sample
    class (tests/conftest.py's graded_course: grade.py's default, fork,
    whose zygote imported what all nine masters import); only the new
    kernel's side is graded here."""
    proc, course, _ = graded_course
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    subs = tmp_path / "subs"
    shutil.copytree(SAMPLE / "ada_complete", subs / "ada_complete")
    proc = run_grader(subs, tmp_path / "exec", "--kernel-start", "exec",
                      "--notebook", "07_measuring", "--no-report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pages, outputs, scores = {}, {}, {}
    for how, out in (("exec", tmp_path / "exec"), ("fork", course / "lab")):
        folder = out / "feedback" / "ada_complete" / "lab"
        pages[how] = {p.name: what_it_shows(p.read_text(encoding="utf-8"))
                      for p in sorted(folder.glob("07_measuring.html"))}
        assert len(pages[how]) == 1
        assert all("PNG" in page for page in pages[how].values())
        graded = out / ".students" / "ada_complete" / "autograded" / "lab"
        outputs[how] = {p.name: cell_outputs(p)
                        for p in sorted(graded.glob("07_measuring.ipynb"))}
        table = pd.read_csv(out / "scores.csv")
        scores[how] = table[(table.student == "ada_complete")
                            & (table.notebook == "07_measuring.ipynb")].reset_index(drop=True)
    # the new kernel's run graded 07 alone, as --notebook asked
    assert sorted(p.name for p in (tmp_path / "exec" / "feedback" / "ada_complete" / "lab")
                  .iterdir()) == ["07_measuring.html"]
    assert sorted(p.name for p in (tmp_path / "exec" / ".students" / "ada_complete"
                                   / "autograded" / "lab").glob("*.ipynb")) \
        == ["07_measuring.ipynb"]
    assert sorted(outputs["exec"]) == sorted(outputs["fork"]) == ["07_measuring.ipynb"]
    for name, cells in outputs["exec"].items():
        assert any(n.startswith("graded ") for n in cells) and \
            any(n.startswith("locked ") for n in cells), name
        assert cells.keys() == outputs["fork"][name].keys(), name
        found = differences(cells, outputs["fork"][name])
        assert not found, f"{name}: outputs differ between exec and fork\n" + "\n".join(found)
    for name, page in pages["exec"].items():
        assert pages["fork"][name] == page, name
    assert len(scores["exec"]) == 1 and len(pd.read_csv(tmp_path / "exec" / "scores.csv")) == 1
    pd.testing.assert_frame_equal(scores["exec"], scores["fork"])


SPLIT = """import sys
sys.stdout.write("16")
sys.stdout.flush()  # what a kernel busy or starved for 0.2 s mid-print does
print(" of 43 questions rank differently")"""
PANDAS = """import pandas as pd
print(pd.get_option("display.max_columns"))"""


def test_a_cell_shows_what_it_printed_however_the_kernel_started(tmp_path):
    """ipykernel sends a cell's stdout in pieces, every 0.2 s: the
    autograded notebook holds one output per stream all the same, as Jupyter
    shows it; and pandas shows tables as in Jupyter (display.max_columns 20)
    whether it was imported in the zygote or by the kernel's guard."""
    source = tmp_path / "source" / "printing"
    source.mkdir(parents=True)
    nb = new_notebook(metadata={"kernelspec": {"display_name": "Python 3",
                                               "language": "python", "name": "python3"}})
    nb.cells = [text("# Printing", "intro"), code(PANDAS, "setup", "locked"),
                code(SPLIT, "split", "locked"),
                code("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "answer", "solution"),
                code("assert x == 1", "check", "test", 1)]
    nbformat.write(nb, source / "printing.ipynb")
    subs = tmp_path / "subs" / "pia" / "printing"
    subs.mkdir(parents=True)
    nbformat.write(nb, subs / "printing.ipynb")
    for how in ("exec", "fork"):
        out = tmp_path / how
        proc = run_grader(tmp_path / "subs", out, "--source", str(tmp_path / "source"),
                          "--assignment", "printing", "--kernel-start", how, "--no-report")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cells = cell_outputs(out / ".students" / "pia" / "autograded" / "printing"
                             / "printing.ipynb")
        stream = {"output_type": "stream", "name": "stdout"}
        assert cells["locked split"] == [
            {**stream, "text": "16 of 43 questions rank differently\n"}], (how, cells)
        assert cells["locked setup"] == [{**stream, "text": "20\n"}], (how, cells)
        page = (out / "feedback" / "pia" / "printing" / "printing.html").read_text()
        assert "16 of 43 questions rank differently" in page, how


LEAVE = '''import os, pathlib, subprocess
subprocess.Popen(["sleep", "600"], start_new_session=True)
pathlib.Path("left.txt").write_text("x")
pathlib.Path("/tmp/left.txt").write_text("x")
os.environ["LEFT"] = "x"
import builtins
builtins.LEFT = "x"'''
# what notebook two's kernel finds (its answer cell: test cells run in the
# judge, outside the kernel, so the kernel's own code must look)
FIND = '''import os, pathlib
found = {"processes": [p.name for p in pathlib.Path("/proc").iterdir() if p.name.isdigit()
                       and b"sleep" in (p / "cmdline").read_bytes()],
         "folder file": pathlib.Path("left.txt").exists(),
         "tmp file": pathlib.Path("/tmp/left.txt").exists(),
         "variable": "LEFT" in os.environ,
         "builtin": "LEFT" in dir(__builtins__)}'''
NOTHING = '''nothing = {"processes": [], "folder file": False, "tmp file": False,
           "variable": False, "builtin": False}
assert found == nothing, f"left behind: {found}"'''


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
                code(f"### BEGIN SOLUTION\n{FIND}\n### END SOLUTION", "two_a", "solution"),
                code(NOTHING, "two_test", "test", 1)],
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
variable = os.environ.get("OPENBLAS_NUM_THREADS")'''
ONE_THREAD = '''assert variable == "1", variable
assert blas.get("openblas") == 1, blas'''


def one_check(tmp_path: Path, name: str, setup: str, answer: str, check: str,
              runs: dict[str, list[str]]) -> dict[str, float]:
    """Grade one notebook (a locked `setup`, the solution `answer`, a test
    `check` worth 1) handed in as itself by one student, once per grade.py
    option set of `runs`: {run: the check's score}."""
    source = tmp_path / "source" / name
    source.mkdir(parents=True)
    nb = new_notebook(metadata={"kernelspec": {"display_name": "Python 3",
                                               "language": "python", "name": "python3"}})
    nb.cells = [text(f"# {name}", "intro"), code(setup, "setup", "locked"),
                code(f"### BEGIN SOLUTION\n{answer}\n### END SOLUTION", "answer", "solution"),
                code(check, "check", "test", 1)]
    nbformat.write(nb, source / f"{name}.ipynb")
    subs = tmp_path / "subs" / "tia" / name
    subs.mkdir(parents=True)
    nbformat.write(nb, subs / f"{name}.ipynb")
    scores = {}
    for run, extra in runs.items():
        out = tmp_path / run
        proc = run_grader(tmp_path / "subs", out, "--source", str(tmp_path / "source"),
                          "--assignment", name, "--no-report", *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outcome = json.loads((out / ".students" / "tia" / "outcome.json").read_text())
        scores[run] = outcome["cells"][f"{name}.ipynb:check"][0]
    return scores


def test_parallel_kernels_get_one_blas_thread_per_core(tmp_path):
    """With one student per core (--jobs = cores), each kernel's BLAS runs
    one thread, so kernels do not fight over the cores; --kernel-threads
    sets another count, which the same check then sees."""
    import os

    scores = one_check(tmp_path, "threads", "import numpy", THREADS, ONE_THREAD,
                       {"default": ["--jobs", str(os.cpu_count() or 1)],
                        "two": ["--kernel-threads", "2"]})
    assert scores == {"default": 1.0, "two": 0.0}


FROZEN = '''import gc
frozen = gc.get_freeze_count()
class Loop:
    pass
ring = [Loop() for _ in range(1000)]
for a, b in zip(ring, ring[1:] + ring[:1]):
    a.next = b
del ring, a, b
collected = gc.collect()'''
FROZEN_CHECK = '''assert frozen > 10_000, frozen
assert collected >= 1000, collected'''


def test_a_forked_kernel_leaves_the_zygotes_imports_to_the_collector_frozen(tmp_path):
    """The zygote freezes what its imports made before it forks: a forked
    kernel's collections skip those objects (so they neither walk them nor
    copy the pages they share with the zygote), and still free the kernel's
    own garbage. A kernel started anew has nothing frozen."""
    scores = one_check(tmp_path, "frozen", "import numpy, pandas", FROZEN, FROZEN_CHECK,
                       {start: ["--kernel-start", start] for start in ("fork", "exec")})
    assert scores == {"fork": 1.0, "exec": 0.0}
