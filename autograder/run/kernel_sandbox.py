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
  * a private /tmp (limited tmpfs, also its HOME), its connection file
    (read-only), and the folder of its ZeroMQ sockets (Unix sockets: there
    is no network);

and nothing else: no source/, release/, autograder/, .git, no gradebook, no
other student, no $HOME of the grader, no network (a network namespace with
only loopback), no other process (a PID namespace, so everything the kernel
started dies with it). The environment is emptied but for a few variables.
Inside, before the kernel starts, it gets resource limits (address space,
processes and threads, file size, no core files) and, when the grader runs
as root, a uid of its own so the process limit counts only its processes.

A kernel starts one of two ways. By default (`grade.py --kernel-start
fork`), autograde_steps.py starts one sandbox per student before autograde:
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

The grader's side of a kernel runs as root on a course server, so it never
writes, chowns or follows a name in a folder the sandbox can write
(`outside`, `start_zygote`). jupyter_client writes each connection file (keys
included) into a root-only folder; a kernel of its own sandbox gets that file
read-only by bwrap, and a kernel forked by the zygote gets its contents as
data over the zygote's socket, which lies in the root-only folder too (the
grader binds it and hands the zygote the listening socket). The only folder
the sandbox writes outside its scratch space is the one its kernel binds its
sockets in: as root it is a tmpfs of its own (RUNTIME_BYTES, RUNTIME_FILES),
mounted `nosymfollow` in the student's private mount namespace, so a link
planted there leads nowhere and the folder cannot fill the grader's disk.
As root, a student's whole sandbox (every process, and the files of its
tmpfs folders) is also capped by a cgroup (`make_cgroup`): memory, and the
number of tasks; without root or a usable cgroup only the per-process limits
hold (`cgroup_note`).

Standard library only, but for the zygote's imports and the kernel itself.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import resource
import select
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
WATCH = "/sandbox/ragkit_watch.py"  # and the file that counts ragkit's calls
# variables a kernel may keep from the grader's environment
# what numpy's BLAS, scikit-learn's OpenMP and MKL read for their thread count
# (grade.py --kernel-threads sets them)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PASS_ENV = ("LANG", "LC_ALL", "PYTHONHASHSEED", *THREAD_VARS, "MPLBACKEND")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
# the zygote's socket, in a folder of the root-only runtime folder that only
# root writes (the grader's user may enter it: grader_sandbox.py binds the
# folder, so a zygote started anew is seen there)
ZYGOTE = "zygote/zygote.sock"
# a student's runtime folder (root's, 0700) holds jupyter_client's connection
# files (CONNECTIONS/), the zygote's socket, and SOCKETS/, the one folder
# there the sandbox writes: its kernels' ZeroMQ sockets
CONNECTIONS, SOCKETS = "connections", "sockets"
RUNTIME_BYTES = 2 ** 20  # SOCKETS/ as root: a tmpfs this large...
RUNTIME_FILES = 128      # ...with this many files and folders at most
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


def bwrap_base(tmp_bytes: int, targets: list[str]) -> list[str]:
    """The start of every sandbox's bwrap argv: new namespaces (PID,
    network, IPC, UTS, cgroup), an empty environment, the system read-only,
    /proc, /dev, a /tmp of `tmp_bytes`, and the folders leading to each of
    `targets` (which the caller binds) made 0755: bwrap would make them
    private to root."""
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid",
            "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--clearenv"]
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp"]
    parents = {str(p) for t in targets for p in Path(t).parents
               if str(p) not in ("/", "/tmp")}
    for path in sorted(parents):
        args += ["--perms", "0755", "--dir", path]
    return args


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
    args = bwrap_base(scratch_bytes, [*readonly, *writable, str(work)])
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
            "nproc": base + s["processes"], "uid": uid, "sockets": s["sockets"]}


