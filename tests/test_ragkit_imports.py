"""No module of ragkit imports itself back through another.

An import circle works only while every module in it defers the import into
a function body, and it ties the modules so that neither can be read,
tested or changed alone (encoder and squad once each imported the other to
check stored vectors). The test reads every import statement, at the top of
a module or inside a function, without running any of them.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragkit"


def ragkit_imports(path: Path) -> set[str]:
    """The ragkit modules that ``path`` imports anywhere, by short name."""
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            relative = node.level == 1 or node.module == "ragkit" or (
                node.module or "").startswith("ragkit.")
            if not relative:
                continue
            base = (node.module or "").removeprefix("ragkit").lstrip(".")
            # "from . import x" and "from ragkit import x" name modules;
            # "from .x import y" and "from ragkit.x import y" name x.
            names = ([base] if base else [a.name for a in node.names])
            names = ["ragkit." + n for n in names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "ragkit" and len(parts) > 1 and parts[1] in modules:
                found.add(parts[1])
    found.discard(path.stem)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per circle found by a depth-first walk, sorted."""
    found, state = set(), {}  # state: 1 = on the current path, 2 = done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loop = path[path.index(nxt):] + [nxt]
                found.add(tuple(loop))
            elif nxt not in state:
                walk(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            walk(start, [start])
    return sorted(list(c) for c in found)


def test_the_circle_finder_sees_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_reader_sees_every_form_of_import(tmp_path):
    text = ("from .text import x\nfrom . import bm25\nimport ragkit.dense\n"
            "def f():\n    from ragkit.squad import y\n    from ragkit import fusion\n"
            "import numpy\nfrom .checks import z\n")
    fake = tmp_path / "checks.py"
    fake.write_text(text)
    assert ragkit_imports(fake) == {"text", "bm25", "dense", "squad", "fusion"}


def test_ragkit_has_no_import_circle():
    graph = {p.stem: ragkit_imports(p) for p in sorted(PACKAGE.glob("*.py"))}
    assert circles(graph) == [], (
        "these ragkit modules import each other in a circle: "
        f"{circles(graph)}")
    # The shared checks of stored vectors stand below both of their users.
    assert graph["stored_vectors"] == set(), graph["stored_vectors"]
