"""Start one student's Jupyter kernel in a bubblewrap sandbox with limits.

grade.py gives every student's course folder a kernelspec whose argv is

    python kernel_sandbox.py SETTINGS.json {connection_file}

so nbgrader itself (which holds the gradebook and the masters with their
hidden tests) runs outside, and only the kernel that executes the student's
code runs inside. In there the kernel sees

  * the Python environment and system libraries, read-only;
  * the package and data the notebooks import (`ragkit/`, `data/`), read-only;
  * its own working folder: an empty tmpfs of limited size holding read-only
    copies of the files and folders nbgrader put beside the notebook (the
    project's corpus/);
  * a private /tmp (limited tmpfs, also its HOME), its connection file, and
    the folder of its ZeroMQ sockets (Unix sockets: there is no network);

and nothing else: no source/, release/, autograder/, .git, no gradebook, no
other student, no $HOME of the grader, no network (a network namespace with
only loopback), no other process (a PID namespace, so everything the kernel
started dies with it). The environment is emptied but for a few variables.
Inside, before the kernel starts, it gets resource limits (address space,
processes and threads, file size, no core files) and, when the grader runs
as root, a uid of its own so the process limit counts only its processes.

A kernel starts one of two ways. By default (`grade.py --kernel-start
fork`), nbgrader_steps.py starts one sandbox per student before autograde:
a *zygote* that sets the limits, imports what the assignment's masters import
(numpy, pandas, matplotlib, ragkit, ipykernel) once, and then forks one fresh
kernel per notebook on request. Between two kernels it kills every process
the last one left behind and empties the scratch folders, so each notebook
still starts from a clean sandbox; what it saves is the 1-2 s of imports
every notebook would repeat. The kernelspec's command then only asks the
zygote for a kernel over a Unix socket, hands it its standard streams, and
lives exactly as long as that kernel. Without a zygote (`--kernel-start
exec`, or if it failed to start) the command execs a sandbox of its own per
kernel, as nbgrader's kernels would start without this file.

Every kernel, however it starts, runs with a guard (`guard`) that puts the
builtins and the grading helpers back before each cell.

Standard library only, but for the zygote's imports and the kernel itself.
"""
from __future__ import annotations

import json
import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
INSIDE = "/sandbox/kernel_sandbox.py"  # where the kernel sees this file
CONNECTION = "/sandbox/connection.json"  # and its connection file
# variables a kernel may keep from the grader's environment
# what numpy's BLAS, scikit-learn's OpenMP and MKL read for their thread count
# (grade.py --kernel-threads sets them)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PASS_ENV = ("LANG", "LC_ALL", "PYTHONHASHSEED", *THREAD_VARS, "MPLBACKEND")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
ZYGOTE = "zygote.sock"  # the zygote's socket, in the student's runtime folder
# the kernel's own modules first: ipykernel's import is a third of a start,
# and each new kernel imports debugpy through ipykernel.debugger (0.15 s)
ALWAYS_PRELOAD = ("ipykernel.kernelapp", "ipykernel.debugger")
INLINE = "module://matplotlib_inline.backend_inline"  # ipykernel's default


def threads_of(uid: int) -> int:
    """Threads (what RLIMIT_NPROC counts) that `uid` runs right now."""
    count = 0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if proc.stat().st_uid == uid:
                    count += len(os.listdir(proc / "task"))
            except OSError:  # the process ended while we looked
                continue
    return count


