"""The grader's modules live in the rooms autograder/README.md lists, one
folder each, and import one another in one direction: no module reaches
itself through the modules it imports, counting the imports made inside
functions (which only put a circle off until it is run)."""
import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[1] / "autograder"


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The grader's modules that `path` imports, by their names: through
    the package (`from autograder.run import judge`,
    `from autograder.run.judge import X`) or, from a file that puts its own
    folder on the path, by their bare name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[-1] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[-1])
            found |= {alias.name for alias in node.names}
    return (found & modules) - {path.stem}


def modules() -> dict[str, Path]:
    """Every module of the package's rooms, by name (the testbed is not a room)."""
    found = {}
    for path in GRADER.glob("*/*.py"):
        if path.parent.name != "testbed" and path.name != "__init__.py":
            assert path.stem not in found, f"two modules named {path.stem}"
            found[path.stem] = path
    return found


def test_the_rooms_are_folders_with_nothing_left_beside_them():
    assert {p.name for p in GRADER.glob("*.py")} == {"__init__.py"}
    for heading, folder, _ in rooms():
        assert (GRADER / folder / "__init__.py").is_file(), f"{heading}: no {folder}/ package"


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


def rooms() -> list[tuple[str, str, set[str]]]:
    """autograder/README.md's rooms, in order: (heading, its folder, module
    names)."""
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
        folder = heading.split("`")[1].rstrip("/") if "`" in heading else ""
        found.append((heading, folder, names))
    return found


def test_every_module_is_in_one_room_and_imports_only_upwards():
    paths = modules()
    listed = rooms()
    # by stage, a submission's way through: in, run, scored, graded one
    # student at a time, reported; the instructor's commands and the
    # student's check on top
    assert [folder for _, folder, _ in listed] == [
        "intake", "run", "scoring", "pipeline", "reports", "commands", "check"], listed
    room_of: dict[str, int] = {}
    for index, (heading, folder, names) in enumerate(listed):
        for name in names:
            assert name not in room_of, f"{name}.py is in two rooms"
            room_of[name] = index
            assert name not in paths or paths[name].parent.name == folder, (
                f"{name}.py is in {paths[name].parent.name}/, its room is {folder}/")
    assert set(room_of) == set(paths), (
        f"not in a room: {sorted(set(paths) - set(room_of))}; "
        f"in a room but gone: {sorted(set(room_of) - set(paths))}")
    downwards = [f"{name} ({listed[room_of[name]][0]}) imports {dep} "
                 f"({listed[room_of[dep]][0]})"
                 for name, path in sorted(paths.items())
                 for dep in sorted(imports_of(path, set(paths)))
                 if room_of[dep] > room_of[name]]
    assert not downwards, downwards


def test_the_files_copied_into_course_folders_bring_what_they_import():
    """nbgrader_cli.GRADER_FILES is all of the grader that a course folder
    (the hub's, the formgrader's, each student's) holds: every grader module
    those files import, at any depth, is among them."""
    import sys
    sys.path.insert(0, str(GRADER.parent))
    from autograder.run.nbgrader_cli import GRADER_FILES
    every = modules()
    copied = {p.stem for p in GRADER_FILES}
    todo, reached = list(copied), set()
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        todo += imports_of(every[name], set(every))
    assert reached <= copied, f"imported but not copied: {sorted(reached - copied)}"


def test_commands_holds_only_command_line_entry_points():
    """Each module of commands/ is a script an instructor runs: it has a
    `main` and runs it when started as a script. The steps those scripts
    drive live in the rooms below."""
    scripts = sorted((GRADER / "commands").glob("*.py"))
    assert len(scripts) > 1, scripts
    not_commands = []
    for path in scripts:
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        has_main = any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
        runs_main = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)
                        for n in tree.body)
        if not (has_main and runs_main):
            not_commands.append(path.name)
    assert not not_commands, f"commands/ modules that are no command: {not_commands}"
