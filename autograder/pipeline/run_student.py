"""One student's nbgrader steps, run with that student's kernel inside
bubblewrap (kernel_sandbox.py) and the Limits it must keep to."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.intake.intake import MB
from autograder.run.kernel_sandbox import THREAD_VARS
from autograder.run.nbgrader_cli import die_with_parent, nbgrader_command, nbgrader_env

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


# the sandbox's cgroup, beyond --memory and the two scratch folders: room for
# the zygote's imports, so one process meets --memory (a MemoryError) first
SANDBOX_EXTRA = 1024 * MB


SANDBOX_TASKS = 16  # tasks beyond --processes in the cgroup: bwrap's own


FAILED_MARK = "There was an error processing"  # nbgrader's words when a step fails


IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", re.M)


# set when grade.py is interrupted (end_sandboxes): no student's steps start
# after it, and no student whose grading it cut short is stored as done
STOP = threading.Event()


class Stopped(BaseException):
    """This student's grading was cut short by an interrupt: nothing of it is
    kept (a BaseException, so the handlers that turn one student's failure
    into a problem line let it pass)."""


def check_stop() -> None:
    if STOP.is_set():
        raise Stopped("grading was interrupted")


@dataclass
class Limits:
    """What one student's kernel may use (grade.py's flags, in bytes)."""
    sandbox: bool = True
    uid: int | None = None        # the kernel's own uid when grading as root
    memory_bytes: int = 4096 * MB  # address space of each kernel process
    processes: int = 128           # processes and threads of the kernel
    file_bytes: int = 100 * MB     # largest file the kernel may write
    scratch_bytes: int = 256 * MB  # size of its working folder and its /tmp
    output_bytes: int = 2 * MB     # output kept per cell; the cell fails past it
    notebook_output_bytes: int = 20 * MB  # output of all a notebook's cells together
    notebook_bytes: int = 50 * MB  # larger submitted notebooks are not run
    max_cells: int = 1000          # notebooks with more cells are not run
    # the whole sandbox (every process and its tmpfs files), when a cgroup can
    # cap it (root); None: --memory + both scratch folders + SANDBOX_EXTRA
    sandbox_memory_bytes: int | None = None
    timeout: int | None = None     # seconds per cell (None: nbgrader_config)
    student_seconds: int = 3600    # then the student's grading is stopped
    kernel_start: str = "fork"     # from one zygote per student, or "exec"
    tests_in: str = "judge"        # where graded test cells run (judge.py), or "kernel"
    threads: int | None = None     # BLAS/OpenMP threads per kernel (None: as set)

    def __post_init__(self):
        if self.sandbox_memory_bytes is None:
            self.sandbox_memory_bytes = (self.memory_bytes + 2 * self.scratch_bytes
                                         + SANDBOX_EXTRA)

    def key(self) -> dict:
        """The settings a grade depends on (the uid and the thread count
        are only bookkeeping: grades must not depend on them)."""
        return {k: v for k, v in asdict(self).items() if k not in ("uid", "threads")}


def readonly_paths() -> list[str]:
    """What a kernel may read besides the system: the Python installation,
    the environment, and the package and data the notebooks import."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix),
             ROOT / "ragkit", ROOT / "data"}
    return sorted(str(p) for p in paths if p.exists())


def sandbox(cmd: list[str], course: Path, limits: Limits | None = None) -> list[str]:
    """Wrap `cmd` in the sandbox a student's kernel gets (kernel_sandbox.py),
    with `course` as its working folder. Used by the tests; grading starts
    kernels through the kernelspec that `install_kernel` writes."""
    from autograder.run.kernel_sandbox import bwrap_command, kernel_env

    limits = limits or Limits()
    return bwrap_command(cmd, course, readonly_paths(), [], limits.scratch_bytes,
                         kernel_env())


