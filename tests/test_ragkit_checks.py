"""ragkit.checks: the argument checks the lab's tasks call, and the test
helpers the notebooks' test cells use to see those checks fail."""
import math

import pandas as pd
import pytest

from ragkit.answer import Answer
from ragkit.checks import (check_error, check_int, check_number, check_str, error_of, fields,
                           same_frame)


@pytest.mark.parametrize("value, error", [
    (True, TypeError), (2.0, TypeError), ("3", TypeError), (None, TypeError),
    (0, ValueError), (-4, ValueError)])
def test_check_int_refuses_and_names_the_argument(value, error):
    with pytest.raises(error, match="^size must be"):
        check_int(value, "size", least=1)


def test_check_int_takes_ints_from_its_lower_bound():
    check_int(1, "k")
    check_int(0, "overlap", least=0)
    check_int(-7, "offset", least=None)
    with pytest.raises(ValueError, match=r"overlap must be at least 0 \(got overlap=-1\)"):
        check_int(-1, "overlap", least=0)


def test_check_str_and_check_number():
    check_str("", "text")
    with pytest.raises(TypeError, match=r"^text must be a str \(got list\)"):
        check_str(["a"], "text")
    check_number(3, "budget")
    check_number(0.5, "budget")
    for bad in (True, "1", None):
        with pytest.raises(TypeError, match="^budget must be a number"):
            check_number(bad, "budget")


def _refuses_k(k):
    if not isinstance(k, int):
        raise TypeError(f"k must be an int (got {type(k).__name__})")
    if k < 1:
        raise ValueError(f"k must be at least 1 (got k={k})")


def test_error_of_reports_a_refusal_and_lets_a_crash_through():
    assert error_of(_refuses_k, 0) == (ValueError, "k must be at least 1 (got k=0)")
    assert error_of(_refuses_k, 3) == (None, "")
    with pytest.raises(ZeroDivisionError):
        error_of(lambda: 1 / 0)


def test_check_error_fails_on_no_error_the_wrong_class_or_another_name():
    check_error(ValueError, "k", _refuses_k, 0)
    check_error(TypeError, "k", _refuses_k, "3")
    with pytest.raises(AssertionError, match=r"_refuses_k with a bad k should raise "
                       r"ValueError whose message names 'k'; got no error"):
        check_error(ValueError, "k", _refuses_k, 2)
    with pytest.raises(AssertionError, match="got TypeError"):
        check_error(ValueError, "k", _refuses_k, "0")
    with pytest.raises(AssertionError, match="names 'size'"):
        check_error(ValueError, "size", _refuses_k, 0)


def test_same_frame_matches_nan_and_tiny_float_gaps_only():
    want = pd.DataFrame({"mode": ["bm25", "dense"], "mrr": [0.5, math.nan]})
    assert same_frame(want.copy(), want)
    assert same_frame(want.assign(mrr=[0.5 + 1e-13, math.nan]), want)
    assert not same_frame(want.assign(mrr=[0.5 + 1e-9, math.nan]), want)
    assert not same_frame(want.assign(mrr=[0.5, 0.0]), want)
    assert not same_frame(want[["mrr", "mode"]], want)
    assert not same_frame(want.set_axis([1, 2]), want)


def test_fields_compares_answers_of_two_classes_by_what_they_say():
    class Own:  # a student's own answer class, with a list of citations
        def __init__(self, text, citations, abstained):
            self.text, self.citations, self.abstained = text, citations, abstained

    package = Answer("Twelve pounds.", ("lockers#2",), False)
    assert fields(Own("Twelve pounds.", ["lockers#2"], False)) == fields(package)
    assert fields(Own("Twelve pounds.", ["lockers#3"], False)) != fields(package)
    assert fields(Own("Twelve pounds.", ["lockers#2"], True)) != fields(package)
