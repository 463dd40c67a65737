"""Every edition's text is true for that edition.

The core edition (make build CORE=1) gives the extension parts worked, so
its prose must not ask the student to write them, promise hidden tests or
points for them, or call their functions "yours"; its intro must say which
parts are worked. The full edition (the masters) must list every graded
part in its intro. These tests write the core masters exactly as the core
build does (editions.write_core_masters) and read their text; no kernel.
"""
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.scoring import editions  # noqa: E402
from autograder.run.rag_feedback import parts_of  # noqa: E402

LAB = sorted((ROOT / "source" / "lab").glob("*.ipynb"))
BULLET = re.compile(r"^\* \*\*(Part \w+)\*\*(.*?)(?=^\* |^\s*$|\Z)", re.M | re.S)
ASKS_TO_WRITE = re.compile(r"\b[Ww]rite\s+(?:`|a |an |the )")
GRADING = re.compile(r"hidden test|costs? points|points? only|[Tt]he tests (?:run|swap)")


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """stem -> the lab master as the core build writes it."""
    folder = editions.write_core_masters(ROOT / "source",
                                         tmp_path_factory.mktemp("core") / "source")
    return {p.stem: nbformat.read(p, as_version=4)
            for p in sorted((folder / "lab").glob("*.ipynb"))}


def defined_in(nb, part) -> set[str]:
    code = "\n".join(nb.cells[i].source for i in part.answers)
    return set(re.findall(r"^def (\w+)", code, re.M))


def worked_parts(master) -> list:
    return [p for p in parts_of(master) if p.path == editions.EXTENSION]


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_the_full_intro_lists_every_part_with_its_functions(path):
    """One bullet per graded part, in order, naming a function the part defines."""
    nb = nbformat.read(path, as_version=4)
    bullets = BULLET.findall(nb.cells[0].source)
    parts = parts_of(nb)
    assert [name for name, _ in bullets] == [p.name for p in parts], \
        f"{path.name}: the intro's bullets are {[n for n, _ in bullets]}"
    for (name, text), part in zip(bullets, parts):
        named = set(re.findall(r"`(\w+)", text))
        assert named & defined_in(nb, part), \
            f"{path.name}: the bullet of {name} names {named}, the part defines " \
            f"{defined_in(nb, part)}"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "You will write" not in text and "you write each" not in text


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_the_core_intro_says_which_parts_are_worked(path, core):
    """Worked parts' bullets say so, graded ones do not; the intro's folded
    grading paragraph (about every part) is gone; the note names the graded
    parts and their points."""
    master = nbformat.read(path, as_version=4)
    nb = core[path.stem]
    worked = {p.name for p in worked_parts(master)}
    if not worked:
        assert nb.cells[0].source == master.cells[0].source
        return
    bullets = dict(BULLET.findall(nb.cells[0].source))
    for name, text in bullets.items():
        assert (editions.WORKED_BULLET in text) == (name in worked), \
            f"{path.name} (core): the bullet of {name} reads {text.strip()[:80]!r}"
    assert "How the parts are graded" not in nb.cells[0].source
    note = nb.cells[1].source
    graded = [p for p in parts_of(nb)]
    points = sum(float(editions.nbgrader_meta(c).get("points", 0)) for c in nb.cells
                 if editions.nbgrader_meta(c).get("grade"))
    if graded:
        assert f"{', '.join(p.name for p in graded)} ({points:g} points)" in note, note
        assert "hidden test" in note
    else:
        assert "no part of this notebook is graded" in note, note


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_worked_parts_do_not_ask_for_work_or_promise_points(path, core):
    """A worked part's text asks to read, not write; no hidden tests, no
    points, no "your `function`"."""
    nb = core[path.stem]
    for part in worked_parts(nbformat.read(path, as_version=4)):
        heading = next(c.source for c in nb.cells if c.cell_type == "markdown"
                       and re.search(rf"^#+\s+{part.name}\s+\(0 points\)", c.source, re.M))
        assert editions.WORKED_NOTE in heading
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or "worked for you in this release" not in cell.source \
                or "## Part" not in cell.source:
            continue
        # the worked part's text runs to the next markdown cell with a heading
        texts = [cell.source]
        for later in nb.cells[index + 1:]:
            if later.cell_type == "markdown" and later.source.lstrip().startswith(("#", "---")):
                break
            if later.cell_type == "markdown":
                texts.append(later.source)
        for text in texts:
            where = f"{path.name} (core), {text.splitlines()[1][:40]!r}"
            assert not ASKS_TO_WRITE.search(text), f"{where}: {ASKS_TO_WRITE.search(text)[0]!r}"
            assert not GRADING.search(text), f"{where}: {GRADING.search(text)[0]!r}"
            assert not re.search(r"\byour\s+`", text), f"{where}: speaks of 'your `...`'"


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_no_prose_calls_a_worked_function_the_students(path, core):
    """Anywhere in the core edition, "your `f`" never names a function that
    only a worked part defines (05 C once said "use your token_vectors")."""
    master = nbformat.read(path, as_version=4)
    worked = set().union(*[defined_in(master, p) for p in worked_parts(master)])
    graded = set().union(*[defined_in(master, p) for p in parts_of(master)
                           if p.path != editions.EXTENSION])
    only_worked = worked - graded
    for cell in core[path.stem].cells:
        if cell.cell_type == "markdown":
            for name in re.findall(r"\byour\s+`(\w+)", cell.source):
                assert name not in only_worked, \
                    f"{path.name} (core) calls `{name}` the student's: {cell.source[:80]!r}"


