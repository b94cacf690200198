"""What a worker hands off to the pool on its own ref (``refs/memento/results/<worker>``)
when the branch would not take it at once: a task's result, or a request for a task; and
the notes that say it was recorded.

A posted result is a commit whose tree holds the agent's change (its parent is the claim's
commit, so the change is the diff between the two) and whose message holds this record:
everything another worker needs to record the result on whatever tip the branch has by then,
as the worker that ran it would have (``branch.PoolBranch``). A request holds the claim
(``<time> <worker-id>``) under which another worker claims a task for it. Once recorded, the
ref moves to a note on top of it (the outcome, or the task claimed), so its worker learns
how it ended and nobody records it twice. Pure: text in, records out.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any, NamedTuple

from memento_gh.changes import FileChange
from memento_gh.engine.agents.limits import Limit
from memento_gh.engine.records import AgentResult, Attempt, ProcessResult, TaskOutcome, VerifyResult

RESULT_KEY = "memento-result"
NOTE_KEY = "memento-recorded"
REQUEST_KEY = "memento-request"
ASSIGNED_KEY = "memento-assigned"
VERSION = 1
#: The end of verify's output kept in a record: what a status entry and an issue show.
OUTPUT_KEPT = 20_000


def ref_name(worker: str) -> str:
    """The name of ``worker``'s result ref: its id where that is a safe ref name, else the
    safe part of it and a hash that keeps two ids apart."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", worker)[:80] or "worker"
    if safe == worker:
        return safe
    return f"{safe}-{hashlib.sha256(worker.encode()).hexdigest()[:10]}"


class Posted(NamedTuple):
    """A result ref as last fetched: the worker's name on it, the commit, its parent, its
    message, and when it was made (Unix seconds, by its maker's clock)."""

    name: str
    sha: str
    parent: str
    message: str
    at: int = 0


class Handoff(NamedTuple):
    """A result as its worker posted it."""

    worker: str | None
    task: str
    claimed: str  # the claim as the plan renders it: the result is the claim's alone
    tick: int
    position: int
    claim_commit: str
    log: str
    outcome: str
    paths: tuple[str, ...]
    attempt: Attempt
    #: The claim (``<time> <worker-id>``) under which the worker asks for its next task
    #: in the same post (None: it asks for none): whoever records the result claims one.
    next: str | None = None


def result_message(handoff: Handoff) -> str:
    """The posted commit's message: a subject for people, the record for the pool."""
    record = {
        RESULT_KEY: VERSION,
        "worker": handoff.worker,
        "task": handoff.task,
        "claimed": handoff.claimed,
        "tick": handoff.tick,
        "position": handoff.position,
        "claim_commit": handoff.claim_commit,
        "log": handoff.log,
        "outcome": handoff.outcome,
        "paths": list(handoff.paths),
        "attempt": _attempt_record(handoff.attempt),
        "next": handoff.next,
    }
    return f"memento: result of {handoff.task}\n\n{json.dumps(record, sort_keys=True)}\n"


def read_result(message: str) -> Handoff | None:
    """The record in a posted result's message; None for anything else (a note, or a
    message no worker of this version wrote)."""
    record = _record(message, RESULT_KEY)
    if record is None:
        return None
    try:
        return Handoff(
            worker=_optional_str(record["worker"]),
            task=_str(record["task"]),
            claimed=_str(record["claimed"]),
            tick=_int(record["tick"]),
            position=_int(record["position"]),
            claim_commit=_str(record["claim_commit"]),
            log=_str(record["log"]),
            outcome=_str(record["outcome"]),
            paths=tuple(_str(path) for path in record["paths"]),
            attempt=_attempt(record["attempt"]),
            next=_optional_str(record.get("next")),
        )
    except (KeyError, TypeError, ValueError):
        return None


class Request(NamedTuple):
    """A worker asks the pool for a task: whoever pushes next claims one for it, with this
    claim (``<time> <worker-id>``: when it asked, and who)."""

    worker: str
    claimed: str


def request_of(handoff: Handoff) -> Request | None:
    """The request for a next task that rides with a posted result, if it asks for one."""
    if handoff.worker is None or handoff.next is None:
        return None
    return Request(handoff.worker, handoff.next)


class Assignment(NamedTuple):
    """The task claimed for a request: its id, its tick's number and the claim's commit."""

    task: str
    tick: int
    commit: str


class Carried(NamedTuple):
    """A task claimed for a worker's next tick together with its last result: what was
    claimed, and the claim (``<time> <worker-id>``) it asked under."""

    assignment: Assignment
    claimed: str


def request_message(request: Request) -> str:
    record = {REQUEST_KEY: VERSION, "worker": request.worker, "claimed": request.claimed}
    return f"memento: {request.worker} asks for a task\n\n{json.dumps(record, sort_keys=True)}\n"


