"""Zip the work to hand in: one file, hand-in.zip, to upload to your course.

    python tools/hand_in.py [--work my-work] [--release release]
                            [--out hand-in.zip] [--no-check]

`make hand-in` runs this. It checks the notebooks first, as `make check`
does (autograder/check/validate.py), then writes one zip holding, of what exists
in my-work/:

    lab/NN_*.ipynb          the lab notebooks
    quiz/quiz.ipynb         the quiz
    project/project.ipynb   the project notebook, with the list of the
                            sources you used (a reminder is printed while
                            it is empty)
    project/corpus/...      and the corpus you built for it

and nothing else. A notebook goes in only under the name release/ gives it,
so a copy ("07_measuring-Copy1.ipynb") or a scratch notebook
("Untitled.ipynb") stays out, as do .ipynb_checkpoints/, hidden files,
caches and links. Failing tests do not stop the zip: unfinished work is
handed in too, and the check's table says what it will score. A notebook
that is not a readable notebook file does stop it, since it would score
nothing. The zip is what is on disk: save your notebooks first.

The folder names at the top of the zip (lab, quiz, project) are the ones
release/ uses; the instructor's import reads them.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
BUNDLE = HERE.parent
VALIDATE = BUNDLE / "autograder" / "check" / "validate.py"
# folders a student makes beside an assignment's notebook and hands in with
# it (the project's corpus/); autograder/run/nbgrader_cli.py gives the list.
# This runs in the student's bundle with whatever Python the student set up,
# so the bundle's own autograder/ is put first on the path
sys.path.insert(0, str(BUNDLE))
from autograder.run.nbgrader_cli import STUDENT_OWN  # noqa: E402

JUNK = {"__pycache__", ".ipynb_checkpoints"}
PROJECT = "project/project.ipynb"
SOURCES_HEAD = "## Sources you used"
SOURCES_BLANK = "- (your sources, one per line)"  # the release's text under it


class Refused(Exception):
    """Nothing can be handed in as it is."""


def assignments(release: Path) -> dict[str, list[str]]:
    """Assignment folder -> the names of its notebooks, from release/."""
    found = {}
    for folder in sorted(p for p in release.iterdir() if p.is_dir()):
        names = sorted(p.name for p in folder.glob("*.ipynb"))
        if names:
            found[folder.name] = names
    if not found:
        raise Refused(f"{release} holds no assignment notebook")
    return found


def own_files(folder: Path) -> list[Path]:
    """Regular files under `folder`, in name order: no hidden file or
    folder, no cache, no link (which could point anywhere on your computer)."""
    found = []
    for top, dirs, files in os.walk(folder):  # does not follow links
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in JUNK]
        found += [Path(top, f) for f in files if not f.startswith(".")
                  and Path(top, f).is_file() and not Path(top, f).is_symlink()]
    return sorted(found)


def choose(work: Path, release: Path) -> tuple[dict[str, Path], list[str]]:
    """(name in the zip -> file, files of work/ left out)."""
    chosen, left_out = {}, []
    for assignment, notebooks in assignments(release).items():
        folder = work / assignment
        if not folder.is_dir() or folder.is_symlink():
            continue
        for name in notebooks:
            path = folder / name
            if path.is_file() and not path.is_symlink():
                chosen[f"{assignment}/{name}"] = path
        for own in STUDENT_OWN:
            if (folder / own).is_dir() and not (folder / own).is_symlink():
                chosen.update((f"{assignment}/{own}/{p.relative_to(folder / own).as_posix()}", p)
                              for p in own_files(folder / own))
        packed = set(chosen.values())
        left_out += [f"{assignment}/{p.relative_to(folder).as_posix()}"
                     for p in own_files(folder) if p not in packed]
    return chosen, left_out


def unreadable(chosen: dict[str, Path]) -> list[str]:
    """'path: why' for each notebook that is not a notebook file."""
    problems = []
    for name, path in chosen.items():
        if name.endswith(".ipynb"):
            try:
                nbformat.read(path, as_version=4)
            except Exception as err:  # noqa: BLE001 (any reason makes it unusable)
                problems.append(f"{path}: {type(err).__name__}: {str(err)[:200]}")
    return problems


def sources_note(chosen: dict[str, Path]) -> str | None:
    """A reminder when the project's "Sources you used" list is missing or
    still as released; None when it is filled in (or no project is handed in)."""
    if PROJECT not in chosen:
        return None
    cells = nbformat.read(chosen[PROJECT], as_version=4).cells
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith(SOURCES_HEAD):
            after = cells[i + 1].source.strip() if i + 1 < len(cells) else ""
            if after in ("", SOURCES_BLANK) or after.startswith("#"):
                return (f"{PROJECT}: the list under '{SOURCES_HEAD[3:]}' is still empty. "
                        "List what your work drew on (or write 'none'), save, and "
                        "hand in again.")
            return None
    return (f"{PROJECT}: its '{SOURCES_HEAD[3:]}' section is gone. Copy the two cells "
            "back from release/project/project.ipynb, fill in the list, and hand in again.")


def check(notebooks: list[Path]) -> int:
    """Run the visible tests of `notebooks`, as `make check` does; its
    exit status (0 when every test passes)."""
    many = f"the {len(notebooks)} notebooks" if len(notebooks) > 1 else "the notebook"
    print(f"Checking {many} to hand in, as `make check` does (a few minutes)...\n",
          flush=True)
    return subprocess.run([sys.executable, str(VALIDATE), *map(str, notebooks)]).returncode


def write_zip(chosen: dict[str, Path], out: Path) -> None:
    """`chosen` zipped into `out` in name order, replacing `out` in one step."""
    partial = out.with_name(out.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED,
                         strict_timestamps=False) as archive:
        for name in sorted(chosen):
            archive.write(chosen[name], name)
    os.replace(partial, out)


def human(size: int) -> str:
    return f"{size / 1024:.0f} kB" if size >= 1024 else f"{size} B"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check, then zip the notebooks (and the "
                                     "project's corpus) to hand in.")
    parser.add_argument("--work", type=Path, default=Path("my-work"),
                        help="your working folder (default: my-work)")
    parser.add_argument("--release", type=Path, default=BUNDLE / "release",
                        help="the released assignments, for the names to hand in")
    parser.add_argument("--out", type=Path, default=Path("hand-in.zip"),
                        help="the zip to write (default: hand-in.zip)")
    parser.add_argument("--no-check", action="store_true",
                        help="zip without running the tests first")
    args = parser.parse_args(argv)
    try:
        if not args.work.is_dir():
            raise Refused(f"{args.work} does not exist: run `make lab`, work in "
                          "the notebooks it copies there, then hand in")
        chosen, left_out = choose(args.work, args.release)
        if not any(name.endswith(".ipynb") for name in chosen):
            raise Refused(f"{args.work} holds no notebook to hand in (names as in "
                          f"{args.release}/)")
        broken = unreadable(chosen)
        if broken:
            raise Refused("these are not readable notebooks, so they would score "
                          "nothing; restore them (File > Revert, or copy the one in "
                          "release/ and redo the work):\n  " + "\n  ".join(broken))
    except Refused as err:
        print(f"hand-in: nothing written: {err}", file=sys.stderr)
        return 1
    status = 0
    if not args.no_check:
        status = check([chosen[n] for n in sorted(chosen) if n.endswith(".ipynb")])
    write_zip(chosen, args.out)
    print(f"\nWrote {args.out}: {len(chosen)} files, {human(args.out.stat().st_size)}. "
          "Upload this one file.")
    for name in sorted(chosen):
        print(f"  {name}  ({human(chosen[name].stat().st_size)})")
    if left_out:
        print("Left out (not part of an assignment): " + ", ".join(sorted(left_out)))
    note = sources_note(chosen)
    if note:
        print(note)
    if status == 1:
        print("Some visible tests fail (see the check above): the zip holds your "
              "notebooks as they are; check again and hand in again if you can.")
    elif status:
        print("The check could not run (see above); the zip was written anyway.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