def read_connection(connection_file: str) -> bytes:
    """The connection file jupyter_client wrote (in the grader's root-only
    folder), read without following a link."""
    fd = os.open(connection_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(65536)


def outside(settings_file: str, connection_file: str) -> None:
    """Run by the kernel manager in the notebook's folder: ask the student's
    zygote for a kernel, or exec a sandbox of this kernel's own.

    This process runs as the grader (root on a course server): it reads the
    connection file where jupyter_client wrote it, and never touches a name
    in the sockets folder, which the sandbox can write."""
    s = json.loads(Path(settings_file).read_text(encoding="utf-8"))
    data = read_connection(connection_file)
    info = json.loads(data)
    if info.get("transport") != "ipc" or \
            os.path.dirname(info.get("ip", "")) != s["sockets"]:
        raise SystemExit("kernel_sandbox: the kernel must use Unix sockets in its "
                         "sockets folder (--KernelManager.transport=ipc, ip in "
                         f"{s['sockets']})")
    zygote = Path(s["runtime"]) / ZYGOTE  # root's folder: no one else names it
    if zygote.exists():
        attach(zygote, info)  # returns only when the zygote cannot be reached
    if s.get("grader") and os.geteuid() != 0:
        # in the grader's sandbox: a kernel killed the zygote, and root starts
        # a new one (autograde_steps.outer); wait for it
        for _ in range(240):
            time.sleep(0.25)
            if zygote.exists():
                attach(zygote, info)
        raise SystemExit("kernel_sandbox: the student's zygote is gone, and the grader's "
                         "sandbox cannot start a kernel without it")
    join_cgroup(s.get("cgroup"))
    inner = [sys.executable, "-S", INSIDE, "--inside", json.dumps(limits_of(s)),
             CONNECTION]
    cmd = bwrap_command(inner, Path.cwd(), s["readonly"], [s["sockets"]],
                        s["scratch_bytes"], kernel_env())
    # the connection file as bwrap's read-only copy of the bytes read above,
    # at a path that says nothing about where the grader keeps it
    reader, writer = os.pipe()
    if len(data) > 60000:
        raise SystemExit("kernel_sandbox: connection file too large")
    os.write(writer, data)  # fits in a pipe's buffer
    os.close(writer)
    os.set_inheritable(reader, True)
    cmd = with_this_file(cmd, "--perms", "0444", "--ro-bind-data", str(reader),
                         CONNECTION)
    os.execvp(cmd[0], cmd)


def with_this_file(cmd: list[str], *more: str) -> list[str]:
    """bwrap argv `cmd` with this file bound read-only at INSIDE, a path
    that says nothing about where the repository is, and `more` binds into
    the same folder (after it is made, with its permissions)."""
    return [cmd[0], "--perms", "0755", "--dir", str(Path(INSIDE).parent),
            "--ro-bind", str(HERE), INSIDE,
            "--ro-bind", str(HERE.with_name("ragkit_watch.py")), WATCH, *more, *cmd[1:]]


def watch_ragkit() -> None:
    """Before anything in the sandbox imports ragkit: make its functions
    count their calls (ragkit_watch.py, read by judge_kernel._call)."""
    if "_ragkit_watch" in sys.modules:
        return
    import types

    module = types.ModuleType("_ragkit_watch")
    sys.modules["_ragkit_watch"] = module
    with open(WATCH, encoding="utf-8") as fh:
        exec(compile(fh.read(), WATCH, "exec"), module.__dict__)  # noqa: S102 (the grader's own file)
    module.install()


def confine(limits_json: str) -> None:
    """Inside the sandbox: set the limits and drop root (to the uid, with a
    group of the same number and the supplementary `groups`)."""
    lim = json.loads(limits_json)
    for which, value in ((resource.RLIMIT_AS, lim["memory"]),
                         (resource.RLIMIT_FSIZE, lim["file"]),
                         (resource.RLIMIT_NPROC, lim["nproc"]),
                         (resource.RLIMIT_CORE, 0)):
        if value is not None:
            resource.setrlimit(which, (value, value))
    if lim["uid"] is not None and os.getuid() == 0:
        os.setgroups([int(g) for g in lim.get("groups", [])])
        os.setgid(lim["uid"])
        os.setuid(lim["uid"])
    if lim["uid"] is not None and (os.getuid() == 0 or os.geteuid() == 0):
        raise SystemExit("kernel_sandbox: could not drop root")


def run_confined(limits_json: str, cmd: list[str]) -> None:
    """Inside the grader's sandbox (grader_sandbox.py): confine, then run
    `cmd` as the grader's user."""
    confine(limits_json)
    os.execvp(cmd[0], cmd)


def inside(limits_json: str, connection_file: str) -> None:
    """Run inside a kernel's own sandbox: confine, empty the sockets folder
    of what an earlier kernel left (jupyter_client chose names that were
    free, and this kernel has bound none yet), copy the read-only connection
    file to one of the kernel's own (ipykernel may rewrite it), then exec
    the kernel."""
    confine(limits_json)
    sockets = json.loads(limits_json)["sockets"]
    empty_folder(sockets, set())
    info = json.loads(Path(connection_file).read_text(encoding="utf-8"))
    os.execv(sys.executable, [sys.executable, INSIDE, "--kernel",
                              own_connection_file(info, sockets)])


def own_connection_file(info: dict, sockets: str) -> str:
    """Write the connection `info` to a new file of the kernel's own in its
    sockets folder (as the kernel's uid, never through a link)."""
    path = os.path.join(sockets, f"connection-{os.getpid()}.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh)
    return path


def run_kernel(connection_file: str) -> None:
    """Run ipykernel as ipykernel_launcher does, with the guard below."""
    # as ipykernel_launcher does, the working folder ("") leaves the path, and
    # so does the folder this script was started from inside the sandbox
    sys.path[:] = [p for p in sys.path if p not in ("", str(Path(INSIDE).parent))]
    watch_ragkit()
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    # no SQLite input history: it costs a write per cell, and the kernel's
    # HOME is emptied after its notebook anyway (`In` and `_i` still work)
    app.initialize(["-f", connection_file, "--HistoryManager.enabled=False"])
    guard(app.shell)
    if "pandas" in sys.modules:
        # pandas picks this default on import: 20 when a kernel's cell
        # imports it, as in Jupyter, but 0 (fit the terminal, "...") when
        # imported outside a running shell: in the zygote, or by guard's
        # ragkit import in a kernel that did not fork
        sys.modules["pandas"].set_option("display.max_columns", 20)
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
                 seconds: float = 120, settings: dict | None = None,
                 beside: Path | None = None) -> subprocess.Popen | None:
    """Start the student's zygote and wait until it serves kernels
    (launch_zygote, then ZygoteLaunch.wait); None when the course's kernels
    are not sandboxed, preload nothing, or the zygote did not come up."""
    launch = launch_zygote(course, assignment, student, settings, beside)
    return launch.wait(seconds) if launch is not None else None


class ZygoteLaunch:
    """A zygote started by launch_zygote, not yet known to serve kernels:
    its imports (a few seconds) go on while the caller starts nbgrader."""

    def __init__(self, proc: subprocess.Popen | None, ready: int, pending: Path,
                 final: Path):
        self.proc, self.ready, self.pending, self.final = proc, ready, pending, final

    def wait(self, seconds: float = 120, owner: int | None = None) -> subprocess.Popen | None:
        """The zygote once it serves kernels, its socket handed to `owner`
        (a uid) and put where kernels look for it; None (and the zygote
        stopped) when it did not come up within `seconds`."""
        with os.fdopen(self.ready, "rb") as fh:
            up = self.proc is not None and bool(select.select([fh], [], [], seconds)[0]) \
                and fh.read(5) == b"ready"
        if not up:
            stop_zygote(self.proc)
            with contextlib.suppress(FileNotFoundError):
                self.pending.unlink()
            print(f"kernel_sandbox: the zygote did not start (exit "
                  f"{self.proc.returncode if self.proc else 'none'}); each kernel gets a "
                  "sandbox of its own", flush=True)
            return None
        if owner is not None:
            os.chown(self.pending, owner, owner)
        os.rename(self.pending, self.final)  # kernels ask it once it has this name
        return self.proc


def launch_zygote(course: Path, assignment: str, student: str,
                  settings: dict | None = None,
                  beside: Path | None = None) -> ZygoteLaunch | None:
    """Start the student's zygote (autograde_steps.py, before autograde);
    None when the course's kernels are not sandboxed or preload nothing. Its
    sandbox dies with this process.

    The zygote's socket is bound here, in the root-only runtime folder, and
    the zygote gets the listening socket itself: inside, it never sees the
    folder, so no kernel can replace the socket with one of its own."""
    # (`settings` and `beside` given: the course folder is the grader's
    # user's by now, and root reads nothing from it)
    if settings is None:
        path = course / "kernel_sandbox.json"
        if not path.exists():
            return None
        settings = json.loads(path.read_text(encoding="utf-8"))
    s = settings
    if not s.get("preload") and not s.get("grader"):
        return None
    runtime = Path(s["runtime"])
    work = course / "autograded" / student / assignment  # where nbgrader runs kernels
    if beside is None:
        beside = course / "submitted" / student / assignment  # what it copies there
    # nothing preloaded: each kernel execs anew (--kernel-start exec, which
    # as root still goes through the zygote: the grader's user cannot start
    # a sandbox)
    preload = [*ALWAYS_PRELOAD, *s["preload"]] if s.get("preload") else []
    pending = runtime / f"{ZYGOTE}.new"
    with contextlib.suppress(FileNotFoundError):
        pending.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(pending))
    listener.listen(4)
    ready, ready_w = os.pipe()
    inner = [sys.executable, INSIDE, "--zygote", json.dumps(limits_of(s)),
             str(listener.fileno()), str(ready_w), json.dumps(preload)]
    env = kernel_env()
    env.setdefault("MPLBACKEND", INLINE)  # as ipykernel sets it, before matplotlib loads
    cmd = with_this_file(bwrap_command(inner, work, s["readonly"], [s["sockets"]],
                                       s["scratch_bytes"], env, beside=beside))
    cgroup = s.get("cgroup")
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                pass_fds=(listener.fileno(), ready_w),
                                preexec_fn=(lambda: join_cgroup(cgroup)) if cgroup else None)
    except (OSError, subprocess.SubprocessError):
        proc = None
    os.close(ready_w)
    listener.close()  # the zygote holds it now
    return ZygoteLaunch(proc, ready, pending, runtime / ZYGOTE)


