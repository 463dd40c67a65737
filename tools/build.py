"""Rebuild the generated folders from the nbgrader masters in source/.

    release/    the student edition: `nbgrader generate_assignment` on every
                assignment folder in source/ (solutions and hidden tests removed),
                from a copy of the masters without their check cells (the
                locked `nbNN_check_*` cells that assert the prose's numbers:
                maintenance code for CI, not lecture; nbgrader_cli.copy_masters)
    notebooks/  the reading edition: every master in source/lab executed top to
                bottom with its solutions, outputs, figures and check cells
                kept (CI re-executes it, so every prose number stays proven), and
                quiz_practice.ipynb, an interactive practice quiz of its own
                questions (tools/build_practice_quiz.py, from ragkit/quiz_practice.py;
                never from the graded quiz, whose key stays in source/; not
                executed: its widgets come alive when a reader runs it)

Both are committed. The output is reproducible: building twice, or on another
machine with any Python 3.11.x, gives the same bytes (no execution timestamps,
no interpreter version, cell ids and notebook metadata kept from the masters,
and a fixed note in place of the output of a cell tagged nbval-ignore-output,
a timing), so the tests can rebuild into a temporary folder and compare.

With --core (make build CORE=1), release/lab is the core edition: the
parts marked `core` are graded (32 points) and the extensions come worked,
for a week with no time for them (autograder/scoring/editions.py); `make grade`
then grades that edition. notebooks/ is the same in both.

usage: python tools/build.py [--out DIR] [--only release|notebooks] [--notebook NAME] [--core]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
from autograder.scoring.editions import make_core  # noqa: E402
from autograder.run.nbgrader_cli import (  # noqa: E402
    course_folder, nbgrader_settings, run_nbgrader_checked)
from tools.build_practice_quiz import NAME as PRACTICE, practice_notebook  # noqa: E402

SOURCE = ROOT / "source"
FIGURE_FORMAT = "retina"
EXEC_TIMEOUT = 600  # seconds per cell; a hung cell fails the build, never stalls CI

# what the kernel says about its language that is the same on every machine
# the README allows; "version" (3.11.2 on Debian 12, 3.11.7 elsewhere) is not
STABLE_LANGUAGE_INFO = ("name", "mimetype", "file_extension", "codemirror_mode",
                        "pygments_lexer", "nbconvert_exporter")


def assignments() -> list[str]:
    return sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def build_release(out: Path, core: bool = False) -> None:
    """Write out/release/<assignment>/ with nbgrader's student edition (with
    `core`, the lab's core path graded and its extensions worked; see
    autograder/scoring/editions.py). The course folder's copy of the masters
    has no check cells (course_folder), so neither edition holds one."""
    with tempfile.TemporaryDirectory(prefix="rag-release-") as tmp:
        course = course_folder(Path(tmp), SOURCE)
        if core:
            make_core(course / "source")
        for name in assignments():
            run_nbgrader_checked(["generate_assignment", name, "--force"], cwd=course)
        target = out / "release"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(course / "release", target)
    for path in sorted(target.rglob("*.ipynb")):
        # a master saved from JupyterLab carries the saver's Python version
        nb = nbformat.read(path, as_version=4)
        clean = machine_free(nb.metadata, nb.metadata.get("language_info", {}))
        if clean != nb.metadata:
            nb.metadata = clean
            nbformat.write(nb, path)
    print(f"release/    {', '.join(assignments())}"
          + ("  (core edition: the lab's extensions are worked, not graded)" if core else ""))


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    """Execute one master and strip what changes from run to run."""
    nb = nbformat.read(path, as_version=4)
    master_metadata = nbformat.from_dict(nb.metadata)
    client = NotebookClient(
        nb, timeout=EXEC_TIMEOUT, kernel_name="python3", config=nbgrader_settings(),
        resources={"metadata": {"path": str(cwd)}},
        # figures at twice the pixels, shown at their usual size: sharp on
        # high-resolution screens, in JupyterLab and on the site alike
        extra_arguments=[f"--InlineBackend.figure_formats={FIGURE_FORMAT}"],
    )
    client.execute()
    return normalise(nb, master_metadata)


def machine_free(metadata: dict, language_info: dict) -> nbformat.NotebookNode:
    """`metadata` with the stable part of `language_info`, and without widget
    state or VS Code's interpreter hash."""
    out = nbformat.from_dict(metadata)
    for key in ("widgets", "vscode", "language_info"):
        out.pop(key, None)
    stable = {k: language_info[k] for k in STABLE_LANGUAGE_INFO if k in language_info}
    if stable:
        out["language_info"] = stable
    return out


