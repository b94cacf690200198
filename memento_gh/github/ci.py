"""CI as a second verify (``ci-verify``), decided purely: the checks on the branch's pushed
tip say go on, wait, or reopen what that push delivered, with what failed.

A ``push`` workflow runs on the head of each push, so checks land on the tip alone: a
completed task's commit is the tip only when it was the last of its push (not with
``max_tasks_per_tick`` above 1, nor before an ALL COMPLETE or PIPELINE BLOCKED commit, nor
under a pool's recorded hand-off). So the tip's checks stand for every task completed since
the commit before it that has checks of its own (the previous push's tip).

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


def completed_tasks(commits: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The tasks that (SHA, subject) pairs completed, each once, oldest first (the pairs
    newest first, as ``git log`` lists them)."""
    found: list[str] = []
    for _, subject in reversed(commits):
        match = _COMPLETE.match(subject)
        if match and match["task"] not in found:
            found.append(match["task"])
    return tuple(found)


def verdict(checks: Sequence[Check]) -> Verdict:
    failed = tuple(c for c in checks if c.done and (c.conclusion or "") in FAILED)
    if failed:
        return Verdict(REOPEN, failed)
    pending = tuple(c for c in checks if not c.done)
    if pending:
        return Verdict(WAIT, pending)
    return Verdict(GO_ON)


def note(tasks: Sequence[str], sha: str, failed: Sequence[Check]) -> str:
    """The note the retry reads: which push failed, and each failed check's name,
    conclusion, summary and link."""
    delivered = _named(tasks)
    parts = [f"CI failed on {sha[:7]}, the pushed commit that delivered {delivered}; fix it."]
    for check in failed:
        summary = " ".join(check.summary.split())
        if len(summary) > SUMMARY_CHARS:
            summary = summary[: SUMMARY_CHARS - 1] + "…"
        line = f"Check {check.name!r}: {check.conclusion}"
        line += f" — {summary}" if summary else ""
        line += f" ({check.url})" if check.url else ""
        parts.append(line)
    return " ".join(parts)


def waiting_line(tasks: Sequence[str], sha: str, pending: Sequence[Check]) -> str:
    names = ", ".join(check.name for check in pending)
    return (
        f"Waiting for CI on {sha[:7]}, the pushed commit that delivered {_named(tasks)} "
        f"({names} still running); no new task starts until its checks are done."
    )


def _named(tasks: Sequence[str]) -> str:
    return tasks[0] if len(tasks) == 1 else ", ".join(tasks[:-1]) + f" and {tasks[-1]}"