def stop_zygote(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()  # bwrap: its whole PID namespace goes with it
        proc.wait()


def attach(zygote: Path, info: dict) -> None:
    """The kernelspec's command with a zygote: ask it for a kernel with the
    connection `info` (sent as data) that uses this process's standard
    streams, and exit when that kernel exits (so jupyter_client sees it
    die); if this process is killed, so is the kernel. Returns only when
    the zygote cannot be reached."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(zygote))
        except OSError:
            return  # the zygote is gone (a kernel may kill it): start the old way
        socket.send_fds(sock, [json.dumps({"connection": info}).encode()], [0, 1, 2])
        reply = b""
        while chunk := sock.recv(64):
            reply += chunk
    code = int(reply) if reply.strip().lstrip(b"-").isdigit() else 1
    os._exit(code if code >= 0 else 128 - code)  # a signal's death, as a shell says it


def zygote(limits_json: str, listen_fd: str, ready_fd: str, preload_json: str) -> None:
    """Inside the student's sandbox: confine, import, then fork one kernel
    per request on the listening socket `listen_fd` (bound by the grader),
    one at a time, cleaning up after each; says "ready" on `ready_fd`."""
    if Path("/proc/1/comm").read_text().strip() != "bwrap":
        raise SystemExit("kernel_sandbox: a zygote runs only in its own PID "
                         "namespace (it kills every other process in there)")
    # the kernels (which reset theirs, become_kernel) go before the zygote
    # when the sandbox's cgroup runs out of memory; needs root, so before confine
    with contextlib.suppress(OSError):
        Path("/proc/self/oom_score_adj").write_text("-500")
    confine(limits_json)
    import importlib

    preload = json.loads(preload_json)
    _Zygote.fresh = not preload
    watch_ragkit()
    for name in preload:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (the kernel will say it when it imports)
            pass
    # what the imports made leaves the collector's reach: a kernel's full
    # collections then walk its own objects only, and do not write to (so do
    # not copy) the pages it shares with the zygote
    gc.collect()
    gc.freeze()
    sockets = json.loads(limits_json)["sockets"]
    empty_folder(sockets, set())
    keep = {folder: set(os.listdir(folder)) for folder in ("/tmp", os.getcwd())}
    keep[sockets] = set()  # the kernels' sockets and connection files
    listener = socket.socket(fileno=int(listen_fd))
    os.write(int(ready_fd), b"ready")
    os.close(int(ready_fd))
    while True:
        conn, _ = listener.accept()
        with conn:
            serve(conn, listener, sockets)
        clean_up(keep)


def serve(conn: socket.socket, listener: socket.socket, sockets: str) -> None:
    """Fork one kernel for the request on `conn`; report how it exited."""
    message, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    info = json.loads(message)["connection"]
    pid = os.fork()
    if pid == 0:
        try:
            listener.close()
            conn.close()
            become_kernel(info, fds, sockets)
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


def become_kernel(info: dict, fds: list[int], sockets: str) -> None:
    """In the forked child: take the caller's streams, reseed what a new
    process would seed anew, write the connection `info` to a file of its
    own (in its sockets folder, which the zygote has emptied), and run the
    kernel."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    with contextlib.suppress(OSError):
        Path("/proc/self/oom_score_adj").write_text("0")
    os.umask(0o007)  # its sockets: for the grader's user too, through the group
    conn = own_connection_file(info, sockets)
    if _Zygote.fresh:  # --kernel-start exec: a new interpreter for every kernel
        os.execv(sys.executable, [sys.executable, INSIDE, "--kernel", conn])
    import random

    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    run_kernel(conn)


class _Zygote:
    fresh = False  # each kernel execs a new interpreter instead of forking on


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
        empty_folder(folder, names)


def empty_folder(folder: str, names: set[str]) -> None:
    """Remove everything in `folder` but `names`, never following a link
    (run inside the sandbox, as the student's uid)."""
    for name in set(os.listdir(folder)) - names:
        path = Path(folder, name)
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink()
        except OSError:
            pass


# --- as root: the runtime folder's tmpfs, and one cgroup per student ---------

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOSYMFOLLOW = 2, 4, 8, 256
MS_REC, MS_SLAVE = 16384, 1 << 19
CLONE_NEWNS = 0x00020000


def runtime_tmpfs(folder: str, uid: int | None) -> str | None:
    """Mount a tmpfs of RUNTIME_BYTES and RUNTIME_FILES, owned by `uid`, on
    `folder` (a kernel's sockets folder), in a mount namespace private to
    this process and the kernels it starts (it goes when they do). Mounted
    nosymfollow: no link planted in it is ever followed, by root's ZeroMQ
    or anyone. None when done, else what is missing (not root, an old kernel)."""
    if os.geteuid() != 0:
        return "not capped (not run as root)"
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:
            raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")

    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    # the grader's user (grader_sandbox.py) has the kernel's group: it enters
    # and connects to the sockets, which the kernel makes group-writable
    data = f"size={RUNTIME_BYTES},nr_inodes={RUNTIME_FILES},mode=0770{owner}".encode()
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    try:
        check(libc.unshare(CLONE_NEWNS), "unshare")
        # nothing mounted here may show in the grader's own namespace
        check(libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None), "mount --make-rslave /")
        if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", flags | MS_NOSYMFOLLOW, data):
            check(libc.mount(b"tmpfs", folder.encode(), b"tmpfs", flags, data), "mount")
            return "a tmpfs, but links in it are followed (nosymfollow needs Linux 5.10)"
    except OSError as err:
        return f"not capped ({err})"
    return None