def test_worked_text_rewrites_what_it_says():
    """The rewrite on a made-up task text."""
    text = ("Write `f(x)`. It uses your `g`. The hidden tests compare it with\n"
            "the package.\n\n* Then write `h`.\n* A slip here costs points only once.\n\n"
            "```\nWrite `kept` in a fence\n```")
    out = editions.worked_text(text)
    assert out.startswith("Read `f(x)`. It uses the `g`.")
    assert "hidden" not in out and "costs points" not in out
    assert "* Then read `h`." in out and "Write `kept` in a fence" in out


def prose_sentences(nb) -> list[str]:
    """Every sentence of a notebook's markdown, on one line."""
    return [s for cell in nb.cells if cell.cell_type == "markdown"
            for block in re.split(r"\n\s*\n|\n(?=\s*(?:[*-]|\d+\.)\s)", cell.source)
            for s in editions.SENTENCE_END.split(" ".join(block.split())) if s]


@pytest.mark.parametrize("path", LAB, ids=lambda p: p.stem)
def test_a_notebook_with_nothing_graded_speaks_of_no_graded_part(path, core):
    """01, 02, 08 and 09 grade nothing in the core edition: their intro must
    not introduce "the graded parts" under that note."""
    nb = core[path.stem]
    if "no part of this notebook is graded" not in nb.cells[1].source:
        return
    said = [s for s in prose_sentences(nb) if re.search(r"\bgraded parts?\b", s)]
    assert said == [], f"{path.name} (core) grades nothing but says {said}"


# "you build it in notebook 06", "the pieces you built earlier (notebook 03)"
BUILT_ELSEWHERE = re.compile(
    r"\byou(?:'ve| have)? (?:build|built|write|wrote)\b.*?\bnotebooks? (\d\d)")


def core_functions(master) -> tuple[set[str], set[str]]:
    """(functions a core part of `master` defines, those only worked parts do)."""
    core_parts = [p for p in parts_of(master) if p.path != editions.EXTENSION]
    graded = set().union(set(), *[defined_in(master, p) for p in core_parts])
    worked = set().union(set(), *[defined_in(master, p) for p in worked_parts(master)])
    return graded, worked - graded


def test_what_you_built_elsewhere_was_graded_there(core):
    """A sentence that says the student builds or built a piece in another
    notebook names the piece, and in the core edition that piece is a graded
    part there, not a worked one (01 once said `grounded_answer` was "you
    build it in notebook 06", 09 that it imported "the pieces you built")."""
    masters = {p.stem[:2]: nbformat.read(p, as_version=4) for p in LAB}
    wrong = []
    for stem, nb in core.items():
        for sentence in prose_sentences(nb):
            found = BUILT_ELSEWHERE.search(sentence)
            if not found or found.group(1) == stem[:2]:
                continue
            named = set(re.findall(r"`(\w+)", sentence))
            graded, worked = core_functions(masters[found.group(1)])
            if not named & graded or named & worked:
                wrong.append(f"{stem}: {sentence}")
    assert wrong == []