def master_imports(masters: Path) -> list[str]:
    """The modules the masters' code cells import, which a student's zygote
    loads once for all their kernels (kernel_sandbox.py)."""
    names: set[str] = set()
    for nb in sorted(masters.glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                names.update(IMPORT.findall("".join(cell["source"])))
    return sorted(names)


def install_kernel(course: Path, limits: Limits, assignment: str,
                   code: Path | None = None) -> dict[str, str]:
    """Give `course` a `python3` kernelspec that starts kernels sandboxed;
    returns the environment variables nbgrader must run with to use it.

    The student's runtime folder is root's own (0700): jupyter_client writes
    the connection files into CONNECTIONS/ and the zygote's socket lies
    beside it; only SOCKETS/, where the kernels bind their sockets, is the
    sandbox's (kernel_sandbox.py: a small tmpfs when run as root). As root,
    the student's sandbox also gets a cgroup (`cgroup` in the settings), and
    the rest of the student's grading a sandbox of its own, as another user,
    with `code` (grader_sandbox.code_folder) as its copy of the grader's
    modules (`grader` in the settings)."""
    from autograder.run import grader_sandbox
    from autograder.run.kernel_sandbox import CONNECTIONS, SOCKETS, make_cgroup

    # a short local path: Unix socket paths are limited to ~100 characters
    runtime = Path(tempfile.mkdtemp(prefix="rag-kernel-"))  # 0700, the grader's
    INSTALLED[str(course)] = (runtime, {})  # what release_kernel undoes
    (runtime / CONNECTIONS).mkdir(mode=0o700)
    (runtime / SOCKETS).mkdir(mode=0o700)
    (runtime / "zygote").mkdir(mode=0o700, exist_ok=True)
    env = {"JUPYTER_RUNTIME_DIR": str(runtime / CONNECTIONS)}
    if limits.threads is not None:  # unless the grader's environment says otherwise
        env.update({name: str(limits.threads) for name in THREAD_VARS
                    if name not in os.environ})
    if not limits.sandbox:
        return env
    if limits.uid is not None:  # made just now, in a folder only root can write
        os.chown(runtime / SOCKETS, limits.uid, limits.uid)
    grader = None
    if limits.uid is not None and code is not None:
        uid = grader_sandbox.grader_uid(limits.uid)
        os.chown(runtime / CONNECTIONS, uid, uid)
        os.chmod(runtime / "zygote", 0o750)  # root's; the grader's group may enter
        os.chown(runtime / "zygote", 0, limits.uid)
        grader = {"uid": uid, "kernel_uid": limits.uid, "code": str(code),
                  "cgroup": make_cgroup(f"grader-{limits.uid}", grader_sandbox.MEMORY_BYTES,
                                        grader_sandbox.TASKS)}
    settings = course / "kernel_sandbox.json"
    settings.write_text(json.dumps(INSTALLED[str(course)][1].setdefault("settings", {
        "grader": grader,
        "uid": limits.uid, "memory_bytes": limits.memory_bytes,
        "processes": limits.processes, "file_bytes": limits.file_bytes,
        "scratch_bytes": limits.scratch_bytes, "readonly": readonly_paths(),
        "runtime": str(runtime), "sockets": str(runtime / SOCKETS),
        "cgroup": make_cgroup(f"student-{limits.uid}", limits.sandbox_memory_bytes,
                              limits.processes + SANDBOX_TASKS)
        if limits.uid is not None else None,
        "preload": master_imports(course / "source" / assignment)
        if limits.kernel_start == "fork" else []})))
    # the package as the grader's sandbox sees it: its copy, or the repository's
    top = Path(grader["code"]) if grader else HERE.parents[1]
    spec = course / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(top / "autograder" / "run" / "kernel_sandbox.py"),
                 str(settings), "{connection_file}"],
        "display_name": "Python 3 (sandboxed for grading)", "language": "python",
        # bwrap does not pass signals on: interrupt through the control channel
        "interrupt_mode": "message",
        "metadata": {"supported_encryption": ["curve"]}}, indent=1))
    env["JUPYTER_PATH"] = str(course / "jupyter")
    return env


def sandbox_settings(course: Path) -> dict:
    """What install_kernel wrote for `course`'s kernels ({} unsandboxed), as
    it wrote them (kept in memory, not read back from the course folder)."""
    return INSTALLED.get(str(course), (None, {}))[1].get("settings", {})


# course folder -> (its runtime folder, {"settings": what install_kernel wrote}),
# kept in memory: once the grader's user has had the course folder, nothing
# root does may depend on a file in it
INSTALLED: dict[str, tuple[Path, dict]] = {}


def release_kernel(course: Path) -> None:
    """Remove the student's runtime folder and cgroups (install_kernel),
    killing whatever still runs in them; nothing when none was installed."""
    from autograder.run.kernel_sandbox import remove_cgroup

    runtime, kept = INSTALLED.pop(str(course), (None, {}))
    settings = kept.get("settings", {})
    remove_cgroup(settings.get("cgroup"))
    remove_cgroup((settings.get("grader") or {}).get("cgroup"))
    if runtime is not None:
        shutil.rmtree(runtime, ignore_errors=True)


