"""Run the course on a JupyterHub on this machine: the set-up checks and
the nbgrader exchange steps, one sub-command each (the Makefile calls them).

    python hub/hubctl.py start [--port 8000] [--grader NAME] [--exchange DIR]
    python hub/hubctl.py add-user NAME [--password-stdin] [--grader]
    python hub/hubctl.py release ASSIGNMENT [--course DIR] [--exchange DIR]
    python hub/hubctl.py collect ASSIGNMENT [--course DIR] [--exchange DIR]
    python hub/hubctl.py release-feedback ASSIGNMENT --grades DIR [--exchange DIR]
    python hub/hubctl.py grader-access --grades DIR [--grader NAME]
    python hub/hubctl.py runtime [--prefix DIR]
    python hub/hubctl.py check-node

What `start` checks and fixes first, each a problem found when this pack
was first run on a hub (hub/README.md):

* the students' servers need a Python every account can run: the pack's
  .venv may be built from an interpreter under a home folder of mode 0700
  (pyenv's, say), so the hub gets its own environment, the runtime, under
  /opt/rag-course-hub, built from the system's Python 3.11 with the
  student's packages, jupyterhub, ragkit and data (no master, no solution);
* home folders made 0755 by Debian let every student read every other
  one's files, the instructor's masters included: homes become 0700, new
  ones too (HOME_MODE in /etc/login.defs), and the repository itself
  (masters, .git, grades) loses every bit for others; then the account
  nobody and a student account must find no file of it they can read;
* the exchange gets nbgrader's permissions with the sticky bit on its root
  and on inbound, and one whose permissions drifted stops the start with
  the chmod that puts them back;
* no disk quotas here: a new exchange goes on a disk image of a fixed size
  (hub/disks.py), as each student's home does when their server starts;
* configurable-http-proxy comes from npm into .venv/node; node older than
  20 stops with what to install; a port in use stops with how to pick
  another; a grader account that does not exist stops with how to add it.

Anything found wrong raises HubProblem, whose message names the problem and
says what to do; main() prints it and exits with status 2.
"""
from __future__ import annotations

import argparse
import contextlib
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

HUB = Path(__file__).resolve().parent
# hub/disks.py (this script's folder is on the path); importing it also puts the sbin folders on PATH (useradd,
# chpasswd, runuser, mkfs.ext4), which a bare PATH (env -i, cron, CI) leaves out
import disks  # noqa: E402

ROOT = HUB.parent
COURSE_ID = "rag-building-blocks"  # autograder/run/nbgrader_config.py's course id
PREFIX = Path("/opt/rag-course-hub")
EXCHANGE = Path("/srv/nbgrader/exchange")
# the hub's database and cookie secret, 0700: beside GRADES
# (/srv/rag-course-hub/grades in hub/README.md), never around it
STATE = Path("/srv/rag-course-hub/state")
STUDENTS_GROUP = "rag-students"
GRADER = "rag-grader"
NODE_MIN = 20  # configurable-http-proxy 5.3.0 declares node >= 20
PROXY = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
# nbgrader's modes (nbgrader/exchange/default/*.py), for a course on one
# machine, with the sticky bit on the root and on inbound: only a folder's
# owner (and root) may rename or remove it, so nobody swaps the course
# folder or replaces a class-mate's submission
EXCHANGE_MODES = {"": 0o1777, "{course}": 0o755, "{course}/outbound": 0o755,
                  "{course}/inbound": 0o3733, "{course}/feedback": 0o711}
# the pack's folders that hold masters, solutions or hidden tests
PRIVATE = ("source", "notebooks", "autograder", "tools", "tests")
NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")  # what useradd accepts on Debian
# the most one submission may hold, at submit and at collect (no disk quotas
# here): a project with its corpus is about 1 MB
EXCHANGE_BYTES = 20 * 2 ** 20


class HubProblem(Exception):
    """Something on this machine that stops the hub; the message says what to do."""


# ------------------------------------------------------------ small checks

def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise HubProblem(f"{what} must run as root (it runs servers as other accounts "
                         "and sets folder permissions): run it with sudo")