def bwrap_command(cmd: list[str], work: Path, readonly: list[str],
                  writable: list[str], scratch_bytes: int,
                  env: dict[str, str], beside: Path | None = None) -> list[str]:
    """bwrap argv running `cmd` with only the listed folders in sight.

    `work` becomes an empty tmpfs of `scratch_bytes` (so does /tmp), with
    the files and folders of `beside` (default: those already in `work`)
    bound read-only on top; `writable` folders are bound read-write at their
    own paths.
    """
    beside = work if beside is None else beside
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid",
            "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--clearenv"]
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(scratch_bytes), "--perms", "1777", "--tmpfs", "/tmp"]
    # bwrap would make the folders leading to a mount private to root (0700)
    targets = [*readonly, *writable, str(work)]
    parents = {str(p) for t in targets for p in Path(t).parents
               if str(p) not in ("/", "/tmp")}
    for path in sorted(parents):
        args += ["--perms", "0755", "--dir", path]
    for path in readonly:
        args += ["--ro-bind", path, path]
    args += ["--size", str(scratch_bytes), "--perms", "0777",
             "--tmpfs", str(work)]
    for path in sorted(beside.iterdir()) if beside.is_dir() else []:
        # files and folders (the project's corpus/), never a symbolic link
        # (grade.py drops those from a submission anyway)
        if not path.is_symlink() and (path.is_file() or path.is_dir()):
            args += ["--ro-bind", str(path), str(work / path.name)]
    for path in writable:
        args += ["--bind", path, path]
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    return [*args, "--chdir", str(work), *cmd]


def kernel_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in PASS_ENV if name in os.environ}
    env.update(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
               HOME="/tmp", TMPDIR="/tmp", MPLCONFIGDIR="/tmp/.mpl",
               IPYTHONDIR="/tmp/.ipython", JUPYTER_RUNTIME_DIR="/tmp/.jupyter")
    env.setdefault("LANG", "C.UTF-8")
    return env


def limits_of(s: dict) -> dict:
    """The limits `inside` sets, from the settings grade.py wrote."""
    uid = s.get("uid")
    base = threads_of(os.getuid() if uid is None else uid)
    return {"memory": s["memory_bytes"], "file": s["file_bytes"],
            "nproc": base + s["processes"], "uid": uid}


def outside(settings_file: str, connection_file: str) -> None:
    """Run by the kernel manager in the notebook's folder: ask the student's
    zygote for a kernel, or exec a sandbox of this kernel's own."""
    s = json.loads(Path(settings_file).read_text(encoding="utf-8"))
    conn = Path(connection_file).resolve()
    info = json.loads(conn.read_text(encoding="utf-8"))
    if info.get("transport") != "ipc" or not info["ip"].startswith("/"):
        raise SystemExit("kernel_sandbox: the kernel must use Unix sockets "
                         "(--KernelManager.transport=ipc, an absolute ip)")
    uid = s.get("uid")
    if uid is not None:
        os.chown(conn, uid, uid)  # the kernel reads its keys as that uid
    runtime = Path(info["ip"]).parent.resolve()
    if (runtime / ZYGOTE).exists():
        # the zygote sees the runtime folder, not wherever this file was put
        mine = runtime / f"connection-{os.getpid()}.json"
        shutil.copyfile(conn, mine)
        if uid is not None:
            os.chown(mine, uid, uid)
        attach(runtime / ZYGOTE, mine)
        mine.unlink()
    inner = [sys.executable, "-S", INSIDE, "--inside", json.dumps(limits_of(s)),
             CONNECTION]
    # only the sockets' own folder is shared; the connection file (which
    # jupyter_client may leave in the grader's /tmp, and which ipykernel
    # rewrites at start) is bound by itself
    sockets = str(Path(info["ip"]).parent)
    cmd = bwrap_command(inner, Path.cwd(), s["readonly"], [sockets],
                        s["scratch_bytes"], kernel_env())
    # the connection file, at a path that says nothing about where the grader keeps it
    cmd = with_this_file(cmd, "--bind", str(conn), CONNECTION)
    os.execvp(cmd[0], cmd)


def with_this_file(cmd: list[str], *more: str) -> list[str]:
    """bwrap argv `cmd` with this file bound read-only at INSIDE, a path
    that says nothing about where the repository is, and `more` binds into
    the same folder (after it is made, with its permissions)."""
    return [cmd[0], "--perms", "0755", "--dir", str(Path(INSIDE).parent),
            "--ro-bind", str(HERE), INSIDE, *more, *cmd[1:]]


