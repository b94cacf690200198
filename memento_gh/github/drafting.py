"""``/memento plan`` in a workflow run: the architect drafts a plan from an issue's body on
a branch of its own, and a pull request carries it (``planpull.py`` decides what it says).

The trust gate has let the comment's author through before this runs. The issue's body is
read from the API as it is now and reaches the architect inside its prompt file, never a
command line. The remote and the token are read before the agent runs, and the agent's
environment holds no token (``agents.agent_env``); what it changes besides its proposal is
rolled back (``architect/run.py``). Only a plan that validates is committed and pushed;
the commit status ``memento/plan`` on the pushed head says so among the pull request's
checks, since a push made with GITHUB_TOKEN starts no workflow that could.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import files, gitrun, remote
from memento_gh.architect import flows, land
from memento_gh.architect.run import AgentSettings, Outcome
from memento_gh.errors import UserError
from memento_gh.github import artifact, failures, guidance, job_text, planpull
from memento_gh.github.failures import SyncError
from memento_gh.github.reporting import Report
from memento_gh.layout import PROPOSAL_NAME, Layout
from memento_gh.plan.meta import Settings as PlanSettings
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from memento_gh.redact import hidden_repr
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.settings import Settings
    from memento_gh.github.sync import GitHub

#: Rounds the architect gets in a workflow run.
ROUNDS = 3


class Context(NamedTuple):
    """What the draft needs of the run."""

    settings: Settings
    #: The agent's environment: the runner's, without memento's token variables.
    env: Mapping[str, str]
    root: Path
    github: GitHub
    say: Callable[[str], None]
    clock: Callable[[], datetime]
    #: The agent the action's inputs choose, checked (UserError when none can run).
    agent: Callable[[], str]

    def __repr__(self) -> str:
        return hidden_repr(self, ("env",))


def draft_plan(context: Context, issue: int, comment_id: int | None) -> Report:
    """Draft a plan from issue ``issue`` and open (or bring up to date) its pull request;
    when no plan may or can land, say why on the issue."""
    drafting = _Drafting(context, issue)
    report = drafting.run()
    if comment_id is not None and not context.settings.dry_run:
        drafting.react(comment_id, "+1" if report.outcome == "plan-drafted" else "confused")
    logs = artifact.place(context.env, context.settings.worker_id, context.settings.run_url)
    staged = artifact.stage_run(drafting.layout.logs, logs, context.github.redact)
    return report._replace(logs=staged)


class _Drafting:
    def __init__(self, context: Context, issue: int) -> None:
        self.context = context
        self.settings = context.settings
        self.github = context.github
        self.issue = issue
        self.root = context.root
        self.layout = Layout(context.root, self.settings.plan_dir)
        self.plan_path = self.settings.plan_path
        self.branch = planpull.branch_for(issue)

    def run(self) -> Report:
        found = self.github.issue(self.issue)  # the body as it is now, not as the event had it
        if not found.body.strip():
            return self._answer("plan-refused", planpull.empty_spec_comment(self.issue))
        remote.use_bot_identity(self.root)
        # Where the token may go is read now, before the agent runs (see remote.py).
        endpoint = remote.read_endpoint(self.root, token=self.settings.token)
        push_token = self.settings.delivery.push_token
        pusher = endpoint._replace(token=push_token) if push_token else endpoint
        base = self.settings.base or remote.default_branch(self.root, endpoint)
        branches = remote.remote_branches(self.root, endpoint, [self.settings.branch, self.branch])
        base_ref = remote.fetch_branch(self.root, endpoint, base)
        self._start_from(base_ref)
        holder = self._plan_holder(base, endpoint, branches)
        if holder is not None:
            return self._answer("plan-refused", planpull.refusal_comment(self.plan_path, holder))
        refused = self._draft(planpull.spec_of(found.title, found.body))
        if refused is not None:
            return refused
        # The draft's own commit stays on the runner: what is pushed is its plan, without
        # any credential the agent wrote into it, on the base or, when asked again, on top
        # of the branch (whatever else people pushed there stays).
        text = self.github.redact(files.read_text(self.layout.plan))
        asked_before = self.branch in branches
        self._onto(
            remote.fetch_branch(self.root, endpoint, self.branch) if asked_before else base_ref,
            text,
        )
        return self._publish(text, base, pusher)

    # -- the steps -----------------------------------------------------------------------

    def _draft(self, spec: str) -> Report | None:
        """The architect's rounds, and the draft committed; or, when none landed, the
        report (said on the issue too)."""
        agent = AgentSettings(
            self.context.agent(),
            self.settings.agent_cmd,
            PlanSettings().agent_timeout,
            dict(self.context.env),
            self.settings.model,
            self.settings.agent_args,
        )
        try:
            flows.draft(
                self.layout,
                agent,
                spec,
                rounds=ROUNDS,
                now=self.context.clock(),
                subject=planpull.subject_for(self.issue),
            )
        except flows.Unfixed as error:
            return self._unfixed(error.outcome)
        except UserError as error:
            comment = planpull.failure_comment(str(error), self.settings.run_url)
            said = f"The architect's run did not finish: {error}"
            return self._answer("plan-failed", comment, said)
        return None

    def _start_from(self, ref: str) -> None:
        gitrun.check(self.root, "checkout", "-q", "--no-track", "-B", self.branch, ref)

    def _plan_holder(self, base: str, endpoint: remote.Endpoint, branches: set[str]) -> str | None:
        """The branch that holds a plan already (the base, or memento's own branch), if
        any: a draft never replaces one, save the untouched example of ``memento init``."""
        here = files.read_optional(self.layout.plan)
        if here is not None and not land.untouched_example(here, self.settings.plan_dir):
            return base
        if self.settings.branch in branches:
            ref = remote.fetch_branch(self.root, endpoint, self.settings.branch)
            shown = gitrun.run(self.root, "show", f"{ref}:{self.plan_path}")
            text = shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else None
            if text is not None and not land.untouched_example(text, self.settings.plan_dir):
                return self.settings.branch
        return None

    def _onto(self, tip: str, text: str) -> None:
        """The drafted plan as a commit on ``tip``, when it changes the plan there."""
        self._start_from(tip)
        if files.read_optional(self.layout.plan) == text:
            return
        self.layout.plan.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(self.layout.plan, text)
        workspace = Workspace(self.root)
        relative = self.layout.plan.resolve().relative_to(workspace.root.resolve()).as_posix()
        workspace.commit(f"{planpull.subject_for(self.issue)}\n", [relative], new=[relative])

    def _publish(self, text: str, base: str, pusher: remote.Endpoint) -> Report:
        plan = parse(text)
        said = planpull.counts(plan)
        if self.settings.dry_run:
            line = f"Dry run: the drafted plan validates ({said}); nothing pushed."
            return Report("plan-drafted", (line,), commit=Workspace(self.root).head())
        pushed = remote.push(self.root, branch=self.branch, endpoint=pusher)
        if not pushed.pushed or pushed.head is None:
            line = f"Not pushed: {pushed.reason}. Comment `/memento plan` again."
            return Report("push-conflict", (line,))
        self.github.post_status(
            pushed.head,
            "success",
            context=planpull.STATUS_CONTEXT,
            description=planpull.status_description(plan),
            target_url=self.settings.run_url,
        )
        drafted = f"Drafted a plan from #{self.issue} ({said}) on {self.branch}."
        try:
            pulled = self._pull(plan, base)
        except SyncError as error:
            if error.status != 403 or not error.said.startswith(failures.PULLS_NOT_PERMITTED):
                raise
            # One outcome, said once on the issue: the draft is on its branch, and what
            # stops its pull request, with the way to open it by hand meanwhile.
            url = guidance.compare_url(
                self.settings.server_url, self.settings.repository, base, self.branch
            )
            comment = planpull.pull_refused_comment(self.branch, f"{error.said}.", url)
            said_here = f"GitHub refused the pull request (“{error.said}.”)."
            answered = self._answer("plan-pushed", comment, drafted, said_here)
            return answered._replace(commit=pushed.head)
        return Report("plan-drafted", (pulled, drafted), commit=pushed.head)

    def _pull(self, plan: Plan, base: str) -> str:
        """The pull request opened or brought up to date; what the report says."""
        body = planpull.pull_body(plan, issue=self.issue, plan_path=self.plan_path, base=base)
        _, pulls = self.github.memento_listing()
        current = planpull.open_draft_pull(pulls, self.issue)
        if current is None:
            title = planpull.pull_title(self.issue, self.github.issue(self.issue).title)
            created = self.github.create_pull(title, body, head=self.branch, base=base, draft=False)
            return f"Opened pull request #{created.number}: {created.url}"
        if current.body.rstrip("\n") != body.rstrip("\n"):
            self.github.edit_pull(current.number, body=body)
            return f"Brought pull request #{current.number} up to date: {current.url}"
        return f"Pull request #{current.number} already shows this plan."

    def _unfixed(self, outcome: Outcome) -> Report:
        # The problems name the architect's scratch file; people know it as the plan it
        # would have been.
        rounds = outcome.rounds
        shown = [_as_plan(problem, self.plan_path) for problem in outcome.problems]
        said = (
            f"The architect's draft still had {len(shown)} problem(s) after {rounds} round(s); "
            "no pull request."
        )
        comment = planpull.problems_comment(shown, rounds, self.settings.run_url)
        return self._answer("plan-invalid", comment, said)

    def _answer(self, outcome: str, comment: str, *said: str) -> Report:
        """Say on the issue why no pull request opens (after what the run says first)."""
        if not self.settings.dry_run:
            self.github.comment(self.issue, comment)
        return Report(outcome, (*said, f"Answered on #{self.issue}: {outcome}."))

    def react(self, comment_id: int, content: str) -> None:
        try:
            self.github.react(comment_id, content)
        except SyncError as error:
            warning = f"could not react to the comment: {error}"
            self.context.say(job_text.annotation("warning", warning))


def _as_plan(problem: str, plan_path: str) -> str:
    """``.memento_proposal.md:12: error: …`` as ``docs/MASTER_PLAN.md:12: error: …``."""
    if problem.startswith(PROPOSAL_NAME + ":"):
        return plan_path + problem[len(PROPOSAL_NAME) :]
    return problem