def user(name: str, what: str = "user") -> pwd.struct_passwd:
    """The Linux account `name`, or HubProblem saying how to add it."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        how = (f"`.venv/bin/python hub/hubctl.py add-user {name} --grader`"
               if what == "grader account" else f"`make hub-user U={name}`")
        raise HubProblem(f"no such {what} on this machine: {name!r}; add the account "
                         f"with {how} (or useradd) and try again") from None


def node_version(node: str = "node") -> tuple[int, ...]:
    path = shutil.which(node)
    if path is None:
        raise HubProblem(f"node not found: configurable-http-proxy needs node {NODE_MIN} or "
                         "newer (on Debian 13: apt-get install nodejs npm)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()
    found = re.match(r"v?(\d+)\.(\d+)\.(\d+)", out)
    if not found:
        raise HubProblem(f"cannot read node's version from {out!r} ({path})")
    return tuple(int(x) for x in found.groups())


def check_node(version: tuple[int, ...] | None = None) -> tuple[int, ...]:
    version = version or node_version()
    if version[0] < NODE_MIN:
        shown = ".".join(map(str, version))
        raise HubProblem(f"node {shown} is too old: configurable-http-proxy 5.3.0 needs "
                         f"node {NODE_MIN} or newer; install a newer nodejs (Debian 13's, or "
                         "NodeSource's packages) and run make hub again")
    return version


def check_proxy(proxy: Path = PROXY) -> Path:
    if not os.access(proxy, os.X_OK):
        raise HubProblem(f"configurable-http-proxy is not installed at {proxy}: `make hub` "
                         "installs it from npm (npm install --prefix .venv/node "
                         "configurable-http-proxy@5.3.0)")
    return proxy


def check_port(port: int, ip: str = "127.0.0.1", what: str = "the hub") -> int:
    with socket.socket() as sock:
        try:
            sock.bind((ip, port))
        except OSError:
            raise HubProblem(f"port {port} on {ip} is in use, so {what} cannot listen there: "
                             f"pick another (make hub PORT=...) or stop what holds it "
                             f"(ss -ltnp 'sport = :{port}' shows it)") from None
    return port


def free_port(ip: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------ the exchange

def exchange_modes(root: Path, course: str = COURSE_ID) -> dict[Path, int]:
    return {root / part.format(course=course) if part else root: mode
            for part, mode in EXCHANGE_MODES.items()}


def check_exchange(root: Path, course: str = COURSE_ID, create: bool = True) -> None:
    """Make the exchange and the course's folders with their modes if they
    are not there (before nbgrader's release would make them without the
    sticky bit); stop with the commands that repair it if any folder's mode
    or owner drifted."""
    modes = exchange_modes(root, course)
    if create and not os.path.lexists(root):
        root.mkdir(parents=True)
        root.chmod(modes[root])
    if not root.is_dir():
        raise HubProblem(f"the exchange {root} is not a folder: create it with "
                         f"`mkdir -p {root} && chmod 1777 {root}` (or pick another, EXCHANGE=...)")
    for path, mode in modes.items() if create else []:
        if not os.path.lexists(path):
            path.mkdir()
            path.chmod(mode)
    drifted = []
    for path, mode in modes.items():
        if not os.path.lexists(path):
            continue
        now = stat.S_IMODE(path.lstat().st_mode)
        if now != mode or path.is_symlink() or (path != root and path.lstat().st_uid != 0):
            drifted.append((path, now, mode))
    if drifted:
        lines = "; ".join(f"{p} is {oct(now)[2:]}, the course wants {oct(m)[2:]}"
                          for p, now, m in drifted)
        fix = " && ".join(f"chown root {p} && chmod {oct(m)[2:]} {p}" for p, _, m in drifted)
        raise HubProblem(f"the exchange's permissions drifted ({lines}): students could read, "
                         "replace or swap each other's work. "
                         f"Put them back with `{fix}` and check "
                         "that nothing was read or changed, then start again")


def exchange_on_disk(root: Path, megabytes: int = disks.EXCHANGE_MB,
                     folder: Path = disks.DISKS) -> str | None:
    """A new exchange on an image of its own (hub/disks.py), so that what
    students write into inbound fills that image, never the machine's disk;
    returns the line to print (None when `megabytes` is 0)."""
    try:
        return disks.exchange_disk(root, EXCHANGE_MODES[""], folder, megabytes)
    except disks.DiskProblem as problem:
        raise HubProblem(f"{problem}; or run without a disk of its own for the exchange "
                         "(RAG_HUB_EXCHANGE_MB=0)") from None


def check_loop_devices() -> None:
    """The homes' and the exchange's images need loop devices and mkfs.ext4."""
    if not os.path.exists("/dev/loop-control") or shutil.which("mkfs.ext4") is None:
        raise HubProblem("this machine offers no loop devices (/dev/loop-control) or no "
                         "mkfs.ext4 (apt-get install e2fsprogs), which the fixed-size homes "
                         "and exchange need: add them, or run without those caps "
                         "(RAG_HUB_HOME_MB=0 RAG_HUB_EXCHANGE_MB=0 make hub; hub/README.md)")


# ------------------------------------------------------------ accounts

def homes() -> list[Path]:
    """The home folders of people's accounts (uid 1000 and up)."""
    return sorted({Path(u.pw_dir) for u in pwd.getpwall()
                   if 1000 <= u.pw_uid < 60000 and Path(u.pw_dir).is_dir()
                   and Path(u.pw_dir).parent == Path("/home")})


