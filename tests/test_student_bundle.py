"""The student bundle (tools/build_bundle.py): complete, and free of answers.

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
SCRIPT = ROOT / "tools" / "build_bundle.py"
TOP = "rag-course-student"
MASTERS = sorted(ROOT.glob("source/*/*.ipynb"))
MASTERS_LAB = sorted(ROOT.glob("source/lab/*.ipynb"))
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
                                  "autograder/testbed/sample_class",
                                  "autograder/testbed/mistakes",
                                  "autograder/testbed/alternatives",
                                  "autograder/testbed/hostile", "autograder/work"])
def test_instructor_material_stays_out(bundle, path):
    assert not (bundle[1] / path).exists(), f"the bundle holds {path}"


def test_autograder_holds_the_checker_and_no_grading_scripts(bundle):
    """validate.py, what it imports (with the call counting and the twins
    its check of a task's function reads) and the nbgrader settings;
    nothing the instructor grades with."""
    names = {p.name for p in (bundle[1] / "autograder").rglob("*.py")}
    assert {"validate.py", "nbgrader_cli.py", "nbgrader_config.py",
            "rag_feedback.py", "__init__.py", "ragkit_watch.py", "twins.py"} <= names, names
    graders = {"grade.py", "course.py", "make_sample_class.py", "mutants.py",
               "report.py"}
    assert not names & graders, f"grading scripts packed: {names & graders}"


def test_set_up_and_package_files_are_there(bundle):
    folder = bundle[1]
    for name in ("Makefile", "README.md", "environment.yml",
                 "pyproject.toml", "tools/requirements.py", "tools/hand_in.py",
                 "tools/copy_release.py",
                 "data/README.md", "ragkit/__init__.py",
                 "release/guide/references.md",
                 "jupyter-config/jupyter_server_config.py",
                 "jupyter-config/labconfig/page_config.json"):
        assert (folder / name).is_file(), f"{name} is missing"
    # the Validate button reads the course's own nbgrader settings
    assert (folder / "jupyter-config/nbgrader_config.py").read_bytes() == (
        ROOT / "autograder/run/nbgrader_config.py").read_bytes()
    assert not list(folder.rglob("__pycache__")), "caches were packed"
    packed = {p.name for p in (folder / "ragkit").glob("*.py")}
    wanted = {p.name for p in (ROOT / "ragkit").glob("*.py")}
    assert packed == wanted, f"ragkit differs: {packed ^ wanted}"
    assert (folder / "Makefile").read_bytes() == (
        ROOT / "tools/student_bundle/Makefile.student").read_bytes()


READING_EDITION = re.compile(r"notebooks/[\w.-]+\.ipynb")


def test_release_notebooks_are_all_there_unchanged(bundle):
    """Every released file, the same bytes; but a sentence that sends the
    reader to the reading edition (not handed out) is cut from its cell,
    and nothing else of that cell changes. The guide sits in release/guide/."""
    repo = release_files(ROOT)
    packed = {name: data for name, data in release_files(bundle[1]).items()
              if not name.startswith("release/guide/")}
    assert any(name.endswith(".ipynb") for name in repo)
    assert sorted(packed) == sorted(repo), (
        f"missing {sorted(set(repo) - set(packed))}, "
        f"extra {sorted(set(packed) - set(repo))}")
    cut = []
    for name in repo:
        if packed[name] == repo[name]:
            continue
        assert name.endswith(".ipynb"), f"{name} differs from release/"
        before = nbformat.reads(repo[name].decode(), as_version=4).cells
        after = nbformat.reads(packed[name].decode(), as_version=4).cells
        assert len(before) == len(after), f"{name}: cells added or lost"
        for old, new in zip(before, after):
            if old == new:
                continue
            assert old.cell_type == "markdown" and READING_EDITION.search(old.source), (
                f"{name}: a cell changed that names no reading-edition notebook")
            assert {k: v for k, v in old.items() if k != "source"} == \
                {k: v for k, v in new.items() if k != "source"}, f"{name}: metadata changed"
            was = " ".join(old.source.split())
            sentences = re.split(r"(?<=[.!?])\s+", new.source)
            assert all(" ".join(s.split()) in was for s in sentences), (
                f"{name}: the cell was rewritten, not only cut:\n{new.source}")
            assert len(new.source) < len(old.source)
            assert not READING_EDITION.search(new.source)
            cut.append(name)
    pointing = [name for name in repo if name.endswith(".ipynb") and any(
        c.cell_type == "markdown" and READING_EDITION.search(c.source)
        for c in nbformat.reads(repo[name].decode(), as_version=4).cells)]
    assert sorted(set(cut)) == sorted(pointing)


def test_the_environment_file_is_the_student_set(bundle):
    """The bundle's environment.yml installs the student's set, no more, and
    names no file the bundle lacks."""
    from tools.requirements import entries, pip_requirements

    text = (bundle[1] / "environment.yml").read_text()
    course = (ROOT / "environment.yml").read_text()
    for no_deps in (False, True):
        assert pip_requirements(text, no_deps=no_deps) == \
            pip_requirements(course, no_deps=no_deps, student=True)
    assert all("student" in e.markers for e in entries(text))
    assert len(entries(text)) < len(entries(course)), "the bundle installs the whole list"
    named = set(re.findall(r"[\w.-]*[\w-]/[\w./-]*|[\w-]+\.(?:py|yml|toml|md|json)\b", text))
    named -= {".venv/"}
    assert named, "the head names no file: the check below would be idle"
    absent = sorted(n for n in named if not (bundle[1] / n).exists())
    assert absent == [], f"environment.yml names what the bundle lacks: {absent}"


def test_the_student_jupyterlab_settings_name_real_extensions(bundle):
    """The plugins jupyter-config/ turns off exist in this JupyterLab (a
    typo would leave one on), and the nbgrader server extensions it turns
    off or keeps are real modules; what they do is tested in the browser
    (tests/test_browser.py)."""
    import importlib.util
    import json

    config = bundle[1] / "jupyter-config"
    page = json.loads((config / "labconfig/page_config.json").read_text())
    disabled = page["disabledExtensions"]
    share = Path(sys.executable).parents[1] / "share" / "jupyter"
    code = "".join(p.read_text(errors="replace") for p in share.glob("lab*/**/*.js"))
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
            "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:assignment-list",
            "@jupyterlab/apputils-extension:announcements"} <= set(disabled)
    unknown = [plugin for plugin in disabled if f'"{plugin}"' not in code]
    assert unknown == [], f"no such JupyterLab plugin: {unknown}"
    from traitlets.config.loader import PyFileConfigLoader

    server = PyFileConfigLoader("jupyter_server_config.py", path=str(config)).load_config()
    extensions = server.ServerApp.jpserver_extensions
    assert extensions["nbgrader.server_extensions.validate_assignment"] is True
    assert not extensions["nbgrader.server_extensions.formgrader"]
    assert all(importlib.util.find_spec(name) for name in extensions), extensions


# ------------------------------------------------------------------ links

LINK_FORMS = [
    re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)"),   # [text](target), ![alt](target)
    re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M),     # [label]: target
    re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']"""),
]
# a path in backticks naming a document to open (`notebooks/x.ipynb`)
CODE_PATH = re.compile(r"`([\w./-]+/[\w.-]+\.(?:ipynb|md|html))`")


