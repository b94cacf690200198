"""``memento github``: one workflow run of the action, from the event to the pushed branch,
the synced issues, the job summary and the step outputs.

A run: read the settings and the event; route it (events.py, pure); pass the trust gate;
check out the ``memento`` branch; decide the boxes ticked in the dashboard, each by who
ticked it (boxes.py); apply the controls; catch up on comments a dropped run never saw (the
workflow's concurrency group keeps one pending run, so a burst of events loses some); tick
when asked; push (the token is handed to git only there); bring the issues and the
dashboard in line with the plan; report. Issue writes come after the push, so a failing API
never loses a tick: the next run converges.

With several workers on the branch (the ``workers`` input above 1, one job of a matrix
each), the controls are pushed as soon as they are applied and the tick pushes each claim
before its agent starts, both through ``remote.SharedBranch``; the final push then finds
nothing left to push.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memento_gh import files, remote
from memento_gh.controls.apply import apply_control, record_refused
from memento_gh.controls.model import SOURCE_TRAILER, Control
from memento_gh.engine.agents.check import (
    ACTION_OPTIONS,
    check_agent,
    check_model,
    choose_agent,
    read_agent_args,
)
from memento_gh.engine.agents.presets import COMMAND, KNOWN_AGENTS
from memento_gh.engine.records import TaskOutcome, TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.formats import status_log
from memento_gh.github import artifact, boxes, events, pulls, reconcile, render
from memento_gh.github.delivery import Delivery, DeliveryOptions, read_delivery_options
from memento_gh.github.reporting import Report
from memento_gh.github.reporting import finish as _finish
from memento_gh.layout import Layout
from memento_gh.output import runner_say
from memento_gh.plan.model import ERROR, Plan
from memento_gh.plan.scanner import parse
from memento_gh.plan.values import check_worker_id
from memento_gh.redact import Redactor
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.sync import Comment, GitHub, Issue, PullRequest

#: How far back a run looks for comments it may have missed: longer than the gap between
#: two scheduled runs, short enough to keep the listing to one page.
CATCH_UP = timedelta(hours=24)
TOKEN_VARIABLE = "MEMENTO_GITHUB_TOKEN"
PUSH_TOKEN_VARIABLE = "MEMENTO_GITHUB_PUSH_TOKEN"
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"", "0", "false", "no", "off"}


class Settings(NamedTuple):
    """What the action's inputs and the runner's environment say, checked."""

    token: str
    repository: str
    api_url: str
    server_url: str
    event_name: str
    event_path: Path | None
    branch: str
    base: str | None
    plan_dir: str
    agent: str | None
    agent_cmd: str | None
    max_tasks: int | None
    inputs: events.Inputs
    dry_run: bool
    workers: int
    worker_id: str
    delivery: DeliveryOptions  # the pull request, reviewers, push-token, ci-verify
    run_url: str | None
    output_path: Path | None
    summary_path: Path | None
    model: str | None = None
    agent_args: tuple[str, ...] = ()


def read_settings(env: Mapping[str, str]) -> Settings:
    token = env.get(TOKEN_VARIABLE) or env.get("GITHUB_TOKEN") or ""
    if not token:
        raise UserError(
            "no GitHub token: pass `github-token` to the action (the default is "
            "${{ github.token }}), or set MEMENTO_GITHUB_TOKEN"
        )
    repository = env.get("GITHUB_REPOSITORY", "")
    if repository.count("/") != 1:
        raise UserError(
            "GITHUB_REPOSITORY is not set to owner/name; `memento github` runs inside a "
            "GitHub Actions workflow (for local ticks use `memento tick`)"
        )
    server = env.get("GITHUB_SERVER_URL") or "https://github.com"
    run_id = env.get("GITHUB_RUN_ID")
    return Settings(
        token=token,
        repository=repository,
        api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
        server_url=server.rstrip("/"),
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        event_path=Path(env["GITHUB_EVENT_PATH"]) if env.get("GITHUB_EVENT_PATH") else None,
        branch=env.get("MEMENTO_BRANCH") or "memento",
        base=env.get("MEMENTO_BASE_BRANCH") or None,
        plan_dir=env.get("MEMENTO_PLAN_DIR") or "docs",
        agent=env.get("MEMENTO_AGENT") or None,
        agent_cmd=env.get("MEMENTO_AGENT_CMD") or None,
        max_tasks=_max_tasks(env.get("MEMENTO_MAX_TASKS", "")),
        inputs=events.Inputs(
            command=env.get("MEMENTO_COMMAND", "").strip(),
            task=env.get("MEMENTO_TASK", "").strip(),
            text=env.get("MEMENTO_TEXT", ""),
            allowed_associations=events.parse_associations(
                env.get("MEMENTO_ALLOWED_ASSOCIATIONS") or "OWNER,MEMBER,COLLABORATOR"
            ),
        ),
        dry_run=_flag(env.get("MEMENTO_DRY_RUN", ""), "dry-run"),
        workers=_workers(env.get("MEMENTO_WORKERS", "")),
        worker_id=_worker_id(env.get("MEMENTO_WORKER_ID", ""), run_id),
        delivery=read_delivery_options(env),
        run_url=f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}" if run_id else None,
        output_path=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
        summary_path=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        model=check_model(env.get("MEMENTO_MODEL"), ACTION_OPTIONS),
        agent_args=read_agent_args(env.get("MEMENTO_AGENT_ARGS"), ACTION_OPTIONS),
    )


def _max_tasks(text: str) -> int | None:
    if not text.strip():
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(f"max-tasks must be a whole number of at least 1, not {text!r}")
    return value


def _workers(text: str) -> int:
    if not text.strip():
        return 1
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(
            f"workers must be a whole number of at least 1 (the size of the workflow's "
            f"matrix), not {text!r}"
        )
    return value


def _worker_id(text: str, run_id: str | None) -> str:
    chosen = text.strip()
    if not chosen:
        return f"actions-{run_id}" if run_id else "actions"
    try:
        return check_worker_id(chosen)
    except ValueError as error:
        raise UserError(f"worker-id: {error}") from None


def _flag(text: str, name: str) -> bool:
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise UserError(f"{name} must be true or false, not {text!r}")


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read the event payload {path}: {error}") from None
    return payload if isinstance(payload, dict) else {}


class Applied(NamedTuple):
    """What a run's controls did: a sentence for each one applied, and whether a trusted
    person ticked the "Run a tick now" box."""

    messages: list[str]
    tick_now: bool = False


class DashboardTicks(NamedTuple):
    """The boxes ticked in the dashboard when the run read it, with who ticked each."""

    url: str
    ticks: tuple[boxes.Tick, ...]


# -- the run --------------------------------------------------------------------------------

#: Makes the branch a run shares with the other workers, from the checkout and the settings.
ShareBranch = Callable[[Path, Settings], remote.SharedBranch]


def share_branch(root: Path, settings: Settings) -> remote.SharedBranch:
    token = settings.delivery.push_token or settings.token
    return remote.SharedBranch(root, branch=settings.branch, token=token)


def run(
    env: Mapping[str, str],
    root: Path,
    *,
    say: Callable[[str], None] = print,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    connect: Callable[[Settings], GitHub] | None = None,
    share: ShareBranch = share_branch,
) -> int:
    say = runner_say(say)  # nothing the agent or the repository wrote starts a command
    settings = read_settings(env)
    redact = Redactor.from_environ(env, [settings.token]).redact  # GitHub masks only its log
    request = events.route(settings.event_name, load_event(settings.event_path), settings.inputs)
    say(f"memento github: {settings.event_name or 'no event'} — {request.reason or request.kind}")
    if request.kind == "ignore":
        return _finish(settings, None, Report("ignored", (request.reason,)), say, redact)
    github = (connect or _connect)(settings)
    github.redact = redact  # every issue, body and comment
    gate = _Gate(github, settings.inputs.allowed_associations)
    trusted = request.actor is None or gate.trusts(request.actor)
    if request.actor is not None and not trusted and not request.rerender_dashboard:
        who = f"@{request.actor.login}"
        report = Report("untrusted", (f"{who} may not steer memento",))
        return _finish(settings, None, report, say, redact)
    if request.kind == events.PLAN and request.issue_number is not None:
        return _draft_plan(settings, env, root, github, request, say, clock)
    if request.kind == "tick" or request.tick_after:
        tick_agent(settings, env, root)  # before anything is checked out, applied or claimed
    # An untrusted edit of the dashboard still runs: the boxes it ticked are refused, and
    # unticked, by this run rather than left for a later one to find.
    current = Run(settings, env, root, github, gate, say, clock)
    current.prepare(share)
    return current.go(request, sender_trusted=trusted)


def _draft_plan(
    settings: Settings,
    env: Mapping[str, str],
    root: Path,
    github: GitHub,
    request: events.Request,
    say: Callable[[str], None],
    clock: Callable[[], datetime],
) -> int:
    """``/memento plan`` on an issue (``github/drafting.py``): not a run on the branch."""
    from memento_gh.github import drafting

    assert request.issue_number is not None
    agent_env = _without_tokens(env)
    context = drafting.Context(
        settings,
        agent_env,
        root,
        github,
        say,
        clock,
        lambda: tick_agent(settings, agent_env, root),
    )
    report = drafting.draft_plan(context, request.issue_number, request.comment_id)
    return _finish(settings, None, report, say, github.redact)


def _without_tokens(env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment starts from this one; agents.agent_env drops the tokens,
    and the action's own are dropped here by name as well."""
    dropped = (TOKEN_VARIABLE, PUSH_TOKEN_VARIABLE)
    return {name: value for name, value in env.items() if name not in dropped}


