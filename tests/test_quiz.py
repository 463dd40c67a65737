"""The graded quiz: its key and feedback, the practice quiz built beside
it, and that the key never leaves source/ (checked in-process, no kernel).

Each hidden test cell of source/quiz/quiz.ipynb is run with every possible
letter: exactly one letter passes, and every other letter's failure message
is that option's own reason, never a hint at the right option. The numeric
questions take their key from the package.

The key lives only in the master (its solution cells and hidden tests).
Everything a reader or a student gets, release/, notebooks/, guide/, data/,
ragkit/, tools/ and the student bundle, is scanned for it in every form that
would give it away, and the reading edition's quiz is the practice quiz of
ragkit/quiz_practice.py: other questions, built without reading the master.
"""
import ast
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ragkit.quiz_practice import QUESTIONS as PRACTICE  # noqa: E402
from ragkit.quiz_practice import question_markdown  # noqa: E402
from tools import build  # noqa: E402
from tools.build_practice_quiz import NAME, practice_notebook  # noqa: E402
from tools.build_bundle import collect  # noqa: E402

MASTER = ROOT / "source" / "quiz" / "quiz.ipynb"
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
LETTERS = "ABCD"
NUMBERS = range(1, 11)


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(MASTER, as_version=4)


def cell(nb, grade_id):
    (found,) = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return found


@pytest.fixture(scope="module")
def setup_namespace(nb):
    """The setup cell's names (fresh, letter), run once."""
    namespace = {}
    exec(cell(nb, "quiz_setup").source, namespace)
    return namespace


HEADING = re.compile(r"^## Question (\d+) \(1 point\)[ \t]*$", re.M)
OPTION = re.compile(r"^- \*\*([A-Z])\.\*\* (.+)$", re.M)


@pytest.fixture(scope="module")
def questions(nb):
    """Question number -> its markdown and its options (letter -> text)."""
    found = {}
    for c in nb.cells:
        head = HEADING.search(c.source) if c.cell_type == "markdown" else None
        if head:
            found[int(head.group(1))] = {"prose": c.source,
                                         "options": dict(OPTION.findall(c.source))}
    return found


def run_hidden(nb, setup_namespace, number, answer):
    """Run question `number`'s hidden cell with q<number> = answer; return
    (namespace, the AssertionError's message or None)."""
    namespace = dict(setup_namespace)
    namespace[f"q{number}"] = answer
    try:
        exec(cell(nb, f"quiz_hidden_q{number}").source, namespace)
    except AssertionError as error:
        return namespace, str(error)
    return namespace, None


def key(nb, setup_namespace, number):
    namespace, _ = run_hidden(nb, setup_namespace, number, "A")
    return namespace["right"], namespace["why"]


def test_ten_questions_with_four_options_each(questions):
    """Questions 1..10, each listing options A, B, C, D."""
    assert sorted(questions) == list(NUMBERS)
    for number, q in questions.items():
        assert list(q["options"]) == list(LETTERS), f"question {number}"


@pytest.mark.parametrize("number", NUMBERS)
def test_the_hidden_cell_has_the_agreed_shape(nb, number):
    """Docstring, the form check, then REF, right, why and one assert."""
    lines = cell(nb, f"quiz_hidden_q{number}").source.splitlines()
    assert lines[0] == (f'"""(hidden) question {number}: the option chosen '
                        'is the right one."""')
    assert lines[1] == f"_ = letter(q{number}, {number})"
    assert lines[2] == BEGIN and lines[3] == "REF = fresh()" and lines[-1] == END
    assert lines[-2] == (f'assert q{number} == right, '
                         f'f"Question {number}: {{why[q{number}]}}"')
    body = "\n".join(lines[4:-2])
    assert re.search(r"^\(?right\b", body, re.M) and re.search(r"^why = \{", body, re.M)
    meta = cell(nb, f"quiz_hidden_q{number}").metadata["nbgrader"]
    assert meta["points"] == 1 and meta["locked"]
    visible = cell(nb, f"quiz_test_q{number}")
    assert visible.metadata["nbgrader"]["points"] == 0
    assert f"_ = letter(q{number}, {number})" in visible.source


