"""The self-check widget: clicks, the running score, re-answers and errors.

No browser is needed: each question keeps its widgets as attributes, so a
test sets the radio buttons' value and presses the button in Python.
"""
import pytest

from ragkit.selfcheck import Quiz

OPTIONS = {"A": "one", "B": "two", "C": "three"}
WHY = {"A": "A is too small.", "B": "two is the answer.", "C": "C is <big>."}


def answer(question, letter):
    question.choice.value = letter
    question.check.click()


@pytest.fixture
def quiz():
    return Quiz("Practice", total=3)


def test_a_fresh_quiz_scores_nothing(quiz):
    """Before any click the score line counts no answers."""
    assert quiz.score.value == "0 of 3 right, 0 answered"


def test_the_right_option_is_confirmed_with_its_reason(quiz):
    """A right click says Right and gives the right option's reason."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "B")
    assert q.feedback.value == "Right: two is the answer."
    assert quiz.score.value == "1 of 3 right, 1 answered"


def test_a_wrong_option_gets_the_reason_for_that_option(quiz):
    """A wrong click explains the option picked (escaped for HTML), not the key."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "C")
    assert q.feedback.value == "Not quite: C is &lt;big&gt;."
    assert "two is the answer" not in q.feedback.value
    assert quiz.score.value == "0 of 3 right, 1 answered"


def test_answering_again_replaces_the_earlier_result(quiz):
    """The score counts questions, not clicks."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    answer(q, "A")
    answer(q, "B")
    answer(q, "B")
    assert quiz.score.value == "1 of 3 right, 1 answered"
    answer(q, "C")
    assert quiz.score.value == "0 of 3 right, 1 answered"


def test_the_count_runs_over_several_questions(quiz):
    """Each question adds to one shared score line."""
    first = quiz.ask(1, OPTIONS, "B", WHY)
    second = quiz.ask(2, OPTIONS, "A", WHY)
    third = quiz.ask(3, OPTIONS, "C", WHY)
    answer(first, "B")
    answer(second, "C")
    assert quiz.score.value == "1 of 3 right, 2 answered"
    answer(third, "C")
    assert (quiz.right_count, quiz.answered) == (2, 3)
    assert quiz.score.value == "2 of 3 right, 3 answered"


def test_checking_without_a_choice_changes_nothing(quiz):
    """No option picked: a hint, and the score stays as it was."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    q.check.click()
    assert "Pick an option" in q.feedback.value
    assert quiz.answered == 0


def test_asking_a_number_again_forgets_its_result(quiz):
    """Re-running a question's cell starts that question afresh."""
    answer(quiz.ask(1, OPTIONS, "B", WHY), "B")
    quiz.ask(1, OPTIONS, "A", WHY)
    assert quiz.score.value == "0 of 3 right, 0 answered"


def test_without_a_total_the_score_counts_the_questions_asked():
    """Quiz(title) with no total counts towards however many were asked."""
    quiz = Quiz("Open")
    quiz.ask(1, OPTIONS, "B", WHY)
    quiz.ask(2, OPTIONS, "B", WHY)
    assert quiz.score.value == "0 of 2 right, 0 answered"


def test_the_buttons_offer_the_letters_in_order(quiz):
    """One radio button per option letter, none picked at first."""
    q = quiz.ask(1, OPTIONS, "B", WHY)
    assert list(q.choice.options) == ["A", "B", "C"] and q.choice.value is None


@pytest.mark.parametrize("kwargs, name", [
    ({"right": "D"}, "right"),
    ({"why": {"A": "x", "B": "y"}}, "why"),
    ({"options": {"A": "only"}, "right": "A"}, "options"),
    ({"number": 0}, "number"),
])
def test_bad_input_is_refused_naming_the_argument(quiz, kwargs, name):
    """ValueError whose message names the argument at fault."""
    args = {"number": 1, "options": OPTIONS, "right": "B", "why": WHY, **kwargs}
    with pytest.raises(ValueError, match=name):
        quiz.ask(**args)
    assert quiz.questions == {}


def test_a_bad_total_is_refused():
    """total must be a positive int or None."""
    with pytest.raises(ValueError, match="total"):
        Quiz("x", total=0)
    with pytest.raises(TypeError, match="title"):
        Quiz(3)
