"""What a student's sandbox can do to the grader's machine, graded for real.

kernel_sandbox.py runs the grader's side of every kernel as root on a
course server. These tests grade one small student each and check two
promises of its sandbox sections (autograder/README.md):

* nothing the grader runs as root writes, chowns or follows a name in a
  folder the sandbox can write: a notebook that plants links there, named
  for every pid and for the zygote's socket, changes no file outside, and
  the student's next notebook is still graded; the folder itself is capped;
* a cgroup caps the student's whole sandbox, so four children of one
  kernel cannot together hold more than the sandbox's memory.
"""
import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_notebook

from tests.test_grading import ROOT, run_grader

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "autograder" / "testbed" / "hostile"))
from autograder.run import kernel_sandbox  # noqa: E402
from make_hostile import code, text  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="the sandbox is bubblewrap's")

KERNELSPEC = {"kernelspec": {"display_name": "Python 3", "language": "python",
                             "name": "python3"}, "language_info": {"name": "python"}}


def assignment(source: Path, name: str, notebooks: dict[str, tuple[str, str]]) -> None:
    """source/<name>/<nb>.ipynb for each nb: (answer, test) -> a setup cell,
    an answer cell `<nb>_a` and a 1-point test `<nb>_test`."""
    folder = source / name
    folder.mkdir(parents=True)
    for nb_name, (answer, test) in notebooks.items():
        nb = new_notebook(metadata=KERNELSPEC)
        nb.cells = [text(f"# {nb_name}", nb_name), code("import os", f"{nb_name}_setup", "locked"),
                    code(f"### BEGIN SOLUTION\n{answer}\n### END SOLUTION",
                         f"{nb_name}_a", "solution"),
                    code(test, f"{nb_name}_test", "test", 1)]
        nbformat.write(nb, folder / f"{nb_name}.ipynb")


def hand_in(source: Path, subs: Path, student: str, name: str,
            answers: dict[str, str]) -> None:
    """The student's copy of each master, with their own answer cells."""
    folder = subs / student / name
    folder.mkdir(parents=True)
    for master in sorted((source / name).glob("*.ipynb")):
        nb = nbformat.read(master, as_version=4)
        nb.cells[2].source = answers.get(master.stem, nb.cells[2].source)
        nbformat.write(nb, folder / master.name)


def cells_of(out: Path, student: str) -> dict[str, list[float]]:
    return json.loads((out / ".students" / student / "outcome.json").read_text())["cells"]


def outputs_of(out: Path, student: str, name: str, notebook: str, index: int) -> str:
    nb = nbformat.read(out / ".students" / student / "autograded" / name / f"{notebook}.ipynb",
                       as_version=4)
    return "".join(o.get("text", "") for o in nb.cells[index].outputs)


# The attack: links in the kernel's sockets folder (the only folder outside
# its scratch space that it can write), named for every pid the next kernel
# start could use (kernel_sandbox once copied "connection-<pid>.json" there
# as root), for the zygote's socket and for the sockets jupyter_client
# connects to; then as many bytes and files there as it takes.
PLANT = '''import os
from ipykernel.kernelapp import IPKernelApp
folder = os.path.dirname(IPKernelApp.instance().ip)
targets = {targets!r}
pids = list(range({first}, {limit})) + list(range(1, {first}))
names = ["zygote.sock", "zygote.sock.new", "kernel.json", "connection.json"]
names += [f"k-{{n}}" for n in range(1, 60)] + [f"connection-{{p}}.json" for p in pids]
planted, failed = 0, 0
for i, name in enumerate(names):
    try:
        os.symlink(targets[i % len(targets)], os.path.join(folder, name))
        planted += 1
        failed = 0
    except OSError:
        failed += 1
        if failed > 2000:
            break
wrote = 0
try:
    with open(os.path.join(folder, "fill.bin"), "wb") as fh:
        for _ in range(64):
            fh.write(b"x" * 2 ** 20)
            fh.flush()
            wrote += 2 ** 20
except OSError:
    pass
print(f"planted {{planted}} links, wrote {{wrote}} bytes in {{folder}}")
x = 1'''


