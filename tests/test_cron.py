"""When the next scheduled tick runs: cron lines and the workflow's schedule, as values."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from memento_gh.cron.fields import next_fire, parse_cron, workflow_crons
from testing.cli import call_memento

UTC = timezone.utc


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, sec: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, sec, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/30 * * * *", utc(2025, 1, 15, 14, 7, 12), utc(2025, 1, 15, 14, 30)),
        ("*/30 * * * *", utc(2025, 1, 15, 14, 30), utc(2025, 1, 15, 15, 0)),  # strictly after
        ("0 0 * * *", utc(2025, 12, 31, 23, 59), utc(2026, 1, 1, 0, 0)),
        ("15 9 * * MON-FRI", utc(2025, 1, 18, 10, 0), utc(2025, 1, 20, 9, 15)),  # Sat -> Mon
        ("0 9 * * 7", utc(2025, 1, 15), utc(2025, 1, 19, 9, 0)),  # 7 is Sunday too
        ("0 9 * * 0", utc(2025, 1, 15), utc(2025, 1, 19, 9, 0)),
        # both day fields restricted: either one fires (the 1st, or a Monday)
        ("0 12 1 * 1", utc(2025, 1, 2), utc(2025, 1, 6, 12, 0)),
        ("0 12 1 * 1", utc(2025, 1, 28), utc(2025, 2, 1, 12, 0)),
        # a day field starting with * keeps the other one a plain filter
        ("0 12 */2 * 1", utc(2025, 1, 1), utc(2025, 1, 13, 12, 0)),
        ("0 0 29 2 *", utc(2025, 3, 1), utc(2028, 2, 29, 0, 0)),
        ("5-10/2 * * * *", utc(2025, 1, 1, 0, 7), utc(2025, 1, 1, 0, 9)),
        ("0 0 1 jan,JUL *", utc(2025, 2, 1), utc(2025, 7, 1, 0, 0)),
        ("7 * * * *", utc(2025, 1, 1, 0, 7, 59), utc(2025, 1, 1, 1, 7)),
        ("@hourly", utc(2025, 1, 1, 0, 1), utc(2025, 1, 1, 1, 0)),
        ("@daily", utc(2025, 1, 1, 0, 1), utc(2025, 1, 2, 0, 0)),
    ],
)
def test_the_next_run_of_a_cron_line(expression: str, after: datetime, expected: datetime) -> None:
    assert next_fire(parse_cron(expression), after) == expected


def test_a_time_in_another_zone_is_answered_in_utc() -> None:
    paris = timezone(timedelta(hours=1))
    assert next_fire(parse_cron("0 * * * *"), datetime(2025, 1, 1, 10, 30, tzinfo=paris)) == utc(
        2025, 1, 1, 10, 0
    )


def test_a_date_that_never_comes_has_no_next_run() -> None:
    assert next_fire(parse_cron("0 0 30 2 *"), utc(2025, 1, 1)) is None


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("* * * *", "5 fields"),
        ("", "5 fields"),
        ("60 * * * *", "minute '60'"),
        ("* 24 * * *", "hour '24'"),
        ("* * 0 * *", "day of month '0'"),
        ("*/0 * * * *", "minute '0'"),
        ("10-5 * * * *", "runs backwards"),
        ("x * * * *", "minute 'x'"),
        ("* * * foo *", "month 'foo'"),
        ("* * * * 8", "day of week '8'"),
    ],
)
def test_a_bad_cron_line_is_a_sentence(expression: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_cron(expression)


def test_the_workflow_init_writes_has_its_schedule_read(tmp_path: Path) -> None:
    done = call_memento("init", tmp_path)
    assert done.returncode == 0, done.stderr
    workflow = (tmp_path / ".github" / "workflows" / "memento.yml").read_text(encoding="utf-8")

    crons = workflow_crons(yaml.safe_load(workflow))

    assert crons
    for line in crons:
        assert next_fire(parse_cron(line), utc(2025, 1, 1)) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "on:\n  schedule:\n    - cron: '0 * * * *'\n    - cron: '30 2 * * 1'\n",
            ["0 * * * *", "30 2 * * 1"],
        ),
        ("'on':\n  schedule:\n    - cron: '0 * * * *'\n", ["0 * * * *"]),
        ("on: push\n", []),
        ("on:\n  schedule: nope\n", []),
        ("on:\n  schedule:\n    - cron: 5\n    - {}\n    - cron: '1 * * * *'\n", ["1 * * * *"]),
        ("- a list\n", []),
        ("", []),
    ],
)
def test_the_cron_lines_of_a_workflow(text: str, expected: list[str]) -> None:
    assert workflow_crons(yaml.safe_load(text)) == expected
