"""The student bundle (tools/student_bundle.py): complete, and free of answers.

The zip is built once into a temporary folder and unpacked; the checks read
the unpacked copy. The leak check compares text line by line with the
masters: a line is secret when it sits inside a solution region (or fills
a solution cell that has no region) or inside a hidden-test region of some
master, and appears nowhere a student may read it anyway, i.e. in no
master's released text (locked cells, prose, the parts of a solution cell
around its region) and in no line of the ragkit package the course ships.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "student_bundle.py"
TOP = "rag-course-student"
MASTERS = sorted(ROOT.glob("source/*/*.ipynb"))
JUNK = {"__pycache__", ".ipynb_checkpoints"}

SOLUTION = ("BEGIN SOLUTION", "END SOLUTION")
HIDDEN = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
MARKER = re.compile(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)")
# the one place a delimiter may be named: the grader's constants, which
# validate.py imports to tell a hidden test cell from the others
CONSTANT = re.compile(r'^[A-Z_]+ = "### (BEGIN|END) HIDDEN TESTS"$')
MIN_LENGTH = 10


def run_script(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def release_files(root: Path) -> dict[str, bytes]:
    folder = root / "release"
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and not JUNK & set(p.parts)}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """(the zip, the unpacked top folder)."""
    where = tmp_path_factory.mktemp("bundle")
    out = where / "student.zip"
    proc = run_script("--out", out)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out) as archive:
        archive.extractall(where / "unpacked")
    return out, where / "unpacked" / TOP


def bundle_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------- contents

@pytest.mark.parametrize("path", ["source", "notebooks", ".git",
                                  "autograder/sample_class",
                                  "autograder/mistakes",
                                  "autograder/alternatives",
                                  "autograder/hostile", "autograder/work"])
def test_instructor_material_stays_out(bundle, path):
    assert not (bundle[1] / path).exists(), f"the bundle holds {path}"


def test_autograder_holds_the_checker_and_no_grading_scripts(bundle):
    """validate.py, what it imports and the nbgrader settings; nothing the
    instructor grades with."""
    names = {p.name for p in (bundle[1] / "autograder").iterdir()}
    assert {"validate.py", "nbgrader_cli.py", "nbgrader_config.py",
            "rag_feedback.py"} <= names, names
    graders = {"grade.py", "course.py", "make_sample_class.py", "mutants.py",
               "report.py"}
    assert not names & graders, f"grading scripts packed: {names & graders}"


def test_set_up_and_package_files_are_there(bundle):
    folder = bundle[1]
    for name in ("Makefile", "README.md", "environment.yml",
                 "pyproject.toml", "tools/requirements.py",
                 "data/README.md", "ragkit/__init__.py"):
        assert (folder / name).is_file(), f"{name} is missing"
    assert not list(folder.rglob("__pycache__")), "caches were packed"
    packed = {p.name for p in (folder / "ragkit").glob("*.py")}
    wanted = {p.name for p in (ROOT / "ragkit").glob("*.py")}
    assert packed == wanted, f"ragkit differs: {packed ^ wanted}"
    assert (folder / "Makefile").read_bytes() == (
        ROOT / "tools/student_bundle/Makefile.student").read_bytes()


def test_release_notebooks_are_all_there_unchanged(bundle):
    repo, packed = release_files(ROOT), release_files(bundle[1])
    assert any(name.endswith(".ipynb") for name in repo)
    assert sorted(packed) == sorted(repo), (
        f"missing {sorted(set(repo) - set(packed))}, "
        f"extra {sorted(set(packed) - set(repo))}")
    changed = [name for name in repo if packed[name] != repo[name]]
    assert not changed, f"packed copies differ from release/: {changed}"


# ------------------------------------------------------------------ leaks

def test_no_file_names_a_solution_or_hidden_test_delimiter(bundle):
    hits = []
    for path in bundle_files(bundle[1]):
        rel = path.relative_to(bundle[1]).as_posix()
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if not MARKER.search(line):
                continue
            if rel.startswith("autograder/") and rel.endswith(".py") \
                    and CONSTANT.match(line.strip()):
                continue
            hits.append(f"{rel}:{number}: {line.strip()[:80]}")
    assert not hits, "delimiters in the bundle:\n" + "\n".join(hits)


def regions(source: str, begin: str, end: str) -> tuple[list[str], list[str]]:
    """(stripped lines inside begin/end regions, the other lines), the
    delimiter lines themselves dropped."""
    inside, outside, within = [], [], False
    for raw in source.splitlines():
        if begin in raw:
            within = True
        elif end in raw:
            within = False
        else:
            (inside if within else outside).append(raw.strip())
    return inside, outside


def master_lines(path: Path) -> tuple[set[str], set[str]]:
    """(secret lines, lines a student reads anyway) of one master."""
    secret, public = set(), set()
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            inside, outside = regions(cell.source, *SOLUTION)
            if not any(SOLUTION[0] in line for line in cell.source.splitlines()):
                inside, outside = outside, []  # nbgrader blanks the whole cell
        else:
            inside, outside = regions(cell.source, *HIDDEN)
        secret.update(inside)
        public.update(outside)
    return secret, public


def meaningful(line: str) -> bool:
    return len(line) >= MIN_LENGTH and re.search(r"[A-Za-z0-9]", line) is not None


@pytest.fixture(scope="module")
def secrets() -> set[str]:
    secret, public = set(), set()
    for master in MASTERS:
        s, p = master_lines(master)
        secret |= s
        public |= p
    for module in (ROOT / "ragkit").rglob("*.py"):
        public.update(line.strip() for line in
                      module.read_text(encoding="utf-8").splitlines())
    return {line for line in secret - public if meaningful(line)}


def readable_lines(path: Path) -> list[str]:
    """The stripped lines a reader of `path` sees: every cell's source and
    text output of a notebook, the text of any other file; [] if binary."""
    if path.suffix == ".ipynb":
        lines = []
        for cell in nbformat.read(path, as_version=4).cells:
            lines += cell.source.splitlines()
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain", "")
                lines += "".join(text).splitlines()
        return [line.strip() for line in lines]
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except UnicodeDecodeError:
        return []


def leaks(path: Path, secret: set[str]) -> list[str]:
    return sorted({line for line in readable_lines(path) if line in secret})


def test_the_leak_check_has_something_to_find(secrets):
    """The secret set is large, and every master with a solution is caught
    by it: a bundle that packed a master would fail the next test."""
    assert len(secrets) >= 10 * len(MASTERS), len(secrets)
    for master in MASTERS:
        has_answer = any(c.metadata.get("nbgrader", {}).get("solution")
                         and c.cell_type == "code" for c in
                         nbformat.read(master, as_version=4).cells)
        if has_answer:
            assert leaks(master, secrets), f"{master.name} is not recognised"


def test_no_file_holds_a_line_of_a_solution_or_hidden_test(bundle, secrets):
    found = {}
    for path in bundle_files(bundle[1]):
        if path.relative_to(bundle[1]).parts[0] == "ragkit":
            continue  # the package is shipped on purpose: public by definition
        hits = leaks(path, secrets)
        if hits:
            found[path.relative_to(bundle[1]).as_posix()] = hits[:3]
    assert not found, f"solution or hidden-test lines in the bundle: {found}"


# ------------------------------------------------------------- the zip itself

def test_two_builds_give_the_same_bytes(bundle, tmp_path):
    again = tmp_path / "again.zip"
    proc = run_script("--out", again)
    assert proc.returncode == 0, proc.stderr
    first = hashlib.sha256(bundle[0].read_bytes()).hexdigest()
    second = hashlib.sha256(again.read_bytes()).hexdigest()
    assert first == second, "two builds of the same tree differ"
    with zipfile.ZipFile(again) as archive:
        infos = archive.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names), "entries are not in name order"
    assert all(name.startswith(TOP + "/") for name in names)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}


def fake_repo(root: Path, notebook_source: str | None) -> Path:
    """The smallest tree the script accepts, with one release notebook of
    one code cell (or no release/ when notebook_source is None)."""
    for rel in ("ragkit/__init__.py", "data/README.md", "environment.yml",
                "pyproject.toml", "tools/requirements.py",
                "autograder/nbgrader_config.py", "autograder/validate.py",
                "tools/student_bundle/Makefile.student",
                "tools/student_bundle/README.student.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# placeholder\n")
    if notebook_source is not None:
        nb = nbformat.v4.new_notebook()
        nb.cells.append(nbformat.v4.new_code_cell(notebook_source))
        (root / "release" / "quiz").mkdir(parents=True)
        nbformat.write(nb, root / "release" / "quiz" / "q.ipynb")
    return root


@pytest.mark.parametrize("source, why", [
    (None, "release"),
    ("x = 1\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION", "release/quiz/q.ipynb"),
    ("### BEGIN HIDDEN TESTS\nassert f()\n### END HIDDEN TESTS",
     "release/quiz/q.ipynb"),
], ids=["no-release", "solution", "hidden-tests"])
def test_the_script_refuses_and_writes_nothing(tmp_path, source, why):
    root = fake_repo(tmp_path / "repo", source)
    out = tmp_path / "out.zip"
    proc = run_script("--root", root, "--out", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "refused" in proc.stderr and why in proc.stderr, proc.stderr
    assert not out.exists()


def test_the_script_packs_a_clean_fake_tree(tmp_path):
    """The refusals above come from the markers, not from the fake tree."""
    root = fake_repo(tmp_path / "repo", "x = 1")
    out = tmp_path / "out.zip"
    proc = run_script("--root", root, "--out", out)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out) as archive:
        assert f"{TOP}/release/quiz/q.ipynb" in archive.namelist()


# --------------------------------------------------- the student's commands

def bundle_env(folder: Path) -> dict[str, str]:
    """The repository's interpreter, with the bundle first on the path and
    run from the bundle, so its own ragkit and checker are the ones used."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(folder), *filter(None, [env.get("PYTHONPATH")])])
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_check_tooling_runs_from_the_bundle(bundle):
    folder = bundle[1]
    where = subprocess.run(
        [sys.executable, "-c", "import ragkit, ragkit.corpus as c; "
         "print(ragkit.__file__); print(c.data_dir())"],
        capture_output=True, text=True, cwd=folder, env=bundle_env(folder))
    assert where.returncode == 0, where.stderr
    real = str(folder.resolve())
    assert all(line.startswith(real) for line in where.stdout.split()), (
        f"ragkit or its data came from outside the bundle: {where.stdout}")
    smallest = min((folder / "release").rglob("*.ipynb"),
                   key=lambda p: (p.stat().st_size, p.name))
    proc = subprocess.run(
        [sys.executable, "autograder/validate.py", "--invert",
         str(smallest.relative_to(folder))],
        capture_output=True, text=True, cwd=folder, env=bundle_env(folder),
        timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Success! The notebook does not pass any tests." in proc.stdout


needs_make = pytest.mark.skipif(shutil.which("make") is None,
                                reason="make is not installed")


def make(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args],
                          capture_output=True, text=True, cwd=folder)


