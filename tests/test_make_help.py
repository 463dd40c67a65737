"""`make help`, which plain `make` also runs, lists every documented target.

A target is documented by the `## ` lines right above it in the Makefile;
the first of them starts with its audience ([students], [instructors] or
[maintainers]) and is the target's line in the list. The list is made by awk
from the Makefile alone, so it works on a fresh clone before .venv exists:
these tests run it on a copy of the Makefile in an empty folder.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = ROOT / "Makefile"
GROUPS = {"Students:": "students", "Instructors:": "instructors",
          "Maintainers (editing the pack):": "maintainers"}
ROW = re.compile(r"^  make (\S+)\s+(.*)$")


def documented() -> dict[str, tuple[str, str]]:
    """target -> (audience tag or "", its first `## ` line without the tag)."""
    found, first = {}, None
    for line in MAKEFILE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            first = first or line[3:]
            continue
        target = re.match(r"^([A-Za-z0-9_.-]+):", line)
        if target and first:
            tag = re.match(r"^\[([a-z]+)\] ", first)
            text = first[tag.end():] if tag else first
            found[target.group(1)] = (tag.group(1) if tag else "", text)
        first = None
    return found


def phony() -> set[str]:
    text = MAKEFILE.read_text(encoding="utf-8")
    return set(re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split())


def run_make(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """make in `folder`, free of the flags of any make that runs pytest."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES"}}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def listing(tmp_path_factory) -> dict:
    """What `make help` and plain `make` print in a folder without .venv."""
    if not shutil.which("make"):
        pytest.fail("make is not installed")
    folder = tmp_path_factory.mktemp("fresh")
    shutil.copy(MAKEFILE, folder / "Makefile")
    help_run, plain_run = run_make(folder, "help"), run_make(folder)
    return {"help": help_run, "plain": plain_run,
            "files": sorted(p.name for p in folder.iterdir())}


def sections(output: str) -> dict[str, dict[str, str]]:
    """group heading -> {target: its line}, as `make help` printed them."""
    found, heading = {}, None
    for line in output.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            heading = line  # (the usage line above the groups is no heading)
            found.setdefault(heading, {})
        elif ROW.match(line) and heading:
            name, text = ROW.match(line).groups()
            found[heading][name] = text
    return found


def test_help_exits_0_without_the_venv(listing):
    run = listing["help"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == "", run.stderr
    assert listing["files"] == ["Makefile"], \
        f"make help wrote {listing['files']}: it must not set anything up"


def test_plain_make_prints_the_same_list(listing):
    plain = listing["plain"]
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert plain.stdout == listing["help"].stdout


def test_every_documented_target_is_listed_under_its_audience(listing):
    printed = sections(listing["help"].stdout)
    targets = documented()
    assert targets, "no target in the Makefile has a ## line"
    problems = []
    for name, (tag, text) in targets.items():
        where = [h for h, rows in printed.items() if name in rows]
        if tag not in GROUPS.values():
            problems.append(f"{name}: its first ## line needs [students], "
                            f"[instructors] or [maintainers], not {tag!r}")
        elif [GROUPS.get(h) for h in where] != [tag]:
            problems.append(f"{name}: listed under {where}, expected once "
                            f"under the [{tag}] heading")
        elif printed[where[0]][name] != text:
            problems.append(f"{name}: printed {printed[where[0]][name]!r}, "
                            f"its ## line says {text!r}")
    assert not problems, "\n".join(problems)
    extra = {name for rows in printed.values() for name in rows} - set(targets)
    assert not extra, f"listed but not documented with ##: {sorted(extra)}"
    assert set(printed) <= set(GROUPS), \
        f"headings other than the three audiences: {set(printed) - set(GROUPS)}"


def test_every_phony_target_but_help_is_documented():
    """A new target shows up in `make help` once it has a ## line."""
    missing = sorted(phony() - set(documented()) - {"help"})
    assert not missing, f"give these a `## [audience] ...` line: {missing}"


def test_the_list_fits_a_terminal(listing):
    wide = [ln for ln in listing["help"].stdout.splitlines() if len(ln) > 79]
    assert not wide, "shorten the first ## line of:\n" + "\n".join(wide)


def test_make_grade_passes_the_graders_options_on(tmp_path):
    """`make grade TIMEOUT=... JOBS=... GRADE_OPTIONS=...` reaches course.py,
    which hands the options it does not know to grade.py; without them the
    command line holds none (grade.py's defaults apply)."""
    shutil.copy(MAKEFILE, tmp_path / "Makefile")
    for name in ("environment.yml", "pyproject.toml", "tools/requirements.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).touch()
    (tmp_path / ".venv").mkdir()
    for stamp in (".installed", ".bwrap"):  # the set-up counts as done
        (tmp_path / ".venv" / stamp).touch()
        os.utime(tmp_path / ".venv" / stamp, (2e9, 2e9))
    given = run_make(tmp_path, "-n", "grade", "TIMEOUT=300", "JOBS=3",
                     "GRADE_OPTIONS=--student-timeout 900")
    line = " ".join(given.stdout.replace("\\\n", " ").split())
    assert "course.py grade" in line, given.stdout + given.stderr
    assert "--timeout 300 --jobs 3 --student-timeout 900" in line, line
    plain = " ".join(run_make(tmp_path, "-n", "grade").stdout.replace("\\\n", " ").split())
    assert "course.py grade" in plain and "--timeout" not in plain and "--jobs" not in plain