def confine(limits_json: str) -> None:
    """Inside the sandbox: set the limits and drop root."""
    lim = json.loads(limits_json)
    for which, value in ((resource.RLIMIT_AS, lim["memory"]),
                         (resource.RLIMIT_FSIZE, lim["file"]),
                         (resource.RLIMIT_NPROC, lim["nproc"]),
                         (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))
    if lim["uid"] is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(lim["uid"])
        os.setuid(lim["uid"])


def inside(limits_json: str, connection_file: str) -> None:
    """Run inside a kernel's own sandbox: confine, then exec the kernel."""
    confine(limits_json)
    os.execv(sys.executable, [sys.executable, INSIDE, "--kernel", connection_file])


def run_kernel(connection_file: str) -> None:
    """Run ipykernel as ipykernel_launcher does, with the guard below."""
    sys.path[:] = [p for p in sys.path if p not in ("", str(Path(INSIDE).parent))]
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    # no SQLite input history: it costs a write per cell, and the kernel's
    # HOME is emptied after its notebook anyway (`In` and `_i` still work)
    app.initialize(["-f", connection_file, "--HistoryManager.enabled=False"])
    guard(app.shell)
    app.start()


def guard(shell) -> None:
    """Before every cell, put back what the tests call as it was when the
    kernel started: the builtin functions and types (`len`, `isinstance`,
    `int`...) and the grading helpers `fresh` and `using`.

    Tests and student code share this kernel, so a cell that says
    `builtins.len = ...` or `def fresh(): ...` would otherwise change what
    the next cell's hidden test checks with. The guard is set before the
    first cell, from this file, not from the notebook. It is not a wall (a
    student who knows it can unhook it, and an object may still lie about
    equality); grade.py flags such cells for a human as well.
    """
    import builtins
    import inspect

    pristine = {name: value for name, value in vars(builtins).items()
                if inspect.isbuiltin(value) or isinstance(value, type)}
    try:
        from ragkit import reference
        helpers = {"fresh": reference.fresh, "using": reference.using}
    except ImportError:
        helpers = {}
    names = shell.user_ns

    def before_cell(*_):
        live = vars(builtins)
        for name, value in pristine.items():
            if live.get(name) is not value:
                live[name] = value
        for name, value in helpers.items():
            if name in names and names[name] is not value:
                names[name] = value

    shell.events.register("pre_run_cell", before_cell)


# --- one sandbox per student: the zygote ------------------------------------

def start_zygote(course: Path, assignment: str, student: str,
                 seconds: float = 120) -> subprocess.Popen | None:
    """Start the student's zygote (nbgrader_steps.py, before autograde) and
    wait until it serves kernels; None when the course's kernels are not
    sandboxed, preload nothing, or the zygote did not come up (its kernels
    then start one sandbox each). Its sandbox dies with this process."""
    settings = course / "kernel_sandbox.json"
    if not settings.exists():
        return None
    s = json.loads(settings.read_text(encoding="utf-8"))
    if not s.get("preload"):
        return None
    runtime = Path((course / "runtime").read_text(encoding="utf-8")).resolve()
    work = course / "autograded" / student / assignment  # where nbgrader runs kernels
    beside = course / "submitted" / student / assignment  # what it copies there
    preload = [*ALWAYS_PRELOAD, *s["preload"]]
    inner = [sys.executable, INSIDE, "--zygote", json.dumps(limits_of(s)),
             str(runtime / ZYGOTE), json.dumps(preload)]
    env = kernel_env()
    env.setdefault("MPLBACKEND", INLINE)  # as ipykernel sets it, before matplotlib loads
    cmd = with_this_file(bwrap_command(inner, work, s["readonly"], [str(runtime)],
                                       s["scratch_bytes"], env, beside=beside))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds
    while not (runtime / ZYGOTE).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_zygote(proc)
            print(f"kernel_sandbox: the zygote did not start (exit {proc.returncode}); "
                  "each kernel gets a sandbox of its own", flush=True)
            return None
        time.sleep(0.02)
    return proc


