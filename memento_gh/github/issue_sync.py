"""The synced step of a run, after the push: the issues of blocked tasks, the circuit
breaker's and the base conflict's issue, the dashboard, then the pull request (it links to
the dashboard), and the logs' tails on the issues of tasks that failed. ``reconcile.py``
decides (pure), this carries it out. An API failure leaves the rest to the next run, which
converges: every create looks its marker up first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from memento_gh.engine.records import TaskOutcome
from memento_gh.formats import status_log
from memento_gh.github import (
    artifact,
    boxes,
    first_run,
    job_text,
    pulls,
    reconcile,
    render,
    setup_checks,
    setup_issues,
)
from memento_gh.github.delivery import Delivery, Kept
from memento_gh.github.failures import SyncError
from memento_gh.github.run_context import RunContext, read_plan, read_records
from memento_gh.plan.model import Plan


class Synced(NamedTuple):
    lines: tuple[str, ...] = ()
    #: The issue of each blocked task, by task, as the job summary links them.
    blocked_links: Mapping[str, str] = {}
    dashboard_url: str | None = None


class _Issues(NamedTuple):
    found: reconcile.Found
    links: dict[str, str]
    found_all: Sequence[reconcile.IssueLike] = ()  # every memento issue, as listed


def sync(
    run: RunContext,
    delivery: Delivery,
    kept: Kept,
    decided: frozenset[render.Box],
    tasks: Sequence[TaskOutcome],
    checks: Sequence[setup_checks.Check] = (),
) -> Synced:
    """Bring the issues in line with the plan. ``decided``: the dashboard's boxes this run
    applied or refused, which it may untick. After a failure, what was done before it is
    reported (the last value ``_progress`` gave)."""
    synced = Synced()
    try:
        for synced in _progress(run, delivery, kept, decided, tasks, checks):  # noqa: B007
            pass
    except SyncError as error:
        run.say(job_text.annotation("warning", f"issue sync incomplete: {error}"))
        line = f"Issue sync incomplete ({error}); the next run finishes it."
        return synced._replace(lines=(*synced.lines, line))
    return synced


def _progress(
    run: RunContext,
    delivery: Delivery,
    kept: Kept,
    decided: frozenset[render.Box],
    tasks: Sequence[TaskOutcome],
    checks: Sequence[setup_checks.Check],
) -> Iterator[Synced]:
    """The sync, one request at a time: each value says all that is done so far."""
    plan = read_plan(run.layout)
    synced = Synced()
    if plan is not None:
        records = read_records(run.layout)
        issues = _task_issues(run, plan, records, kept)
        yield (synced := Synced(blocked_links=issues.links))
        operations, said = _dashboard_edit(run, plan, records, issues, decided, checks)
        yield (synced := synced._replace(lines=said))
        created = _carry_out(run, operations)
        url = issues.found.dashboard.url if issues.found.dashboard else created.get("")
        yield (synced := synced._replace(dashboard_url=url))
        # After the dashboard: the pull request links to it.
        listed = run.listing().pulls
        delivered = delivery.deliver(plan, listed, issues.links, url, kept.base_ref)
        if delivered.refused and setup_issues.is_open(setup_issues.PULLS_KIND, issues.found_all):
            delivered = delivered._replace(lines=())  # said once: its issue is open already
        yield (synced := synced._replace(lines=synced.lines + delivered.lines))
        refusal = setup_issues.pulls_text(delivered.refused) if delivered.refused else None
        resolved = delivered.opened or run.settings.delivery.pull_request == "off"
        kind = setup_issues.PULLS_KIND
        _carry_out(run, setup_issues.operations(kind, refusal, issues.found_all, resolved=resolved))
        if delivered.review is not None:
            asked = delivery.ask_review(*delivered.review)
            yield (synced := synced._replace(lines=(*synced.lines, asked)))
    _carry_out(run, artifact.blocked_replies(tasks, synced.blocked_links, run.logs))
    yield synced


def _task_issues(
    run: RunContext, plan: Plan, records: Sequence[status_log.Record], kept: Kept
) -> _Issues:
    """The issues of blocked tasks, of the circuit breaker and of a base conflict, and the
    link to each blocked task's issue (created now or found)."""
    issues = run.listing().issues
    found = reconcile.find_issues(issues)
    plan_path = run.settings.plan_path
    operations = reconcile.task_operations(plan, records, found, plan_path=plan_path)
    operations += reconcile.breaker_operations(plan, records, found)
    operations += reconcile.duplicate_operations(found)
    operations += pulls.conflict_operations(kept.conflict, issues)
    held = setup_issues.workflows_text(kept.held) if kept.held else None
    kind = setup_issues.WORKFLOWS_KIND
    operations += setup_issues.operations(kind, held, issues, resolved=True)
    created = _carry_out(run, operations)
    links = {task: issue.url for task, issue in found.tasks.items()}
    links.update({task: url for task, url in created.items() if task})
    return _Issues(found, links, issues)


