"""The crontab line of ``memento schedule`` and the intervals of ``memento run``, as values."""

from __future__ import annotations

import argparse
import shlex
from datetime import datetime, timedelta, timezone

import pytest

from memento_gh.cli import interval_arg
from memento_gh.cron import line as crontab
from memento_gh.cron.fields import next_fire_in, parse_cron
from memento_gh.cron.line import (
    cron_expression,
    find_line,
    install_line,
    marker,
    remove_line,
    render_line,
    schedule_of,
)
from memento_gh.durations import format_duration, parse_duration

REPO = "/home/ann/shop"
MARK = marker(REPO)
THEIRS = (
    "SHELL=/bin/bash\r\n"
    "MAILTO=ann@example.com\n"
    "# m h dom mon dow command\n"
    "\n"
    "0 3 * * * /usr/bin/backup --all   \n"
    "*/5 * * * * cd /home/ann/other && memento tick # memento-gh /home/ann/other\n"
    "#*/5 * * * * cd /home/ann/shop && memento tick # memento-gh /home/ann/shop\n"
    "@reboot /usr/bin/true"
)


def line_for(expression: str = "*/5 * * * *", *argv: str) -> str:
    return render_line(expression, REPO, "/usr/bin:/bin", ["/venv/bin/memento", "tick", *argv])