def close_homes(login_defs: Path = Path("/etc/login.defs")) -> list[str]:
    """Homes 0700, new ones too; returns what changed."""
    changed = []
    for home in homes():
        if stat.S_IMODE(home.stat().st_mode) & 0o077:
            home.chmod(0o700)
            changed.append(f"{home}: now 0700 (other accounts could read it)")
    if login_defs.is_file():
        text = login_defs.read_text()
        if not re.search(r"^HOME_MODE\s+0?700\s*$", text, re.M):
            text = re.sub(r"^#?\s*HOME_MODE\s+\S+\s*$", "", text, flags=re.M)
            login_defs.write_text(text.rstrip("\n") + "\nHOME_MODE\t0700\n")
            changed.append(f"{login_defs}: HOME_MODE 0700 for new accounts")
    return changed


def close_pack(root: Path = ROOT) -> list[str]:
    """The repository itself (masters, .git, grades kept in it, built sites
    and bundles) and, should it be opened again, its folders with solutions
    or hidden tests: no access for other accounts. The students' servers
    need none of it: they run from the runtime under /opt."""
    changed = []
    for folder in [root, *(root / name for name in PRIVATE)]:
        if folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) & 0o077:
            folder.chmod(stat.S_IMODE(folder.stat().st_mode) & 0o700)
            changed.append(f"{folder}: no access for other accounts (it holds solutions)")
    return changed


# run as another account: the first files of a folder it can read
READABLE = r"""
import os, sys
found = []
for folder, dirs, files in os.walk(sys.argv[1]):
    found += [p for p in (os.path.join(folder, n) for n in files) if os.access(p, os.R_OK)]
    if len(found) >= 5:
        break
print("\n".join(found[:5]))
"""


def readable_by(account: str, folder: Path, python: str) -> list[str]:
    """Up to five files under `folder` that `account` can read (`python`:
    one every account can run)."""
    done = subprocess.run(["runuser", "-u", account, "--", python, "-I", "-S", "-c", READABLE,
                           str(folder)], capture_output=True, text=True, cwd="/", timeout=120)
    return done.stdout.split()


def check_closed(python: str, root: Path = ROOT) -> list[str]:
    """Stop if the account nobody or a student reads any file of the
    repository; returns warnings (a worktree's .git kept elsewhere)."""
    accounts = ["nobody"]
    with contextlib.suppress(KeyError):
        accounts += sorted(grp.getgrnam(STUDENTS_GROUP).gr_mem)[:1]
    for account in accounts:
        found = readable_by(account, root, python)
        if found:
            raise HubProblem(
                f"the account {account!r} can read the course repository {root} (e.g. "
                f"{', '.join(found)}), with its masters, solutions and .git: keep the "
                "repository in a folder only root opens (`install -d -m 700 /root/course` "
                f"and clone it there, or `chmod 700 {root}` and remove any ACL: "
                f"setfacl -R -b {root}), then make hub again")
    git = root / ".git"
    warnings = []
    if git.is_file():  # a worktree: the objects are in another repository's .git
        common = Path(subprocess.run(["git", "-C", str(root), "rev-parse",
                                      "--git-common-dir"], capture_output=True,
                                     text=True).stdout.strip() or git)
        common = common if common.is_absolute() else root / common
        if readable_by("nobody", common, python):
            warnings.append(f"{common}, this worktree's git objects (every solution), is "
                            f"readable by other accounts: chmod 700 {common.parent}")
    return warnings