def read_request(message: str) -> Request | None:
    record = _record(message, REQUEST_KEY)
    if record is None:
        return None
    try:
        return Request(_str(record["worker"]), _str(record["claimed"]))
    except (KeyError, TypeError):
        return None


def assignment_message(assignment: Assignment | None) -> str:
    """The note on a request: the task claimed for it, or none (the worker withdrew it)."""
    record = {ASSIGNED_KEY: VERSION, "assignment": None if assignment is None else list(assignment)}
    what = f"claimed {assignment.task}" if assignment else "withdrawn"
    return f"memento: request {what}\n\n{json.dumps(record, sort_keys=True)}\n"


def read_assignment(message: str) -> Assignment | None:
    record = _record(message, ASSIGNED_KEY)
    if record is None or not isinstance(record.get("assignment"), list):
        return None
    try:
        task, tick, commit = record["assignment"]
        return Assignment(_str(task), _int(tick), _str(commit))
    except (TypeError, ValueError):
        return None


def note_message(outcome: TaskOutcome, assignment: Assignment | None = None) -> str:
    """The note the ref moves to once the result is recorded on the branch, with the task
    claimed for the request that came with it, if any (``read_assignment`` reads it)."""
    record: dict[str, Any] = {
        NOTE_KEY: VERSION,
        "task": outcome.task_id,
        "outcome": outcome.outcome,
        "commit": outcome.commit,
        "message": outcome.message,
        "try_again": outcome.try_again,
    }
    if assignment is not None:
        record.update({ASSIGNED_KEY: VERSION, "assignment": list(assignment)})
    return f"memento: recorded {outcome.task_id}\n\n{json.dumps(record, sort_keys=True)}\n"


def read_note(message: str) -> TaskOutcome | None:
    """The outcome a note says; None when ``message`` is no note."""
    record = _record(message, NOTE_KEY)
    if record is None:
        return None
    try:
        return TaskOutcome(
            _str(record["task"]),
            _str(record["outcome"]),
            _optional_str(record["commit"]),
            _str(record["message"]),
            _optional_str(record["try_again"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _record(message: str, key: str) -> dict[str, Any] | None:
    _, _, body = message.partition("\n\n")
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get(key) != VERSION:
        return None
    return record


def _attempt_record(attempt: Attempt) -> dict[str, Any]:
    verify = attempt.verify
    agent = attempt.agent
    limit = attempt.limit
    return {
        "violations": list(attempt.violations),
        "verify": None
        if verify is None
        else [
            verify.exit_code,
            verify.timed_out,
            verify.duration,
            verify.output[-OUTPUT_KEPT:],
            verify.head,
        ],
        # The agent's words are in its tick log; what the bookkeeping reads is how it
        # ended and what it cost.
        "agent": None
        if agent is None
        else [agent.process.exit_code, agent.process.timed_out, agent.process.duration, agent.cost],
        "changes": [list(change) for change in attempt.changes],
        "started": attempt.started.isoformat(),
        "agent_failure": attempt.agent_failure,
        "tick_died": attempt.tick_died,
        "conflict": attempt.conflict,
        "limit": None
        if limit is None
        else [
            limit.words,
            limit.retry_at.isoformat() if limit.retry_at else None,
            limit.retry_words,
        ],
    }


def _attempt(record: dict[str, Any]) -> Attempt:
    verify = record["verify"]
    agent = record["agent"]
    limit = record["limit"]
    return Attempt(
        violations=tuple(_str(text) for text in record["violations"]),
        verify=None
        if verify is None
        else VerifyResult(
            _optional_int(verify[0]),
            bool(verify[1]),
            float(verify[2]),
            _str(verify[3]),
            _str(verify[4]),
        ),
        agent=None
        if agent is None
        else AgentResult(
            ProcessResult(_optional_int(agent[0]), bool(agent[1]), float(agent[2]), ""),
            agent[3] if isinstance(agent[3], dict) else None,
        ),
        changes=tuple(_change(change) for change in record["changes"]),
        started=datetime.fromisoformat(_str(record["started"])),
        agent_failure=_optional_str(record["agent_failure"]),
        tick_died=_optional_str(record["tick_died"]),
        conflict=_optional_str(record["conflict"]),
        limit=None
        if limit is None
        else Limit(
            _str(limit[0]),
            datetime.fromisoformat(limit[1]) if isinstance(limit[1], str) else None,
            _optional_str(limit[2]),
        ),
    )


def _change(fields: list[Any]) -> FileChange:
    path, kind, added, removed, binary, old_path = fields
    return FileChange(
        _str(path), _str(kind), _int(added), _int(removed), bool(binary), _optional_str(old_path)
    )


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def _optional_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    return value


def _optional_int(value: object) -> int | None:
    return None if value is None else _int(value)
