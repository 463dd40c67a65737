"""Due dates, extensions and a late policy, applied to the grade sheet.

The instructor writes one TOML file (`course.py grade --deadlines FILE`, or
`make grade DEADLINES=FILE`); grading keeps a copy as OUT/deadlines.toml, so
`course.py sheet` applies the same policy later. One table per assignment:

    [quiz]
    due = 2026-12-01T17:00:00Z          # a TOML date-time; give the offset
    penalty_per_day = 10                # percent of the assignment's points
    max_penalty = 50                    # percent; the penalty stops growing here
    not_accepted_after = 2026-12-08T17:00:00Z   # optional: 0 points after it
    grace_minutes = 5                   # optional: late only after this
    lms_late_days = 1                   # optional: days late for an LMS LATE mark
    [quiz.extensions]                   # optional: a student's own due date
    alice = 2026-12-03T17:00:00Z

A submission's time is the one nbgrader recorded (the exchange's
timestamp.txt, kept in the gradebook). From the hub's exchange that is the
time the collect trusts (hub/exchange_collect.py: the newest ctime), and
the time the student's own timestamp.txt claimed is listed beside it in
late work, flagged when it is earlier (`claim_cells`). A submission from an LMS download
carries no time, only Canvas's LATE mark in its file names
(SUBMISSIONS/lms_collected.csv): it counts `lms_late_days` days late.

Days late are whole days, rounded up: a minute past the due date (after the
grace) is one day. The penalty is `penalty_per_day` percent of the
assignment's maximum per day, at most `max_penalty` percent, and never takes
a score below zero. Nothing is ever dropped: a submission after
`not_accepted_after` is still graded and listed, with its points before the
policy, and scores 0 only because this file says so.
"""
from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

# nbgrader writes timestamp.txt a moment before it copies the notebooks,
# so an honest claim is a little earlier than the newest ctime of the copy
CLAIM_SLACK = timedelta(minutes=1)
KEYS = {"due", "penalty_per_day", "max_penalty", "not_accepted_after", "grace_minutes",
        "lms_late_days", "extensions"}


@dataclass(frozen=True)
class Policy:
    """One assignment's due date and late policy."""
    due: datetime
    penalty_per_day: float = 0.0
    max_penalty: float = 100.0
    not_accepted_after: datetime | None = None
    grace_minutes: float = 0.0
    lms_late_days: int = 1
    extensions: dict[str, datetime] = field(default_factory=dict)

    def due_for(self, student: str) -> datetime:
        return self.extensions.get(student, self.due)


@dataclass(frozen=True)
class Late:
    """What the policy makes of one submission."""
    days: int            # whole days late (0: on time)
    penalty: float       # points taken off
    accepted: bool       # False: after not_accepted_after, scores 0
    note: str            # one line for a person: why


def _moment(value, where: str) -> datetime:
    if not isinstance(value, datetime):
        raise ValueError(f"{where} must be a TOML date-time such as 2026-12-01T17:00:00Z "
                         f"(got {value!r})")
    if value.tzinfo is None:
        raise ValueError(f"{where} needs a time zone offset, such as Z for UTC or +01:00 "
                         f"(got {value.isoformat()})")
    return value.astimezone(timezone.utc)


def _number(table: dict, key: str, default: float, where: str, low: float = 0.0,
            high: float | None = None) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (
            high is not None and value > high):
        upper = f" and at most {high:g}" if high is not None else ""
        raise ValueError(f"{where}.{key} must be a number of at least {low:g}{upper} "
                         f"(got {value!r})")
    return float(value)