def descendants(pid: int) -> list[int]:
    """Every living process below `pid` (by parent, read from /proc),
    zombies left out."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                # pid (comm) state ppid ...: comm may hold spaces and brackets
                state, ppid = fh.read().rpartition(b")")[2].split()[:2]
        except (OSError, ValueError):  # the process ended while we looked
            continue
        if state != b"Z":
            children.setdefault(int(ppid), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_sandboxes(busy=lambda: False, seconds: float = 60) -> None:
    """After an interrupt: end every process this one started (the fork
    server, each student's grading process, their sandboxes, zygotes and
    kernels) and every sandbox's cgroup, and keep at it while `busy()` (a
    grading thread that may still start one) or any is left, for at most
    `seconds`. Sets STOP first, so that no student's steps start after the
    sweep."""
    STOP.set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = descendants(os.getpid())
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for course in list(INSTALLED):  # a sandbox's strays: its cgroups kill them
            release_kernel(Path(course))
        if not left and not busy():
            break
        time.sleep(0.05)


def run_nbgrader(args: list[str], course: Path, log: Path,
                 env: dict[str, str] | None = None,
                 seconds: float | None = None) -> bool:
    """Run nbgrader in `course`, append its log to `log`; True when it went well.

    After `seconds` the command and every process it started are killed (a
    kernel that ignores interrupts must not hold up the class)."""
    cmd = nbgrader_command(*args)
    proc = subprocess.Popen(cmd, cwd=course, env={**nbgrader_env(), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=die_with_parent)
    try:
        stdout, stderr = proc.communicate(timeout=seconds)
        stopped = False
    except subprocess.TimeoutExpired:
        proc.kill()  # its sandboxed kernels die with it (bwrap --die-with-parent)
        stdout, stderr = proc.communicate()
        stopped = True
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ nbgrader {' '.join(args)}\n{stdout}{stderr}\n")
        if stopped:
            fh.write(f"stopped after {seconds} s\n")
    # note: nbgrader may exit 0 after failing a notebook, so read the log too;
    # a timed-out cell is logged as an ERROR as well, but that is a grade, not a failure
    return not stopped and proc.returncode == 0 and FAILED_MARK not in stderr


def command_module() -> list[str]:
    """The pack's command this process runs (grade.py, course.py, ...), by
    module name, or [] when it runs something else (pytest, a notebook).

    A forkserver's child runs its parent's main script again before its
    target (multiprocessing prepares it as it would a spawned process, and
    naming "__main__" in the preload does not take in Python 3.11). Run
    cold, that is grade.py's imports (pandas, the reports) anew for every
    student: 2 s of wall and CPU each. Imported once in the server, the
    re-run finds them loaded and takes milliseconds. Only the pack's own
    modules are named: importing one runs no command, as `__name__` is not
    "__main__" there."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        name = spec.name
    else:
        try:
            path = Path(getattr(main, "__file__", None) or "").resolve().relative_to(ROOT)
        except ValueError:
            return []
        name = ".".join(path.with_suffix("").parts) if path.suffix == ".py" else ""
    return [name] if name.startswith("autograder.") else []


def fork_server(preload: bool = True):
    """A multiprocessing context whose processes fork from one server that
    imported the running command (command_module) and nbgrader once
    (`preload`; not worth its 2 s when nbgrader runs in each student's own
    sandbox instead), or None where that cannot work (a daemonic process,
    such as a Dask worker, may not start processes)."""
    import multiprocessing

    if multiprocessing.current_process().daemon or \
            "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(command_module() + ["autograder.pipeline.autograde_steps"]
                               + (["nbgrader.apps"] if preload else []))
    return ctx


def run_steps(course: Path, assignment: str, student: str, settings: dict,
              log: Path, env: dict[str, str], seconds: float) -> str | None:
    """Autograde `student` and write their feedback (autograde_steps.py), all
    killed after `seconds`; None when both went well, else what failed."""
    check_stop()  # (after an interrupt no new process starts)
    args = [str(course), assignment, student, json.dumps(settings)]
    full_env = {**nbgrader_env(), **env}
    from autograder.pipeline import autograde_steps

    ctx = fork_server(preload=autograde_steps.grader_sandbox_settings(str(course)) is None)
    if ctx is not None:
        log.touch()
        proc = ctx.Process(target=autograde_steps.child, args=(*args, str(log), full_env))
        proc.start()
        proc.join(seconds)
        if proc.is_alive():
            proc.kill()  # its sandboxed kernels die with it (bwrap --die-with-parent)
            proc.join()
            code = None
        else:
            code = proc.exitcode
    else:
        with log.open("a", encoding="utf-8") as fh:
            child = subprocess.Popen([sys.executable, str(HERE / "autograde_steps.py"), *args],
                                     cwd=course, env=full_env, stdout=fh,
                                     stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            try:
                code = child.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                code = None
    if code is None:
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"stopped after {seconds} s\n")
        return f"autograde stopped after {seconds} s"
    text = log.read_text(encoding="utf-8", errors="replace")
    before, _, after = text.partition("$ nbgrader generate_feedback")
    # note: nbgrader may report success after failing a notebook, so read the
    # log too; a timed-out cell is logged as an ERROR as well, but that is a
    # grade, not a failure
    if code == 1 or (code == 0 and FAILED_MARK in before):
        return "autograde failed"
    if code != 0 or FAILED_MARK in after:
        return "generate_feedback failed"
    return None
