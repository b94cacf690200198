"""The crontab line that runs ``memento tick`` for one repository: pure text in, text out.

``memento schedule`` reads the user's crontab, hands its text here, and writes back what
comes out. Our line ends with a marker comment naming the repository (``# memento-gh
/path/to/repo``): that is how a later install replaces it and a remove finds it, while every
other line (the user's jobs, ``MAILTO=``, comments, other repositories' lines) passes through
byte for byte.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from memento_gh.durations import format_duration

MARKER = "# memento-gh"
MINUTES = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)  # the intervals that divide an hour evenly
HOURS = (1, 2, 3, 4, 6, 8, 12, 24)  # and a day
LOG = "logs/cron.log"


def cron_expression(seconds: float) -> str:
    """The five cron fields for a tick every ``seconds``; ValueError when cron cannot keep
    that rhythm (it counts minutes from the hour and hours from midnight, so ``*/7`` would
    fire at :56 and again at :00)."""
    minutes = seconds / 60
    if minutes.is_integer() and int(minutes) in MINUTES:
        return "* * * * *" if minutes == 1 else f"*/{int(minutes)} * * * *"
    hours = seconds / 3600
    if hours.is_integer() and int(hours) in HOURS:
        return {1: "0 * * * *", 24: "0 0 * * *"}.get(int(hours), f"0 */{int(hours)} * * *")
    raise ValueError(_refusal(seconds))


def _refusal(seconds: float) -> str:
    every = format_duration(seconds)
    works = (
        f"use minutes that divide an hour ({', '.join(f'{m}m' for m in MINUTES)}) or hours "
        f"that divide a day ({', '.join(f'{h}h' for h in HOURS)})"
    )
    if seconds < 60:
        return (
            f"cron cannot run a tick every {every}: it fires at most once a minute; {works}, "
            f"or keep `memento run --every {every}` running in the foreground"
        )
    return (
        f"cron cannot run a tick every {every} evenly; {works}, "
        f"or keep `memento run --every {every}` running in the foreground"
    )


def marker(repo: str) -> str:
    """The comment that ends this repository's line (escaped as the line holds it)."""
    return _escape(f"{MARKER} {shlex.quote(repo)}")


def render_line(expression: str, repo: str, path: str, argv: Sequence[str]) -> str:
    """``expression`` then a shell command that ticks ``repo`` with ``argv``, appending its
    output to ``logs/cron.log``, then the marker. cron gives its jobs a bare PATH (the agent
    and git would not be found), so the installing shell's PATH goes along."""
    for word in (repo, path, *argv):
        _check_word(word)
    command = (
        f"cd {shlex.quote(repo)} && mkdir -p logs && PATH={shlex.quote(path)} "
        f"{shlex.join(argv)} >> {LOG} 2>&1"
    )
    return f"{expression} {_escape(command)} {marker(repo)}"


def _escape(text: str) -> str:
    """cron cuts a command at a bare ``%`` (the rest becomes its stdin); ``\\%`` is a ``%``."""
    return text.replace("%", "\\%")


def _check_word(word: str) -> None:
    if any(character in word for character in "\n\r\0"):
        raise ValueError(
            f"{word!r}: a crontab line cannot hold a line break; "
            "use a path or an option without one"
        )
    if "\\%" in word:
        # cron reads a backslash before % as the escape and drops it: no way to keep both.
        raise ValueError(f"{word!r}: cron cannot run a command holding '\\%'; write it without")


def find_line(text: str, mark: str) -> str | None:
    """This repository's line in a crontab's ``text`` (without its line ending), if any."""
    for line in _lines(text):
        if _is_ours(line, mark):
            return line.rstrip("\r\n")
    return None


def install_line(text: str, line: str, mark: str) -> str:
    """``text`` with ``line`` in place of this repository's line, or appended when there is
    none; a second line of ours (someone copied it) goes, so the repository ticks once."""
    kept: list[str] = []
    placed = False
    for each in _lines(text):
        if not _is_ours(each, mark):
            kept.append(each)
        elif not placed:
            kept.append(line + ("\r\n" if each.endswith("\r\n") else "\n"))
            placed = True
    if not placed:
        if kept and not kept[-1].endswith("\n"):
            kept[-1] += "\n"  # cron ignores a last line without its newline
        kept.append(line + "\n")
    return "".join(kept)


def remove_line(text: str, mark: str) -> str:
    """``text`` without this repository's line; every other byte as it was."""
    return "".join(line for line in _lines(text) if not _is_ours(line, mark))


def schedule_of(line: str) -> str:
    """The cron fields of a crontab line: ``*/5 * * * *``, or a macro such as ``@hourly``."""
    words = line.split()
    return words[0] if words and words[0].startswith("@") else " ".join(words[:5])


def _is_ours(line: str, mark: str) -> bool:
    # A line the user commented out is theirs to keep: it never runs, so it is not ours.
    body = line.rstrip("\r\n").rstrip()
    return not body.lstrip().startswith("#") and body.endswith(" " + mark)


def _lines(text: str) -> list[str]:
    """The lines with their endings; only ``\\n`` ends a line, as for cron."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines
