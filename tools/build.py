"""Rebuild the generated folders from the nbgrader masters in source/.

    release/    the student edition: `nbgrader generate_assignment` on every
                assignment folder in source/ (solutions and hidden tests removed)
    notebooks/  the reading edition: every master in source/lab executed top to
                bottom with its solutions, outputs and figures kept

Both are committed. The output is reproducible: building twice gives the same
bytes (no execution timestamps, cell ids kept from the masters), so the tests
can rebuild into a temporary folder and compare.

usage: python tools/build.py [--out DIR] [--only release|notebooks]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "autograder"))
from nbgrader_cli import course_folder, nbgrader_command, nbgrader_env  # noqa: E402

SOURCE = ROOT / "source"
EXEC_TIMEOUT = 600  # seconds per cell; a hung cell fails the build, never stalls CI


def nbgrader(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run one nbgrader command in course root `cwd`; raise with its log on failure."""
    proc = subprocess.run(nbgrader_command(*args), cwd=cwd, env=nbgrader_env(),
                          capture_output=True, text=True)
    # note: nbgrader can exit 0 after logging an error, so read the log as well
    if proc.returncode != 0 or "| ERROR]" in proc.stderr:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed in {cwd}:\n{proc.stderr}")
    return proc


def assignments() -> list[str]:
    return sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def build_release(out: Path) -> None:
    """Write out/release/<assignment>/ with nbgrader's student edition."""
    with tempfile.TemporaryDirectory(prefix="rag-release-") as tmp:
        course = course_folder(Path(tmp), SOURCE)
        for name in assignments():
            nbgrader(["generate_assignment", name, "--force"], cwd=course)
        target = out / "release"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(course / "release", target)
    print(f"release/    {', '.join(assignments())}")


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    """Execute one master and strip what changes from run to run."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=EXEC_TIMEOUT, kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # wall-clock timestamps
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    nb.metadata.pop("widgets", None)
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


def build_notebooks(out: Path) -> None:
    """Write out/notebooks/NN_*.ipynb: each lab master executed."""
    target = out / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    masters = sorted((SOURCE / "lab").glob("*.ipynb"))
    wanted = {m.name for m in masters}
    for old in target.glob("*.ipynb"):
        if old.name not in wanted:
            old.unlink()
    for master in masters:
        start = time.perf_counter()
        nb = execute(master, cwd=target)
        nbformat.write(nb, target / master.name)
        print(f"notebooks/  {master.name}  executed in {time.perf_counter() - start:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT,
                        help="folder to write release/ and notebooks/ into (default: the repo)")
    parser.add_argument("--only", choices=["release", "notebooks"],
                        help="build just one of the two folders")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.only in (None, "release"):
        build_release(out)
    if args.only in (None, "notebooks"):
        build_notebooks(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
