"""The tick's use of the lessons in ``docs/memory/``: the few a task's worker is given, a known
issue learned when a task passes after failing, and lessons archived when they go stale; and
the plainest lesson of all, why the task's own last run failed, for a retry's prompt.
Choosing the records is ``formats/memory_selection``'s and writing them
``formats/memory_learning``'s; this reads and writes the files.

Those modules are imported only when there are lessons to read or one to learn: most
projects have none, and importing them (with the regular expressions they compile) was 14M
of the 388M instructions of a 1,000-task tick's process (valgrind).
"""

from __future__ import annotations

from datetime import datetime

from memento_gh import files
from memento_gh.engine.books.ledger import Ledger
from memento_gh.engine.prompt import LastAttempt
from memento_gh.engine.records import Attempt, Claim
from memento_gh.formats import status_log
from memento_gh.layout import MEMORY_FILE_NAMES
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import Task


def lesson_texts(ledger: Ledger) -> dict[str, str]:
    """The lesson files that hold records, by file name."""
    found: dict[str, str] = {}
    for name in MEMORY_FILE_NAMES:
        path = ledger.memory_folder / name
        if path.exists():
            text = files.read_text(path)
            if "\n## " in text:  # a record's heading
                found[name] = text
    return found


def lessons_for(ledger: Ledger, task: Task, settings: Settings, now: datetime) -> tuple[str, ...]:
    """The lessons relevant to ``task``, within the prompt's budget for them."""
    texts = lesson_texts(ledger)
    if not texts:
        return ()
    from memento_gh.formats import memory, memory_selection

    failure = memory_selection.last_failure(status_log.parse_status(ledger.status_text()), task.id)
    by_kind = {memory.KIND_OF_FILE[name]: text for name, text in texts.items()}
    return memory_selection.lessons_for(
        memory.read_all(by_kind),
        task,
        last_failure=memory_selection.failure_signature(failure) if failure else None,
        now=now,
        stale_after=settings.memory_stale_after,
    )


def last_attempt(ledger: Ledger, task: Task) -> LastAttempt | None:
    """The task's last run when it failed, as the status log tells it, for a retry's
    prompt (also after `memento retry`: the log still says why it was blocked)."""
    status = ledger.status_text()
    if task.id not in status:  # it never ran: nothing failed
        return None
    from memento_gh.formats import memory_selection

    failure = memory_selection.last_failure(status_log.parse_status(status), task.id)
    if failure is None:
        return None
    return LastAttempt(
        tick=failure.tick,
        analysis=failure.error_analysis or failure.fields.get("Status", "failed"),
        verify=failure.verify_head or "",
        exit_code=failure.exit_code,
        log=failure.fields.get("Log") or None,
    )


def learn_from_success(ledger: Ledger, claim: Claim, attempt: Attempt, now: datetime) -> None:
    """A task that passes after failing in its verify teaches a known issue: the failure's
    signature, with this change as its fix."""
    status = ledger.status_text()
    task = claim.task
    if task.id not in status:  # it never ran before: nothing failed
        return
    from memento_gh.formats import memory, memory_learning, memory_selection

    failure = memory_selection.last_failure(status_log.parse_status(status), task.id)
    if failure is None:
        return
    path = ledger.memory_folder / memory.FILE_NAMES[memory.KNOWN_ISSUE]
    old = files.read_text(path) if path.exists() else memory.empty_file(memory.KNOWN_ISSUE)
    new = memory_learning.learn_from_success(
        old,
        task=task,
        previous_failure=failure,
        changes=[(change.path, change.added, change.removed) for change in attempt.changes],
        commit=None,
        verify_command=task.verify or "",
        now=now,
        tick=claim.tick,
    )
    if new != old:
        files.write_atomic(path, new)


def archive_stale(ledger: Ledger, settings: Settings, now: datetime) -> bool:
    """Move the lessons not verified within ``memory_stale_after`` to their file's archive;
    True when one moved (the files are written, not committed)."""
    texts = lesson_texts(ledger)
    if not texts:
        return False
    from memento_gh.formats import memory, memory_learning

    moved_any = False
    for name, old in texts.items():
        text, moved = memory_learning.archive_stale(
            old, memory.KIND_OF_FILE[name], now=now, stale_after=settings.memory_stale_after
        )
        if moved:
            files.write_atomic(ledger.memory_folder / name, text)
            moved_any = True
    return moved_any
