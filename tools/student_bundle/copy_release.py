"""Copy the course's release into the student's work folder, never over their files.

    python tools/copy_release.py [--release release] [--guide guide] [--work my-work]

`make lab` runs this, in the course repository (tools/student_bundle/) and
in the student's bundle (tools/), before it opens JupyterLab. Every file of
each folder of release/ (lab/, quiz/, project/, and in the bundle guide/)
goes to the same place under my-work/, and with --guide that folder goes to
my-work/guide/, where the notebooks' ../guide/ links look for it. A file
already in my-work/ is the student's and stays as it is, so a deleted
notebook or a new assignment comes back without touching the rest. Links
and anything but regular files in release/ are left out.

The notebooks are copied as files, with one step more: a copied notebook
that holds no output is signed in the student's own Jupyter notary (what
`jupyter trust` does), because a signature vouches only for outputs and
such a notebook has none, and unsigned it makes the server log "is not
trusted" each time it is opened. A notebook that holds any output is left
unsigned: this script has not read the outputs and does not vouch for
them (JupyterLab signs a notebook when the student saves it).
Each file copied is printed, one path a line.
"""
from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
from pathlib import Path


def files_under(folder: Path) -> list[Path]:
    """The regular files under `folder`, relative to it, sorted; a link is
    neither followed (os.walk does not enter a linked folder) nor listed."""
    found = []
    for top, _, names in os.walk(folder):
        for name in names:
            path = Path(top, name)
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path.relative_to(folder))
    return sorted(found)


def copy_missing(source: Path, target: Path) -> list[Path]:
    """Each regular file of `source` that `target` lacks, copied there (its
    folders made); the copies, in order. Nothing in `target` is replaced."""
    copied = []
    for rel in files_under(source):
        dest = target / rel
        if dest.exists() or dest.is_symlink():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, dest)
        copied.append(dest)
    return copied


def sign_if_output_free(paths: list[Path]) -> list[Path]:
    """Sign each notebook of `paths` that holds no output (see the module's
    docstring); the notebooks signed. Others, and other files, are untouched."""
    import nbformat
    from nbformat.sign import NotebookNotary

    notary, signed = NotebookNotary(), []
    for path in paths:
        if path.suffix != ".ipynb":
            continue
        nb = nbformat.read(path, as_version=4)
        if any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"):
            continue
        notary.sign(nb)
        signed.append(path)
    return signed


def copy_release(release: Path, work: Path, guide: Path | None = None) -> list[Path]:
    """release/<assignment>/ into work/<assignment>/ for every folder of
    release/, and `guide` into work/guide/; the files copied."""
    if not release.is_dir():
        raise ValueError(f"release must be a folder (got release={release})")
    if guide is not None and not guide.is_dir():
        raise ValueError(f"guide must be a folder (got guide={guide})")
    copied = []
    for folder in sorted(p for p in release.iterdir() if p.is_dir() and not p.is_symlink()):
        copied += copy_missing(folder, work / folder.name)
    if guide is not None:
        copied += copy_missing(guide, work / "guide")
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=Path("release"))
    parser.add_argument("--guide", type=Path, default=None,
                        help="a folder copied to WORK/guide/ (the repository's guide/; "
                             "the bundle has it in release/)")
    parser.add_argument("--work", type=Path, default=Path("my-work"))
    args = parser.parse_args(argv)
    try:
        copied = copy_release(args.release, args.work, args.guide)
    except ValueError as err:
        parser.error(str(err))
    sign_if_output_free(copied)
    for path in copied:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
