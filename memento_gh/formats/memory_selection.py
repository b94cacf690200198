"""Which lessons of ``docs/memory/`` a worker is given for its task, within a prompt budget.

A known issue is matched to a task by the signature of the task's last failed run: its
error line with what varies between two runs of the same error (times, ids, hashes, paths,
numbers) replaced by placeholders. Every function here takes values and returns values:
reading the files is the caller's business.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from memento_gh.formats import runner_output
from memento_gh.formats.memory import (
    DECISION,
    GLOBAL,
    KNOWN_ISSUE,
    Record,
    code_span,
    one_line,
    same_key,
)
from memento_gh.formats.status_log import BLOCKED, DEFERRED, FAILED, ParsedEntry
from memento_gh.plan import values

if TYPE_CHECKING:
    from datetime import datetime

    from memento_gh.formats.status_log import Record as StatusRecord
    from memento_gh.plan.model import Task

LESSONS_BUDGET = 2048  # bytes a worker's prompt gives to lessons
MAX_LESSONS = 8
ITEM_BYTES = 600  # one lesson's most, so that one long record cannot take the whole budget
#: What the "## Lessons" heading and the blank lines around the section cost in the prompt.
SECTION_OVERHEAD = 40


# -- the signature of a failure --------------------------------------------------------------

_SOURCE_EXTENSIONS = (
    "py|pyi|js|jsx|mjs|cjs|ts|tsx|json|ya?ml|toml|md|txt|cfg|ini|c|h|cc|cpp|hpp|rs|go|java|kt"
    "|rb|php|cs|swift|sh|sql|html|css|vue|lock|log|xml|csv"
)
#: (pattern, placeholder) in the order ``signature`` applies them: a path may hold a hash
#: or a number, a time holds numbers.
_VARIABLE_PARTS = (
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?)?"
            r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
        ),
        "{time}",
    ),
    (re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b"), "{uuid}"),
    (
        re.compile(
            r"(?:[A-Za-z]:)?[\w.~@+-]*(?:[/\\][\w.~@+-]+)+[/\\]?"
            rf"|\b[\w-]+\.(?:{_SOURCE_EXTENSIONS})\b"
            r"|\b[\w-]+\.\w{1,8}(?=:\d)"
        ),
        "{path}",
    ),
    (
        re.compile(
            r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"
        ),
        "{hash}",
    ),
    # A number of its own, with its unit (3s, 12ms, 5MB, 80%): not the digits of sha256 or TS2304.
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?:(?i:ms|s|m|h|d|[kmgt]i?b)|%)?(?![\w])"), "{n}"),
)
_PLACEHOLDER = re.compile(r"\{(?:time|uuid|path|hash|n)\}")
#: A line that names an error, then a line with an error word: the best and second best.
_ERROR_LINES = (
    re.compile(
        r"\b[A-Z]\w*(?:Error|Exception|Failure)\b|^E\s|\berror(?:\[\w+\])?:|\berror [A-Z]+\d+"
    ),
    re.compile(
        r"(?i)\b(?:error|fatal|panic|failed|failure|cannot|can't|no such|not found|undefined|"
        r"denied|refused|missing|invalid|unexpected)\b"
    ),
)
_PYTEST_MARGIN = re.compile(r"^E\s+")  # pytest's "E   " before an error line

SIGNATURE_CHARS = 200


def signature(text: str) -> str:
    """An error line with what differs between two occurrences of the same error - times,
    ids, hashes, paths, numbers - replaced by ``{time}``, ``{uuid}``, ``{hash}``, ``{path}``
    and ``{n}``: the same mistake made elsewhere has the same signature."""
    found = one_line(text)
    for pattern, placeholder in _VARIABLE_PARTS:
        found = pattern.sub(placeholder, found)
    return found[:SIGNATURE_CHARS].rstrip()


def error_line(output: str) -> str | None:
    """The line of a verify output that names the error: a named error or exception, else
    the failure line of the runner that printed it (doctest's, a test's name with its
    assertion), else one with an error word, else all the lines (a summary line alone would
    merge unrelated failures into one signature). A runner's boilerplate (``Failed
    example:``, ``FAILED (failures=1)``, ``1 failed in 0.2s``, rules) is never the error."""
    lines = [
        line.strip()
        for line in output.splitlines()
        if not runner_output.is_noise(line) and not runner_output.is_boilerplate(line)
    ]
    named, worded = _ERROR_LINES
    found = next((line for line in lines if named.search(line)), None)
    if found is None:
        told = runner_output.runner_summary(output)
        found = told if told and not runner_output.is_boilerplate(told) else None
    if found is None:
        found = next((line for line in lines if worded.search(line)), None)
    if found is not None:
        return _PYTEST_MARGIN.sub("", found)
    return " ⏎ ".join(lines) or None


def failure_signature(entry: ParsedEntry) -> str | None:
    """The signature of a failed run whose verify ran and failed; None for other failures
    (a guard violation, a timeout, a dead agent), which teach nothing about the code."""
    if entry.exit_code in (None, 0):
        return None
    line = error_line(entry.verify_head or "")
    if line is None:
        return None
    found = signature(line)
    words = _PLACEHOLDER.sub("", found)
    return found if any(char.isalpha() for char in words) else None


def last_failure(records: Sequence[StatusRecord], task_id: str) -> ParsedEntry | None:
    """The newest status entry of ``task_id`` when it is a failure, else None.

    Read it before the tick appends this run's entry: afterwards the newest entry is this run.
    """
    for record in reversed(records):
        if isinstance(record, ParsedEntry) and record.task_id == task_id:
            if record.outcome == DEFERRED:
                continue  # the provider's limit says nothing about the task
            return record if record.outcome in (FAILED, BLOCKED) else None
    return None


# -- lessons for a worker's prompt -----------------------------------------------------------


def is_fresh(record: Record, now: datetime, stale_after: float) -> bool:
    """Verified within ``stale_after`` seconds; a record of unknown age is not fresh."""
    verified = record.last_verified
    return verified is not None and (now - verified).total_seconds() <= stale_after


def lessons_for(
    records: Iterable[Record],
    task: Task,
    *,
    last_failure: str | None,
    now: datetime,
    stale_after: float,
    budget: int = LESSONS_BUDGET,
) -> tuple[str, ...]:
    """The few lessons worth a worker's attention on ``task``, most relevant first, within
    ``budget`` bytes of prompt: the known issue whose signature is ``last_failure`` (the
    signature of the task's last failed run), then records of this task, then of its
    module, then the decisions and preferences that name no module. Archived records and
    records not verified within ``stale_after`` seconds are never given.

    Each lesson is one line, for ``prompt.build_prompt(lessons=...)``; the bytes they add to
    the prompt (heading included) stay within ``budget``.
    """
    candidates = []
    for index, record in enumerate(records):
        rank = None if record.archived else _relevance(record, task, last_failure)
        verified = None if rank is None else record.last_verified
        if verified is None or (now - verified).total_seconds() > stale_after:
            continue
        candidates.append((rank, -verified.timestamp(), -record.seen, index, record))
    chosen: list[str] = []
    spent = SECTION_OVERHEAD
    # The best few are enough: a lesson is at most ITEM_BYTES, so these fill any sane budget.
    for rank, *_, record in heapq.nsmallest(4 * MAX_LESSONS, candidates):
        item = _lesson(record, matched=rank == 0)
        cost = len(item.encode("utf-8")) + 3  # "- " and the line break
        if spent + cost > budget:
            continue
        chosen.append(item)
        spent += cost
        if len(chosen) == MAX_LESSONS:
            break
    return tuple(chosen)


def _relevance(record: Record, task: Task, last_failure: str | None) -> int | None:
    """0 for the known issue of the task's last failure, 1 for its own records, 2 for its
    module's, 3 for decisions and preferences of no module; None when unrelated."""
    if (
        record.kind == KNOWN_ISSUE
        and last_failure
        and same_key(record.key) == same_key(last_failure)
    ):
        return 0
    if record.task == task.id:
        return 1
    if task.module and task.module in record.modules:
        return 2
    if record.kind != KNOWN_ISSUE and not record.modules:
        return 3
    return None


def _lesson(record: Record, matched: bool) -> str:
    """One line: the record's statement first, then where it came from."""
    if record.kind == KNOWN_ISSUE:
        lead = "Known issue (your task's last run failed like this)" if matched else "Known issue"
        parts = [
            f"{lead}: {_cut(record.text, 160)}",
            f"Root cause: {_cut(record.value('Root cause') or 'unknown', 160)}",
            f"Fix: {_cut(record.value('Fix') or 'unknown', 160)}",
        ]
    elif record.kind == DECISION:
        parts = [f"Decision on {_cut(record.key, 60)}: {_cut(record.text, 240)}"]
        reason = record.value("Reason")
        if reason:
            parts.append(f"Reason: {_cut(reason, 120)}")
    else:
        parts = [f"Preference for {_cut(record.key, 60)}: {_cut(record.text, 300)}"]
    line = ". ".join(part.rstrip(". ") for part in parts) + f". ({_provenance(record)})"
    return _fit(line, ITEM_BYTES)


def _provenance(record: Record) -> str:
    bits = [record.task or GLOBAL]
    if record.kind == KNOWN_ISSUE:
        bits.append(f"seen {record.seen}x")
    bits.append(f"confidence {record.confidence or 'unknown'}")
    verified = record.last_verified
    if verified is not None:
        bits.append(f"verified {values.format_time(verified)[:10]}")
    evidence = record.evidence
    if evidence is not None:
        bits.append(f"evidence: {evidence.kind} {code_span(_cut(evidence.value, 100))}")
    return ", ".join(bits)


def _cut(text: str, limit: int) -> str:
    flat = one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _fit(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, an ellipsis marking the cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore").rstrip() + "…"