@pytest.mark.parametrize("number", NUMBERS)
def test_exactly_one_letter_passes_and_the_others_hear_why(
        nb, setup_namespace, questions, number):
    """Each wrong letter fails with its own reason, which names neither the
    right letter's option text nor points to that letter."""
    right, why = key(nb, setup_namespace, number)
    assert sorted(why) == list(LETTERS)
    right_text = questions[number]["options"][right]
    passed = []
    for letter in LETTERS:
        _, message = run_hidden(nb, setup_namespace, number, letter)
        if message is None:
            passed.append(letter)
            continue
        assert message == f"Question {number}: {why[letter]}"
        assert right_text.lower() not in message.lower()
        for pointer in (f"**{right}.**", f"option {right}", f"({right})",
                        f"answer is {right}", f"answer {right}"):
            assert pointer not in message, f"question {number}: {message!r}"
    assert passed == [right]


@pytest.mark.parametrize("bad", ["a", "AB", 3, None, ""])
def test_an_answer_of_the_wrong_form_is_refused(setup_namespace, bad):
    """letter() accepts exactly "A".."D" and names the question otherwise."""
    with pytest.raises(ValueError, match="q7"):
        setup_namespace["letter"](bad, 7)
    assert setup_namespace["letter"]("C", 7) == "C"


@pytest.mark.parametrize("number", [4, 5, 8])
def test_the_numeric_keys_are_computed_with_the_package(nb, number):
    """No literal key for 4, 5 and 8: the hidden region calls REF."""
    hidden = cell(nb, f"quiz_hidden_q{number}").source.partition(BEGIN)[2]
    assert re.search(r"REF\.\w+\.\w+\(", hidden)
    assert not re.search(r"^right = \"[A-D]\"", hidden, re.M)


def test_the_keys_are_the_lectures_answers(nb, setup_namespace, questions):
    """5: 38 chunks; 4: Y wins; 8: MRR 0.5 and recall@3 0.5; the option
    texts state the numbers the hidden cells compare."""
    ns5, _ = run_hidden(nb, setup_namespace, 5, "A")
    assert ns5["values"][ns5["right"]] == 38
    for letter, count in ns5["values"].items():
        assert f"{count} chunks" == questions[5]["options"][letter]
    ns4, _ = run_hidden(nb, setup_namespace, 4, "A")
    assert ns4["outcome"][ns4["right"]] == "Y"
    assert questions[4]["options"][ns4["right"]].startswith("Y,")
    assert ns4["y"] == pytest.approx(2 / 62) and ns4["x"] == pytest.approx(1 / 61)
    ns8, _ = run_hidden(nb, setup_namespace, 8, "A")
    assert ns8["values"][ns8["right"]] == (0.5, 0.5)
    for letter, (mrr, recall) in ns8["values"].items():
        assert questions[8]["options"][letter] == \
            f"MRR = {mrr:g} and recall@3 = {recall:g}"


def test_the_right_letters_are_spread_over_the_options(nb, setup_namespace):
    """At least three different letters are right somewhere."""
    rights = [key(nb, setup_namespace, n)[0] for n in NUMBERS]
    assert len(set(rights)) >= 3, rights


def test_the_master_answers_every_question_right(nb, setup_namespace):
    """The master's solution cells hold the key (nbgrader validate relies on it)."""
    for number in NUMBERS:
        namespace = {}
        exec(cell(nb, f"quiz_q{number}").source, namespace)
        assert namespace[f"q{number}"] == key(nb, setup_namespace, number)[0]


# -- the key stays in source/ -------------------------------------------------

# where readers and students look; autograder/ is the instructor's (its
# sample class hands in the right letters on purpose) and tests/ holds no key
SCANNED = ("release", "notebooks", "guide", "data", "ragkit", "tools")
# the one file allowed a `right = "X"` line: the practice quiz's own key,
# for questions that are not the graded ones (see the practice tests below)
PRACTICE_FILE = "ragkit/quiz_practice.py"
SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints"}


@pytest.fixture(scope="module")
def graded(nb, setup_namespace):
    """The graded key (number -> letter) and every piece of 30 or more
    characters of the string literals in the hidden cells' `why` dicts: a
    reason spread over several literals, or an f-string split at its
    fields, is found in its source form and in its printed form alike."""
    letters, pieces = {}, set()
    for number in NUMBERS:
        letters[number] = key(nb, setup_namespace, number)[0]
        region = cell(nb, f"quiz_hidden_q{number}").source.partition(BEGIN)[2]
        reasons = region.partition("why = {")[2].partition(END)[0]
        for prefix, body in re.findall(r'(f?)"((?:[^"\\]|\\.)*)"', reasons):
            # an f-string's fields are printed as values: keep the text between
            parts = (re.split(r"\{[^}]*\}", body) if prefix
                     else [ast.literal_eval(f'"{body}"')])
            pieces.update(" ".join(part.split()) for part in parts
                          if len(part.strip()) >= 30)
    assert len(pieces) >= 60, "expected several reason pieces per question"
    return letters, pieces


