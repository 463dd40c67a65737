"""Pack the student's copy of the course into one zip, with no answers in it.

    python tools/student_bundle.py [--out dist/rag-course-student.zip]

The repository holds the masters (source/), the reading edition with the
solutions run (notebooks/) and the grader's own material (sample class,
mistakes, alternatives, hostile cases). A student of a graded course gets
none of that, only:

    release/          every assignment folder as nbgrader released it
    ragkit/, data/    the package the notebooks import and its corpora
    guide/            the reading guide, glossary and reference list
    environment.yml, pyproject.toml, tools/requirements.py   the set-up
    autograder/       validate.py and the local modules it imports, with
                      nbgrader_config.py: what `make check` runs
    Makefile, README.md   the student versions, from tools/student_bundle/

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
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = "rag-course-student"
DEFAULT_OUT = Path("dist") / "rag-course-student.zip"

# folders packed whole (minus caches), and single files, as repo paths
TREES = ("release", "ragkit", "data", "guide")
FILES = ("environment.yml", "pyproject.toml", "tools/requirements.py",
         "autograder/nbgrader_config.py")
# `make check` runs this; the autograder modules it imports come with it
CHECKER = "autograder/validate.py"
# student templates: repo path -> name in the bundle
TEMPLATES = {"tools/student_bundle/Makefile.student": "Makefile",
             "tools/student_bundle/README.student.md": "README.md"}

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
    """`start` and every module of its folder that it imports, directly or
    through another such module (imports inside functions count too)."""
    folder = (root / start).parent
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
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                candidate = folder / (name.split(".")[0] + ".py")
                if candidate.is_file():
                    todo.append(candidate)
    return sorted(p.relative_to(root).as_posix() for p in seen)


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
    for folder in TREES:
        if (root / folder).is_dir():
            chosen.update((rel, rel) for rel in tree_files(root, folder))
        elif folder != "guide":
            raise Refused(f"{root / folder} is missing")
    for rel in (*FILES, *local_imports(root, CHECKER)):
        chosen[rel] = rel
    for rel, name in TEMPLATES.items():
        chosen[name] = rel
    missing = [rel for rel in chosen.values() if not (root / rel).is_file()]
    if missing:
        raise Refused("files to pack are missing: " + ", ".join(missing))
    return {name: (root / rel).read_bytes()
            for name, rel in sorted(chosen.items())}


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
