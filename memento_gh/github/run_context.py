"""What every step of a workflow run is given, fixed before the first one: the settings, the
checkout, the GitHub client, the trust gate, the clock. Nothing here changes while the run
goes on; each step returns what it did (``branch_run.py``).

Two answers are read at most once per run, when a step first asks: the issue listing (one
request per 100 issues and pull requests) and each person's permission. They are cached
reads of GitHub, not state a step sets for another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import files
from memento_gh.engine.agents.check import ACTION_OPTIONS, check_agent, choose_agent
from memento_gh.engine.agents.presets import COMMAND, KNOWN_AGENTS
from memento_gh.formats import status_log
from memento_gh.github import artifact, events
from memento_gh.github.settings import PUSH_TOKEN_VARIABLE, TOKEN_VARIABLE, Settings
from memento_gh.layout import Layout
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from memento_gh.redact import hidden_repr

if TYPE_CHECKING:
    from memento_gh.github.answers import Issue, PullRequest
    from memento_gh.github.sync import GitHub


class Listing(NamedTuple):
    """The issues and the pull requests labelled ``memento``, as the run first read them."""

    issues: list[Issue]
    pulls: list[PullRequest]


class RunContext(NamedTuple):
    settings: Settings
    #: The agent's environment: the runner's, without memento's token variables.
    env: Mapping[str, str]
    root: Path
    layout: Layout
    github: GitHub
    #: The trust gate: may this person steer memento?
    trusts: Callable[[events.Actor], bool]
    say: Callable[[str], None]
    clock: Callable[[], datetime]
    #: The memento issues and pull requests, read when a step first asks.
    listing: Callable[[], Listing]
    #: Where the run's redacted logs go (the artifact), when the runner uploads them.
    logs: artifact.Place | None

    def __repr__(self) -> str:
        return hidden_repr(self, ("env",))

    def tick_agent(self) -> str:
        return tick_agent(self.settings, self.env, self.root)


def run_context(
    settings: Settings,
    env: Mapping[str, str],
    root: Path,
    github: GitHub,
    say: Callable[[str], None],
    clock: Callable[[], datetime],
) -> RunContext:
    def listing() -> Listing:
        return Listing(*github.memento_listing())

    return RunContext(
        settings=settings,
        env=without_tokens(env),
        root=root,
        layout=Layout(root, settings.plan_dir),
        github=github,
        trusts=trust_gate(github),
        say=say,
        clock=clock,
        listing=functools.cache(listing),
        logs=artifact.place(env, settings.worker_id, settings.run_url),
    )


def trust_gate(github: GitHub) -> Callable[[events.Actor], bool]:
    """The trust gate, asking GitHub for a person's permission at most once per run."""
    permission = functools.cache(github.permission)

    def trusts(actor: events.Actor) -> bool:
        verdict = events.trust(actor)
        if verdict != "ask":
            return verdict == "trusted"
        return events.permission_trusts(permission(actor.login))

    return trusts


def without_tokens(env: Mapping[str, str]) -> dict[str, str]:
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


def read_plan(layout: Layout) -> Plan | None:
    path = layout.plan
    return parse(files.read_text(path)) if path.exists() else None


def read_records(layout: Layout) -> list[status_log.Record]:
    path = layout.status
    return status_log.parse_status(files.read_text(path)) if path.exists() else []
