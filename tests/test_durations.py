"""One duration grammar for the plan, ``--every`` and the status log, and one spelling back."""

from __future__ import annotations

import pytest

from memento_gh.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15min", 900),
        ("30s", 30),
        ("2h", 7200),
        ("7d", 7 * 86400),
        ("1h30min", 5400),
        ("10 min", 600),
        ("1 hour 30 minutes", 5400),
        ("5m", 300),
        ("1.5s", 1.5),
        ("1h0.5m", 3630),
        ("0s", 0),
        ("2m18s", 138),  # the status log's Duration
        ("1h03m", 3780),  # as older status logs wrote an hour and more
    ],
)
def test_the_plan_and_the_command_line_write_durations_alike(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_whole_seconds_stay_whole() -> None:
    assert isinstance(parse_duration("15min"), int)
    assert isinstance(parse_duration("1.5s"), float)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("soon", "'soon' is not a duration; write e.g. 30s, 15min, 2h or 7d"),
        ("5", "'5' is not a duration"),
        ("-5m", "'-5m' is not a duration"),
        ("1.5.5s", "'1.5.5s' is not a duration"),
        ("15mo", "unknown time unit 'mo' in '15mo'; use s, min, h or d"),
    ],
)
def test_anything_else_is_refused_with_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.5, "0.5s"),
        (45, "45s"),
        (138, "2m18s"),
        (300, "5m"),
        (3600, "1h"),
        (3785, "1h3m5s"),
        (86400 + 60, "1d1m"),
        (90.5, "1m30.5s"),
    ],
)
def test_seconds_are_spelled_in_the_largest_units_first(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds
