"""How long grading a class takes: plain nbgrader against grade.py.

    python tools/bench_grading.py [--students 40] [--quick] [--runs ...] [--profile]

A class of --students submissions is made from the sample class (its five
students repeated under new names), then graded three ways, each timed on
the wall clock in this one run:

  nbgrader   one plain `nbgrader autograde` over the whole class, in one
             course folder, sequential, no sandbox and no feedback
  jobs=1     autograder/commands/grade.py --jobs 1 (sandbox, checks, feedback)
  jobs=2     autograder/commands/grade.py --jobs 2
  exec       grade.py --jobs 2 --kernel-start exec: every notebook's kernel
             a new interpreter in a new sandbox, instead of a fork of the
             student's zygote, which imported the masters' modules once
  kernel     grade.py --jobs 2 --tests-in kernel: the hidden tests run in
             the student's kernel, as plain nbgrader runs them, instead of
             in the judge; beside jobs=2 it prices the judge

and printed as ratios to the plain run, with where grade.py's time goes
(the shared template, then per student: autograde, generate_feedback and the
rest, summed over students). Not a test: timings depend on the machine and
on what else runs on it. --quick grades 6 students; --runs 2 times only
plain nbgrader and jobs=2 (the goal's ratio), for a large class in less time.

--profile grades the sample class's complete student alone, plain and with
grade.py --jobs 1, each under py-spy (every process the run starts), and
prints the seconds each kind of process (the kernels, nbgrader with the
judge, grade.py around them, ...) held the interpreter, side by side.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from autograder.run.nbgrader_cli import BIN, course_folder, nbgrader_env  # noqa: E402

SAMPLE = ROOT / "autograder" / "testbed" / "sample_class"


def make_class(where: Path, n: int) -> Path:
    originals = sorted(p for p in SAMPLE.iterdir() if (p / "lab").is_dir())
    for i in range(n):
        src = originals[i % len(originals)]
        shutil.copytree(src, where / f"s{i:03d}_{src.name}")
    return where


def timed(cmd: list[str], cwd: Path | None = None) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=nbgrader_env(), capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{proc.stdout[-2000:]}"
                         f"{proc.stderr[-2000:]}")
    return time.monotonic() - start


def plain_nbgrader(class_dir: Path, tmp: Path, around: tuple[str, ...] = ()) -> float:
    """nbgrader as its documentation runs it: one course, one autograde,
    with the environment's own `nbgrader` script (the autograde run under
    the command `around`, if any: --profile's py-spy)."""
    course = course_folder(tmp / "plain", ROOT / "source")
    nbgrader = str(BIN / "nbgrader")
    timed([nbgrader, "generate_assignment", "lab", "--force"], course)
    shutil.copytree(class_dir, course / "submitted")
    return timed([*around, nbgrader, "autograde", "lab", "--force"], course)


def grade_py(class_dir: Path, out: Path, jobs: int, *extra: str,
             around: tuple[str, ...] = ()) -> tuple[float, list[dict]]:
    seconds = timed([*around, sys.executable,
                     str(ROOT / "autograder" / "commands" / "grade.py"),
                     "--submissions", str(class_dir), "--out", str(out),
                     "--jobs", str(jobs), *extra])
    outcomes = [json.loads(p.read_text()) for p in (out / ".students").glob("*/outcome.json")]
    return seconds, outcomes


# --profile: where the CPU goes, process by process, one student both ways.
# py-spy samples every Python process the run starts (the kernels, nbgrader,
# the judge, the sandboxes' launchers) and, with --gil, only the thread that
# holds the interpreter: time numpy or BLAS spends with the lock released is
# not seen, so the figures are a floor, the same floor for both runs.
PROFILED = "ada_complete"  # the complete student: every test runs
RATE = 100  # samples a second
KINDS = (  # (what a process is called here, a piece of its command line)
    ("kernels", "ipykernel_launcher"),
    ("kernels", "kernel_sandbox.py --zygote"),
    ("nbgrader and the judge", "autograde_steps.py"),
    ("nbgrader and the judge", "bin/nbgrader autograde"),
    ("nbgrader (generate_assignment)", "bin/nbgrader generate_assignment"),
    ("grade.py (start, copies, report)", "commands/grade.py"),
    ("grade.py (start, copies, report)", "multiprocessing.forkserver"),
    ("similarity report", "similarity.py"),
)
# in the grader process: what the time went to, by the first frame of each
# sample that names one of these (outermost first)
STAGES = (("the judge", "Judge."), ("generate_feedback", ".generate_feedback ("),
          ("imports", "_find_and_load ("))


def spying(raw: Path) -> tuple[str, ...]:
    """The command that runs another under py-spy (environment.yml pins it),
    sampling every process it starts into `raw`."""
    return (str(BIN / "py-spy"), "record", "--subprocesses", "--gil", "--rate", str(RATE),
            "--format", "raw", "--output", str(raw), "--")


