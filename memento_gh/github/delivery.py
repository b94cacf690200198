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
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memento_gh import basesync, files, gitrun, remote
from memento_gh.controls.model import STATUS_HEADER, Control
from memento_gh.errors import UserError
from memento_gh.formats import pull_record, status_log
from memento_gh.github import ci, pulls
from memento_gh.layout import Layout
from memento_gh.plan.model import DONE, Plan
from memento_gh.plan.picking import review_gate
from memento_gh.plan.scanner import parse
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.sync import GitHub, PullRequest


class RunSettings(Protocol):
    """The run's settings delivery reads (``action.Settings`` has them)."""

    @property
    def token(self) -> str: ...
    @property
    def branch(self) -> str: ...
    @property
    def base(self) -> str | None: ...
    @property
    def plan_dir(self) -> str: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def delivery(self) -> DeliveryOptions: ...


class DeliveryOptions(NamedTuple):
    """The action's delivery inputs, checked."""

    pull_request: str = "draft"  # draft | ready | off
    reviewers: tuple[str, ...] = ()  # asked to review when a review phase is done
    push_token: str | None = None  # pushes with it start the repository's workflows
    ci_verify: bool = False  # the checks of a task's commit are a second verify


def read_delivery_options(env: Mapping[str, str]) -> DeliveryOptions:
    mode = env.get("MEMENTO_PULL_REQUEST", "").strip().lower() or "draft"
    if mode not in pulls.MODES:
        raise UserError(
            f"pull-request must be draft, ready or off, not {mode!r}: draft opens the pull "
            "request as a draft, ready for review, off opens none"
        )
    reviewers = env.get("MEMENTO_REVIEWERS", "").split(",")
    push_token = env.get("MEMENTO_GITHUB_PUSH_TOKEN", "").strip() or None
    ci_word = env.get("MEMENTO_CI_VERIFY", "").strip().lower()
    if ci_word not in ("", "true", "false"):
        raise UserError(f"ci-verify must be true or false, not {ci_word!r}")
    if ci_word == "true" and push_token is None:
        raise UserError(
            "ci-verify needs push-token: pushes made with the workflow's GITHUB_TOKEN start "
            "no workflow, so no check would ever run on memento's commits. Pass a "
            "fine-grained personal access token or a GitHub App token (contents: write) as "
            "push-token, or set ci-verify to false"
        )
    return DeliveryOptions(
        mode,
        tuple(name.strip().lstrip("@") for name in reviewers if name.strip()),
        push_token,
        ci_word == "true",
    )