def _dashboard_edit(
    run: RunContext,
    plan: Plan,
    records: Sequence[status_log.Record],
    issues: _Issues,
    decided: frozenset[render.Box],
    checks: Sequence[setup_checks.Check],
) -> tuple[Sequence[reconcile.Operation], tuple[str, ...]]:
    """What brings the dashboard up to date, and what the report says about it. The
    set-up checklist: the first run's, or what this run knows over the dashboard's."""
    listing = run.listing()
    current = pulls.open_pull(listing.pulls)
    known = checks or first_run.cheap_checks(run.settings, run.env, *listing)
    shown = issues.found.dashboard.body if issues.found.dashboard else None
    view = render.DashboardView(
        plan=plan,
        records=records,
        blocked_issues=issues.links,
        server_url=run.settings.server_url,
        repository=run.settings.repository,
        branch=run.settings.branch,
        updated=render.last_change(records),
        pull=pulls.shown(current) if current is not None else None,
        setup=setup_checks.carried(shown, setup_checks.lines(known)),
    )
    return _keep_new_ticks(run, reconcile.dashboard_operations(view, issues.found), decided)


def _keep_new_ticks(
    run: RunContext, operations: Sequence[reconcile.Operation], decided: frozenset[render.Box]
) -> tuple[Sequence[reconcile.Operation], tuple[str, ...]]:
    """The dashboard's edit, unless it would untick a box this run has not decided: one
    ticked since the run read the dashboard (it may have ticked for many minutes), or
    one whose ticker GitHub could not name. That box's own run, or the next, decides
    it; rewriting it unticked now would drop it unapplied."""
    edits = [op for op in operations if isinstance(op, reconcile.Edit) and op.body]
    if not edits:
        return operations, ()
    now = run.github.issue(edits[0].number).body
    undecided = [box for box in render.ticked_boxes(now) if box not in decided]
    if not undecided:
        return operations, ()
    named = ", ".join(boxes.describe(box) for box in undecided)
    line = f"The dashboard was left as it is: {named} ticked and not decided by this run."
    return [op for op in operations if op not in edits], (line,)


def _carry_out(run: RunContext, operations: Sequence[reconcile.Operation]) -> dict[str, str]:
    """Do the operations in order; returns the URLs of the issues it created, by the
    task they are about ("" for the dashboard and the breaker's issue)."""
    created: dict[str, str] = {}
    for operation in operations:
        if isinstance(operation, reconcile.Create):
            text = operation.text
            issue = run.github.create_issue(text.title, text.body, text.labels)
            marker = render.read_marker(issue.body)
            if marker is not None:
                created[marker[1] or ""] = issue.url
        elif isinstance(operation, reconcile.Edit):
            run.github.edit_issue(
                operation.number,
                body=operation.body,
                state=operation.state,
                state_reason=operation.state_reason,
            )
        else:
            run.github.comment(operation.number, operation.body)
    return created
