"""A multiple-choice self-check built from ipywidgets.

The practice quiz (``ragkit.quiz_practice``) runs on it: the reading
edition's ``notebooks/quiz_practice.ipynb`` makes one :class:`Quiz` and
calls :meth:`Quiz.ask_item` once per question, and :func:`practice_quiz`
draws all ten questions in a single cell of any notebook. Each question
shows its option letters as radio buttons (the Markdown above holds the
options' text) and a *Check* button; a click writes one line under the
question (``Right: ...`` or ``Not quite: ...``, with the reason for the
option picked) and updates a score line shared by every question,
``"N of T right, M answered"``. Checking a question again replaces its
earlier result, so the score counts questions, not clicks.

Every widget stays reachable as an attribute (``quiz.questions[3].choice``,
``.check``, ``.feedback``; ``quiz.score``), so the logic can be tested
without a browser: set ``choice.value`` and call ``check.click()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import ipywidgets as widgets
from IPython.display import Markdown, display

from .quiz_practice import QUESTIONS, TITLE, Item, question_markdown

__all__ = ["Question", "Quiz", "practice_quiz"]


@dataclass
class Question:
    """One asked question: its key, its reasons and its widgets."""

    number: int
    options: dict[str, str]
    right: str
    why: dict[str, str]
    choice: widgets.RadioButtons
    check: widgets.Button
    feedback: widgets.HTML
    box: widgets.VBox


def _escape(text: str) -> str:
    # the reasons are plain text; an HTML widget would read "<" as markup
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Quiz:
    """A running score over questions asked with :meth:`ask`.

    ``total`` is the number of questions the score line counts towards
    (``None``: however many have been asked so far).
    """

    def __init__(self, title: str, total: int | None = None) -> None:
        if not isinstance(title, str):
            raise TypeError(f"title must be a str, not {type(title).__name__}")
        if total is not None and (isinstance(total, bool)
                                  or not isinstance(total, int) or total < 1):
            raise ValueError(f"total must be None or a positive int (got {total!r})")
        self.title = title
        self.total = total
        self.questions: dict[int, Question] = {}
        self.results: dict[int, bool] = {}  # question number -> right?
        self.score = widgets.Label()
        self._update_score()

    # -- the score -----------------------------------------------------------
    @property
    def right_count(self) -> int:
        return sum(self.results.values())

    @property
    def answered(self) -> int:
        return len(self.results)

    def score_text(self) -> str:
        total = self.total if self.total is not None else len(self.questions)
        return f"{self.right_count} of {total} right, {self.answered} answered"

    def _update_score(self) -> None:
        self.score.value = self.score_text()

    def __repr__(self) -> str:
        # what a notebook prints when a cell ends with the quiz
        return f"Quiz({self.title!r}: {self.score_text()})"

    def show(self) -> None:
        """Display the title and the score line (the setup cell calls this)."""
        display(widgets.HTML(f"<b>{_escape(self.title)}</b>"), self.score)

    # -- one question --------------------------------------------------------
    def ask(self, number: int, options: Mapping[str, str], right: str,
            why: Mapping[str, str]) -> Question:
        """Show question ``number``'s options and a Check button.

        ``options`` maps each letter to its text, in display order; ``right``
        is the right letter; ``why`` holds a reason for every letter. Raises
        ``ValueError`` (naming the argument) for fewer than two options, a
        ``right`` that is not an option, or ``why`` without a reason for
        some option. Asking the same number again replaces that question
        and forgets its result.
        """
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"number must be a positive int (got {number!r})")
        if not isinstance(options, Mapping) or len(options) < 2:
            raise ValueError("options must map at least two letters to texts")
        if right not in options:
            raise ValueError(f"right must be one of the options {list(options)} "
                             f"(got {right!r})")
        lacking = [opt for opt in options if opt not in why]
        if lacking:
            raise ValueError(f"why has no reason for option(s) {lacking}")
        # the question's markdown above lists the options in full; long
        # labels would be cut off by the widget, so the buttons show letters
        choice = widgets.RadioButtons(
            options=list(options), value=None, description="Answer:",
            tooltips=[f"{opt}. {text}" for opt, text in options.items()])
        check = widgets.Button(description="Check")
        feedback = widgets.HTML()
        box = widgets.VBox([choice, widgets.HBox([check, self.score]), feedback])
        question = Question(number, dict(options), right, dict(why),
                            choice, check, feedback, box)
        check.on_click(lambda _button: self._grade(question))
        self.questions[number] = question
        self.results.pop(number, None)
        self._update_score()
        display(box)
        return question

    def ask_item(self, item: Item) -> Question:
        """:meth:`ask` with the number, options, key and reasons of ``item``
        (a :class:`ragkit.quiz_practice.Item`)."""
        if not isinstance(item, Item):
            raise TypeError(f"item must be a ragkit.quiz_practice.Item, "
                            f"not {type(item).__name__}")
        return self.ask(item.number, item.options, item.right, item.why)

    def _grade(self, question: Question) -> None:
        picked = question.choice.value
        if picked is None:
            question.feedback.value = "Pick an option first."
            return
        ok = picked == question.right
        self.results[question.number] = ok
        head = "Right" if ok else "Not quite"
        question.feedback.value = f"{head}: {_escape(question.why[picked])}"
        self._update_score()


def practice_quiz() -> Quiz:
    """Draw the practice quiz in the current cell and return it.

    The title and the score line come first, then each question's text and
    its buttons, in order. Run ``practice_quiz()`` in any notebook (it needs
    nothing but ``ragkit``); running it again starts afresh.
    """
    quiz = Quiz(TITLE, total=len(QUESTIONS))
    quiz.show()
    for item in QUESTIONS:
        display(Markdown(question_markdown(item)))
        quiz.ask_item(item)
    return quiz