class Delivery:
    """The branch, its base and its pull request, for one run."""

    def __init__(
        self,
        root: Path,
        github: GitHub,
        endpoint: remote.Endpoint | None,
        settings: RunSettings,
        lines: list[str],
    ) -> None:
        self.root = root
        self.github = github
        self.endpoint = endpoint or remote.read_endpoint(root, token=settings.token)
        self.branch = settings.branch
        self.base = settings.base or remote.default_branch(root, self.endpoint)
        self.options = options = settings.delivery
        self.mode = options.pull_request
        self.dry_run = settings.dry_run
        self.layout = Layout(root, settings.plan_dir)
        self.plan_path = f"{settings.plan_dir}/MASTER_PLAN.md"
        self.reviewers = options.reviewers
        #: Where the push goes, with push-token when given (so it starts workflows).
        self.pusher = self.endpoint
        if options.push_token:
            self.pusher = self.endpoint._replace(token=options.push_token)
        #: The base conflicts with the branch: no tick until a person resolves it.
        self.conflict: pulls.Conflict | None = None
        self.base_ref = ""  # the base's remote-tracking branch, once fetched
        self.lines = lines  # the run's report: what delivery did is said there
        #: The phase whose review gate the merged pull request held (it is approved).
        self.merged_gate: str | None = None
        #: What ci-verify read on the last completed task's commit: success, pending or
        #: failure (None: not read).
        self.checks: str | None = None

    def keep_in_step(
        self, listed: Callable[[], Sequence[PullRequest]], apply: Callable[[Control], object]
    ) -> None:
        """Before anything else: follow a merged pull request (its merge is the review of a
        gate it held: ``apply`` approves it), then merge a base that moved; a conflict is
        kept in ``conflict``. ``listed``: the memento pull requests (from the issue
        listing, asked only when the base moved)."""
        self.conflict = self._keep_in_step(listed)
        if self.merged_gate is not None:
            apply(Control("approve"))

    def before_tick(
        self,
        ticking: bool,
        listed: Callable[[], Sequence[PullRequest]],
        read_plan: Callable[[], Plan | None],
        apply: Callable[[Control], object],
        now: datetime,
    ) -> bool:
        """True when the tick must not run: the base conflicts, or ci-verify waits for
        checks. Records the pull request as the run sees it either way."""
        held = self.conflict is not None
        if ticking and not held and self.options.ci_verify:
            held = self.hold_for_ci(read_plan(), apply)
        if not self.dry_run:
            self.record(self.layout, listed(), now)
        return held

    def _keep_in_step(self, listed: Callable[[], Sequence[PullRequest]]) -> pulls.Conflict | None:
        self.base_ref = remote.fetch_branch(self.root, self.endpoint, self.base)
        if not basesync.lacks(self.root, self.base_ref):
            return None
        merged = pulls.last_merged(listed())
        if merged is not None:
            conflict = self._follow_merge(self.github.pull(merged.number))
            if conflict is not None or not basesync.lacks(self.root, self.base_ref):
                return conflict
        message = f"memento: merge {self.base} into {self.branch}"
        files = basesync.merge_in(self.root, self.base_ref, message)
        if files:
            self.lines.append(
                f"Waiting ({pulls.BASE_CONFLICT}): {self.base} conflicts with {self.branch} in "
                f"{', '.join(files)}; no tick until it is resolved (see the issue)."
            )
            return pulls.Conflict(self.branch, self.base, files)
        self.lines.append(f"Merged {self.base} into {self.branch}: it had moved.")
        return None

    def _follow_merge(self, merged: PullRequest) -> pulls.Conflict | None:
        head, merge = merged.head_sha, merged.merge_commit_sha
        if not head or not merge or basesync.holds(self.root, merge):
            return None  # followed already (the merge is in the branch's history)
        if not basesync.holds(self.root, head):
            return None  # not a head of this branch (rewritten by hand since)
        tracking = f"refs/remotes/{self.endpoint.name}/{self.branch}"
        expected = gitrun.output(self.root, "rev-parse", "-q", "--verify", tracking)
        kept = len(basesync.commits_since(self.root, head))
        self.merged_gate = self._gate_at(head)
        files = basesync.replay_onto(self.root, self.base_ref, head)
        if files:
            self.lines.append(
                f"Waiting ({pulls.BASE_CONFLICT}): the commits made after pull request "
                f"#{merged.number} was merged conflict with {self.base} in {', '.join(files)}."
            )
            return pulls.Conflict(self.branch, self.base, files)
        if expected and not self.dry_run:
            refused = remote.replace_branch(self.root, self.pusher, self.branch, expected)
            if refused:
                raise UserError(
                    f"the {self.branch} branch could not be restarted from {self.base} after "
                    f"pull request #{merged.number} was merged ({refused}); the next run tries "
                    "again"
                )
        self.lines.append(
            f"Pull request #{merged.number} was merged (at {head[:7]}): {self.branch} "
            f"restarts from {self.base}, with the {kept} commit(s) made since replayed."
        )
        return None

    def hold_for_ci(self, plan: Plan | None, apply: Callable[[Control], object]) -> bool:
        """ci-verify, before the tick: True while the checks of the last completed task's
        commit are pending; a failed one reopens that task (``apply``: the run's way to
        apply a control) with a note the retry reads, and the tick goes on."""
        from memento_gh.github.sync import SyncError

        if plan is None or plan.settings.tick_mode != "auto":
            return False  # no task starts anyway: the checks cost two requests for nothing
        found = ci.last_completed(basesync.recent_commits(self.root))
        if found is None:
            return False
        task_id, sha = found
        try:
            verdict = ci.verdict(self.github.checks(sha))
        except SyncError as error:
            self.lines.append(f"Waiting: the checks of {sha[:7]} could not be read ({error}).")
            return True
        self.checks = {ci.WAIT: "pending", ci.REOPEN: "failure"}.get(verdict.action, "success")
        if verdict.action == ci.WAIT:
            self.lines.append(ci.waiting_line(task_id, sha, verdict.checks))
            return True
        task = plan.task(task_id) if plan is not None else None
        if verdict.action == ci.REOPEN and task is not None and task.marker == DONE:
            apply(Control("note", task_id, ci.note(task_id, sha, verdict.checks)))
            apply(Control("reopen", task_id))
        return False

    def record(self, layout: Layout, listed: Sequence[PullRequest], now: datetime) -> None:
        """Write memento's pull request, as this run sees it, into the status log when it
        differs from the last record (committed; the run's push carries it)."""
        current = pulls.open_pull(listed) or pulls.last_merged(listed)
        if current is None or self.dry_run:
            return
        number, url, state = pulls.shown(current)
        seen = pull_record.PullRecord(number, url, state, self.checks)
        text = files.read_text(layout.status) if layout.status.exists() else STATUS_HEADER
        if pull_record.latest(status_log.parse_status(text)) == seen:
            return
        event = status_log.render_event(now, pull_record.event_text(seen))
        files.write_atomic(layout.status, status_log.append(text, event))
        workspace = Workspace(self.root)
        path = layout.status.resolve().relative_to(workspace.root.resolve()).as_posix()
        workspace.commit(f"memento: record pull request #{number} ({state})", [path])

    def _open(self, operation: pulls.CreatePull) -> int:
        """Open the pull request, or take over the one someone opened by hand from the
        branch to the base (GitHub refuses a second one for the pair); its number."""
        found = self.github.open_pull_between(self.branch, self.base)
        if found is not None:
            adopted = pulls.adoption(found, operation)
            self.github.adopt_pull(adopted.number, body=adopted.body)
            self.lines.append(
                f"Took over pull request #{adopted.number}, opened by hand from {self.branch} "
                f"to {self.base}: memento's summary heads it, the text there is kept below: "
                f"{adopted.url}"
            )
            return adopted.number
        created = self.github.create_pull(
            operation.title,
            operation.body,
            head=self.branch,
            base=self.base,
            draft=operation.draft,
        )
        self.lines.append(f"Opened pull request #{created.number}: {created.url}")
        return created.number

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
    ) -> None:
        """After the push: open the pull request, or bring its body up to date, when the
        branch has commits the base lacks."""
        if self.mode == "off" or not self.base_ref:
            return
        commits = basesync.commits_since(self.root, self.base_ref)
        if not commits:
            return
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
        number = None
        if isinstance(operation, pulls.CreatePull):
            number = self._open(operation)
        elif isinstance(operation, pulls.EditPull):
            self.github.edit_pull(operation.number, body=operation.body)
            number = operation.number
        if asks and number is not None and gate is not None:
            self.github.ready_for_review(number, self.reviewers)
            self.lines.append(
                f"{gate.name} is done: pull request #{number} is ready for review"
                + (f", requested from {', '.join(self.reviewers)}" if self.reviewers else "")
                + "."
            )