def texts_of(path: Path) -> list[str]:
    """What a reader reads in `path`: the markdown cells of a notebook, the
    whole of a markdown or HTML file; nothing of other files."""
    if path.suffix == ".ipynb":
        return [c.source for c in nbformat.read(path, as_version=4).cells
                if c.cell_type == "markdown"]
    if path.suffix.lower() in (".md", ".html", ".htm"):
        return [path.read_text(encoding="utf-8")]
    return []


def dead_links(folder: Path, path: Path, texts: list[str] | None = None) -> list[str]:
    """'file -> target' for each relative link of `path` (in `folder`) that
    points nowhere; a backticked document path may be written from the
    file's folder or from the top folder, and one in my-work/ exists once
    `make lab` has copied release/ there."""
    rel = path.relative_to(folder).as_posix()
    dead = []
    for text in texts_of(path) if texts is None else texts:
        targets = [(m.group(1), False) for form in LINK_FORMS for m in form.finditer(text)]
        targets += [(m.group(1), True) for m in CODE_PATH.finditer(text)]
        for target, from_top in targets:
            where = target.split("#")[0].split("?")[0]
            if not where or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", where):
                continue  # an anchor on the page, a URL, mailto:
            if from_top and where.startswith("my-work/"):
                where = "release/" + where.removeprefix("my-work/")
            if (path.parent / where).exists() or (from_top and (folder / where).exists()):
                continue
            dead.append(f"{rel} -> {target}")
    return dead


def test_every_relative_link_in_the_bundle_leads_somewhere(bundle):
    folder = bundle[1]
    files = bundle_files(folder)
    scanned = [p for p in files if texts_of(p)]
    assert len(scanned) >= 15, f"only {len(scanned)} files with text were scanned"
    dead = [d for path in scanned for d in dead_links(folder, path)]
    assert dead == [], "links that point nowhere:\n" + "\n".join(dead)
    # the lab notebooks' links to the guide are among those that work
    assert any("../guide/references.md" in text for text in
               texts_of(folder / "release/lab" / MASTERS_LAB[0].name)), "no guide link to check"