def tick_agent(settings: Settings, env: Mapping[str, str], root: Path) -> str:
    """The agent the action's inputs choose, checked: it must be able to run."""
    presets = ", ".join(name for name in KNOWN_AGENTS if name != COMMAND)
    agent = choose_agent(
        settings.agent,
        settings.agent_cmd,
        f"set the action's `agent` input ({presets}) or `agent-command`",
    )
    check_agent(agent, settings.agent_cmd, repo=root, environ=env, options=ACTION_OPTIONS)
    return agent


def _connect(settings: Settings) -> GitHub:
    from memento_gh.github.sync import GitHub

    return GitHub(settings.api_url, settings.token, settings.repository)


class _Gate:
    """The trust gate, asking GitHub for a person's permission at most once per run."""

    def __init__(self, github: GitHub, allowed: frozenset[str]) -> None:
        self.github = github
        self.allowed = allowed
        self.known: dict[str, bool] = {}

    def trusts(self, actor: events.Actor) -> bool:
        verdict = events.trust(actor, self.allowed)
        if verdict != "ask":
            return verdict == "trusted"
        if actor.login not in self.known:
            permission = self.github.permission(actor.login)
            self.known[actor.login] = events.permission_trusts(permission)
        return self.known[actor.login]


class Run:
    def __init__(
        self,
        settings: Settings,
        env: Mapping[str, str],
        root: Path,
        github: GitHub,
        gate: _Gate,
        say: Callable[[str], None],
        clock: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.logs = artifact.place(env, settings.worker_id, settings.run_url)
        self.env = _without_tokens(env)
        self.root = root
        self.layout = Layout(root, settings.plan_dir)
        self.github = github
        self.gate = gate
        self.say = say
        self.clock = clock
        self.lines: list[str] = []
        self.issues: list[Issue] | None = None
        self.pulls: list[PullRequest] = []
        self.delivery: Delivery | None = None  # made by ``prepare``
        self.blocked_links: dict[str, str] = {}
        self.dashboard_url: str | None = None
        #: Set when other workers share the branch (workers > 1, not a dry run).
        self.shared: remote.SharedBranch | None = None
        #: The origin's URLs and the token, read by ``prepare`` before any agent runs.
        self.endpoint: remote.Endpoint | None = None
        self.unpublished = False  # the controls could not be pushed: the run stops there

    def prepare(self, share: ShareBranch = share_branch) -> None:
        remote.use_bot_identity(self.root)
        # Where the token may go is read now, before any agent runs: the final push goes
        # there, whatever the agent writes into git's configuration.
        self.endpoint = remote.read_endpoint(self.root, token=self.settings.token)
        self.say(
            remote.prepare_branch(
                self.root,
                branch=self.settings.branch,
                base=self.settings.base,
                endpoint=self.endpoint,
            )
        )
        if self.settings.workers > 1 and not self.settings.dry_run:
            self.shared = share(self.root, self.settings)
        self.delivery = Delivery(self.root, self.github, self.endpoint, self.settings, self.lines)

    def go(self, request: events.Request, *, sender_trusted: bool = True) -> int:
        if self.delivery is not None:
            self.delivery.keep_in_step(self._pulls, self._apply)
        if not self._plan_is_valid():
            return self._finish("invalid-plan", None)
        # Read once: with other workers the controls may be applied more than once.
        ticks = self._dashboard_ticks()
        applied = self._apply_request(request, ticks)
        if self.unpublished:
            return self._finish("push-conflict", None)
        ticking = request.kind == "tick" or request.tick_after or applied.tick_now
        held = self.delivery is not None and self.delivery.before_tick(
            ticking, self._pulls, self._plan_or_none, self._apply, self.clock()
        )
        result = self._tick() if ticking and not held else None
        outcome = _outcome(result, applied.messages)
        if held and ticking:
            outcome = "waiting"
        if not sender_trusted and outcome == "nothing":
            who = f"@{request.actor.login}" if request.actor else "the sender"
            self.lines.append(f"{who} may not steer memento: their edit changed nothing.")
            outcome = "untrusted"
        pushed = self._push()
        if not pushed:
            outcome = "push-conflict"
        elif not self.settings.dry_run:
            decided = frozenset(tick.box for tick in ticks.ticks) if ticks else frozenset()
            self._sync(decided, result.tasks if result else ())
            self._architect_auto()
        if request.comment_id is not None and not self.settings.dry_run:
            self._acknowledge(request.comment_id, applied.messages)
        return self._finish(outcome, result)

    # -- steps ------------------------------------------------------------------------------

    def _plan_is_valid(self) -> bool:
        """A plan with errors is never ticked: each error becomes an annotation on its line."""
        from memento_gh.checks import check_plan_text

        if not self.layout.plan.exists():
            raise UserError(
                f"{self.settings.plan_dir}/MASTER_PLAN.md is missing on the "
                f"{self.settings.branch} branch; run `memento init` and commit the plan"
            )
        _, problems = check_plan_text(
            files.read_text(self.layout.plan), files.read_optional(self.layout.project_map)
        )
        path = f"{self.settings.plan_dir}/MASTER_PLAN.md"
        for problem in problems:
            level = "error" if problem.severity == ERROR else "warning"
            self.say(render.annotation(level, problem.message, file=path, line=problem.line + 1))
        errors = sum(1 for problem in problems if problem.severity == ERROR)
        if errors:
            self.lines.append(f"The plan has {errors} error(s); no tick ran. See the annotations.")
        return not errors

    def _apply_request(self, request: events.Request, ticks: DashboardTicks | None) -> Applied:
        """Apply the dashboard's boxes, the event's controls, then any missed comment.
        With other workers on the branch, they are published before anything else."""
        if self.shared is None:
            return self._apply_all(request, ticks)
        return self._publish_controls(request, ticks, self.shared)

    def _publish_controls(
        self, request: events.Request, ticks: DashboardTicks | None, shared: remote.SharedBranch
    ) -> Applied:
        """Apply the controls on the shared branch's tip and push them at once, before the
        tick. Rebasing a plan edit onto a plan another worker has changed since could undo
        its claim or revive a task it finished; so when the push is rejected, the local
        commits are dropped for the new tip and the controls applied again there. Nothing is
        applied twice: the dropped commits never landed, a mode already set changes nothing,
        and a comment another run applied meanwhile is in the new tip's history (which the
        catch-up reads) and its notes (which record each note's source)."""
        self.say(shared.sync())
        said = len(self.lines)
        for attempt in range(1, shared.attempts + 1):
            if attempt > 1:
                shared.wait(attempt - 1)
                shared.refresh()
            applied = self._apply_all(request, ticks)
            if shared.publish():
                return applied
            del self.lines[said:]  # the next attempt says again what it applies
        shared.refresh()  # leave nothing for the final push to rebase
        self.unpublished = True
        reason = (
            f"the {self.settings.branch} branch moved {shared.attempts} times while this run "
            "pushed its controls"
        )
        self.say(render.annotation("warning", f"memento could not push: {reason}"))
        self.lines.append(
            f"Not applied: {reason}; nothing was pushed. A comment is caught up by the next "
            "run; run a command or tick a box again."
        )
        return Applied([])

    def _apply_all(self, request: events.Request, ticks: DashboardTicks | None) -> Applied:
        # The boxes first: a box still ticked was ticked before this run's event, or the
        # event's own run would have been the one to find it.
        decided = self._apply_boxes(ticks)
        applied = list(decided.messages)
        for control in request.controls:
            applied += self._apply(control)
        if request.comment_id is None and not self.settings.dry_run:
            applied += self._catch_up()
        return Applied(applied, decided.tick_now)

    def _dashboard_ticks(self) -> DashboardTicks | None:
        """The boxes ticked in the dashboard, each with who ticked it; None when none is,
        or when GitHub cannot say who ticked them (the dashboard is then left as it is, for
        a later run to decide them). The history costs a request only when a box is ticked."""
        from memento_gh.github.sync import SyncError

        if self.settings.dry_run:
            return None
        try:
            dashboard = reconcile.find_issues(self._issues()).dashboard
            if dashboard is None or not render.ticked_boxes(dashboard.body):
                return None
            history = self.github.body_history(dashboard.number)
        except SyncError as error:
            self.say(render.annotation("warning", f"dashboard boxes not read: {error}"))
            self.lines.append(f"Dashboard boxes not read ({error}); a later run decides them.")
            return None
        return DashboardTicks(dashboard.url, tuple(boxes.ticks(history)))

    def _apply_boxes(self, ticks: DashboardTicks | None) -> Applied:
        """Apply each box a trusted person ticked; refuse, with a record, each box anybody
        else may have ticked. A box a run decided already (its source is in the branch's
        history) is only unticked."""
        if ticks is None:
            return Applied([])
        seen = Workspace(self.root).trailer_values(SOURCE_TRAILER, since=CATCH_UP * 2)
        applied: list[str] = []
        tick_now = False
        for tick in ticks.ticks:
            if boxes.decided(seen, ticks.url, tick):
                continue
            source = boxes.source(ticks.url, tick)
            control = (tick.box.control or Control("tick"))._replace(source=source)
            strangers = [who for who in tick.tickers if who is None or not self.gate.trusts(who)]
            if strangers:
                self._refuse(control, boxes.refusal(tick, strangers))
            elif tick.box.is_tick:
                tick_now = True
                self.lines.append(f"Applied: {boxes.describe(tick.box)}")
            else:
                applied += self._apply(control)
        return Applied(applied, tick_now)

    def _refuse(self, control: Control, reason: str) -> None:
        record_refused(self.layout, control, reason, clock=self.clock, redact=self.github.redact)
        self.lines.append(f"Refused: {reason}")

    def _apply(self, control: Control) -> list[str]:
        if control.action in events.ARCHITECT_COMMANDS and control.task is not None:
            return self._architect(control)  # an approve without a task: the review gate
        before = Workspace(self.root).head() if control.source else None
        try:
            message = apply_control(
                self.layout, control, clock=self.clock, redact=self.github.redact
            )
        except UserError as error:
            record_refused(
                self.layout, control, str(error), clock=self.clock, redact=self.github.redact
            )
            self.lines.append(f"Not applied: {control.action} — {error}")
            return []
        if before is not None and Workspace(self.root).head() == before:
            # It changed nothing (a pause while paused), so no commit carries its source:
            # record that it was read, or a later run would apply it again (after a resume).
            record_refused(
                self.layout,
                control,
                "it changed nothing",
                clock=self.clock,
                redact=self.github.redact,
            )
        self.lines.append(f"Applied: {message}")
        return [message]

    def _architect(self, control: Control) -> list[str]:
        """``/memento revise`` or ``/memento approve`` (``github/architect.py``)."""
        from memento_gh.github import architect

        try:
            message = architect.carry_out(control, self._architect_context())
        except UserError as error:
            record_refused(
                self.layout, control, str(error), clock=self.clock, redact=self.github.redact
            )
            self.lines.append(f"Not applied: {control.action} — {error}")
            return []
        if control.action == "revise":  # the comment is the proposal; the record says it ran
            record_refused(
                self.layout,
                control,
                f"{message}; approve it there",
                clock=self.clock,
                redact=self.github.redact,
            )
        self.lines.append(f"Applied: {message}")
        return [message]

    def _architect_auto(self) -> None:
        """Meta ``architect: auto``: propose a revision for a blocked task, never apply it."""
        from memento_gh.github import architect

        plan = self._plan_or_none()
        if plan is not None and plan.settings.architect == "auto":
            said = architect.auto_propose(plan, self._architect_context())
            self.lines += [f"Architect: {said}"] if said else []

    def _architect_context(self) -> Any:
        from memento_gh.github import architect

        return architect.Context(
            self.layout,
            self.github,
            self.env,
            self.clock,
            self.settings.dry_run,
            lambda: (tick_agent(self.settings, self.env, self.root), self.settings.agent_cmd),
        )

    def _catch_up(self) -> list[str]:
        """Comments on memento issues that no run has applied yet (their runs were dropped
        by the concurrency group): apply them now, oldest first."""
        found = reconcile.find_issues(self._issues())
        targets = {issue.number: task for task, issue in found.tasks.items()}
        globals_ = {issue.number for issue in (found.dashboard, found.breaker) if issue}
        seen = Workspace(self.root).trailer_values(SOURCE_TRAILER, since=CATCH_UP * 2)
        applied: list[str] = []
        since = self.clock() - CATCH_UP
        comments = sorted(self.github.recent_comments(since), key=lambda c: c.created)
        for comment in comments:
            if comment.issue_number not in targets and comment.issue_number not in globals_:
                continue
            if comment.created < since:
                # Listed because it was edited lately: an old comment's own run read it,
                # and the record of that (further back than ``seen`` reaches) is no
                # reason to apply it again with its new text.
                continue
            if any(source.startswith(comment.url + " ") for source in seen):
                continue
            applied += self._apply_comment(comment, targets.get(comment.issue_number))
        return applied

    def _apply_comment(self, comment: Comment, task: str | None) -> list[str]:
        actor = events.Actor(comment.login, comment.association, comment.is_bot)
        if not self.gate.trusts(actor):
            return []
        source = events.comment_source(comment.url, comment.login, comment.association)
        try:
            controls, _ = events.parse_comment(comment.body, task=task, source=source)
        except UserError as error:
            # Its own run answered it with a "confused" reaction, or was dropped: the
            # comment names no command memento knows, so there is nothing to catch up on.
            self.lines.append(f"Skipped a comment ({comment.url}): {error}")
            return []
        applied: list[str] = []
        for control in controls:
            applied += self._apply(control)
        return applied

    def _tick(self) -> TickResult | None:
        config = TickConfig(
            agent=tick_agent(self.settings, self.env, self.root),
            agent_cmd=self.settings.agent_cmd,
            worker_id=self.settings.worker_id,
            max_tasks=self.settings.max_tasks,
            shared=self.shared,
            model=self.settings.model,
            agent_args=self.settings.agent_args,
        )
        result = run_tick(self.layout, config, environ=self.env, say=self.say)
        self.lines.append(result.line[:1].upper() + result.line[1:])
        return result

    def _push(self) -> bool:
        if self.settings.dry_run:
            self.lines.append("Dry run: nothing pushed, no issue written.")
            return True
        endpoint = self.delivery.pusher if self.delivery else self.endpoint  # push-token
        pushed = remote.push(self.root, branch=self.settings.branch, endpoint=endpoint)
        if pushed.pushed:
            return True
        self.say(render.annotation("warning", f"memento could not push: {pushed.reason}"))
        self.lines.append(
            f"Not pushed: {pushed.reason}. The next run starts again from the remote branch."
        )
        return False

    def _sync(self, decided: frozenset[render.Box], tasks: Sequence[TaskOutcome]) -> None:
        """Bring the issues in line with the plan; an API failure leaves it to the next run.
        ``decided``: the dashboard's boxes this run applied or refused, which it may untick."""
        from memento_gh.github.sync import SyncError

        try:
            self._sync_issues(decided)
            self._carry_out(artifact.blocked_replies(tasks, self.blocked_links, self.logs))
        except SyncError as error:
            self.say(render.annotation("warning", f"issue sync incomplete: {error}"))
            self.lines.append(f"Issue sync incomplete ({error}); the next run finishes it.")

    def _sync_issues(self, decided: frozenset[render.Box]) -> None:
        plan = self._plan_or_none()
        if plan is None:
            return
        records = self._records()
        found = reconcile.find_issues(self._issues())
        plan_path = f"{self.settings.plan_dir}/MASTER_PLAN.md"
        operations = reconcile.task_operations(plan, records, found, plan_path=plan_path)
        operations += reconcile.breaker_operations(plan, records, found)
        operations += reconcile.duplicate_operations(found)
        conflict = self.delivery.conflict if self.delivery else None
        operations += pulls.conflict_operations(conflict, self._issues())
        created = self._carry_out(operations)
        links = {task: issue.url for task, issue in found.tasks.items()}
        links.update({task: url for task, url in created.items() if task})
        current = pulls.open_pull(self.pulls)
        view = render.DashboardView(
            plan=plan,
            records=records,
            blocked_issues=links,
            server_url=self.settings.server_url,
            repository=self.settings.repository,
            branch=self.settings.branch,
            updated=render.last_change(records),
            pull=pulls.shown(current) if current is not None else None,
        )
        self.blocked_links = links
        operations = reconcile.dashboard_operations(view, found)
        dashboard = self._carry_out(self._keep_new_ticks(operations, decided))
        self.dashboard_url = found.dashboard.url if found.dashboard else dashboard.get("")
        if self.delivery is not None:  # after the dashboard: the pull request links to it
            self.delivery.deliver(plan, self.pulls, links, self.dashboard_url)

    def _keep_new_ticks(
        self, operations: Sequence[reconcile.Operation], decided: frozenset[render.Box]
    ) -> Sequence[reconcile.Operation]:
        """The dashboard's edit, unless it would untick a box this run has not decided: one
        ticked since the run read the dashboard (it may have ticked for many minutes), or
        one whose ticker GitHub could not name. That box's own run, or the next, decides
        it; rewriting it unticked now would drop it unapplied."""
        edits = [op for op in operations if isinstance(op, reconcile.Edit) and op.body]
        if not edits:
            return operations
        now = self.github.issue(edits[0].number).body
        undecided = [box for box in render.ticked_boxes(now) if box not in decided]
        if not undecided:
            return operations
        named = ", ".join(boxes.describe(box) for box in undecided)
        self.lines.append(
            f"The dashboard was left as it is: {named} ticked and not decided by this run."
        )
        return [op for op in operations if op not in edits]

    def _carry_out(self, operations: Sequence[reconcile.Operation]) -> dict[str, str]:
        """Do the operations in order; returns the URLs of the issues it created, by the
        task they are about ("" for the dashboard and the breaker's issue)."""
        created: dict[str, str] = {}
        for operation in operations:
            if isinstance(operation, reconcile.Create):
                text = operation.text
                issue = self.github.create_issue(text.title, text.body, text.labels)
                marker = render.read_marker(issue.body)
                if marker is not None:
                    created[marker[1] or ""] = issue.url
            elif isinstance(operation, reconcile.Edit):
                self.github.edit_issue(
                    operation.number,
                    body=operation.body,
                    state=operation.state,
                    state_reason=operation.state_reason,
                )
            else:
                self.github.comment(operation.number, operation.body)
        return created

    def _acknowledge(self, comment_id: int, applied: Sequence[str]) -> None:
        from memento_gh.github.sync import SyncError

        try:
            self.github.react(comment_id, "+1" if applied else "confused")
        except SyncError as error:
            self.say(render.annotation("warning", f"could not react to the comment: {error}"))

    # -- reading ----------------------------------------------------------------------------

    def _issues(self) -> list[Issue]:
        if self.issues is None:
            self.issues, self.pulls = self.github.memento_listing()
        return self.issues

    def _pulls(self) -> list[PullRequest]:
        self._issues()
        return self.pulls

    def _records(self) -> list[status_log.Record]:
        path = self.layout.status
        return status_log.parse_status(files.read_text(path)) if path.exists() else []

    def _plan_or_none(self) -> Plan | None:
        path = self.layout.plan
        return parse(files.read_text(path)) if path.exists() else None

    def _finish(self, outcome: str, result: TickResult | None) -> int:
        self.logs = artifact.stage_run(self.layout.logs, self.logs, self.github.redact)
        report = Report(
            outcome,
            tuple(self.lines),
            result,
            Workspace(self.root).head(),
            self.blocked_links,
            self.dashboard_url,
            self.logs,
        )
        return _finish(self.settings, self._plan_or_none(), report, self.say, self.github.redact)


def _outcome(result: TickResult | None, applied: Sequence[str]) -> str:
    if result is None:
        return "controls" if applied else "nothing"
    if result.tasks:
        return result.tasks[0].outcome
    return result.status
