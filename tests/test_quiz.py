"""The quiz master's key and feedback, checked in-process (no kernel).

Each hidden test cell of source/quiz/quiz.ipynb is run with every possible
letter: exactly one letter passes, and every other letter's failure message
is that option's own reason, never a hint at the right option. The numeric
questions take their key from the package, and the self-check edition that
tools/selfcheck.py makes from the master carries the same key.
"""
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools.selfcheck import parse_quiz, selfcheck_notebook  # noqa: E402

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


@pytest.fixture(scope="module")
def questions():
    return {q["number"]: q for q in parse_quiz(MASTER)}


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


def test_the_self_check_edition_carries_the_same_key(nb, setup_namespace):
    """Ten collapsed question cells; run in-process they give a Quiz of ten
    questions whose keys are the master's."""
    edition = selfcheck_notebook(MASTER)
    code = [c for c in edition.cells if c.cell_type == "code"]
    asks = [c for c in code if "quiz.ask(" in c.source]
    assert len(asks) == 10
    assert all(c.metadata["jupyter"]["source_hidden"] for c in asks)
    assert not any("assert " in c.source for c in code)
    namespace = {}
    for c in code:
        exec(c.source, namespace)  # IPython's display prints outside a kernel
    quiz = namespace["quiz"]
    assert sorted(quiz.questions) == list(NUMBERS)
    for number in NUMBERS:
        assert quiz.questions[number].right == key(nb, setup_namespace, number)[0]
    prose = "\n".join(c.source for c in edition.cells if c.cell_type == "markdown")
    assert "(1 point)" not in prose and "## Question 10" in prose


def test_the_self_check_edition_is_deterministic():
    """Two builds from the same master are equal."""
    assert selfcheck_notebook(MASTER) == selfcheck_notebook(MASTER)


def test_a_master_of_the_wrong_shape_is_refused(tmp_path, nb):
    """A hidden cell without its assert line stops the tool with a clear error."""
    broken = nbformat.from_dict(nb)
    target = cell(broken, "quiz_hidden_q2")
    target.source = "\n".join(ln for ln in target.source.splitlines()
                              if not ln.startswith("assert "))
    path = tmp_path / "quiz.ipynb"
    nbformat.write(broken, path)
    with pytest.raises(ValueError, match="quiz_hidden_q2"):
        selfcheck_notebook(path)