def test_the_link_check_finds_what_was_broken(bundle):
    """What the bundle once held fails: the quiz named
    `notebooks/quiz_selfcheck.ipynb` and the guide, packed as the repository
    holds it, links to ../notebooks/; neither is in the bundle."""
    folder = bundle[1]
    quiz = folder / "release/quiz/quiz.ipynb"
    said = ["To practise, open the self-check edition in the reading edition,\n"
            "`notebooks/quiz_selfcheck.ipynb`, or see [the guide](../guide/README.md)."]
    assert dead_links(folder, quiz, said) == [
        "release/quiz/quiz.ipynb -> notebooks/quiz_selfcheck.ipynb"]
    guide = folder / "release/guide/README.md"
    repo_guide = [(ROOT / "guide/README.md").read_text(encoding="utf-8")]
    assert any("-> ../notebooks/" in d for d in dead_links(folder, guide, repo_guide))


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
    for rel in ("ragkit/__init__.py", "data/README.md",
                "pyproject.toml", "tools/requirements.py",
                "autograder/run/nbgrader_config.py", "autograder/check/validate.py",
                "tools/student_bundle/Makefile.student",
                "tools/student_bundle/README.student.md",
                "tools/student_bundle/hand_in.py",
                "tools/student_bundle/copy_release.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# placeholder\n")
    (root / "environment.yml").write_text(
        "dependencies:\n  - pip:\n      - numpy==2.4.6  # student\n")
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
        [sys.executable, "autograder/check/validate.py", "--invert",
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
    first = sorted(p.parent.name for p in (folder / "release").glob("*/*.ipynb"))[0]
    lab = make(folder, "-n", "lab")
    assert lab.returncode == 0, lab.stderr
    assert "jupyter lab" in lab.stdout
    # the student's set only, and word of the wait before the silent step
    steps = lab.stdout.splitlines()
    pip = next(i for i, line in enumerate(steps) if "pip install" in line)
    assert any("tools/requirements.py --student" in line for line in steps[:pip]), lab.stdout
    assert any("installing, a few minutes" in line for line in steps[:pip]), lab.stdout
    assert all(" -q " in line for line in steps if "pip install" in line)
    one = make(folder, "-n", "check", "NB=07")
    assert one.returncode == 0 and "validate.py" in one.stdout and "--nb '07'" in one.stdout
    hand_in = make(folder, "-n", "hand-in")
    assert hand_in.returncode == 0 and "tools/hand_in.py" in hand_in.stdout
    assert "--no-check" not in hand_in.stdout, "make hand-in must check first"
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
    # every call is logged too: an output sent to /dev/null still shows there
    fake.write_text('#!/bin/sh\necho "jupyter in $(pwd): $*" | tee -a "$(dirname "$0")/calls"\n')
    fake.chmod(0o755)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    (folder / ".venv" / ".installed").touch()
    notebooks = sorted((folder / "release").rglob("*.ipynb"))
    mine = folder / "my-work" / notebooks[0].relative_to(folder / "release")
    mine.parent.mkdir(parents=True)
    mine.write_text("my own work")
    proc = make(folder, "lab")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"jupyter in \S*/my-work: lab ", proc.stdout), proc.stdout
    assert ": trust" not in (bin_dir / "calls").read_text(), "make lab marked notebooks trusted"
    assert mine.read_text() == "my own work", "make lab overwrote a notebook"
    for nb in notebooks[1:]:
        copy = folder / "my-work" / nb.relative_to(folder / "release")
        assert copy.read_bytes() == nb.read_bytes(), f"{copy} not copied"
    # the guide comes too, so the notebooks' links to ../guide/ open in JupyterLab
    assert (folder / "my-work/guide/references.md").read_bytes() == \
        (folder / "release/guide/references.md").read_bytes()


