"""The pack's packages are installed into the venv (`make` runs `pip install
-e .`), so its code imports them as packages instead of putting the
repository on `sys.path` by hand.

A few files still change the path, each for a reason the installed package
cannot cover: code that runs from a copy of the grader in a sandbox or a
course folder, where the copy and not the repository must be imported; a
configuration file loaded by its path next to the module it needs; and the
scripts of the student's bundle, which a student may run with any Python.
The test lists them, and fails when another file starts doing it or one of
them stops saying why.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("autograder", "hub", "ragkit", "tools")
CHANGE = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\[[^\]]*\])?\s*\+?=|"
                    r"site\.addsitedir\(")

# file -> how many places in it may change sys.path
ALLOWED = {
    # run as a script from the grader sandbox's own copy of the package
    "autograder/pipeline/autograde_steps.py": 2,
    "autograder/scoring/similarity.py": 1,
    # configuration files, loaded by their path in a course folder or the
    # hub's formgrader service, beside the copies of what they import
    "autograder/run/nbgrader_config.py": 1,
    "autograder/reports/formgrader_server_config.py": 1,
    "hub/jupyterhub_config.py": 1,
    # the kernel takes the sandbox's own folders off its path
    "autograder/run/kernel_sandbox.py": 1,
    # the student's bundle: run with whatever Python the student set up
    "autograder/check/validate.py": 1,
    "tools/student_bundle/hand_in.py": 1,
}


def path_changes(root: Path) -> dict[str, list[int]]:
    """`path relative to root` -> the line numbers that change sys.path, in
    the Python files of FOLDERS."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            hits = [n for n, line in enumerate(lines, 1)
                    if CHANGE.search(line.split("#", 1)[0])]
            if hits:
                found[path.relative_to(root).as_posix()] = hits
    return found


def test_the_search_sees_each_way_of_changing_the_path(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "a.py").write_text("import sys\nsys.path.insert(0, 'x')\n# sys.path.append('y')\n")
    (tools / "b.py").write_text("import site, sys\nsite.addsitedir('z')\nsys.path[:0] = ['w']\n"
                                "sys.path += ['v']\nprint(sys.path)\n")
    assert path_changes(tmp_path) == {"tools/a.py": [2], "tools/b.py": [2, 3, 4]}


def test_only_the_listed_files_change_sys_path_and_each_says_why():
    found = path_changes(ROOT)
    extra = {name: lines for name, lines in found.items()
             if len(lines) > ALLOWED.get(name, 0)}
    assert not extra, f"import the installed packages instead: {extra}"
    silent = []
    for name, lines in found.items():
        text = (ROOT / name).read_text(encoding="utf-8").splitlines()
        for number in lines:
            # a comment on the line itself or in the three lines above it
            near = text[max(0, number - 4):number]
            if not any("#" in line for line in near):
                silent.append(f"{name}:{number}")
    assert not silent, f"a change of sys.path without a comment saying why: {silent}"