def add_user(name: str, password: str | None, group: str | None = STUDENTS_GROUP) -> str:
    """A Linux account for the hub (home 0700, in `group` unless None, as
    the grader account); returns its name."""
    require_root("adding an account")
    if not NAME.match(name):
        raise HubProblem(f"{name!r} is not a usable account name: lower-case letters, digits, "
                         "- and _, starting with a letter, at most 31 characters")
    if group is not None:
        try:
            grp.getgrnam(group)
        except KeyError:
            subprocess.run(["groupadd", group], check=True)
    groups = ["--groups", group] if group is not None else []
    try:
        pwd.getpwnam(name)
        if group is not None:
            subprocess.run(["usermod", "-a", "-G", group, name], check=True)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", *groups, name],
                       check=True)
    Path(pwd.getpwnam(name).pw_dir).chmod(0o700)
    if password is not None:
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
    return name


# ------------------------------------------------------------ the runtime

def runtime_python() -> str:
    """A Python 3.11 that every account can run, with its venv module."""
    for candidate in ("/usr/bin/python3.11", shutil.which("python3.11") or ""):
        if candidate and os.access(candidate, os.X_OK) and subprocess.run(
                ["runuser", "-u", "nobody", "--", candidate, "-c", "import venv, ensurepip"],
                capture_output=True).returncode == 0:
            return candidate
    raise HubProblem("no Python 3.11 that every account can run (the pack's .venv may come "
                     "from a Python under a home folder only its owner opens): on Debian run "
                     "`apt-get install python3.11 python3.11-venv` and make hub again")


def requirements() -> tuple[list[str], list[str]]:
    """(pins, no-deps pins) of the runtime: the student's set and the hub."""
    tool = [sys.executable, str(ROOT / "tools" / "requirements.py")]
    student = subprocess.run(tool + ["--student"], capture_output=True, text=True,
                             check=True).stdout.split()
    every = subprocess.run(tool, capture_output=True, text=True, check=True).stdout.split()
    hub = [r for r in every if r.split("==")[0] in ("jupyterhub", "jupyterhub-idle-culler")]
    no_deps = subprocess.run(tool + ["--student", "--no-deps"], capture_output=True,
                             text=True, check=True).stdout.split()
    return sorted(set(student + hub) - set(no_deps)), no_deps


def course_files() -> dict[str, bytes]:
    """ragkit/ and data/ as the student bundle has them: no solution in them."""
    from tools import build_bundle

    return {name: data for name, data in sorted(build_bundle.collect(ROOT).items())
            if name.split("/")[0] in ("ragkit", "data")}


def student_config(exchange_env: str = "RAG_COURSE_EXCHANGE") -> dict[str, str]:
    """The runtime's etc/jupyter: what every student server reads."""
    page = json.loads((ROOT / "tools" / "student_bundle" / "jupyter-config" / "labconfig"
                       / "page_config.json").read_text())
    # a student on the hub fetches and submits in the Assignments panel, which
    # the Nbgrader menu opens (its other items have no command left to show)
    for plugin in ("assignment-list", "menu"):
        page["disabledExtensions"].pop(f"@jupyter/nbgrader:{plugin}", None)
    server = {"ServerApp": {"jpserver_extensions": {
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.assignment_list": True,
        "nbgrader.server_extensions.formgrader": False,
        "nbgrader.server_extensions.course_list": False}}}
    nbgrader = (
        '"""nbgrader on the course hub (written by hub/hubctl.py)."""\n'
        "import os\n\nc = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = os.environ.get({exchange_env!r}, {str(EXCHANGE)!r})\n"
        "c.KernelManager.transport_encryption = 'auto'\n"
        "c.ExchangeFactory.submit = 'student_submit.ClosedSubmit'\n"
        f"c.ClosedSubmit.max_bytes = {EXCHANGE_BYTES}\n")
    return {"etc/jupyter/labconfig/page_config.json": json.dumps(page, indent=1, sort_keys=True),
            "etc/jupyter/jupyter_server_config.d/zz-rag-course.json":
                json.dumps(server, indent=1, sort_keys=True),
            "etc/jupyter/nbgrader_config.py": nbgrader}


