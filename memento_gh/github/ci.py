"""CI as a second verify (``ci-verify``), decided purely: the checks on the commit of the
last completed task say go on, wait, or reopen that task with what failed.

Check runs (GitHub Actions and apps) and commit statuses (older integrations) both count.
A commit with no check at all holds nothing: the repository may have no CI for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

GO_ON = "go-on"
WAIT = "wait"
REOPEN = "reopen"
#: Conclusions that mean the change is wrong; neutral and skipped ones do not.
FAILED = ("failure", "timed_out", "cancelled", "action_required", "error")
SUMMARY_CHARS = 600
_COMPLETE = re.compile(r"memento: complete (?P<task>T-\d+)\b")


class Check(NamedTuple):
    """One check run or commit status, reduced to what a decision and a note need."""

    name: str
    done: bool
    conclusion: str | None  # success, failure, ... (None until done)
    summary: str
    url: str


class Verdict(NamedTuple):
    action: str  # GO_ON | WAIT | REOPEN
    checks: tuple[Check, ...] = ()  # the pending ones (WAIT) or the failed ones (REOPEN)


def last_completed(commits: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """(task id, SHA) of the newest commit that completed a task, from (SHA, subject)
    pairs newest first."""
    for sha, subject in commits:
        match = _COMPLETE.match(subject)
        if match:
            return match["task"], sha
    return None


def verdict(checks: Sequence[Check]) -> Verdict:
    failed = tuple(c for c in checks if c.done and (c.conclusion or "") in FAILED)
    if failed:
        return Verdict(REOPEN, failed)
    pending = tuple(c for c in checks if not c.done)
    if pending:
        return Verdict(WAIT, pending)
    return Verdict(GO_ON)


def note(task_id: str, sha: str, failed: Sequence[Check]) -> str:
    """The note the retry reads: each failed check's name, conclusion, summary and link."""
    parts = [f"CI failed on {task_id}'s commit {sha[:7]}; fix what it reports."]
    for check in failed:
        summary = " ".join(check.summary.split())
        if len(summary) > SUMMARY_CHARS:
            summary = summary[: SUMMARY_CHARS - 1] + "…"
        line = f"Check {check.name!r}: {check.conclusion}"
        line += f" — {summary}" if summary else ""
        line += f" ({check.url})" if check.url else ""
        parts.append(line)
    return " ".join(parts)


def waiting_line(task_id: str, sha: str, pending: Sequence[Check]) -> str:
    names = ", ".join(check.name for check in pending)
    return (
        f"Waiting for CI on {task_id}'s commit {sha[:7]} ({names} still running); "
        "no new task starts until its checks are done."
    )
