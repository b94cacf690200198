"""What the GitHub issues should be, given the plan: a pure comparison that returns the
operations bringing the issues there (create, edit, reply), for the adapter to carry out.

The issues are found by their hidden markers, never by title. Every run computes the
operations afresh from the plan on the branch and the issues as listed, so a run that
failed halfway (a 5xx, a rate limit) is finished by the next one and nothing is created
twice: an issue that exists, open or closed, is edited or reopened, never made again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from memento_gh.formats import status_log
from memento_gh.github import issue_texts, render
from memento_gh.plan.model import BLOCKED, SKIPPED, Plan, Task


class IssueLike(Protocol):
    """The fields of an issue this module reads (memento_gh.github.sync.Issue has them)."""

    @property
    def number(self) -> int: ...
    @property
    def body(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def url(self) -> str: ...


class Create(NamedTuple):
    text: render.IssueText


class Edit(NamedTuple):
    number: int
    body: str | None = None
    state: str | None = None  # "open" | "closed"
    state_reason: str | None = None  # "completed" | "not_planned" | "reopened"


class Reply(NamedTuple):
    number: int
    body: str


Operation = Create | Edit | Reply


class Duplicate(NamedTuple):
    """An open issue whose marker another issue, the one memento keeps, already has."""

    issue: IssueLike
    kept: IssueLike


class Found(NamedTuple):
    """The memento issues by what they are for, from their markers."""

    tasks: Mapping[str, IssueLike]
    dashboard: IssueLike | None
    breaker: IssueLike | None
    duplicates: tuple[Duplicate, ...] = ()


def find_issues(issues: Sequence[IssueLike]) -> Found:
    """Sort issues by marker. Of two issues with one marker (made by hand, by a run that
    died between the create and its answer, or by two workers syncing at once), an open
    one wins, then the oldest; the other open ones are duplicates."""
    kept: dict[tuple[str, str | None], IssueLike] = {}
    duplicates: list[Duplicate] = []
    for issue in sorted(issues, key=lambda found: (found.state != "open", found.number)):
        marker = render.read_marker(issue.body)
        if marker is None or marker[0] not in _KEPT_KINDS:
            continue
        if marker[0] == render.TASK_KIND and not marker[1]:
            continue
        key = marker if marker[0] == render.TASK_KIND else (marker[0], None)
        if key not in kept:
            kept[key] = issue
        elif issue.state == "open":
            duplicates.append(Duplicate(issue, kept[key]))
    tasks = {value: issue for (kind, value), issue in kept.items() if value is not None}
    return Found(
        tasks,
        kept.get((render.DASHBOARD_KIND, None)),
        kept.get((render.BREAKER_KIND, None)),
        tuple(duplicates),
    )


_KEPT_KINDS = (render.TASK_KIND, render.DASHBOARD_KIND, render.BREAKER_KIND)


def duplicate_operations(found: Found) -> list[Operation]:
    """Each open duplicate gets a reply naming the issue memento keeps, and is closed."""
    operations: list[Operation] = []
    for duplicate in found.duplicates:
        number = duplicate.issue.number
        operations.append(Reply(number, issue_texts.duplicate_comment(duplicate.kept.number)))
        operations.append(Edit(number, state="closed", state_reason="not_planned"))
    return operations


def task_operations(
    plan: Plan,
    records: Sequence[status_log.Record],
    found: Found,
    *,
    plan_path: str,
) -> list[Operation]:
    """One open issue per blocked task; a task that left [!] gets its issue closed."""
    operations: list[Operation] = []
    last = latest_entries(records)
    blocked = {task.id: task for task in plan.tasks if task.marker == BLOCKED}
    for task_id, task in blocked.items():
        text = issue_texts.blocked_issue(
            task, last.get(task_id), max_retries=plan.settings.max_retries, plan_path=plan_path
        )
        issue = found.tasks.get(task_id)
        if issue is None:
            operations.append(Create(text))
        elif issue.state != "open":
            operations.append(Edit(issue.number, body=text.body, state="open"))
        elif issue.body != text.body:
            operations.append(Edit(issue.number, body=text.body))
    for task_id, issue in found.tasks.items():
        if task_id in blocked or issue.state != "open":
            continue
        now = plan.task(task_id)
        marker = now.marker if now is not None else None
        operations.append(Reply(issue.number, issue_texts.task_unblocked_comment(task_id, marker)))
        operations.append(Edit(issue.number, state="closed", state_reason=_close_reason(now)))
    return operations


def _close_reason(task: Task | None) -> str:
    """Skipped or removed from the plan: not planned; done or back in the queue: resolved."""
    return "not_planned" if task is None or task.marker == SKIPPED else "completed"


def breaker_operations(
    plan: Plan, records: Sequence[status_log.Record], found: Found
) -> list[Operation]:
    """An issue while the circuit breaker holds the plan paused, closed on resume."""
    reason = tripped_reason(plan, records)
    issue = found.breaker
    if reason is not None:
        text = issue_texts.breaker_issue(reason.text, reason.when)
        if issue is None:
            return [Create(text)]
        if issue.state != "open":
            return [Edit(issue.number, body=text.body, state="open")]
        return [] if issue.body == text.body else [Edit(issue.number, body=text.body)]
    if issue is not None and issue.state == "open":
        return [
            Reply(issue.number, issue_texts.breaker_resolved_comment()),
            Edit(issue.number, state="closed", state_reason="completed"),
        ]
    return []


class Trip(NamedTuple):
    text: str
    when: str


def tripped_reason(plan: Plan, records: Sequence[status_log.Record]) -> Trip | None:
    """The breaker holds the plan when it is paused and the breaker's line is the latest
    event (as for .memento_alert); a person's pause has no breaker line after it."""
    if plan.settings.tick_mode != "paused":
        return None
    events = [record for record in records if isinstance(record, status_log.Event)]
    if not events:
        return None
    latest = max(events, key=lambda event: event.line)
    prefix = status_log.BREAKER_PREFIX
    if not latest.text.startswith(prefix):
        return None
    return Trip(latest.text[len(prefix) :].strip(), latest.time.strftime("%Y-%m-%dT%H:%M:%SZ"))


def dashboard_operations(view: render.DashboardView, found: Found) -> list[Operation]:
    """The dashboard issue, made once and then edited only when its body would change."""
    text = render.dashboard(view)
    issue = found.dashboard
    if issue is None:
        return [Create(text)]
    edits: list[Operation] = []
    warning = render.budget_warning(view.plan)
    said = warning is None or render.marker(render.BUDGET_WARNED_KIND, warning[0]) in issue.body
    if warning is not None and not said:
        # Said once a day: the body that follows carries that day's marker.
        edits.append(Reply(issue.number, render.budget_warning_comment(warning[1])))
    return edits + ([] if issue.body == text.body else [Edit(issue.number, body=text.body)])


def latest_entries(records: Sequence[status_log.Record]) -> dict[str, status_log.ParsedEntry]:
    """Each task's latest tick entry in the status log."""
    latest: dict[str, status_log.ParsedEntry] = {}
    for record in records:
        if isinstance(record, status_log.ParsedEntry) and record.task_id:
            known = latest.get(record.task_id)
            if known is None or record.line > known.line:
                latest[record.task_id] = record
    return latest