def readable(name: str, data: bytes) -> str:
    """The file's text, plus every string inside it when it is JSON (a
    notebook stores `right = "C"` as `right = \\"C\\"`)."""
    text = data.decode("utf-8", errors="replace")
    if name.endswith((".ipynb", ".json")):
        try:
            stack, strings = [json.loads(text)], []
        except ValueError:
            return text
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                strings.append(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        text += "\n" + "\n".join(strings)
    return text


def leaks(name: str, data: bytes, graded) -> list[str]:
    """Each form in which `data` gives away a graded answer."""
    letters, pieces = graded
    text = readable(name, data)
    found = []
    if name != PRACTICE_FILE and re.search(r"\bright\s*=\s*\\?[\"'][A-D]\\?[\"']", text):
        found.append('a key line `right = "X"`')
    for n, right in letters.items():
        # q3 = "D", "q3": "D", Question 3: D, question 3 - (D)
        if re.search(rf"\bq{n}\b\\?[\"']?\s*[:=]\s*\\?[\"']{right}\\?[\"']", text):
            found.append(f"q{n} paired with its answer")
        if re.search(rf"(?i:question)\s+{n}(?!\d)\s*[:=\u2013-]\s*\**\(?{right}"
                     rf"(?![\w'\u2019])", text):
            found.append(f"question {n} paired with its answer")
    sequence = r"[\s,;/|\"'\\-]{0,4}".join(letters[n] for n in NUMBERS)
    if re.search(rf"(?<![A-Za-z]){sequence}(?![A-Za-z])", text):
        found.append("the ten letters in order")
    flat = " ".join(text.split())
    found += [f"a hidden reason: {piece[:40]!r}..." for piece in sorted(pieces)
              if piece in flat]
    return found


def files_under(folders) -> dict[str, bytes]:
    out = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT)
            if path.is_file() and not SKIPPED_PARTS & set(rel.parts):
                out[rel.as_posix()] = path.read_bytes()
    return out


def test_the_scan_finds_the_key_in_every_form_it_looks_for(nb, setup_namespace,
                                                            graded):
    """The master is flagged (key lines, solutions, reasons), and so are a
    printed reason, a key pasted as a dict, as prose, as a string of
    letters, and the old self-check edition's key cell; a harmless example
    is not."""
    letters, _ = graded
    master = leaks("source/quiz/quiz.ipynb", MASTER.read_bytes(), graded)
    assert 'a key line `right = "X"`' in master
    assert {f"q{n} paired with its answer" for n in NUMBERS} <= set(master)
    assert sum(hit.startswith("a hidden reason") for hit in master) \
        == len(graded[1])
    _, printed = run_hidden(nb, setup_namespace, 4, "A")  # graded feedback
    assert leaks("guide/x.md", printed.encode(), graded)[0].startswith(
        "a hidden reason")
    as_dict = json.dumps({f"q{n}": letters[n] for n in NUMBERS})
    assert len(leaks("data/key.json", as_dict.encode(), graded)) == 10
    assert leaks("guide/x.md", f"Question 7: {letters[7]}.".encode(), graded) \
        == ["question 7 paired with its answer"]
    row = ", ".join(letters[n] for n in NUMBERS)
    assert leaks("tools/x.txt", f"key: {row}".encode(), graded) \
        == ["the ten letters in order"]
    old = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f'right = "{letters[1]}"\n_ = quiz.ask(1, options, right, why)')])
    assert leaks("notebooks/quiz_selfcheck.ipynb",
                 nbformat.writes(old).encode(), graded)
    wrong = next(x for x in "ABCD" if x != letters[3])
    harmless = f'for example `q3 = "{wrong}"`; Question 3 (1 point)'
    assert leaks("release/quiz/quiz.ipynb", harmless.encode(), graded) == []


def test_no_file_outside_source_holds_a_graded_answer(graded):
    """release/, notebooks/, guide/, data/, ragkit/, tools/ and README.md
    give no graded answer away in any form the scan knows."""
    files = files_under(SCANNED)
    files["README.md"] = (ROOT / "README.md").read_bytes()
    assert any(name.startswith("release/quiz/") for name in files)
    found = {name: hits for name, data in files.items()
             if (hits := leaks(name, data, graded))}
    assert found == {}, f"graded answers outside source/: {found}"


