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
from memento_gh.github import ci, failures, guidance, pulls
from memento_gh.github.failures import SyncError
from memento_gh.github.setup_issues import PullRefusal, WorkflowHold
from memento_gh.layout import Layout
from memento_gh.plan.model import DONE, Plan
from memento_gh.plan.picking import review_gate
from memento_gh.plan.scanner import parse
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.answers import PullRequest
    from memento_gh.github.settings import Settings
    from memento_gh.github.sync import GitHub


#: How far back from the pushed tip ci-verify looks for the commits its push delivered.
PUSH_DEPTH = 30
#: Where GitHub keeps workflows: a change there needs the ``workflows`` permission to push.
WORKFLOWS = ".github/workflows/"


class Kept(NamedTuple):
    """The branch kept in step with its base, before anything else of the run."""

    lines: tuple[str, ...] = ()
    #: The base conflicts with the branch: no tick until a person resolves it.
    conflict: pulls.Conflict | None = None
    base_ref: str = ""  # the base's remote-tracking branch, as fetched
    #: The phase whose review gate the merged pull request held: its merge approves it.
    merged_gate: str | None = None
    #: The base's changes held out: GitHub refused to let them be pushed (``can_push``).
    held: WorkflowHold | None = None


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
    #: GitHub refused to open it (the repository's Actions setting): said in one issue.
    refused: PullRefusal | None = None
    #: A pull request is open after this step (the refusal, if any, is resolved).
    opened: bool = False