# the formgrader service's settings: the pack's CSP settings, and formgrader
# on (the runtime's etc/jupyter turns it off for students)
FORMGRADER_SERVICE = (
    '"""formgrader as a hub service (written by hub/hubctl.py)."""\n'
    "from pathlib import Path\n\nc = get_config()  # noqa: F821\n"
    "load_subconfig('formgrader_server_config.py', path=str(Path(__file__).parent))  # noqa: F821\n"
    "c.ServerApp.jpserver_extensions.update({\n"
    "    'nbgrader.server_extensions.formgrader': True,\n"
    "    'nbgrader.server_extensions.assignment_list': False})\n")


def ensure_runtime(prefix: Path = PREFIX, quiet: bool = False) -> Path:
    """Build or refresh the runtime under `prefix`; returns its venv. Fast
    when nothing changed (one stamp for the packages, one for the files)."""
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    venv = prefix / "venv"
    pins, no_deps = requirements()
    wanted = "\n".join(pins + ["--no-deps"] + no_deps) + "\n"
    stamp = prefix / "packages.txt"
    if not (venv / "bin" / "python").exists() or not stamp.is_file() \
            or stamp.read_text() != wanted:
        require_root("building the hub's runtime")
        python = runtime_python()
        say(f"hub runtime: a venv from {python} in {venv} (a few minutes the first time)")
        prefix.mkdir(parents=True, exist_ok=True)
        prefix.chmod(0o755)
        if not (venv / "bin" / "python").exists():
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
               "--disable-pip-version-check", "--no-compile"]
        subprocess.run(pip + pins, check=True)
        if no_deps:
            subprocess.run(pip + ["--no-deps"] + no_deps, check=True)
        # the .pyc files on every core, not one at a time as pip makes them;
        # like pip, a file that does not compile (a template) is skipped
        purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                                  "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run([str(venv / "bin" / "python"), "-m", "compileall", "-q", "-j", "0",
                        purelib], stdout=subprocess.DEVNULL)
        stamp.write_text(wanted)
    files = {f"course/{k}": v for k, v in course_files().items()}
    files.update({k: v.encode() for k, v in student_config().items()})
    for name in ("formgrader_csp.py", "formgrader_server_config.py"):
        files[f"formgrader/{name}"] = (ROOT / "autograder" / "reports" / name).read_bytes()
    files["formgrader/hub_service_config.py"] = FORMGRADER_SERVICE.encode()
    files["course/student_submit.py"] = (HUB / "student_submit.py").read_bytes()
    digest = hashlib.sha256(b"".join(k.encode() + b"\0" + v for k, v in files.items())).hexdigest()
    if (prefix / "files.sha256").is_file() and (prefix / "files.sha256").read_text() == digest:
        return venv
    require_root("refreshing the hub's runtime")
    say(f"hub runtime: ragkit, data and the student configuration in {prefix}")
    shutil.rmtree(prefix / "course", ignore_errors=True)
    for name, data in files.items():
        target = (venv if name.startswith("etc/") else prefix) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "rag-course.pth").write_text(f"{prefix / 'course'}\n")
    for folder, dirs, names in os.walk(prefix):
        os.chmod(folder, 0o755)
        for n in names:
            path = os.path.join(folder, n)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)
    (prefix / "files.sha256").write_text(digest)
    return venv


def check_runtime(venv: Path, account: str = "nobody") -> None:
    """Every account can start Python and import what a student server needs."""
    done = subprocess.run(["runuser", "-u", account, "--", str(venv / "bin" / "python"), "-c",
                           "import jupyterhub, nbgrader, jupyterlab, ragkit.reference"],
                          capture_output=True, text=True, cwd="/")
    if done.returncode:
        raise HubProblem(f"the account {account!r} cannot run the hub's Python {venv}: "
                         f"{done.stderr.strip().splitlines()[-1:]}; rebuild it with "
                         f"`rm -rf {venv.parent} && make hub`")


