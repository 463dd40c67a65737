"""ragkit.checks: the argument checks the lab's tasks call."""
import pytest

from ragkit.checks import check_int, check_number, check_str


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
