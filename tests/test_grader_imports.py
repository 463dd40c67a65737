"""The grader's modules import one another in one direction: no module
reaches itself through the modules it imports, counting the imports made
inside functions (which only put a circle off until it is run)."""
import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[1] / "autograder"


def imports_of(path: Path, modules: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return (found & modules) - {path.stem}


def modules() -> dict[str, Path]:
    return {p.stem: p for p in GRADER.glob("*.py")}


def test_no_module_of_the_grader_imports_itself_in_a_circle():
    paths = modules()
    graph = {name: imports_of(path, set(paths)) for name, path in paths.items()}
    assert graph["grade"] and graph["judge"], "the graph read no imports"
    circles = []
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for dep in sorted(graph[name]):
            if state.get(dep) == "open":  # on the path that led here
                path = trail + [name]
                circles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, trail + [name])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert not circles, f"imports that come back to where they started: {circles}"


def rooms() -> list[tuple[str, set[str]]]:
    """autograder/README.md's rooms, in order: (heading, module names)."""
    text = (GRADER / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Rooms\n", 1)[1].split("\n### Beside the rooms", 1)[0]
    found = []
    for block in section.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        names = set()
        for line in body.splitlines():
            if line.startswith("| `"):
                first = line.split("|")[1]
                names |= {part.strip(" `")[:-3] for part in first.split(",")
                          if part.strip(" `").endswith(".py")}
        found.append((heading, names))
    return found


def test_every_module_is_in_one_room_and_imports_only_upwards():
    paths = modules()
    listed = rooms()
    assert len(listed) >= 5, listed
    room_of: dict[str, int] = {}
    for index, (heading, names) in enumerate(listed):
        for name in names:
            assert name not in room_of, f"{name}.py is in two rooms"
            room_of[name] = index
    assert set(room_of) == set(paths), (
        f"not in a room: {sorted(set(paths) - set(room_of))}; "
        f"in a room but gone: {sorted(set(room_of) - set(paths))}")
    downwards = [f"{name} ({listed[room_of[name]][0]}) imports {dep} "
                 f"({listed[room_of[dep]][0]})"
                 for name, path in sorted(paths.items())
                 for dep in sorted(imports_of(path, set(paths)))
                 if room_of[dep] > room_of[name]]
    assert not downwards, downwards