# ------------------------------------------------------------ nbgrader steps

def nbgrader(args: list[str], course: Path, exchange: Path, check: bool = True):
    """One nbgrader exchange command in `course`, with this course's id and exchange."""
    command = [str(Path(sys.executable).parent / "nbgrader"), *args,
               f"--CourseDirectory.root={course}", f"--CourseDirectory.course_id={COURSE_ID}",
               f"--Exchange.root={exchange}"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}"
               f"{os.environ.get('PATH', '')}")
    done = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True)
    log = done.stdout + done.stderr
    failed = done.returncode or re.search(r"\[(ERROR|CRITICAL)\]", log)
    if check and failed:
        raise HubProblem(f"nbgrader {args[0]} failed in {course}:\n{log[-2000:]}")
    return log


def release(assignment: str, course: Path, exchange: Path) -> str:
    require_root("releasing to the exchange")
    if not (course / "release" / assignment).is_dir():
        raise HubProblem(f"no release/{assignment} in {course}: build it first (make build)")
    exchange_on_disk(exchange)
    check_exchange(exchange)
    return nbgrader(["release_assignment", assignment, "--force"], course, exchange)


def collect(assignment: str, course: Path, exchange: Path) -> list[str]:
    """Each student's newest acceptable submission into COURSE/submitted/
    through the intake gate (hub/exchange_collect.py: who and when from
    what the student cannot write); an earlier collected copy is kept in
    COURSE/earlier-submissions/. Returns the lines of those refused and of
    those collected without some of their entries (links, pipes, devices),
    after printing every row."""
    from exchange_collect import Swapped, collect as collect_exchange

    require_root("collecting from the exchange")
    check_exchange(exchange, create=False)
    try:
        done = collect_exchange(assignment, course, exchange, COURSE_ID, EXCHANGE_BYTES)
    except Swapped as err:
        raise HubProblem(f"collect stopped: {err}. Check the exchange's folders "
                         f"(ls -la {exchange} {exchange / COURSE_ID}) and collect again") from None
    for row in done.rows:
        when = f"received {row.received}, its timestamp.txt says {row.claimed}" \
            if row.received else f"named {row.claimed}"
        print(f"{row.status:9} {row.student}: {row.submission} ({when})"
              + (f": {row.note}" if row.note else ""))
    return [f"{r.student}: {r.submission}: {r.note}" for r in done.refused + done.partly]


def release_feedback(assignment: str, grades: Path, exchange: Path) -> str:
    """nbgrader release_feedback from GRADES/<assignment>/, a course root
    whose feedback/<student>/<assignment>/ holds the pack's feedback pages."""
    require_root("releasing feedback to the exchange")
    course = grades / assignment
    if not (course / "feedback").is_dir():
        raise HubProblem(f"no feedback in {course}: grade first (make grade SUBMISSIONS=... "
                         f"GRADES={grades})")
    check_exchange(exchange, create=False)
    log = nbgrader(["release_feedback", assignment], course, exchange)
    # nbgrader's copy keeps the page's mode, 0600 as `make grade` writes it:
    # each student fetches theirs by a name only they can compute (from
    # their submission's secret), so the released copies are readable
    released = exchange / COURSE_ID / "feedback"
    with os.scandir(released) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == 0:
                os.chmod(entry.path, 0o644)
    return log


# ------------------------------------------------------------ starting the hub