def test_the_student_bundle_holds_no_graded_answer(graded):
    """Every file the student bundle would pack is free of the key too."""
    files = collect(ROOT)
    assert "ragkit/quiz_practice.py" in files and "ragkit/selfcheck.py" in files
    found = {name: hits for name, data in files.items()
             if (hits := leaks(name, data, graded))}
    assert found == {}, f"graded answers in the student bundle: {found}"


def test_the_master_sends_students_to_a_practice_quiz_they_have(nb):
    """The quiz's text names the call that draws the practice quiz, that
    call exists in the package the bundle ships, and no markdown of the
    master points into notebooks/ (not in the bundle)."""
    intro = nb.cells[0].source
    assert "from ragkit.selfcheck import practice_quiz" in intro
    assert "practice_quiz()" in intro
    from ragkit.selfcheck import practice_quiz
    assert callable(practice_quiz)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "notebooks/" not in prose and "selfcheck.ipynb" not in prose


# -- the practice quiz: other questions, its own notebook ---------------------

def word_runs(text: str, n: int = 7) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_the_practice_questions_are_not_the_graded_ones(nb):
    """No run of seven words is shared between a practice question (text,
    options, reasons) and anything in the graded master."""
    master = word_runs("\n".join(c.source for c in nb.cells))
    for item in PRACTICE:
        own = "\n".join([item.text, *item.options.values(), *item.why.values()])
        shared = word_runs(own) & master
        assert not shared, f"practice {item.number} repeats the graded quiz: " \
            f"{[' '.join(run) for run in sorted(shared)][:3]}"


def test_the_practice_notebook_has_a_cell_pair_per_question():
    """Intro, setup, then per question its markdown and a one-line ask cell,
    then the references of exactly the numbers cited; no key in any cell."""
    edition = practice_notebook()
    assert [c.id for c in edition.cells[:2]] == ["title", "setup"]
    pairs = edition.cells[2:-1]
    assert len(pairs) == 2 * len(PRACTICE) == 20
    for item, text, ask in zip(PRACTICE, pairs[::2], pairs[1::2]):
        assert text.source == question_markdown(item)
        assert ask.source == f"_ = quiz.ask_item(question({item.number}))"
    code = [c for c in edition.cells if c.cell_type == "code"]
    assert all(c.metadata["tags"] == ["nbval-ignore-output"] for c in code)
    assert not any(re.search(r"\bright\b|[\"'][A-D][\"']", c.source) for c in code)
    refs = edition.cells[-1].source
    listed = re.findall(r"^- \[(\d+)\]", refs, re.M)
    cited = {n for item in PRACTICE
             for n in re.findall(r"\[(\d+)\]", re.sub(r"`[^`]*`", "", item.text))}
    assert refs.startswith("## References") and sorted(listed, key=int) == \
        sorted(cited, key=int) and len(listed) >= 4
    assert "https://" in refs and "<a id=" not in refs


def test_the_practice_notebook_runs_and_asks_the_packages_questions():
    """Its code cells, run in order in-process, make a Quiz of ten whose
    keys are ragkit.quiz_practice's."""
    namespace = {}
    for c in practice_notebook().cells:
        if c.cell_type == "code":
            exec(c.source, namespace)  # IPython's display prints outside a kernel
    quiz = namespace["quiz"]
    assert sorted(quiz.questions) == list(NUMBERS)
    assert [quiz.questions[i.number].right for i in PRACTICE] == \
        [i.right for i in PRACTICE]
    assert quiz.score_text() == "0 of 10 right, 0 answered"


def test_the_build_writes_the_practice_quiz_and_it_is_committed(tmp_path):
    """build.write_practice writes the same bytes twice, and the committed
    notebooks/ holds that file and no self-check edition of the graded quiz."""
    build.write_practice(tmp_path)
    first = (tmp_path / NAME).read_bytes()
    build.write_practice(tmp_path)
    assert (tmp_path / NAME).read_bytes() == first
    assert NAME == "quiz_practice.ipynb"
    committed = ROOT / "notebooks" / NAME
    assert committed.exists() and committed.read_bytes() == first, \
        "notebooks/quiz_practice.ipynb is stale: run `make build`"
    assert not (ROOT / "notebooks" / "quiz_selfcheck.ipynb").exists()