class _Opened(NamedTuple):
    number: int | None
    line: str
    refused: PullRefusal | None = None


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
        self.settings = settings
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
                return self._not_restarted(merged.number, expected, refused, gate)
        line = (
            f"Pull request #{merged.number} was merged (at {head[:7]}): {self.branch} "
            f"restarts from {self.base}, with the {kept} commit(s) made since replayed."
        )
        return _Followed((line,), None, gate)

    def _not_restarted(
        self, number: int, expected: str, refused: str, gate: str | None
    ) -> _Followed:
        """GitHub refused the push that restarts the branch after a merged pull request: a
        protected branch takes no force push, and the workflow's token no change of
        workflow files. The base is merged in instead (``keep_in_step`` goes on to it), a
        plain push that needs no force."""
        protected = any(word in refused for word in ("GH006", "GH013", "force-push"))
        if not protected and "`workflows` permission" not in refused:
            raise UserError(
                f"the {self.branch} branch could not be restarted from {self.base} after "
                f"pull request #{number} was merged ({refused}); the next run tries again"
            )
        gitrun.check(self.root, "reset", "-q", "--hard", expected)
        fix = f" To restart {self.branch} cleanly after each merge, {guidance.FORCE_PUSH_ADVICE}."
        line = (
            f"Pull request #{number} was merged, but GitHub refused to restart {self.branch} "
            f"from {self.base} (“{refused}”): {self.base} is merged into {self.branch} "
            f"instead, so the next pull request may list commits #{number} merged already."
            + (fix if protected else "")
        )
        return _Followed((line,), None, gate)

    def push_workflow_changes(self) -> WorkflowHold | None:
        """Before any agent runs: push now what ``keep_in_step`` merged when it changes
        files under ``.github/workflows/``, which GitHub refuses to a token without the
        ``workflows`` permission (the workflow's own never has it). Refused, the branch goes
        back to the remote's tip, so the tick's work can still be pushed, and the hold is
        returned for one issue to say it; any other refusal is the run's error."""
        tracking = f"refs/remotes/{self.endpoint.name}/{self.branch}"
        tip = gitrun.output(self.root, "rev-parse", "-q", "--verify", tracking)
        if not tip or self.dry_run:
            return None  # a new branch starts from commits the repository has already
        changed = gitrun.output(self.root, "diff", "--name-only", tip, "HEAD", "--", WORKFLOWS)
        files = tuple(changed.splitlines())
        if not files:
            return None
        try:
            remote.push(self.root, branch=self.branch, endpoint=self.pusher)
        except remote.PushRefused as refused:
            if "`workflows` permission" not in refused.said:
                raise
            gitrun.check(self.root, "reset", "-q", "--hard", tip)
            return WorkflowHold(self.base, self.branch, files, refused.said)
        return None

    def hold_for_ci(self, plan: Plan | None) -> CiHold:
        """ci-verify, before the tick: the checks of the branch's pushed tip stand for
        every task its push delivered (``ci.py``). Held while one is pending; a failed one
        reopens those tasks (the run applies the controls returned) with a note the retry
        reads, and the tick goes on. A push that delivered no task holds nothing."""
        if plan is None or plan.settings.tick_mode != "auto":
            return CiHold()  # no task starts anyway: the checks cost requests for nothing
        tip = gitrun.output(self.root, "rev-parse", "-q", "--verify", self._tracking(self.branch))
        if not tip:
            return CiHold()
        try:
            verdict = ci.verdict(self.github.checks(tip))
            delivered = self._delivered(tip) if verdict.action != ci.GO_ON else ()
        except SyncError as error:
            line = f"Waiting: the checks of {tip[:7]} could not be read ({error})."
            return CiHold((line,), held=True)
        checks = {ci.WAIT: "pending", ci.REOPEN: "failure"}.get(verdict.action, "success")
        if not delivered:
            return CiHold(checks=checks)
        if verdict.action == ci.WAIT:
            return CiHold((ci.waiting_line(delivered, tip, verdict.checks),), True, checks)
        note = ci.note(delivered, tip, verdict.checks)
        controls: list[Control] = []
        for task_id in delivered:
            task = plan.task(task_id)
            if task is not None and task.marker == DONE:
                controls += [Control("note", task_id, note), Control("reopen", task_id)]
        return CiHold(checks=checks, controls=tuple(controls))

    def _delivered(self, tip: str) -> tuple[str, ...]:
        """The tasks the push that made ``tip`` delivered: those completed from ``tip``
        back to the first commit before it with checks of its own (the previous push's
        tip, where CI ran), or to the base (two requests a commit; read only when the
        tip's checks are pending or failed)."""
        base = self._tracking(self.base)
        shown = gitrun.output(
            self.root,
            "log",
            "--first-parent",
            "-n",
            str(PUSH_DEPTH),
            "--format=%H%x00%s",
            tip,
            *(
                [f"^{base}"]
                if gitrun.output(self.root, "rev-parse", "-q", "--verify", base)
                else []
            ),
        )
        commits: list[tuple[str, str]] = []
        for sha, _, subject in (line.partition("\0") for line in shown.splitlines()):
            if commits and self.github.checks(sha):
                break
            commits.append((sha, subject))
        return ci.completed_tasks(commits)

    def _tracking(self, branch: str) -> str:
        return f"refs/remotes/{self.endpoint.name}/{branch}"

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

    def _open(self, operation: pulls.CreatePull) -> _Opened:
        """Open the pull request, or take over the one someone opened by hand from the
        branch to the base (GitHub refuses a second one for the pair): its number, and
        what the report says. GitHub's refusal of the workflow's token (a repository
        setting) is returned, for one issue to say it; a draft it refuses (a private
        repository on GitHub Free or Pro) is opened ready for review instead."""
        found = self.github.open_pull_between(self.branch, self.base)
        if found is not None:
            adopted = pulls.adoption(found, operation)
            self.github.adopt_pull(adopted.number, body=adopted.body)
            return _Opened(
                adopted.number,
                f"Took over pull request #{adopted.number}, opened by hand from {self.branch} "
                f"to {self.base}: memento's summary heads it, the text there is kept below: "
                f"{adopted.url}",
            )
        try:
            created = self._create(operation, draft=operation.draft)
        except SyncError as error:
            if error.status == 403 and error.said.startswith(failures.PULLS_NOT_PERMITTED):
                return self._refused(error.said)
            if not (operation.draft and error.said.startswith(failures.NO_DRAFTS)):
                raise
            created = self._create(operation, draft=False)
            return _Opened(
                created.number,
                f"Opened pull request #{created.number} ready for review, not as a draft: "
                f"GitHub answered “{error.said}.” ({guidance.DRAFTS_ADVICE}; "
                f"`pull-request: ready` opens it so at once): {created.url}",
            )
        return _Opened(created.number, f"Opened pull request #{created.number}: {created.url}")

    def _create(self, operation: pulls.CreatePull, *, draft: bool) -> PullRequest:
        return self.github.create_pull(
            operation.title, operation.body, head=self.branch, base=self.base, draft=draft
        )

    def _refused(self, said: str) -> _Opened:
        url = guidance.compare_url(
            self.settings.server_url, self.settings.repository, self.base, self.branch
        )
        line = (
            f"Pull request not opened: GitHub answered “{said}.” To let memento open it, "
            f"{guidance.PULLS_SETTING_ADVICE} (the memento issue about it says so too)."
        )
        return _Opened(None, line, PullRefusal(self.base, self.branch, f"{said}.", url))

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
        current = pulls.open_pull(listed)
        number = current.number if current is not None else None
        lines: tuple[str, ...] = ()
        refused = None
        if isinstance(operation, pulls.CreatePull):
            number, line, refused = self._open(operation)
            lines = (line,)
        elif isinstance(operation, pulls.EditPull):
            self.github.edit_pull(operation.number, body=operation.body)
        review = (number, gate.name) if asks and number is not None and gate is not None else None
        return Delivered(lines, review, refused, opened=number is not None)

    def ask_review(self, number: int, phase: str) -> str:
        """Mark the pull request ready for review (``phase``, a review gate, is done) and
        ask the reviewers; what the report says."""
        self.github.ready_for_review(number, self.reviewers)
        return (
            f"{phase} is done: pull request #{number} is ready for review"
            + (f", requested from {', '.join(self.reviewers)}" if self.reviewers else "")
            + "."
        )