def hand_to_grader(grades: Path, grader: str) -> Path:
    """GRADES/formgrader, the course formgrader serves, owned by the grader
    account and closed to everyone else, as is the rest of GRADES (run again
    after each `make grade`: hubctl.py grader-access); returns it.

    A new one is made a course folder with an empty gradebook before the
    service starts, so that `course.py grade` fills it in place instead of
    replacing the folder the running service works in."""
    account = user(grader, "grader account")
    course = grades / "formgrader"
    if not (course / "gradebook.db").exists():
        from nbgrader.api import Gradebook
        from autograder.run.nbgrader_cli import GRADER_FILES, course_folder
        from autograder.run.nbgrader_main import use_alembic_head

        use_alembic_head()  # the gradebook's revision read here, not by `alembic`
        shutil.rmtree(course / "source", ignore_errors=True)
        course_folder(course, ROOT / "source", *GRADER_FILES)
        Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID).close()
    # everything but formgrader/ closed first, then the grader may walk
    # through GRADES to it (0711: it lists nothing): the sheet, late work
    # and deadlines are never open to other accounts, not even for a moment
    for child in grades.iterdir():
        if child != course and not child.is_symlink():
            child.chmod(stat.S_IMODE(child.stat().st_mode) & 0o700)
    course.chmod(0o700)
    for folder, _, names in os.walk(course):
        for path in [folder, *(os.path.join(folder, n) for n in names)]:
            os.lchown(path, account.pw_uid, account.pw_gid)
    grades.chmod(0o711)
    return course


def hub_environment(*, port: int, state: Path, exchange: Path, grader: str, grades: Path,
                    venv: Path, auth: str = "pam", cull: int = 3600,
                    images: Path = disks.DISKS, home_mb: int = disks.HOME_MB) -> dict[str, str]:
    """What hub/jupyterhub_config.py reads; every port checked free."""
    ports = {"the hub": port}
    for what in ("the hub's API", "the proxy's API", "the formgrader service"):
        ports[what] = free_port()
    for what, p in ports.items():
        check_port(p, what=what)
    return {"RAG_HUB_PORT": str(port), "RAG_HUB_API_PORT": str(ports["the hub's API"]),
            "RAG_HUB_PROXY_API_PORT": str(ports["the proxy's API"]),
            "RAG_HUB_FORMGRADER_PORT": str(ports["the formgrader service"]),
            "RAG_HUB_STATE": str(state), "RAG_COURSE_EXCHANGE": str(exchange),
            "RAG_HUB_GRADER": grader, "RAG_HUB_GRADES": str(grades),
            "RAG_HUB_VENV": str(venv), "RAG_HUB_PROXY": str(check_proxy()),
            "RAG_HUB_AUTH": auth, "RAG_HUB_CULL": str(cull),
            "RAG_HUB_STUDENTS": STUDENTS_GROUP, "RAG_HUB_PYTHON": sys.executable,
            "RAG_HUB_DISKS": str(images), "RAG_HUB_HOME_MB": str(home_mb)}


