"""Whether a run can prove its task done: pure decisions on values.

A verify that passes proves a task done only if it would have failed without the work. Two
runs prove nothing however verify ends: one whose agent changed no file (an agent that exits
0 without working, with a verify that already passed, would tick every box), unless the task
says it needs no change (``needs_change: false``); and, with the Meta's ``verify_first``, one
whose verify passed before the agent started.
"""

from __future__ import annotations

from collections.abc import Sequence

from memento_gh.changes import FileChange
from memento_gh.engine.records import VerifyResult
from memento_gh.plan.model import Task

NOTHING_CHANGED = (
    "the agent changed nothing (no file differs from the last commit), so verify cannot "
    "show that it did the task; a task that needs no change says `needs_change: false`"
)


def nothing_changed(changes: Sequence[FileChange], task: Task) -> str | None:
    """Why the run fails for want of a change, or None."""
    return NOTHING_CHANGED if not changes and task.needs_change else None


def passed_before_the_agent(check: VerifyResult) -> str | None:
    """Why a run whose verify passed before its agent started fails (``verify_first``), or
    None when verify failed then, as it should."""
    if not check.passed:
        return None
    return (
        "verify passed before the agent ran (verify_first), so it cannot tell this task done "
        "from not done; change verify so that it fails until the task is done"
    )
