"""memento's pull request as the runs last saw it, kept in the status log (TICK_STATUS.md)
as an event, so that ``memento status --json`` and the local dashboard can show it with no
network: ``- [2025-01-15T14:40:00Z] Pull request #12 is draft, checks pending: <url>``.

A run writes the event only when what it sees differs from the last one written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from memento_gh.formats import status_log

STATES = ("draft", "open", "merged", "closed")
_EVENT = re.compile(
    r"Pull request #(?P<number>\d+) is (?P<state>draft|open|merged|closed)"
    r"(?:, checks (?P<checks>[a-z_]+))?: (?P<url>https?://\S+)$"
)


class PullRecord(NamedTuple):
    number: int
    url: str
    state: str  # draft | open | merged | closed
    checks: str | None = None  # success | pending | failure (ci-verify only), else None

    def as_json(self) -> dict[str, Any]:
        return {"number": self.number, "url": self.url, "state": self.state, "checks": self.checks}


def event_text(record: PullRecord) -> str:
    checks = f", checks {record.checks}" if record.checks else ""
    return f"Pull request #{record.number} is {record.state}{checks}: {record.url}"


def latest(records: Sequence[status_log.Record]) -> PullRecord | None:
    """The newest pull-request event of the status log, if any."""
    for record in sorted(records, key=lambda found: found.line, reverse=True):
        if isinstance(record, status_log.Event):
            match = _EVENT.match(record.text)
            if match:
                return PullRecord(
                    int(match["number"]), match["url"], match["state"], match["checks"]
                )
    return None
