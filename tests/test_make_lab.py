"""`make lab` in the repository gives the notebooks a guide to link to.

The released notebooks link to `../guide/...`. `make lab` copies them to
`my-work/<assignment>/`, so the guide must be copied to `my-work/guide/`
too, never over a file already there. The test runs the real target in a
scratch copy, with a stand-in `jupyter` that only records its call. The
repository and the student's bundle copy the release with one script,
tools/student_bundle/copy_release.py, which signs only notebooks that
hold no output (nothing to vouch for) and copies no link.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\((\.\./guide/[^)#\s]+)")
COPY_SCRIPT = "tools/student_bundle/copy_release.py"


def scratch(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    shutil.copy(ROOT / "Makefile", work)
    shutil.copytree(ROOT / "release", work / "release")
    shutil.copytree(ROOT / "guide", work / "guide")
    (work / "tools").mkdir()
    for name in ("environment.yml", "pyproject.toml", "tools/requirements.py"):
        (work / name).write_text("")
        os.utime(work / name, (1, 1))  # older than the stamp: no set-up runs
    (work / "tools" / "student_bundle").mkdir()
    shutil.copy(ROOT / COPY_SCRIPT, work / COPY_SCRIPT)
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "jupyter").write_text("#!/bin/sh\necho \"jupyter in $(pwd): $*\"\n")
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for name in ("jupyter", "python"):
        (bin_dir / name).chmod(0o755)
    (work / ".venv" / ".installed").write_text("")
    return work


def test_make_lab_copies_the_guide_where_the_links_point(tmp_path):
    work = scratch(tmp_path)
    mine = work / "my-work" / "guide" / "glossary.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own notes\n")
    env = dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path / "data"))  # the notary's database
    proc = subprocess.run(["make", "-s", "lab"], cwd=work, capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert "jupyter in" in proc.stdout and "/my-work: lab" in proc.stdout, proc.stdout
    assert ": trust" not in proc.stdout, "make lab marked the notebooks trusted"
    assert mine.read_text() == "my own notes\n", "make lab wrote over the student's file"
    links = set()
    for path in sorted((work / "my-work" / "lab").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            links |= {(path, link) for link in LINK.findall(cell.source)}
    assert links, "no ../guide/ link in the released lab: the test is stale"
    dead = sorted(f"{p.name} -> {link}" for p, link in links
                  if not (p.parent / link).resolve().is_file())
    assert not dead, f"links that point nowhere in my-work/: {dead}"


def lab_recipe(makefile: Path) -> str:
    """The lines of the `lab` target's recipe in `makefile`."""
    lines = makefile.read_text(encoding="utf-8").split("\nlab:", 1)[1].splitlines()[1:]
    recipe = []
    for line in lines:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    return "\n".join(recipe)


def test_the_repository_and_the_bundle_copy_the_release_with_one_script():
    repo = lab_recipe(ROOT / "Makefile")
    bundle = lab_recipe(ROOT / "tools" / "student_bundle" / "Makefile.student")
    assert "tools/student_bundle/copy_release.py" in repo, repo
    assert "tools/copy_release.py" in bundle, bundle  # where the bundle packs it
    for recipe in (repo, bundle):
        assert " cp " not in recipe and "trust" not in recipe, recipe


def test_the_copy_keeps_the_students_files_and_copies_no_link(tmp_path):
    release, work = tmp_path / "release", tmp_path / "my-work"
    (release / "project" / "corpus").mkdir(parents=True)
    (release / "project" / "project.ipynb").write_text("released")
    (release / "project" / "corpus" / "documents.json").write_text("[]")
    secret = tmp_path / "secret.txt"
    secret.write_text("not the course's")
    (release / "project" / "notes.md").symlink_to(secret)
    (release / "project" / "linked").symlink_to(tmp_path, target_is_directory=True)
    (work / "project").mkdir(parents=True)
    (work / "project" / "project.ipynb").write_text("mine")
    proc = subprocess.run([sys.executable, str(ROOT / COPY_SCRIPT), "--release", str(release),
                           "--work", str(work)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(work / "project" / "corpus" / "documents.json")]
    assert (work / "project" / "project.ipynb").read_text() == "mine"
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")) == [
        "project", "project/corpus", "project/corpus/documents.json", "project/project.ipynb"]
    missing = subprocess.run([sys.executable, str(ROOT / COPY_SCRIPT), "--release",
                              str(tmp_path / "none")], capture_output=True, text=True)
    assert missing.returncode == 2 and "release must be a folder" in missing.stderr


def test_only_notebooks_without_output_are_signed(tmp_path):
    """A copied notebook with no output is signed in the student's notary
    (the server then opens it without "is not trusted"); one with an output
    is not: the script has not read it and does not vouch for it."""
    from nbformat.sign import NotebookNotary

    release, work, data = tmp_path / "release", tmp_path / "my-work", tmp_path / "data"
    (release / "lab").mkdir(parents=True)
    clean = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    shown = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "x", outputs=[nbformat.v4.new_output("display_data", {"text/html": "<b>1</b>"})])])
    nbformat.write(clean, release / "lab" / "clean.ipynb")
    nbformat.write(shown, release / "lab" / "shown.ipynb")
    proc = subprocess.run([sys.executable, str(ROOT / COPY_SCRIPT), "--release", str(release),
                           "--work", str(work)], capture_output=True, text=True,
                          env=dict(os.environ, JUPYTER_DATA_DIR=str(data)))
    assert proc.returncode == 0, proc.stderr
    notary = NotebookNotary(data_dir=str(data))
    assert notary.check_signature(nbformat.read(work / "lab" / "clean.ipynb", as_version=4))
    assert not notary.check_signature(nbformat.read(work / "lab" / "shown.ipynb", as_version=4))