def stop_zygote(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()  # bwrap: its whole PID namespace goes with it
        proc.wait()


def attach(zygote: Path, conn: Path) -> None:
    """The kernelspec's command with a zygote: ask it for a kernel that uses
    this process's standard streams, and exit when that kernel exits (so
    jupyter_client sees it die); if this process is killed, so is the kernel.
    Returns only when the zygote cannot be reached."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(zygote))
        except OSError:
            return  # the zygote is gone (a kernel may kill it): start the old way
        socket.send_fds(sock, [json.dumps({"connection_file": str(conn)}).encode()],
                        [0, 1, 2])
        reply = b""
        while chunk := sock.recv(64):
            reply += chunk
    code = int(reply) if reply.strip().lstrip(b"-").isdigit() else 1
    os._exit(code if code >= 0 else 128 - code)  # a signal's death, as a shell says it


def zygote(limits_json: str, socket_path: str, preload_json: str) -> None:
    """Inside the student's sandbox: confine, import, then fork one kernel
    per request, one at a time, cleaning up after each."""
    if Path("/proc/1/comm").read_text().strip() != "bwrap":
        raise SystemExit("kernel_sandbox: a zygote runs only in its own PID "
                         "namespace (it kills every other process in there)")
    confine(limits_json)
    import importlib

    for name in json.loads(preload_json):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (the kernel will say it when it imports)
            pass
    keep = {folder: set(os.listdir(folder)) for folder in ("/tmp", os.getcwd())}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path + ".new")
    listener.listen(4)
    os.rename(socket_path + ".new", socket_path)  # ready once it has this name
    while True:
        conn, _ = listener.accept()
        with conn:
            serve(conn, listener)
        clean_up(keep)


def serve(conn: socket.socket, listener: socket.socket) -> None:
    """Fork one kernel for the request on `conn`; report how it exited."""
    message, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    connection_file = json.loads(message)["connection_file"]
    pid = os.fork()
    if pid == 0:
        try:
            listener.close()
            conn.close()
            become_kernel(connection_file, fds)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    with selectors.DefaultSelector() as sel:
        sel.register(conn, selectors.EVENT_READ)
        sel.register(pidfd, selectors.EVENT_READ)
        done = False
        while not done:
            for key, _ in sel.select():
                if key.fileobj is conn:
                    if conn.recv(64):
                        continue  # the command sends nothing; ignore it
                    os.kill(pid, signal.SIGKILL)  # the kernel's command was killed
                done = True
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())
    except OSError:
        pass


def become_kernel(connection_file: str, fds: list[int]) -> None:
    """In the forked child: take the caller's streams, reseed what a new
    process would seed anew, and run the kernel."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    import random

    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    if "pandas" in sys.modules:
        # pandas picks this default on import: 0 (fit the terminal) outside
        # IPython, as in the zygote, and 20 in a kernel
        sys.modules["pandas"].set_option("display.max_columns", 20)
    run_kernel(connection_file)


def clean_up(keep: dict[str, set[str]]) -> None:
    """Kill what the last kernel left running (a fork bomb's children, say)
    and empty the scratch folders but for what the zygote itself made."""
    for _ in range(1000):
        try:
            os.kill(-1, signal.SIGKILL)  # all but bwrap (pid 1) and this process
        except ProcessLookupError:
            break
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.002)
    for folder, names in keep.items():
        for name in set(os.listdir(folder)) - names:
            path = Path(folder, name)
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()
            except OSError:
                pass


if __name__ == "__main__":
    if sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--kernel":
        run_kernel(sys.argv[2])
    elif sys.argv[1] == "--zygote":
        zygote(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        outside(sys.argv[1], sys.argv[2])