# -- intervals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("5min", 300),
        ("1h", 3600),
        ("1.5s", 1.5),
        ("0s", 0),
        ("1d", 86400),
        (" 2H ", 7200),
        (".5m", 30),
        ("1h30m", 5400),
        ("5 minutes", 300),
    ],
)
def test_an_interval_is_numbers_and_units(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5", "m", "-5m", "5x", "", "1e3s"])
def test_anything_else_is_refused_with_examples(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration|unknown time unit"):
        parse_duration(text)
    with pytest.raises(
        argparse.ArgumentTypeError,
        match=r"is not an interval; write a number and a unit: 30s, 5m, 1h",
    ):
        interval_arg(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (1.5, "1.5s"), (90, "1m30s"), (300, "5m"), (5400, "1h30m")]
)
def test_an_interval_is_shown_in_the_largest_units_first(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


# -- cron expressions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("every", "expression"),
    [
        ("1m", "* * * * *"),
        ("2m", "*/2 * * * *"),
        ("5m", "*/5 * * * *"),
        ("12m", "*/12 * * * *"),
        ("30m", "*/30 * * * *"),
        ("60m", "0 * * * *"),
        ("1h", "0 * * * *"),
        ("2h", "0 */2 * * *"),
        ("8h", "0 */8 * * *"),
        ("12h", "0 */12 * * *"),
        ("24h", "0 0 * * *"),
        ("1d", "0 0 * * *"),
        ("60s", "* * * * *"),
    ],
)
def test_intervals_cron_keeps_evenly_become_cron_fields(every: str, expression: str) -> None:
    assert cron_expression(parse_duration(every)) == expression
    parse_cron(expression)  # and cron can read them


@pytest.mark.parametrize("every", ["7m", "90m", "45m", "5h", "2d", "1.5m", "150s", "61m"])
def test_intervals_cron_cannot_keep_are_refused_with_what_works(every: str) -> None:
    with pytest.raises(ValueError) as refused:
        cron_expression(parse_duration(every))

    message = str(refused.value)
    assert "evenly" in message
    assert "5m" in message and "6h" in message
    assert f"`memento run --every {format_duration(parse_duration(every))}`" in message


@pytest.mark.parametrize("every", ["0s", "30s", "1.5s"])
def test_cron_fires_at_most_once_a_minute(every: str) -> None:
    with pytest.raises(ValueError, match=f"at most once a minute.*memento run --every {every}"):
        cron_expression(parse_duration(every))


# -- the line -------------------------------------------------------------------------------


def test_the_line_cds_to_the_repository_and_appends_to_the_log() -> None:
    line = line_for("*/5 * * * *", "--agent", "claude")

    assert line == (
        "*/5 * * * * cd /home/ann/shop && mkdir -p logs && PATH=/usr/bin:/bin "
        "/venv/bin/memento tick --agent claude >> logs/cron.log 2>&1 # memento-gh /home/ann/shop"
    )
    assert schedule_of(line) == "*/5 * * * *"
    assert line.endswith(" " + MARK)


def test_every_word_is_quoted_for_the_shell() -> None:
    repo = "/home/ann/my shop; rm -rf ~"
    line = render_line(
        "0 * * * *", repo, "/opt/my bin:/bin", ["/venv/bin/memento", "--agent-cmd", "a 'b' $c"]
    )

    command = line.removeprefix("0 * * * * ")
    assert command.startswith(f"cd {shlex.quote(repo)} && mkdir -p logs && ")
    assert "PATH='/opt/my bin:/bin' " in command
    assert shlex.quote("a 'b' $c") in command
    assert line.endswith(f"# memento-gh {shlex.quote(repo)}")


def test_a_percent_sign_is_escaped_for_cron() -> None:
    line = line_for("*/5 * * * *", "--worker-id", "w%1", "--agent-cmd", "a %s")

    assert "--worker-id w\\%1 --agent-cmd 'a \\%s'" in line
    assert "%" not in line.replace("\\%", "")


@pytest.mark.parametrize("word", ["a\nb", "a\rb", "a\0b", "100\\%"])
def test_a_word_cron_cannot_carry_is_refused(word: str) -> None:
    with pytest.raises(ValueError, match=r"cron|crontab"):
        line_for("*/5 * * * *", "--worker-id", word)


# -- installing and removing ----------------------------------------------------------------


def test_install_appends_to_an_empty_crontab() -> None:
    line = line_for()
    assert install_line("", line, MARK) == line + "\n"
    assert find_line(line + "\n", MARK) == line


def test_install_appends_after_the_users_lines_untouched() -> None:
    line = line_for()
    text = install_line(THEIRS, line, MARK)

    assert text == THEIRS + "\n" + line + "\n"  # a newline for the last line, which had none
    assert find_line(text, MARK) == line


def test_install_again_replaces_the_line_in_place() -> None:
    first = install_line(THEIRS + "\n# after\n", line_for("*/5 * * * *"), MARK)
    second = install_line(first, line_for("0 * * * *", "--agent", "codex"), MARK)

    assert second == THEIRS + "\n# after\n" + line_for("0 * * * *", "--agent", "codex") + "\n"
    assert second.count(MARK) == 1 + THEIRS.count(MARK)


def test_install_keeps_one_line_when_there_were_two() -> None:
    old = line_for("*/5 * * * *")
    text = install_line(f"{old}\nMAILTO=x\n{old}\n", line_for("*/10 * * * *"), MARK)

    assert text == f"{line_for('*/10 * * * *')}\nMAILTO=x\n"


def test_remove_takes_only_our_line() -> None:
    with_ours = install_line(THEIRS, line_for(), MARK)

    assert remove_line(with_ours, MARK) == THEIRS + "\n"
    assert remove_line(THEIRS, MARK) == THEIRS
    assert find_line(THEIRS, MARK) is None  # the commented-out copy is the user's


def test_another_repositorys_line_is_not_ours() -> None:
    other = "/x" + REPO
    text = install_line("", render_line("* * * * *", other, "/bin", ["memento"]), marker(other))

    assert find_line(text, MARK) is None
    assert remove_line(text, MARK) == text


@pytest.mark.parametrize(
    ("line", "fields"),
    [("@hourly cd /r && memento tick", "@hourly"), ("1 2 3 4 5 cmd", "1 2 3 4 5"), ("", "")],
)
def test_the_schedule_of_a_line(line: str, fields: str) -> None:
    assert schedule_of(line) == fields


def test_the_log_is_where_run_writes_too() -> None:
    assert crontab.LOG == "logs/cron.log"


# -- when a local crontab fires -------------------------------------------------------------


def test_a_local_crontab_fires_on_the_machines_clock() -> None:
    tokyo = timezone(timedelta(hours=9))
    after = datetime(2025, 1, 15, 14, 7, tzinfo=timezone.utc)  # 23:07 in Tokyo

    daily = next_fire_in(parse_cron("0 0 * * *"), after, tokyo)
    assert daily == datetime(2025, 1, 15, 15, 0, tzinfo=timezone.utc)  # Tokyo's midnight
    assert next_fire_in(parse_cron("0 0 * * *"), after, timezone.utc) == datetime(
        2025, 1, 16, tzinfo=timezone.utc
    )
    assert next_fire_in(parse_cron("0 0 30 2 *"), after, tokyo) is None
