"""The grader's own sandbox: everything that reads a student's bytes runs
as a user of its own, with only what that student's grading needs.

When grade.py runs as root, a student's kernel runs as uid U in a sandbox of
its own (kernel_sandbox.py). The rest of that student's grading, nbgrader's
autograde and generate_feedback steps, the judge (judge.py) that decides
the graded cells and reruns the master's setup on the student's files, the
feedback pages and the reading of the results, runs in a second bubblewrap
sandbox as uid U + UID_OFFSET, so that no code path in it, should one ever
turn a student's bytes into code, runs as root or sees more than this:

  * the system, the Python environment, `ragkit/` and `data/`, read-only;
  * the grader's code: a copy of the autograder package made for the
    batch (`code_folder`), read-only, never the repository's other folders;
  * the student's course folder (their submission, the one assignment's
    masters, a gradebook holding only them), read-write, handed to that
    user before the sandbox starts;
  * the folder jupyter_client writes connection files in, the kernel's
    sockets folder (a small tmpfs the kernel's uid owns, group-shared with
    the grader's uid) and the zygote's socket, through which it asks root's
    zygote for kernels;
  * its own /tmp and HOME (a size-limited tmpfs), no network, no other
    process (its own PID namespace), a cgroup capping its memory and tasks,
    and the per-process limits of `LIMITS`.

Root only copies files in (the course folder, made before) and out (the
results, read as data from results.json after every process in the sandbox
has ended, with links and special files removed first: `scrub`).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import threading
from pathlib import Path

from autograder.run.nbgrader_cli import TOP as ROOT, copy_module, grader_modules

UID_OFFSET = 100_000
MB = 2 ** 20
MEMORY_BYTES = 3072 * MB   # the grader's cgroup: nbgrader, the judge, feedback
TASKS = 256                # its processes and threads
FILE_BYTES = 512 * MB      # largest file it may write (a feedback page, the log)
TMP_BYTES = 256 * MB       # its /tmp
RESULTS_BYTES = 8 * MB     # results.json larger than this is not read
# the one variable a test may set to give the judge a deliberate hole
# (judge.HOLE_VARIABLE), to show that code running there finds nothing to
# read or write
TEST_HOLE = "RAGKIT_TEST_JUDGE_RUNS_ANSWERS"
_LOCK = threading.Lock()
# kernel_sandbox.py's place in a copy of the package (code_folder)
SANDBOX_SCRIPT = Path("autograder", "run", "kernel_sandbox.py")


def grader_uid(kernel_uid: int) -> int:
    return kernel_uid + UID_OFFSET


def code_folder(work: Path) -> Path:
    """work/grader-code: a read-only copy of the autograder package (never
    the testbed, the masters or anything else of the repository), made
    once."""
    target = work / "grader-code"
    with _LOCK:
        if not target.exists():
            part = work / "grader-code.new"
            shutil.rmtree(part, ignore_errors=True)
            part.mkdir()
            for path in grader_modules():
                os.chmod(copy_module(path, part), 0o644)
            for folder in [part, *(p for p in part.rglob("*") if p.is_dir())]:
                os.chmod(folder, 0o755)
            part.rename(target)
    return target


def hand_over(folder: Path, uid: int) -> None:
    """Give `folder` and everything in it to `uid` (root made it all just
    now; links are changed themselves, never followed)."""
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)
    os.chown(folder, uid, uid, follow_symlinks=False)


def scrub(folder: Path) -> list[str]:
    """After the sandbox: remove every link and special file the grader's
    user may have left in `folder`, before root reads or copies anything of
    it; the names removed."""
    removed = []
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                os.unlink(path)
                removed.append(os.path.relpath(path, folder))
        dirs[:] = [d for d in dirs if os.path.isdir(os.path.join(top, d))
                   and not os.path.islink(os.path.join(top, d))]
    return removed


def read_results(course: Path) -> dict:
    """results.json as plain data, each field checked (it was written by the
    grader's user)."""
    path = course / "results.json"
    if not path.is_file() or path.is_symlink() or path.stat().st_size > RESULTS_BYTES:
        raise ValueError("the grading step left no readable results.json")
    data = json.loads(path.read_text(encoding="utf-8"))

    def pairs(value) -> dict[str, tuple[float, float]]:
        if type(value) is not dict:
            raise ValueError("bad results")
        out = {}
        for key, pair in value.items():
            if type(key) is not str or type(pair) is not list or len(pair) != 2 or \
                    not all(type(x) in (int, float) for x in pair):
                raise ValueError("bad results")
            out[key] = (float(pair[0]), float(pair[1]))
        return out

    def strings(value) -> list[str]:
        if type(value) is not list or not all(type(x) is str for x in value):
            raise ValueError("bad results")
        return [x[:1000] for x in value]

    return {"scores": pairs(data.get("scores")), "cells": pairs(data.get("cells")),
            "to_mark": strings(data.get("to_mark")),
            "problems": strings(data.get("problems"))}


def command(cmd: list[str], course: Path, settings: dict, code: Path,
            env: dict[str, str]) -> list[str]:
    """The bwrap argv that runs `cmd` as the grader's user (kernel_sandbox.py
    --run sets its limits and drops root) with only what it needs in sight."""
    from autograder.run.kernel_sandbox import bwrap_base

    grader = settings["grader"]
    runtime = Path(settings["runtime"])
    readonly = sorted({str(Path(sys.base_prefix).resolve()), str(Path(sys.prefix)),
                       str(ROOT / "ragkit"), str(ROOT / "data"), str(code)})
    readonly = [p for p in readonly if Path(p).exists()]
    events = (settings.get("cgroup") or {}).get("events")
    files = [events] if events and Path(events).exists() else []
    writable = [str(course), str(runtime / "connections"), settings["sockets"]]
    args = bwrap_base(TMP_BYTES, [*readonly, *files, *writable, str(runtime / "zygote")])
    for path in readonly + files:
        args += ["--ro-bind", path, path]
    for path in writable:
        args += ["--bind", path, path]
    # the zygote's folder (root's, which the grader's group may enter), so
    # that a zygote root starts anew is seen here
    args += ["--ro-bind", str(runtime / "zygote"), str(runtime / "zygote")]
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    limits = {"memory": None, "file": FILE_BYTES, "nproc": TASKS,
              "uid": grader["uid"], "groups": [grader["kernel_uid"]]}
    return [*args, "--chdir", str(course), sys.executable, "-S",
            str(code / SANDBOX_SCRIPT), "--run", json.dumps(limits), "--", *cmd]


def environment(settings: dict, course: Path, extra: dict[str, str]) -> dict[str, str]:
    """The grader's environment in its sandbox: nothing of root's but the
    variables below."""
    from autograder.run.kernel_sandbox import PASS_ENV

    env = {name: os.environ[name] for name in (*PASS_ENV, TEST_HOLE) if name in os.environ}
    env.update({k: v for k, v in extra.items()
                if k.startswith(("OMP_", "OPENBLAS_", "MKL_")) or k == TEST_HOLE})
    env.update(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", HOME="/tmp",
               TMPDIR="/tmp", MPLCONFIGDIR="/tmp/.mpl", IPYTHONDIR="/tmp/.ipython",
               JUPYTER_RUNTIME_DIR=str(Path(settings["runtime"]) / "connections"),
               JUPYTER_PATH=str(course / "jupyter"),
               JUPYTER_CONFIG_DIR="/tmp/.jupyter", JUPYTER_DATA_DIR="/tmp/.jupyter-data")
    env.setdefault("LANG", "C.UTF-8")
    return env


def run_unprivileged(cmd: list[str], readonly: list[Path], code: Path, uid: int | None,
                     seconds: float = 600, output_bytes: int = RESULTS_BYTES) -> str:
    """Run `cmd` (a module of `code`, which reads students' files) in a
    sandbox that sees the system, the Python environment, ragkit, `code` and
    `readonly`, all read-only, with no network; as `uid` when root. Its
    standard output, at most `output_bytes` of it."""
    import subprocess

    from autograder.run.kernel_sandbox import bwrap_base

    seen = sorted({str(Path(sys.base_prefix).resolve()), str(Path(sys.prefix)),
                   str(ROOT / "ragkit"), str(code), *map(str, readonly)})
    args = bwrap_base(TMP_BYTES, seen)
    for path in seen:
        args += ["--ro-bind", path, path]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp",
           "LANG": "C.UTF-8", "MPLCONFIGDIR": "/tmp/.mpl"}
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    limits = {"memory": None, "file": FILE_BYTES, "nproc": TASKS, "uid": uid, "groups": []}
    argv = [*args, "--chdir", "/tmp", sys.executable, "-S", str(code / SANDBOX_SCRIPT),
            "--run", json.dumps(limits), "--", *cmd]
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=seconds)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[1]).name} failed: "
                           f"{proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout[:output_bytes].decode("utf-8", errors="replace")