# A master tags a cell whose output differs on every run (a timing) for nbval
# to skip; the reading edition stores this note instead of that output, so
# that it stays the same bytes from build to build
VARIES = "nbval-ignore-output"
VARIES_NOTE = ("This cell measures time, which changes from run to run and from "
               "machine to machine, so the reading edition stores no output "
               "for it: run the notebook to see yours.\n")


def normalise(nb: nbformat.NotebookNode, master_metadata: dict) -> nbformat.NotebookNode:
    """Keep only what the notebook itself decides; drop what the machine adds.

    nbclient writes the kernel's language_info (with the interpreter's patch
    version), widget state and per-cell timestamps. The notebook's metadata
    goes back to the master's, plus the stable part of the kernel's
    language_info, which lets viewers highlight the code.
    """
    nb.metadata = machine_free(master_metadata, nb.metadata.get("language_info", {}))
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # wall-clock timestamps
        if cell.cell_type == "code" and VARIES in cell.metadata.get("tags", []):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text=VARIES_NOTE)]
        elif cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    return nb


def merge_streams(outputs: list) -> list:
    """Join neighbouring stdout (or stderr) chunks into one output.

    How a print is split into messages depends on timing, so without this two
    runs of the same cell can store the same text in different pieces.
    """
    merged = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.output_type == "stream" and prev is not None
                and prev.output_type == "stream" and prev.name == out.name):
            prev.text += out.text
        else:
            merged.append(out)
    return merged


def build_notebooks(out: Path, only: list[str] | None = None) -> None:
    """Write out/notebooks/NN_*.ipynb (each lab master executed) and the
    practice quiz; remove any other notebook there. With `only` (master
    names without .ipynb), execute just those and touch nothing else."""
    target = out / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    masters = sorted((SOURCE / "lab").glob("*.ipynb"))
    if only:
        unknown = sorted(set(only) - {m.stem for m in masters})
        if unknown:
            raise ValueError(f"notebook must name a master in source/lab (got {unknown})")
        for master in masters:
            if master.stem in only:
                nbformat.write(execute(master, cwd=target), target / master.name)
        return
    wanted = {m.name for m in masters} | {PRACTICE}
    for old in target.glob("*.ipynb"):
        if old.name not in wanted:
            old.unlink()
    for master in masters:
        start = time.perf_counter()
        nb = execute(master, cwd=target)
        nbformat.write(nb, target / master.name)
        print(f"notebooks/  {master.name}  executed in {time.perf_counter() - start:.1f} s")
    write_practice(target)


def write_practice(target: Path) -> None:
    """Write target/quiz_practice.ipynb (no kernel needed: nothing runs)."""
    nbformat.write(practice_notebook(), target / PRACTICE)
    print(f"notebooks/  {PRACTICE}  from ragkit/quiz_practice.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT,
                        help="folder to write release/ and notebooks/ into (default: the repo)")
    parser.add_argument("--only", choices=["release", "notebooks"],
                        help="build just one of the two folders")
    parser.add_argument("--notebook", action="append", metavar="NAME",
                        help="with --only notebooks: execute just this master of "
                             "source/lab (name without .ipynb; repeat for more)")
    parser.add_argument("--core", action="store_true",
                        help="release the lab's core path only: extension parts "
                             "come worked and ungraded (make build CORE=1)")
    args = parser.parse_args(argv)
    if args.core and args.only == "notebooks":
        parser.error("--core changes release/ only; it does not go with --only notebooks")
    if args.notebook and args.only != "notebooks":
        parser.error("--notebook needs --only notebooks")
    out = args.out.resolve()
    if args.only in (None, "release"):
        build_release(out, args.core)
    if args.only in (None, "notebooks"):
        try:
            build_notebooks(out, args.notebook)
        except ValueError as err:
            parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
