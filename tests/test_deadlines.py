"""Due dates, extensions and the late policy (autograder/intake/deadlines.py), and
how course.py puts them on the grade sheet. The hub's end-to-end run
(tests/test_hub.py) applies a policy to real exchange timestamps."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.reports import grade_sheet  # noqa: E402
from autograder.intake import deadlines  # noqa: E402

POLICY = """
[quiz]
due = 2026-12-01T17:00:00Z
penalty_per_day = 10
max_penalty = 30
grace_minutes = 5
not_accepted_after = 2026-12-20T17:00:00Z
[quiz.extensions]
cai = 2026-12-04T17:00:00+01:00
"""
DUE = datetime(2026, 12, 1, 17, tzinfo=timezone.utc)


@pytest.fixture()
def quiz():
    return deadlines.parse(POLICY)["quiz"]


@pytest.mark.parametrize("after, days, penalty", [
    (timedelta(hours=-3), 0, 0.0),              # early
    (timedelta(minutes=4), 0, 0.0),             # within the grace
    (timedelta(minutes=6), 1, 1.0),             # a minute past the grace: a day
    (timedelta(days=1, minutes=5), 1, 1.0),     # exactly a day after the grace
    (timedelta(days=2, hours=1), 3, 3.0),       # into the third day
    (timedelta(days=9), 9, 3.0),                # capped at 30%
])
def test_days_late_round_up_and_the_penalty_stops_at_the_cap(quiz, after, days, penalty):
    late = deadlines.judge(quiz, "ada", 10.0, DUE + after)
    assert (late.days, late.penalty, late.accepted) == (days, penalty, True), late


def test_an_extension_moves_the_due_date_for_that_student_only(quiz):
    when = datetime(2026, 12, 4, 15, 30, tzinfo=timezone.utc)  # before cai's 16:00 UTC
    assert deadlines.judge(quiz, "cai", 10.0, when).days == 0
    assert "extension" in deadlines.judge(quiz, "cai", 10.0, when).note
    assert deadlines.judge(quiz, "ada", 10.0, when).days == 3


def test_after_not_accepted_after_the_submission_stays_and_scores_zero(quiz):
    late = deadlines.judge(quiz, "ada", 10.0, datetime(2026, 12, 21, tzinfo=timezone.utc))
    assert late.accepted is False and "not accepted" in late.note
    assert deadlines.after_penalty(7.0, late) == 0.0


def test_a_penalty_never_takes_a_score_below_zero(quiz):
    late = deadlines.judge(quiz, "ada", 10.0, DUE + timedelta(days=5))
    assert late.penalty == 3.0 and deadlines.after_penalty(2.0, late) == 0.0
    assert deadlines.after_penalty(9.0, late) == 6.0


def test_an_lms_late_mark_counts_its_days_and_no_time_counts_on_time(quiz):
    marked = deadlines.judge(quiz, "ada", 10.0, None, lms_late=True)
    assert (marked.days, marked.penalty) == (1, 1.0) and "LMS" in marked.note
    assert deadlines.judge(quiz, "ada", 10.0, None).days == 0


def test_a_timestamp_without_a_zone_is_utc_as_nbgrader_stores_it(quiz):
    naive = (DUE + timedelta(hours=2)).replace(tzinfo=None)
    assert deadlines.judge(quiz, "ada", 10.0, naive).days == 1


@pytest.mark.parametrize("text, says", [
    ("[quiz]\npenalty_per_day = 10\n", "no due date"),
    ("[quiz]\ndue = 2026-12-01T17:00:00\n", "time zone"),
    ("[quiz]\ndue = 2026-12-01T17:00:00Z\npenalty_per_day = 110\n", "at most 100"),
    ("[quiz]\ndue = 2026-12-01T17:00:00Z\npenalty = 10\n", "unknown setting"),
    ("[quiz]\ndue = 2026-12-01T17:00:00Z\nnot_accepted_after = 2026-11-30T17:00:00Z\n",
     "before a due date"),
    ("[quiz]\ndue = 2026-12-01T17:00:00Z\n[quiz.extensions]\nada = \"soon\"\n", "extensions.ada"),
    ("quiz = 3\n", "table of settings"),
    ("[quiz\n", "not valid TOML"),
])
def test_a_mistake_in_the_policy_names_the_key(text, says):
    with pytest.raises(ValueError, match=says):
        deadlines.parse(text)


def gradebook(out: Path, stamps: dict[str, datetime]) -> None:
    """A course gradebook with a 10-point quiz and one submission per student."""
    from nbgrader.api import Gradebook

    (out / grade_sheet.COURSE).mkdir(parents=True)
    with Gradebook(f"sqlite:///{out / grade_sheet.COURSE / 'gradebook.db'}") as gb:
        gb.add_assignment("quiz")
        gb.add_notebook("quiz", "quiz")
        gb.add_grade_cell("q", "quiz", "quiz", max_score=10, cell_type="code")
        for student, when in stamps.items():
            gb.add_student(student)
            gb.add_submission("quiz", student, timestamp=when.replace(tzinfo=None))


def exchange_listing(course_root: Path) -> None:
    """COURSE/exchange_collected.csv as the hub's collect writes it
    (hub/exchange_collect.py): ada's claim a few seconds before receipt, as
    nbgrader writes one; ben's before the due date, though received two
    days after it; cai's row is her project's, not her quiz's."""
    sys.path.insert(0, str(ROOT / "hub"))
    from exchange_collect import Row, stamp, write_rows

    name = "{0}+{1}+2026-12-01 00:00:00.000000 UTC+r4nd0m"
    write_rows(course_root / "exchange_collected.csv", [
        Row("ada", name.format("ada", "quiz"), "collected", stamp(DUE - timedelta(hours=1)),
            stamp(DUE - timedelta(hours=1, seconds=5))),
        Row("ben", name.format("ben", "quiz"), "collected",
            stamp(DUE + timedelta(days=2, hours=1)), stamp(DUE - timedelta(hours=2)),
            "its timestamp.txt claims an earlier time than it was received"),
        Row("cai", name.format("cai", "project"), "collected",
            stamp(DUE + timedelta(days=30)), stamp(DUE - timedelta(days=9)))])


