"""environment.yml is the one dependency list: the venv must match it exactly."""
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from tools.requirements import pip_entries, pip_requirements

ROOT = Path(__file__).resolve().parents[1]


def test_every_pinned_package_is_installed_at_its_pin():
    """The Makefile installs what environment.yml lists, at the listed version
    (the entries installed without their dependencies included)."""
    reqs = [req for req, _ in pip_entries((ROOT / "environment.yml").read_text())]
    assert len(reqs) >= 7
    wrong = []
    for req in reqs:
        name, pin = req.split("==")
        try:
            got = version(name)
        except PackageNotFoundError:
            got = "missing"
        if got != pin:
            wrong.append(f"{name}: pinned {pin}, installed {got}")
    assert wrong == []


def test_the_seven_packages_of_the_brief_are_listed():
    """The course's fixed package list is in environment.yml."""
    names = {r.split("==")[0].lower() for r in
             pip_requirements((ROOT / "environment.yml").read_text())}
    brief = {"jupyterlab", "nbgrader", "numpy", "pandas", "matplotlib",
             "scikit-learn", "nbval"}
    assert brief <= names


def test_an_unpinned_entry_is_refused():
    """A loose pin would let two machines drift apart, so the parser rejects it."""
    text = "dependencies:\n  - pip\n  - pip:\n      - numpy>=2\n"
    with pytest.raises(ValueError, match="pinned"):
        pip_requirements(text)


def test_a_file_without_a_pip_block_is_refused():
    """An environment.yml with nothing to install is an error, not an empty venv."""
    with pytest.raises(ValueError, match="pip"):
        pip_requirements("dependencies:\n  - python=3.11\n")
