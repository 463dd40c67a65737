"""Autograde one student and write their feedback, in one nbgrader process.

    python autograde_steps.py COURSE ASSIGNMENT STUDENT SETTINGS_JSON

grade.py runs this once per student, in the student's own course folder
(with its nbgrader_config.py and gradebook): forked from a server process
that imported nbgrader once for the whole class (`child`), or as the command
above where a fork server cannot run (a Dask worker). Importing nbgrader and
nbconvert costs about 3 s of CPU on a 2-core machine, which plain `nbgrader
autograde` pays once and two commands per student would pay twice each.
SETTINGS_JSON holds the grading settings that are not in
nbgrader_config.py, as traitlets config (e.g. {"Execute": {"timeout": 60}}).

Each step's log is printed as nbgrader's command line prints it; the seconds
each step took go to COURSE/steps.json. The exit status is 0 when both
steps went well, 1 when autograde failed (feedback is then not written) and
2 when generate_feedback failed.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

# run as a script in the grader's sandbox, from the sandbox's own copy of
# the package (outer, below): that copy, not an installed one, is what must
# be imported, so the folder that holds it goes first
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from autograder.run.kernel_sandbox import (launch_zygote, runtime_tmpfs, start_zygote,
                                           stop_zygote)
from autograder.run.nbgrader_cli import die_with_parent


def child(course: str, assignment: str, student: str, settings: str, log: str,
          env: dict[str, str]) -> None:
    """The body of a forked process: `main`, with the environment `env`,
    stdout and stderr appended to `log`, and death when its parent dies."""
    die_with_parent()
    os.environ.clear()
    os.environ.update(env)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    code = main(course, assignment, student, settings)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no atexit handlers of the server it was forked from


def sockets_on_tmpfs(course: str) -> None:
    """As root, the kernels' sockets folder becomes a small tmpfs of its own,
    mounted nosymfollow in a mount namespace private to this process and the
    kernels it starts (kernel_sandbox.runtime_tmpfs); it goes when they do.
    Before nbgrader starts a thread: a mount namespace is per thread."""
    settings = Path(course, "kernel_sandbox.json")
    if settings.exists() and os.geteuid() == 0:
        s = json.loads(settings.read_text(encoding="utf-8"))
        if why := runtime_tmpfs(s["sockets"], s.get("uid")):
            print(f"kernel_sandbox: the kernels' sockets folder: {why}", flush=True)


def grader_sandbox_settings(course: str) -> dict | None:
    """The course's sandbox settings when its steps run in the grader's
    sandbox (as root, when install_kernel set one up), else None: then
    nbgrader runs in this process (`steps`), otherwise in a new one there."""
    sandbox = Path(course, "kernel_sandbox.json")
    s = json.loads(sandbox.read_text(encoding="utf-8")) if sandbox.exists() else {}
    return s if s.get("grader") and os.geteuid() == 0 else None


def main(course: str, assignment: str, student: str, settings: str) -> int:
    """Grade one student: in a sandbox as the grader's user when install_kernel
    set one up (as root: `outer`), else here (`steps`)."""
    s = grader_sandbox_settings(course)
    if s is not None:
        return outer(course, assignment, student, settings, s)
    sockets_on_tmpfs(course)
    return steps(course, assignment, student, settings, zygote_here=True)


NO_ZYGOTE = "the student's zygote did not start: no kernel can run"


def outer(course: str, assignment: str, student: str, settings: str, s: dict) -> int:
    """As root: the kernels' sockets folder, the student's zygote, then the
    steps in the grader's sandbox (grader_sandbox.py), which asks the zygote
    for its kernels; its exit status."""
    import subprocess

    from autograder.run import grader_sandbox
    from autograder.run.kernel_sandbox import ZYGOTE, join_cgroup

    sockets_on_tmpfs(course)
    # the zygote's imports and nbgrader's start-up, side by side: a kernel
    # nbgrader asks for before the zygote serves waits for its socket
    # (kernel_sandbox.outside)
    launch = launch_zygote(Path(course), assignment, student)
    try:
        if launch is None:
            print(NO_ZYGOTE, flush=True)
            return 1
        grader = s["grader"]
        socket_path = Path(s["runtime"], ZYGOTE)
        # what a zygote started anew shows its kernels, kept where only root
        # writes: the course folder is the grader's user's from here on
        beside = Path(s["runtime"], "beside")
        shutil.copytree(Path(course, "submitted", student, assignment), beside, symlinks=True)
        grader_sandbox.hand_over(Path(course), grader["uid"])
        code = Path(grader["code"])
        inner = [sys.executable, str(code / "autograder" / "pipeline" / "autograde_steps.py"),
                 "--inner", course, assignment, student, settings]
        env = grader_sandbox.environment(s, Path(course), dict(os.environ))
        cmd = grader_sandbox.command(inner, Path(course), s, code, env)
        cgroup = grader.get("cgroup")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                preexec_fn=(lambda: join_cgroup(cgroup)) if cgroup else None)
        zygote = launch.wait(owner=grader["uid"])
        if zygote is None:
            proc.kill()
            proc.wait()
            print(NO_ZYGOTE, flush=True)
            return 1
        while proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)  # (returns as soon as the steps end)
            if zygote is not None and zygote.poll() is not None:
                # a kernel killed the zygote (kill -1): the next notebook's
                # kernel waits for a new one (kernel_sandbox.outside)
                socket_path.unlink(missing_ok=True)
                launch = launch_zygote(Path(course), assignment, student, settings=s,
                                       beside=beside)
                zygote = launch.wait(owner=grader["uid"]) if launch is not None else None
        return proc.returncode
    finally:
        if launch is not None:  # the latest zygote (stopping one that ended is a no-op)
            stop_zygote(launch.proc)


def steps(course: str, assignment: str, student: str, settings: str,
          zygote_here: bool) -> int:
    """nbgrader's two steps for one student, then what the grader reads of
    them, as data, in COURSE/results.json."""
    # imported here, not above: as root this module only starts the sandbox
    # that runs this function, and nbgrader's import is 2 s of CPU a student
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    os.chdir(course)  # nbgrader_config.py looks for rag_feedback.py here
    # nbgrader loads the steps nbgrader_config.py names from the course
    # folder's copy of the grader's files
    sys.path.insert(0, course)
    config = PyFileConfigLoader("nbgrader_config.py", path=course).load_config()
    config.merge(Config(json.loads(settings)))
    config.CourseDirectory.root = course
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    steps = {}

    def autograde():
        # one sandbox for the student's kernels, forking each from preloaded
        # imports (kernel_sandbox.py); only autograde runs student code
        zygote = start_zygote(Path(course), assignment, student) if zygote_here else None
        try:
            return api.autograde(assignment, student, force=True)
        finally:
            stop_zygote(zygote)

    for code, (name, run) in enumerate(
            [("autograde", autograde),
             ("generate_feedback",
              lambda: api.generate_feedback(assignment, student, force=True))], 1):
        print(f"$ nbgrader {name} {assignment} --student {student}", flush=True)
        began = time.monotonic()
        result = run()  # (what the kernels print lands here, before the log)
        steps[name] = round(time.monotonic() - began, 2)
        Path(course, "steps.json").write_text(json.dumps(steps))
        print(f"{result.get('log', '')}{result.get('error') or ''}", flush=True)
        if not result["success"]:
            return code
    write_results(Path(course), assignment, student)
    return 0


def write_results(course: Path, assignment: str, student: str) -> None:
    """The scores from the student's gradebook and the problems read from
    the autograded notebooks and feedback pages, as COURSE/results.json."""
    from autograder.scoring.release_check import hidden_code_shown, limits_hit
    from autograder.scoring.results import notebook_scores

    scores, cells, to_mark = notebook_scores(course, assignment, student)
    problems = limits_hit(course / "autograded" / student / assignment)
    problems += hidden_code_shown(course / "feedback", course / "source" / assignment)
    (course / "results.json").write_text(json.dumps(
        {"scores": scores, "cells": cells, "to_mark": to_mark, "problems": problems}))


if __name__ == "__main__":
    if sys.argv[1] == "--inner":  # in the grader's sandbox (outer)
        code = steps(*sys.argv[2:], zygote_here=False)
        # everything is written and closed (results.json, the gradebook's
        # commits); the interpreter's own shutdown of nbgrader's modules and
        # threads took 0.5-0.8 s a student and writes nothing
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(main(*sys.argv[1:]))