def kind_of(process_frame: str) -> str:
    return next((kind for kind, part in KINDS if part in process_frame), "other")


def per_kind(raw: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds of samples per kind of process, and the grader's by stage."""
    kinds: dict[str, float] = {}
    stages: dict[str, float] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        last = max(i for i, f in enumerate(frames) if f.startswith("process "))
        kind = kind_of(frames[last])
        seconds = int(count) / RATE
        kinds[kind] = kinds.get(kind, 0.0) + seconds
        if kind == "nbgrader and the judge":
            own = frames[last + 1:]
            stage = next((name for f in own for name, mark in STAGES if mark in f),
                         "nbgrader's own work")
            stages[stage] = stages.get(stage, 0.0) + seconds
    return kinds, stages


def profile(tmp: Path) -> int:
    """Grade PROFILED alone, plain nbgrader and grade.py --jobs 1, each under
    py-spy, and print the seconds each kind of process held the interpreter."""
    one = tmp / "one"
    shutil.copytree(SAMPLE / PROFILED, one / PROFILED)
    plain_nbgrader(one, tmp, around=spying(tmp / "plain.raw"))
    grade_py(one, tmp / "out", 1, around=spying(tmp / "ours.raw"))
    plain, ours = per_kind(tmp / "plain.raw"), per_kind(tmp / "ours.raw")
    print(f"{PROFILED} graded alone: seconds each kind of process held the interpreter "
          f"(py-spy --gil, {RATE} samples a second)\n")
    print(f"{'process':<36} {'nbgrader':>9} {'grade.py':>9}")
    for kind in dict.fromkeys([k for k, _ in KINDS] + ["other"]):
        a, b = plain[0].get(kind, 0.0), ours[0].get(kind, 0.0)
        if a or b:
            print(f"{kind:<36} {a:9.1f} {b:9.1f}")
    print(f"{'total':<36} {sum(plain[0].values()):9.1f} {sum(ours[0].values()):9.1f}")
    print("\nnbgrader and the judge, by stage")
    for stage in dict.fromkeys([s for s, _ in STAGES] + ["nbgrader's own work"]):
        print(f"  {stage:<34} {plain[1].get(stage, 0.0):9.1f} {ours[1].get(stage, 0.0):9.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="6 students")
    parser.add_argument("--runs", nargs="+", choices=["1", "2", "exec", "kernel"],
                        default=["1", "2", "exec"],
                        help="which grade.py runs to time beside plain nbgrader "
                             "(default: 1, 2 and exec)")
    parser.add_argument("--profile", action="store_true",
                        help=f"instead: {PROFILED} graded alone both ways under py-spy, "
                             "seconds per kind of process")
    args = parser.parse_args(argv)
    if args.profile:
        with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
            return profile(Path(tmp))
    n = 6 if args.quick else args.students
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp = Path(tmp)
        class_dir = make_class(tmp / "class", n)
        print(f"a class of {n} from {SAMPLE.relative_to(ROOT)}", flush=True)
        plain = plain_nbgrader(class_dir, tmp)
        print(f"plain nbgrader autograde: {plain:.0f} s", flush=True)
        rows = [("nbgrader (sequential, no sandbox, no feedback)", plain)]
        breakdown = None
        runs = {"1": (1, ()), "2": (2, ()), "exec": (2, ("--kernel-start", "exec")),
                "kernel": (2, ("--tests-in", "kernel"))}
        for run, (jobs, extra) in ((r, runs[r]) for r in runs if r in args.runs):
            seconds, outcomes = grade_py(class_dir, tmp / f"out-{run}", jobs, *extra)
            name = " ".join(["grade.py --jobs", str(jobs), *extra])
            rows.append((name, seconds))
            print(f"{name}: {seconds:.0f} s", flush=True)
            if jobs == 1:
                breakdown, total = outcomes, seconds
    print(f"\n{'run':<50} {'seconds':>8} {'/ nbgrader':>11} {'speed-up':>9}")
    for name, seconds in rows:
        print(f"{name:<50} {seconds:8.0f} {seconds / plain:11.2f} "
              f"{plain / seconds:8.2f}x")
    if breakdown is None:  # (with 2 workers the steps overlap: no breakdown)
        return 0
    steps: dict[str, float] = {}
    for o in breakdown:
        for step, s in o.get("steps", {}).items():
            steps[step] = steps.get(step, 0.0) + s
        steps["rest (copies, checks, bookkeeping)"] = steps.get(
            "rest (copies, checks, bookkeeping)", 0.0) + o["seconds"] - sum(
            o.get("steps", {}).values())
    print(f"\nwhere grade.py --jobs 1 spends its {total:.0f} s")
    for step, s in steps.items():
        print(f"  {step:<40} {s:8.0f} s  {s / total:6.1%}")
    rest = total - sum(steps.values())
    print(f"  {'template + results + report':<40} {rest:8.0f} s  {rest / total:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
