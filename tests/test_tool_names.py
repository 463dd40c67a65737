"""Every script in tools/ has a name that nothing else answers to.

`python tools/x.py` puts tools/ first on sys.path, so a tools/site.py once
stood in for the standard library's `site` there; a script beside a folder
of the same name makes `import x` depend on which of the two Python finds
first; and a tools/selfcheck.py next to ragkit/selfcheck.py made "selfcheck"
mean two different things. The test reads names only and runs nothing.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clashes(tools: Path, package: Path) -> list[str]:
    """What each module of ``tools`` shares its name with, one line each."""
    found = []
    for script in sorted(tools.glob("*.py")):
        name = script.stem
        if name == "__init__":
            continue
        if (tools / name).is_dir():
            found.append(f"tools/{name}.py: a folder tools/{name}/ beside it")
        if name in sys.stdlib_module_names:
            found.append(f"tools/{name}.py: the standard library's {name}")
        if (package / f"{name}.py").is_file():
            found.append(f"tools/{name}.py: ragkit/{name}.py")
    return found


def test_the_check_sees_each_kind_of_clash(tmp_path):
    tools, package = tmp_path / "tools", tmp_path / "ragkit"
    (tools / "bundle").mkdir(parents=True)
    package.mkdir()
    for name in ("__init__", "bundle", "site", "quiz", "build_things"):
        (tools / f"{name}.py").write_text("")
    (package / "quiz.py").write_text("")
    assert clashes(tools, package) == [
        "tools/bundle.py: a folder tools/bundle/ beside it",
        "tools/quiz.py: ragkit/quiz.py",
        "tools/site.py: the standard library's site"]


def test_no_tool_shares_its_name():
    assert clashes(ROOT / "tools", ROOT / "ragkit") == []
