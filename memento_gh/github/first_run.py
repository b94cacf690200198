"""What memento can read of its set-up, as one checklist (``setup_checks.py`` words it):
on the first run (no dashboard yet) and on ``memento github --check``, everything it can
read, with three requests more; on later runs, only what costs none (the inputs, the
environment, the listing of memento's issues and pull requests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memento_gh.github import pulls, reconcile, setup_checks, setup_issues
from memento_gh.github.setup_checks import Check

if TYPE_CHECKING:
    from memento_gh.github.answers import Issue, PullRequest
    from memento_gh.github.settings import Settings
    from memento_gh.github.sync import GitHub


def cheap_checks(
    settings: Settings,
    env: Mapping[str, str],
    issues: Sequence[Issue],
    listed_pulls: Sequence[PullRequest],
) -> tuple[Check, ...]:
    """What every run knows without asking: the agent's key, the pull request, the
    workflow changes held out (from the set-up issues the listing holds)."""
    key = setup_checks.agent_key(settings.agent, [name for name, value in env.items() if value])
    checks = [
        setup_checks.pulls(
            settings.delivery.pull_request,
            pulls.open_pull(listed_pulls) is not None,
            setup_issues.is_open(setup_issues.PULLS_KIND, issues),
        ),
        setup_checks.workflows(
            settings.delivery.push_token is not None,
            setup_issues.is_open(setup_issues.WORKFLOWS_KIND, issues),
        ),
    ]
    return (key, *checks) if key is not None else tuple(checks)


def all_checks(
    settings: Settings,
    env: Mapping[str, str],
    github: GitHub,
    listing: tuple[Sequence[Issue], Sequence[PullRequest]],
) -> tuple[Check, ...]:
    """Everything memento can read of its set-up (the first run's checklist)."""
    facts = github.setup_facts(settings.branch)
    login = github.own_login()
    return (
        *cheap_checks(settings, env, *listing),
        setup_checks.issues(facts.has_issues),
        setup_checks.token(login, facts.can_push),
        setup_checks.protection(settings.branch, facts.force_blocked),
    )


def is_first_run(issues: Sequence[Issue]) -> bool:
    return reconcile.find_issues(issues).dashboard is None