def parse(text: str, source: str = "deadlines") -> dict[str, Policy]:
    """assignment -> Policy from the TOML text; a mistake raises ValueError
    naming the key and what it should be."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{source} is not valid TOML: {err}") from None
    policies = {}
    for assignment, table in data.items():
        where = f"{source}: [{assignment}]"
        if not isinstance(table, dict):
            raise ValueError(f"{where} must be a table of settings, as [{assignment}]")
        unknown = sorted(set(table) - KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(KEYS))}")
        if "due" not in table:
            raise ValueError(f"{where} has no due date (due = 2026-12-01T17:00:00Z)")
        due = _moment(table["due"], f"{where}.due")
        after = table.get("not_accepted_after")
        after = _moment(after, f"{where}.not_accepted_after") if after is not None else None
        extensions = table.get("extensions", {})
        if not isinstance(extensions, dict):
            raise ValueError(f"{where}.extensions must be a table: student = date-time")
        policies[assignment] = Policy(
            due=due,
            penalty_per_day=_number(table, "penalty_per_day", 0, where, high=100),
            max_penalty=_number(table, "max_penalty", 100, where, high=100),
            not_accepted_after=after,
            grace_minutes=_number(table, "grace_minutes", 0, where),
            lms_late_days=int(_number(table, "lms_late_days", 1, where)),
            extensions={s: _moment(t, f"{where}.extensions.{s}") for s, t in extensions.items()})
        if after is not None and any(after < p for p in [due, *policies[assignment]
                                                         .extensions.values()]):
            raise ValueError(f"{where}.not_accepted_after is before a due date: a student "
                             "could never hand in on time")
    return policies


def load(path: Path) -> dict[str, Policy]:
    if not path.is_file():
        raise ValueError(f"no deadlines file at {path}")
    return parse(path.read_text(encoding="utf-8"), str(path))


def judge(policy: Policy, student: str, out_of: float, submitted: datetime | None,
          lms_late: bool = False) -> Late:
    """The policy applied to one submission made at `submitted` (UTC; None
    when only an LMS mark is known)."""
    due = policy.due_for(student)
    own = " (extension)" if student in policy.extensions else ""
    if submitted is not None:
        if submitted.tzinfo is None:
            submitted = submitted.replace(tzinfo=timezone.utc)
        over = submitted - due - timedelta(minutes=policy.grace_minutes)
        days = math.ceil(over / timedelta(days=1)) if over > timedelta(0) else 0
        when = f"handed in {submitted:%Y-%m-%d %H:%M} UTC, due {due:%Y-%m-%d %H:%M} UTC{own}"
    elif lms_late:
        days = policy.lms_late_days
        when = f"marked LATE by the LMS (no time known; counted as {days} day(s) late)"
    else:
        return Late(0, 0.0, True, "no submission time known: counted on time")
    if policy.not_accepted_after is not None and submitted is not None \
            and submitted > policy.not_accepted_after:
        return Late(days, 0.0, False, f"{when}: after "
                    f"{policy.not_accepted_after:%Y-%m-%d %H:%M} UTC, not accepted (0 points)")
    if days == 0:
        return Late(0, 0.0, True, f"{when}: on time")
    percent = min(policy.penalty_per_day * days, policy.max_penalty)
    penalty = round(out_of * percent / 100, 6)
    return Late(days, penalty, True, f"{when}: {days} day(s) late, -{percent:g}%")


def after_penalty(points: float, late: Late) -> float:
    """The points that count: 0 if not accepted, never below 0."""
    return 0.0 if not late.accepted else max(0.0, round(points - late.penalty, 6))


# --- the student's claim beside the time the pack trusts ---------------------

def parse_stamp(text: str) -> datetime | None:
    """A time as nbgrader writes timestamp.txt (anything its parse_utc
    reads), in UTC; None when the text names no time."""
    from nbgrader.utils import parse_utc

    try:
        moment = parse_utc(text.strip())
    except (ValueError, TypeError, OverflowError):
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def claim_is_earlier(claim: datetime | None, received: datetime) -> bool:
    """Whether a student's claim of when they handed in is earlier than the
    time the pack trusts, by more than CLAIM_SLACK; a claim that names no
    time counts as earlier (the student wrote it)."""
    if received.tzinfo is None:
        received = received.replace(tzinfo=timezone.utc)
    return claim is None or claim < received - CLAIM_SLACK


def exchange_claims(listing: Path) -> dict[tuple[str, str], str]:
    """(student, assignment) -> the time the student's own timestamp.txt
    claimed, for each submission the hub's collect took, from its listing
    (COURSE/exchange_collected.csv, written by hub/exchange_collect.py);
    the assignment is read from the inbound folder's name. Empty without a
    listing."""
    if not listing.is_file():
        return {}
    with listing.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    claims = {}
    for row in rows:
        named = (row.get("submission") or "").split("+")
        if row.get("status") == "collected" and len(named) == 4 and named[0] == row["student"]:
            claims[(row["student"], named[1])] = row.get("claimed") or ""
    return claims


def claim_cells(claim: str | None, received: datetime | None) -> tuple[str, str]:
    """The late-work table's two cells for a student's claim: the time it
    names (UTC, as the time handed in is shown; the text itself when it
    names none) and "yes" when it is earlier than `received`, the time the
    pack trusts; ("", "") when there is no claim to show."""
    if claim is None or received is None:
        return "", ""
    moment = parse_stamp(claim)
    shown = f"{moment:%Y-%m-%d %H:%M:%S}" if moment is not None else claim
    return shown, "yes" if claim_is_earlier(moment, received) else ""