FORK = '''import os, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:  # never back into the kernel's code, whatever happens
        try:
            block = b"x" * (300 * 2 ** 20)  # written, so it is really held
            time.sleep(3)
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    kids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
print("children exited with", codes)'''
FALLBACK = "memory is capped per process only"  # the README's words without a cgroup


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One batch of two students: pia plants links in notebook `one` and
    hands in `two` as it should; max forks four 300 MB children in `mem`.
    Each kernel process may map 2048 MB (a kernel alone maps about 1 GB);
    the sandbox as a whole gets 512 MB."""
    tmp = tmp_path_factory.mktemp("host")
    decoy = tmp / "decoys" / "root-only.txt"
    decoy.parent.mkdir()
    decoy.write_text("a root-only file; the grader must never write here\n")
    decoy.chmod(0o600)
    data = tmp / "decoys" / "documents.json"  # a copy of a data file
    shutil.copy(ROOT / "data" / "helpcentre" / "documents.json", data)
    decoys = {p: (p.read_bytes(), p.stat().st_uid, p.stat().st_mode) for p in (decoy, data)}
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    attack = PLANT.format(targets=[str(decoy), str(data)], first=os.getpid(),
                          limit=min(pid_max, 2 ** 16) + 1)
    source = tmp / "source"
    assignment(source, "host", {"one": ("x = 1", "assert x == 1"),
                                "two": ("y = 2", "assert y == 2"),
                                "mem": ("codes = []", "assert codes == [0, 0, 0, 0]")})
    hand_in(source, tmp / "subs", "pia", "host", {"one": attack})
    hand_in(source, tmp / "subs", "max", "host", {"mem": FORK})
    out = tmp / "out"
    proc = run_grader(tmp / "subs", out, "--source", str(source), "--assignment", "host",
                      "--jobs", "2", "--no-report", "--timeout", "60",
                      "--memory", "2048", "--sandbox-memory", "512")
    return {"proc": proc, "out": out, "decoys": decoys}


@pytest.mark.skipif(os.geteuid() != 0, reason="the attack is on what the grader does "
                                              "as root")
def test_links_planted_in_the_runtime_folder_change_nothing(graded):
    """A root-only decoy file and a copy of a data file, outside the grades
    folder, are unchanged (bytes, owner, mode) after a notebook planted
    links to them under every name the grader's side of a kernel start
    uses; the student's next notebook (a new kernel from the same zygote)
    still scores, and the folder the links went into is capped."""
    proc, out = graded["proc"], graded["out"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = {p: (p.read_bytes(), p.stat().st_uid, p.stat().st_mode) for p in graded["decoys"]}
    assert after == graded["decoys"]
    cells = cells_of(out, "pia")
    assert cells["one.ipynb:one_test"] == [1.0, 1.0]
    assert cells["two.ipynb:two_test"] == [1.0, 1.0]
    log = (out / "logs" / "pia.log").read_text()
    assert "zygote did not start" not in log  # both kernels were forked
    said = outputs_of(out, "pia", "host", "one", 2)
    planted, wrote = (int(w) for w in said.split()[1:5:3])
    # as root, the folder is a tmpfs of its own, capped
    assert planted < kernel_sandbox.RUNTIME_FILES, said
    assert wrote <= kernel_sandbox.RUNTIME_BYTES, said


def test_a_cgroup_caps_the_whole_sandbox(graded):
    """Four children of one kernel, 300 MB each, under a 512 MB sandbox:
    where a cgroup can cap the sandbox, it stops them, and the cell fails
    with a memory line in problems.csv. Skipped only where there is no
    usable cgroup, and then the README says that only the per-process
    limit holds."""
    note = kernel_sandbox.cgroup_note(512 * 2 ** 20, 80)
    if "capped by a cgroup" not in note:
        readme = " ".join((ROOT / "autograder" / "README.md").read_text().split())
        assert FALLBACK in readme
        pytest.skip(note)
    proc, out = graded["proc"], graded["out"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "capped by a cgroup" in proc.stdout
    problems = (out / "problems.csv").read_text()
    assert "max,mem.ipynb: cell 'mem_a' hit the memory limit" in problems, (
        problems + outputs_of(out, "max", "host", "mem", 2))
    assert cells_of(out, "max")["mem.ipynb:mem_test"] == [0.0, 1.0]
    # and only there: pia's notebooks, which stay small, lose nothing to it
    assert "pia," not in problems
