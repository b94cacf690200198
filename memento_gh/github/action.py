"""``memento github``: one workflow run of the action, from the event to the pushed branch,
the synced issues, the job summary and the step outputs.

A run: read the settings (``settings.py``) and the event; route it (``events.py``, pure);
in the relay job, hand a trusted author's comment on, and nothing else (``relay.py``);
pass the trust gate; then either draft a plan from an issue (``drafting.py``) or run on the
memento branch (``branch_run.py``: its steps, in order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memento_gh.errors import UserError
from memento_gh.github import branch_run, events, relay
from memento_gh.github.branch_run import ShareBranch, share_branch
from memento_gh.github.reporting import Report, finish
from memento_gh.github.run_context import run_context, tick_agent, without_tokens
from memento_gh.github.settings import Settings, read_settings
from memento_gh.redact import Redactor
from memento_gh.runner_text import runner_say

if TYPE_CHECKING:
    from memento_gh.github.sync import GitHub


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
        return finish(settings, None, Report("ignored", (request.reason,)), say, redact)
    github = (connect or _connect)(settings)
    github.redact = redact  # every issue, body and comment
    github.full_text_at = settings.run_url  # where a body cut to fit GitHub's limit points
    current = run_context(settings, env, root, github, say, clock)
    if settings.relay:
        report = relay.relay(request, github, current.trusts)
        return finish(settings, None, report, say, redact)
    if request.kind == events.RELAYED:
        request = relay.unpack(request, github, settings.inputs)
        say(f"relayed: {request.reason or request.kind}")
        if request.kind == "ignore":
            return finish(settings, None, Report("ignored", (request.reason,)), say, redact)
    trusted = request.actor is None or current.trusts(request.actor)
    if request.actor is not None and not trusted and not request.rerender_dashboard:
        who = f"@{request.actor.login}"
        report = Report("untrusted", (f"{who} may not steer memento",))
        return finish(settings, None, report, say, redact)
    if request.kind == events.PLAN and request.issue_number is not None:
        return _draft_plan(settings, env, root, github, request, say, clock)
    if request.kind == "tick" or request.tick_after:
        tick_agent(settings, env, root)  # before anything is checked out, applied or claimed
    # An untrusted edit of the dashboard still runs: the boxes it ticked are refused, and
    # unticked, by this run rather than left for a later one to find.
    return branch_run.steps(current, request, share, sender_trusted=trusted)


def check(
    env: Mapping[str, str],
    *,
    say: Callable[[str], None] = print,
    connect: Callable[[Settings], GitHub] | None = None,
) -> int:
    """``memento github --check``: the set-up checklist the first run writes, printed (and
    added to the job summary in a workflow); nothing is changed. 1 when a check fails."""
    from memento_gh import files
    from memento_gh.github import first_run, setup_checks

    say = runner_say(say)
    settings = read_settings(env)
    redact = Redactor.from_environ(env, [settings.token]).redact
    github = (connect or _connect)(settings)
    checks = first_run.all_checks(settings, without_tokens(env), github, github.memento_listing())
    lines = setup_checks.summary_lines(checks)
    for line in lines:
        say(redact(line))
    if settings.summary_path is not None:
        text = "\n".join(["## memento: set-up", "", *(f"- {line}" for line in lines), ""])
        with files.open_append(settings.summary_path) as stream:  # never through a link
            stream.write((redact(text) + "\n").encode("utf-8"))
    return 1 if any(found.ok is False for found in checks) else 0


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
    agent_env = without_tokens(env)
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
    return finish(settings, None, report, say, github.redact)


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read the event payload {path}: {error}") from None
    return payload if isinstance(payload, dict) else {}


def _connect(settings: Settings) -> GitHub:
    from memento_gh.github.sync import GitHub

    return GitHub(settings.api_url, settings.token, settings.repository)
