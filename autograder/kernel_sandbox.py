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

Standard library only: the inside half runs before the kernel's imports.
"""
from __future__ import annotations

import json
import os
import resource
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
INSIDE = "/sandbox/kernel_sandbox.py"  # where the kernel sees this file
CONNECTION = "/sandbox/connection.json"  # and its connection file
# variables a kernel may keep from the grader's environment
PASS_ENV = ("LANG", "LC_ALL", "PYTHONHASHSEED", "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MPLBACKEND")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


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
                  env: dict[str, str]) -> list[str]:
    """bwrap argv running `cmd` with only the listed folders in sight.

    `work` becomes an empty tmpfs of `scratch_bytes` (so does /tmp), with
    the files and folders already in it bound read-only on top; `writable` folders are
    bound read-write at their own paths.
    """
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
    for path in sorted(work.iterdir()) if work.is_dir() else []:
        # files and folders (the project's corpus/), never a symbolic link
        # (grade.py drops those from a submission anyway)
        if not path.is_symlink() and (path.is_file() or path.is_dir()):
            args += ["--ro-bind", str(path), str(path)]
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


def outside(settings_file: str, connection_file: str) -> None:
    """Run by the kernel manager in the notebook's folder: exec bwrap."""
    s = json.loads(Path(settings_file).read_text(encoding="utf-8"))
    conn = Path(connection_file).resolve()
    info = json.loads(conn.read_text(encoding="utf-8"))
    if info.get("transport") != "ipc" or not info["ip"].startswith("/"):
        raise SystemExit("kernel_sandbox: the kernel must use Unix sockets "
                         "(--KernelManager.transport=ipc, an absolute ip)")
    uid = s.get("uid")
    if uid is not None:
        os.chown(conn, uid, uid)  # the kernel reads its keys as that uid
    base = threads_of(os.getuid() if uid is None else uid)
    limits = {"memory": s["memory_bytes"], "file": s["file_bytes"],
              "nproc": base + s["processes"], "uid": uid}
    inner = [sys.executable, "-S", INSIDE, "--inside", json.dumps(limits),
             CONNECTION]
    # only the sockets' own folder is shared; the connection file (which
    # jupyter_client may leave in the grader's /tmp, and which ipykernel
    # rewrites at start) is bound by itself
    sockets = str(Path(info["ip"]).parent)
    cmd = bwrap_command(inner, Path.cwd(), s["readonly"], [sockets],
                        s["scratch_bytes"], kernel_env())
    # this file and the connection file, at paths that say nothing about
    # where the repository or the grader keep them
    cmd[1:1] = ["--perms", "0755", "--dir", str(Path(INSIDE).parent),
                "--ro-bind", str(HERE), INSIDE, "--bind", str(conn), CONNECTION]
    os.execvp(cmd[0], cmd)


def inside(limits_json: str, connection_file: str) -> None:
    """Run inside the sandbox: set the limits, drop root, exec the kernel."""
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
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher",
                              "-f", connection_file])


if __name__ == "__main__":
    if sys.argv[1] == "--inside":
        inside(sys.argv[2], sys.argv[3])
    else:
        outside(sys.argv[1], sys.argv[2])
