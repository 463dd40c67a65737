"""`make lab` in the repository gives the notebooks a guide to link to.

The released notebooks link to `../guide/...`. `make lab` copies them to
`my-work/<assignment>/`, so the guide must be copied to `my-work/guide/`
too, never over a file already there. The test runs the real target in a
scratch copy, with a stand-in `jupyter` that only records its call.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\((\.\./guide/[^)#\s]+)")


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
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "jupyter").write_text("#!/bin/sh\necho \"jupyter in $(pwd): $*\"\n")
    (bin_dir / "jupyter").chmod(0o755)
    (work / ".venv" / ".installed").write_text("")
    return work


def test_make_lab_copies_the_guide_where_the_links_point(tmp_path):
    work = scratch(tmp_path)
    mine = work / "my-work" / "guide" / "glossary.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own notes\n")
    proc = subprocess.run(["make", "-s", "lab"], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "jupyter in" in proc.stdout and "/my-work: lab" in proc.stdout, proc.stdout
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