def cgroup_mounts() -> dict[str, tuple[str, str]]:
    """Where this process's cgroups are: {"v2": (mountpoint, own path)} for
    a unified hierarchy with the memory and pids controllers, else
    {"memory": ..., "pids": ...} for the v1 hierarchies found."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["v2"]:
            own[name] = path
    found: dict[str, tuple[str, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        root, point, kind, options = fields[3], fields[4], fields[sep + 1], fields[sep + 3]
        if kind == "cgroup2" and "v2" in own:
            controllers = (Path(point) / "cgroup.controllers").read_text().split() \
                if (Path(point) / "cgroup.controllers").exists() else []
            if {"memory", "pids"} <= set(controllers):
                rel = os.path.relpath(own["v2"], root) if root != "/" else own["v2"].lstrip("/")
                found["v2"] = (point, rel)
        elif kind == "cgroup":
            for name in ("memory", "pids"):
                if name in options.split(",") and name in own:
                    rel = os.path.relpath(own[name], root) if root != "/" else own[name].lstrip("/")
                    found[name] = (point, rel)
    if "v2" in found:
        return {"v2": found["v2"]}
    return {k: v for k, v in found.items() if k != "v2"}


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def sweep_stale(parent: Path) -> None:
    """Remove the empty groups that graders killed before they could clean
    up left in `parent` (rag-grade-<pid> of a pid that is gone); a group
    with a process in it is left alone."""
    for group in parent.glob("rag-grade-*"):
        pid = group.name.rpartition("-")[2]
        if not pid.isdigit() or int(pid) == os.getpid() or Path("/proc", pid).exists():
            continue
        for student in (g for g in group.iterdir() if g.is_dir()):
            with contextlib.suppress(OSError):
                os.rmdir(student)
        with contextlib.suppress(OSError):
            os.rmdir(group)


def make_cgroup(name: str, memory_bytes: int, tasks: int) -> dict | None:
    """As root, a cgroup for one student's sandbox, `name` in this grader's
    group ("rag-grade-<pid>", beside this process's own): at most
    `memory_bytes` of memory for all its processes and the files of its
    tmpfs folders together (no swap), at most `tasks` processes and threads.
    Returns what `join_cgroup` and `remove_cgroup` need (and "events", the
    file whose `oom_kill` line GuardedExecute reads after each cell), or
    None when this machine offers no such cgroup (`cgroup_note`)."""
    if os.geteuid() != 0:
        return None
    try:
        mounts = cgroup_mounts()
    except (OSError, ValueError):
        return None
    group = f"rag-grade-{os.getpid()}"
    try:
        if "v2" in mounts:
            point, own = mounts["v2"]
            for parent in dict.fromkeys([Path(point, own), Path(point)]):
                sweep_stale(parent)
                try:
                    enabled = (parent / "cgroup.subtree_control").read_text().split()
                    if not {"memory", "pids"} <= set(enabled):
                        _write(parent / "cgroup.subtree_control", "+memory +pids")
                    mine = parent / group
                    mine.mkdir(exist_ok=True)
                    _write(mine / "cgroup.subtree_control", "+memory +pids")
                    break
                except OSError:  # a parent with processes of its own (EBUSY)
                    continue
            else:
                return None
            folder = mine / name
            folder.mkdir()
            _write(folder / "memory.max", str(memory_bytes))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(tasks))
            return {"version": 2, "join": [str(folder)],
                    "events": str(folder / "memory.events"), "memory_bytes": memory_bytes}
        if "memory" not in mounts:
            return None
        for kind in ("memory", "pids"):
            if kind in mounts:
                sweep_stale(Path(*mounts[kind]))
        point, own = mounts["memory"]
        memory = Path(point, own, group, name)
        memory.mkdir(parents=True)
        made = {"version": 1, "join": [str(memory)],
                "events": str(memory / "memory.oom_control"), "memory_bytes": memory_bytes}
        try:
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():  # no swap
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            if "pids" in mounts:
                point, own = mounts["pids"]
                pids = Path(point, own, group, name)
                pids.mkdir(parents=True)
                made["join"].append(str(pids))
                _write(pids / "pids.max", str(tasks))
        except OSError:
            remove_cgroup(made)
            return None
        return made
    except OSError:
        return None


def join_cgroup(cgroup: dict | None) -> None:
    """Move this process into `cgroup` (before it execs bwrap): all the
    sandbox's processes start in there."""
    for folder in (cgroup or {}).get("join", []):
        _write(Path(folder, "cgroup.procs"), str(os.getpid()))


def remove_cgroup(cgroup: dict | None, seconds: float = 5) -> None:
    """Kill whatever still runs in `cgroup` and remove it, and this grader's
    group once it holds no other student's."""
    for folder in (cgroup or {}).get("join", []):
        deadline = time.monotonic() + seconds
        while True:
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
            with contextlib.suppress(OSError):
                for pid in Path(folder, "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            os.rmdir(Path(folder).parent)  # fails while other students use it


def cgroup_note(memory_bytes: int, tasks: int) -> str:
    """One line for the grader's output: whether a cgroup caps each
    student's whole sandbox on this machine (tried for real: a group is
    made, limited, and a process moved into it), or only the per-process
    limits hold."""
    cgroup = make_cgroup("probe", memory_bytes, tasks)
    ok = False
    if cgroup is not None:
        try:
            proc = subprocess.Popen(["sleep", "30"], preexec_fn=lambda: join_cgroup(cgroup))
            try:
                ok = str(proc.pid) in Path(cgroup["join"][0], "cgroup.procs").read_text().split()
            finally:
                proc.kill()
                proc.wait()
        except (OSError, subprocess.SubprocessError):
            ok = False
        remove_cgroup(cgroup)
    if ok:
        kind = f"cgroup v{cgroup['version']}"
        tasks_capped = cgroup["version"] == 2 or len(cgroup["join"]) > 1
        return (f"kernel sandbox: each student's whole sandbox is capped by a {kind}: "
                f"{memory_bytes // 2 ** 20} MB of memory (all its processes and "
                "scratch files together, no swap)"
                + (f", {tasks} processes and threads" if tasks_capped else ""))
    why = "not run as root" if os.geteuid() != 0 else "no usable cgroup on this machine"
    return (f"kernel sandbox: {why}: memory is capped per process only (--memory, "
            "RLIMIT_AS); several processes of one kernel can together use more")


if __name__ == "__main__":
    if sys.argv[1] == "--run":
        run_confined(sys.argv[2], sys.argv[4:])
    elif sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--kernel":
        run_kernel(sys.argv[2])
    elif sys.argv[1] == "--zygote":
        zygote(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        outside(sys.argv[1], sys.argv[2])