def test_the_sheet_shows_points_before_and_after_and_drops_nobody(tmp_path, monkeypatch):
    """Late work also shows, from the hub's collect listing kept with the
    grades, each student's own claimed time beside the received one,
    flagged only when earlier (by more than the slack); nothing for a
    submission that came another way."""
    # nbgrader makes a gradebook with alembic, a script of this environment
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    gradebook(tmp_path, {"ada": DUE - timedelta(hours=1), "ben": DUE + timedelta(days=2, hours=1),
                         "cai": DUE + timedelta(days=30)})
    (tmp_path / "course" / "submitted").mkdir(parents=True)
    exchange_listing(tmp_path / "course")
    (tmp_path / "policy.toml").write_text(POLICY)
    grade_sheet.keep_deadlines(tmp_path, tmp_path / "policy.toml", tmp_path / "course" / "submitted")
    frame = pd.DataFrame([{"student": s, "quiz": 8.0, "total": 8.0, "out of": 10.0}
                          for s in ("ada", "ben", "cai")])
    sheet = grade_sheet.apply_deadlines(frame, tmp_path).set_index("student")
    assert list(sheet.index) == ["ada", "ben", "cai"]
    assert sheet.loc["ada", "quiz"] == 8.0 and sheet.loc["ada", "quiz penalty"] == 0
    assert sheet.loc["ben", "quiz before penalty"] == 8.0 and sheet.loc["ben", "quiz"] == 5.0
    assert sheet.loc["ben", "quiz days late"] == 3 and sheet.loc["ben", "total"] == 5.0
    # cai's extension ended before the submission, which came after not_accepted_after
    assert sheet.loc["cai", "quiz"] == 0.0 and sheet.loc["cai", "quiz before penalty"] == 8.0
    late = pd.read_csv(tmp_path / "late_work.csv").set_index("student")
    assert late.loc["cai", "accepted"] == "no" and late.loc["ben", "penalty"] == 3.0
    page = (tmp_path / "late_work.html").read_text()
    assert "ben" in page and "3 day(s) late" in page and "<script" not in page
    claims = pd.read_csv(tmp_path / "late_work.csv", dtype=str, keep_default_na=False)
    claims = claims.set_index("student")[["handed in (UTC)", "claimed by the student (UTC)",
                                          "claim earlier"]]
    assert claims.loc["ada"].tolist() == ["2026-12-01 16:00:00", "2026-12-01 15:59:55", ""]
    assert claims.loc["ben"].tolist() == ["2026-12-03 18:00:00", "2026-12-01 15:00:00", "yes"]
    assert claims.loc["cai"].tolist()[1:] == ["", ""], "cai's project claim shown for her quiz"
    assert "<th>claimed by the student (UTC)</th>" in page and "2026-12-01 15:00:00" in page
    # no policy: the sheet is left as it was
    (tmp_path / grade_sheet.DEADLINES).unlink()
    assert grade_sheet.apply_deadlines(frame, tmp_path).equals(frame)


def test_a_bad_policy_stops_grading_before_it_starts(tmp_path):
    bad = tmp_path / "deadlines.toml"
    bad.write_text("[quiz]\npenalty_per_day = 10\n")
    (tmp_path / "subs").mkdir()
    done = subprocess.run([sys.executable,
                           str(ROOT / "autograder" / "commands" / "course.py"), "grade",
                           "--submissions", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "out"), "--deadlines", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no due date" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_canvas_late_marks_are_kept_at_grading(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    pd.DataFrame([{"file": "ada_LATE_12_34_quiz.ipynb", "student": "ada", "assignment": "quiz"},
                  {"file": "ben_56_78_quiz.ipynb", "student": "ben", "assignment": "quiz"}]
                 ).to_csv(subs / "lms_collected.csv", index=False)
    grade_sheet.keep_deadlines(tmp_path / "out", None, subs)
    marks = pd.read_csv(tmp_path / "out" / grade_sheet.LMS_LATE)
    assert marks.to_dict("records") == [{"student": "ada", "assignment": "quiz"}]
