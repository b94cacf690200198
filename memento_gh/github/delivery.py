"""A run's delivery: keep the memento branch in step with its base before the tick, and
bring the one pull request up to date after the push (``pulls.py`` decides, this does).

Requests: none when the base has not moved and the pull request's body would not change
(the issue listing the run makes anyway holds the pull request). The base moving costs one
read of memento's last merged pull request, for the exact commit GitHub merged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import basesync, files, gitrun, remote
from memento_gh.controls.model import STATUS_HEADER, Control
from memento_gh.errors import UserError
from memento_gh.formats import pull_record, status_log
from memento_gh.github import ci, pulls
from memento_gh.github.failures import SyncError
from memento_gh.layout import Layout
from memento_gh.plan.model import DONE, Plan
from memento_gh.plan.picking import review_gate
from memento_gh.plan.scanner import parse
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.answers import PullRequest
    from memento_gh.github.settings import Settings
    from memento_gh.github.sync import GitHub


class Kept(NamedTuple):
    """The branch kept in step with its base, before anything else of the run."""

    lines: tuple[str, ...] = ()
    #: The base conflicts with the branch: no tick until a person resolves it.
    conflict: pulls.Conflict | None = None
    base_ref: str = ""  # the base's remote-tracking branch, as fetched
    #: The phase whose review gate the merged pull request held: its merge approves it.
    merged_gate: str | None = None


class CiHold(NamedTuple):
    """What ci-verify read before the tick."""

    lines: tuple[str, ...] = ()
    held: bool = False  # the tick waits for the checks
    #: What the checks of the last completed task's commit said: success, pending or
    #: failure (None: not read).
    checks: str | None = None
    #: What the run applies: a note with the failed checks' output, and the task's reopen.
    controls: tuple[Control, ...] = ()


class Delivered(NamedTuple):
    """What became of the pull request after the push."""

    lines: tuple[str, ...] = ()
    #: The pull request to mark ready for review, and the phase whose review gate is done.
    review: tuple[int, str] | None = None


class _Followed(NamedTuple):
    lines: tuple[str, ...]
    conflict: pulls.Conflict | None
    gate: str | None


class Delivery:
    """The branch, its base and its pull request, for one run: what it needs is fixed when
    it is made, and each step returns what it did."""

    def __init__(
        self, root: Path, github: GitHub, endpoint: remote.Endpoint, settings: Settings
    ) -> None:
        self.root = root
        self.github = github
        self.endpoint = endpoint
        self.branch = settings.branch
        self.base = settings.base or remote.default_branch(root, self.endpoint)
        self.options = options = settings.delivery
        self.mode = options.pull_request
        self.dry_run = settings.dry_run
        self.plan_path = settings.plan_path
        self.reviewers = options.reviewers
        #: Where the push goes, with push-token when given (so it starts workflows).
        self.pusher = self.endpoint
        if options.push_token:
            self.pusher = self.endpoint._replace(token=options.push_token)

    def keep_in_step(self, listed: Callable[[], Sequence[PullRequest]]) -> Kept:
        """Before anything else: follow a merged pull request (its merge is the review of a
        gate it held, which the run then approves), then merge a base that moved.
        ``listed``: the memento pull requests (from the issue listing, asked only when the
        base moved)."""
        base_ref = remote.fetch_branch(self.root, self.endpoint, self.base)
        if not basesync.lacks(self.root, base_ref):
            return Kept(base_ref=base_ref)
        merged = pulls.last_merged(listed())
        followed = _Followed((), None, None)
        if merged is not None:
            followed = self._follow_merge(self.github.pull(merged.number), base_ref)
            if followed.conflict is not None or not basesync.lacks(self.root, base_ref):
                return Kept(followed.lines, followed.conflict, base_ref, followed.gate)
        message = f"memento: merge {self.base} into {self.branch}"
        files = basesync.merge_in(self.root, base_ref, message)
        if files:
            line = (
                f"Waiting ({pulls.BASE_CONFLICT}): {self.base} conflicts with {self.branch} in "
                f"{', '.join(files)}; no tick until it is resolved (see the issue)."
            )
            conflict = pulls.Conflict(self.branch, self.base, files)
            return Kept((*followed.lines, line), conflict, base_ref, followed.gate)
        line = f"Merged {self.base} into {self.branch}: it had moved."
        return Kept((*followed.lines, line), None, base_ref, followed.gate)

    def _follow_merge(self, merged: PullRequest, base_ref: str) -> _Followed:
        head, merge = merged.head_sha, merged.merge_commit_sha
        if not head or not merge or basesync.holds(self.root, merge):
            return _Followed((), None, None)  # followed already (the merge is in the history)
        if not basesync.holds(self.root, head):
            return _Followed((), None, None)  # not a head of this branch (rewritten by hand)
        tracking = f"refs/remotes/{self.endpoint.name}/{self.branch}"
        expected = gitrun.output(self.root, "rev-parse", "-q", "--verify", tracking)
        kept = len(basesync.commits_since(self.root, head))
        gate = self._gate_at(head)
        files = basesync.replay_onto(self.root, base_ref, head)
        if files:
            line = (
                f"Waiting ({pulls.BASE_CONFLICT}): the commits made after pull request "
                f"#{merged.number} was merged conflict with {self.base} in {', '.join(files)}."
            )
            return _Followed((line,), pulls.Conflict(self.branch, self.base, files), gate)
        if expected and not self.dry_run:
            refused = remote.replace_branch(self.root, self.pusher, self.branch, expected)
            if refused:
                raise UserError(
                    f"the {self.branch} branch could not be restarted from {self.base} after "
                    f"pull request #{merged.number} was merged ({refused}); the next run tries "
                    "again"
                )
        line = (
            f"Pull request #{merged.number} was merged (at {head[:7]}): {self.branch} "
            f"restarts from {self.base}, with the {kept} commit(s) made since replayed."
        )
        return _Followed((line,), None, gate)

    def hold_for_ci(self, plan: Plan | None) -> CiHold:
        """ci-verify, before the tick: held while the checks of the last completed task's
        commit are pending; a failed one reopens that task (the run applies the controls
        returned) with a note the retry reads, and the tick goes on."""
        if plan is None or plan.settings.tick_mode != "auto":
            return CiHold()  # no task starts anyway: the checks cost two requests for nothing
        found = ci.last_completed(basesync.recent_commits(self.root))
        if found is None:
            return CiHold()
        task_id, sha = found
        try:
            verdict = ci.verdict(self.github.checks(sha))
        except SyncError as error:
            line = f"Waiting: the checks of {sha[:7]} could not be read ({error})."
            return CiHold((line,), held=True)
        checks = {ci.WAIT: "pending", ci.REOPEN: "failure"}.get(verdict.action, "success")
        if verdict.action == ci.WAIT:
            return CiHold((ci.waiting_line(task_id, sha, verdict.checks),), True, checks)
        task = plan.task(task_id)
        if verdict.action == ci.REOPEN and task is not None and task.marker == DONE:
            note = Control("note", task_id, ci.note(task_id, sha, verdict.checks))
            return CiHold(checks=checks, controls=(note, Control("reopen", task_id)))
        return CiHold(checks=checks)

    def record(
        self,
        layout: Layout,
        listed: Sequence[PullRequest],
        now: datetime,
        checks: str | None,
    ) -> None:
        """Write memento's pull request, as this run sees it (and what ci-verify read of
        its checks), into the status log when it differs from the last record (committed;
        the run's push carries it)."""
        current = pulls.open_pull(listed) or pulls.last_merged(listed)
        if current is None or self.dry_run:
            return
        number, url, state = pulls.shown(current)
        seen = pull_record.PullRecord(number, url, state, checks)
        text = files.read_text(layout.status) if layout.status.exists() else STATUS_HEADER
        if pull_record.latest(status_log.parse_status(text)) == seen:
            return
        event = status_log.render_event(now, pull_record.event_text(seen))
        files.write_atomic(layout.status, status_log.append(text, event))
        workspace = Workspace(self.root)
        path = layout.status.resolve().relative_to(workspace.root.resolve()).as_posix()
        workspace.commit(f"memento: record pull request #{number} ({state})", [path])

    def _open(self, operation: pulls.CreatePull) -> tuple[int, str]:
        """Open the pull request, or take over the one someone opened by hand from the
        branch to the base (GitHub refuses a second one for the pair): its number, and
        what the report says."""
        found = self.github.open_pull_between(self.branch, self.base)
        if found is not None:
            adopted = pulls.adoption(found, operation)
            self.github.adopt_pull(adopted.number, body=adopted.body)
            return adopted.number, (
                f"Took over pull request #{adopted.number}, opened by hand from {self.branch} "
                f"to {self.base}: memento's summary heads it, the text there is kept below: "
                f"{adopted.url}"
            )
        created = self.github.create_pull(
            operation.title,
            operation.body,
            head=self.branch,
            base=self.base,
            draft=operation.draft,
        )
        return created.number, f"Opened pull request #{created.number}: {created.url}"

    def _gate_at(self, sha: str) -> str | None:
        """The phase whose review gate held the plan as commit ``sha`` has it: merging that
        commit is the review."""
        text = gitrun.output(self.root, "show", f"{sha}:{self.plan_path}")
        gate = review_gate(parse(text)) if text else None
        return gate.name if gate else None

    def deliver(
        self,
        plan: Plan,
        listed: Sequence[PullRequest],
        blocked_issues: Mapping[str, str],
        dashboard_url: str | None,
        base_ref: str,
    ) -> Delivered:
        """After the push: open the pull request, or bring its body up to date, when the
        branch has commits the base lacks (``base_ref``, as ``keep_in_step`` fetched it)."""
        if self.mode == "off" or not base_ref:
            return Delivered()
        commits = basesync.commits_since(self.root, base_ref)
        if not commits:
            return Delivered()
        gate = review_gate(plan)
        view = pulls.PullView(
            plan,
            self.branch,
            self.base,
            commits,
            blocked_issues,
            dashboard_url,
            spend=pulls.spend_of(plan),
            review=gate.name if gate else None,
        )
        operation = pulls.pull_operation(listed, view, self.mode)
        asks = pulls.asks_review(listed, view)
        number: int | None = None
        lines: tuple[str, ...] = ()
        if isinstance(operation, pulls.CreatePull):
            number, opened = self._open(operation)
            lines = (opened,)
        elif isinstance(operation, pulls.EditPull):
            self.github.edit_pull(operation.number, body=operation.body)
            number = operation.number
        if asks and number is not None and gate is not None:
            return Delivered(lines, (number, gate.name))
        return Delivered(lines)

    def ask_review(self, number: int, phase: str) -> str:
        """Mark the pull request ready for review (``phase``, a review gate, is done) and
        ask the reviewers; what the report says."""
        self.github.ready_for_review(number, self.reviewers)
        return (
            f"{phase} is done: pull request #{number} is ready for review"
            + (f", requested from {', '.join(self.reviewers)}" if self.reviewers else "")
            + "."
        )