@needs_make
def test_student_makefile_parses(bundle):
    folder = bundle[1]
    first = sorted(p.name for p in (folder / "release").iterdir())[0]
    lab = make(folder, "-n", "lab")
    assert lab.returncode == 0, lab.stderr
    assert "jupyter lab" in lab.stdout and "tools/requirements.py" in lab.stdout
    check = make(folder, "-n", "check")
    assert check.returncode == 0, check.stderr
    assert f"my-work/{first}" in check.stdout, check.stdout
    one = make(folder, "-n", "check", f"ASSIGNMENT={first}")
    assert one.returncode == 0 and f"my-work/{first}" in one.stdout, one.stderr
    wrong = make(folder, "-n", "check", "ASSIGNMENT=no-such-thing")
    assert wrong.returncode != 0 and "no-such-thing" in wrong.stderr
    shown = make(folder)
    assert shown.returncode == 0 and "make check" in shown.stdout


@needs_make
def test_make_lab_copies_without_overwriting(bundle, tmp_path):
    """With the set-up marked done and a stand-in for jupyter, `make lab`
    adds the missing files to my-work/ and keeps the student's own."""
    folder = tmp_path / "copy"
    shutil.copytree(bundle[1], folder)
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "jupyter"
    fake.write_text('#!/bin/sh\necho "jupyter in $(pwd): $*"\n')
    fake.chmod(0o755)
    (folder / ".venv" / ".installed").touch()
    notebooks = sorted((folder / "release").rglob("*.ipynb"))
    mine = folder / "my-work" / notebooks[0].relative_to(folder / "release")
    mine.parent.mkdir(parents=True)
    mine.write_text("my own work")
    proc = make(folder, "lab")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"jupyter in \S*/my-work: lab ", proc.stdout), proc.stdout
    assert mine.read_text() == "my own work", "make lab overwrote a notebook"
    for nb in notebooks[1:]:
        copy = folder / "my-work" / nb.relative_to(folder / "release")
        assert copy.read_bytes() == nb.read_bytes(), f"{copy} not copied"