def prepare(*, port: int, state: Path, exchange: Path, grader: str, grades: Path,
            prefix: Path = PREFIX, auth: str = "pam", quiet: bool = False,
            images: Path = disks.DISKS, home_mb: int = disks.HOME_MB,
            exchange_mb: int = disks.EXCHANGE_MB) -> dict[str, str]:
    """Every check and fix of `start`, in order; returns the hub's
    environment. `images` is the folder of the disk images of the homes
    (`home_mb` MB each, made as each server first starts) and of a new
    exchange (`exchange_mb` MB); 0 MB leaves them on the machine's disk."""
    require_root("the hub")
    check_node()
    check_proxy()
    user(grader, "grader account")
    check_port(port)
    venv = ensure_runtime(prefix, quiet=quiet)
    check_runtime(venv)
    for line in close_homes() + close_pack():
        if not quiet:
            print(f"fixed: {line}")
    for line in check_closed(str(venv / "bin" / "python")):
        print(f"warning: {line}", file=sys.stderr)
    if home_mb or exchange_mb:
        check_loop_devices()
    said = exchange_on_disk(exchange, exchange_mb, images)
    if said and not quiet:
        print(f"the exchange: {said}")
    check_exchange(exchange)
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    course = hand_to_grader(grades, grader)
    for folder in [grades, *grades.parents]:  # the grader walks to it, reads nothing else
        if folder == Path("/"):
            break
        mode = stat.S_IMODE(folder.stat().st_mode)
        if not mode & 0o001:
            raise HubProblem(f"the grader account cannot reach {course}: {folder} is closed "
                             "to other accounts; put GRADES=... outside the repository (which "
                             "make hub closes) and your home folder: "
                             "GRADES=/srv/rag-course-hub/grades, say")
    return hub_environment(port=port, state=state, exchange=exchange, grader=grader,
                           grades=grades, venv=venv, auth=auth, images=images,
                           home_mb=home_mb)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="check, fix, then run the hub in the foreground")
    start.add_argument("--port", type=int, default=8000)
    start.add_argument("--grader", default=GRADER)
    start.add_argument("--grades", type=Path, default=Path("/srv/rag-course-hub/grades"))
    start.add_argument("--state", type=Path, default=STATE)
    start.add_argument("--auth", choices=["pam", "shared"], default="pam")
    add = sub.add_parser("add-user", help="a student account (or --grader)")
    add.add_argument("name")
    add.add_argument("--password-stdin", action="store_true")
    add.add_argument("--grader", action="store_true",
                     help="the grader account: not in the students' group")
    access = sub.add_parser("grader-access", help="after make grade: GRADES/formgrader to "
                            "the grader account, the rest of GRADES closed")
    access.add_argument("--grades", type=Path, default=ROOT / "grades")
    access.add_argument("--grader", default=GRADER)
    steps = {}
    for name in ("release", "collect", "release-feedback"):
        steps[name] = sub.add_parser(name)
        steps[name].add_argument("assignment")
        steps[name].add_argument("--course", type=Path, default=ROOT)
        steps[name].add_argument("--grades", type=Path, default=ROOT / "grades")
    sub.add_parser("check-node", help="node is new enough for the proxy")
    runtime = sub.add_parser("runtime", help="build or refresh the students' environment")
    runtime.add_argument("--prefix", type=Path, default=PREFIX)
    for p in [start, *steps.values()]:
        p.add_argument("--exchange", type=Path, default=EXCHANGE)
    args = parser.parse_args(argv)
    try:
        if args.command == "check-node":
            print(f"node {'.'.join(map(str, check_node()))}: new enough for the proxy")
        elif args.command == "runtime":
            check_runtime(ensure_runtime(args.prefix))
            print(f"hub runtime ready: {args.prefix / 'venv'}")
        elif args.command == "add-user":
            password = sys.stdin.readline().rstrip("\n") if args.password_stdin else None
            add_user(args.name, password, None if args.grader else STUDENTS_GROUP)
            print(f"account {args.name}: home 0700"
                  + ("" if args.grader else f", in group {STUDENTS_GROUP}")
                  + ("" if password else f"; set its password with `passwd {args.name}`"))
        elif args.command == "grader-access":
            require_root("handing the graded course to the grader account")
            course = hand_to_grader(args.grades.resolve(), args.grader)
            print(f"{course}: the grader account {args.grader}'s; the rest of "
                  f"{args.grades} closed to other accounts")
        elif args.command == "release":
            print(release(args.assignment, args.course.resolve(), args.exchange))
        elif args.command == "collect":
            refused = collect(args.assignment, args.course.resolve(), args.exchange)
            print(f"collected into {args.course.resolve() / 'submitted'} (every row in "
                  f"{args.course.resolve() / 'exchange_collected.csv'}); grade with "
                  f"`make grade SUBMISSIONS={args.course.resolve() / 'submitted'}`")
            if refused:
                print(f"make collect-exchange: {len(refused)} submission(s) refused, or "
                      "collected without what was refused in them:\n  " + "\n  ".join(refused),
                      file=sys.stderr)
                return 1
        elif args.command == "release-feedback":
            print(release_feedback(args.assignment, args.grades.resolve(), args.exchange))
        elif args.command == "start":
            env = prepare(port=args.port, state=args.state, exchange=args.exchange,
                          grader=args.grader, grades=args.grades.resolve(), auth=args.auth)
            print(f"\nthe hub: http://127.0.0.1:{args.port}/ (students log in with their "
                  "Linux account and password)\nadd a student: sudo make hub-user U=name "
                  f"(then `passwd name`); the grader account is {args.grader}, who opens "
                  f"/services/formgrader/formgrader\nthe exchange: {args.exchange}; "
                  "stop the hub with Ctrl-C", flush=True)
            os.execve(sys.executable, [sys.executable, "-m", "jupyterhub", "-f",
                                       str(HUB / "jupyterhub_config.py")],
                      dict(os.environ, **env))
    except HubProblem as problem:
        print(f"make hub: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