def fake_venv(folder: Path) -> None:
    """A .venv whose python and jupyter are this interpreter's, marked set
    up, so that the student Makefile runs its targets without installing."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, real in (("python", sys.executable),
                       ("jupyter", Path(sys.executable).parent / "jupyter")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
        (bin_dir / name).chmod(0o755)
    (folder / ".venv" / ".installed").touch()


def my_work(folder: Path, extras: bool = True) -> None:
    """my-work/ as a student leaves it: the release copied, and (with
    `extras`) a corpus beside the project, scratch files, checkpoints."""
    shutil.copytree(folder / "release", folder / "my-work",
                    ignore=shutil.ignore_patterns("guide"))
    if not extras:
        return
    work = folder / "my-work"
    for rel, text in {"project/corpus/documents.json": "[]",
                      "project/corpus/more/notes.json": "{}",
                      "project/corpus/.hidden.json": "{}",
                      "project/corpus/.ipynb_checkpoints/documents-checkpoint.json": "[]",
                      "project/scratch.py": "x = 1",
                      "lab/Untitled.ipynb": "{}",
                      "lab/.ipynb_checkpoints/01_why_retrieval-checkpoint.ipynb": "{}",
                      "lab/notes.txt": "todo",
                      "quiz/.secret": "x"}.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    (work / "project/corpus/link.json").symlink_to(ROOT / "environment.yml")


def test_hand_in_zips_exactly_the_work(bundle, tmp_path):
    """lab/NN_*.ipynb, quiz/quiz.ipynb, project/project.ipynb and
    project/corpus/..., nothing hidden, scratch, cached or linked; listed."""
    folder = tmp_path / "copy"
    shutil.copytree(bundle[1], folder)
    my_work(folder)
    out = folder / "hand-in.zip"
    proc = subprocess.run([sys.executable, "tools/hand_in.py", "--no-check",
                           "--work", "my-work", "--out", str(out)],
                          capture_output=True, text=True, cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        assert archive.read("quiz/quiz.ipynb") == \
            (folder / "my-work/quiz/quiz.ipynb").read_bytes()
    lab = sorted(p.name for p in (folder / "release/lab").glob("*.ipynb"))
    assert names == sorted([f"lab/{n}" for n in lab] + [
        "project/corpus/documents.json", "project/corpus/more/notes.json",
        "project/project.ipynb", "quiz/quiz.ipynb"]), names
    assert {n.split("/")[0] for n in names} == {"lab", "quiz", "project"}
    for name in names:
        assert f"  {name}  (" in proc.stdout, f"{name} is not listed:\n{proc.stdout}"
    assert "lab/Untitled.ipynb" in proc.stdout and "project/scratch.py" in proc.stdout


def test_hand_in_reminds_until_the_project_lists_its_sources(bundle, tmp_path):
    """The project goes in with its "Sources you used" list; while the list
    is as released, or the section was deleted, hand-in says so."""
    folder = tmp_path / "copy"
    shutil.copytree(bundle[1], folder)
    my_work(folder, extras=False)
    path = folder / "my-work/project/project.ipynb"

    def hand_in() -> str:
        proc = subprocess.run([sys.executable, "tools/hand_in.py", "--no-check"],
                              capture_output=True, text=True, cwd=folder)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    assert "'Sources you used' is still empty" in hand_in()
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## Sources you used"))
    nb.cells[at + 1].source = "- Robertson and Zaragoza 2009, BM25 (the guide's link)\n- none else"
    nbformat.write(nb, path)
    assert "Sources you used" not in hand_in()
    with zipfile.ZipFile(folder / "hand-in.zip") as archive:
        assert "Robertson and Zaragoza" in archive.read("project/project.ipynb").decode()
    del nb.cells[at:at + 2]
    nbformat.write(nb, path)
    assert "section is gone" in hand_in()


def test_hand_in_refuses_a_broken_notebook(bundle, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(bundle[1], folder)
    my_work(folder, extras=False)
    broken = folder / "my-work/lab" / MASTERS_LAB[0].name
    broken.write_text('{"cells": [')
    out = folder / "hand-in.zip"
    proc = subprocess.run([sys.executable, "tools/hand_in.py", "--no-check",
                           "--out", str(out)], capture_output=True, text=True, cwd=folder)
    assert proc.returncode == 1 and not out.exists(), proc.stdout + proc.stderr
    assert f"{MASTERS_LAB[0].name}: " in proc.stderr and "not readable" in proc.stderr


@needs_make
def test_make_hand_in_checks_then_zips(bundle, tmp_path):
    """The real target: the quiz alone in my-work/, checked (it fails: blank)
    and still zipped, the check's table before the listing."""
    folder = tmp_path / "copy"
    shutil.copytree(bundle[1], folder)
    fake_venv(folder)
    (folder / "my-work/quiz").mkdir(parents=True)
    shutil.copy(folder / "release/quiz/quiz.ipynb", folder / "my-work/quiz")
    proc = make(folder, "hand-in")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert out.index("FAIL my-work/quiz/quiz.ipynb") < out.index("Wrote hand-in.zip: 1 files")
    assert "Some visible tests fail" in out
    with zipfile.ZipFile(folder / "hand-in.zip") as archive:
        assert archive.namelist() == ["quiz/quiz.ipynb"]
