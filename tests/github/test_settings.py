"""Every record of a run that holds a credential prints without it: the action's settings
and delivery options, the remote's endpoint, the run's context, the architect's. A record
printed in a log line, a traceback or a failing test's diff shows ``***`` instead."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from memento_gh import remote
from memento_gh.architect.run import AgentSettings
from memento_gh.github import architect, drafting
from memento_gh.github.run_context import run_context
from memento_gh.github.settings import DeliveryOptions, read_settings
from memento_gh.github.sync import GitHub
from memento_gh.layout import Layout
from memento_gh.redact import MASK
from testing.repos import git, init_repo

TOKEN = "ghs_the_workflow_token_0123456789"
PUSH_TOKEN = "github_pat_the_push_token_0123456789"
PROVIDER_KEY = "sk-ant-the-providers-key-0123456789"
HEADER = "Authorization: Basic the-users-own-credential"
SECRETS = (TOKEN, PUSH_TOKEN, PROVIDER_KEY, HEADER)

RUNNER = {
    "MEMENTO_GITHUB_TOKEN": TOKEN,
    "MEMENTO_GITHUB_PUSH_TOKEN": PUSH_TOKEN,
    "ANTHROPIC_API_KEY": PROVIDER_KEY,
    "GITHUB_REPOSITORY": "octo/project",
    "GITHUB_API_URL": "http://127.0.0.1:9",
    "GITHUB_RUN_ID": "4242",
}


def records(tmp_path: Path) -> dict[str, object]:
    settings = read_settings(RUNNER)
    checkout = init_repo(tmp_path / "checkout")
    git(checkout, "remote", "add", "origin", "https://github.com/octo/project.git")
    github = GitHub(settings.api_url, settings.token, settings.repository, pace=False)
    layout = Layout(checkout, "docs")
    now = datetime.now(timezone.utc)
    return {
        "settings": settings,
        "delivery options": settings.delivery,
        "endpoint": remote.read_endpoint(checkout, token=settings.token),
        "endpoint without a token": remote.Endpoint(
            "origin",
            "https://example.com/a.git",
            "https://example.com/a.git",
            None,
            (("http.extraheader", HEADER),),
        ),
        "run context": run_context(settings, RUNNER, checkout, github, print, lambda: now),
        "drafting context": drafting.Context(
            settings, RUNNER, checkout, github, print, lambda: now, lambda: "claude"
        ),
        "architect context": architect.Context(
            layout, github, RUNNER, lambda: now, False, lambda: ("claude", None)
        ),
        "agent settings": AgentSettings("claude", None, 60.0, RUNNER),
    }


@pytest.mark.parametrize(
    "name",
    [
        "settings",
        "delivery options",
        "endpoint",
        "endpoint without a token",
        "run context",
        "drafting context",
        "architect context",
        "agent settings",
    ],
)
def test_a_record_holding_a_credential_never_prints_it(tmp_path: Path, name: str) -> None:
    record = records(tmp_path)[name]

    shown = [repr(record), str(record), f"{record}", repr([record]), repr({"in": record})]

    for text in shown:
        for secret in SECRETS:
            assert secret not in text, f"{name} shows a credential: {text}"
        assert MASK in text
        assert text.count(type(record).__name__ + "(") >= 1  # still a readable record


def test_the_hidden_fields_are_named_and_the_others_shown(tmp_path: Path) -> None:
    settings = records(tmp_path)["settings"]

    shown = repr(settings)

    assert f"token={MASK}" in shown
    assert "repository='octo/project'" in shown
    assert (
        f"delivery=DeliveryOptions(pull_request='draft', reviewers=(), push_token={MASK}," in shown
    )
    assert repr(DeliveryOptions()) == (
        "DeliveryOptions(pull_request='draft', reviewers=(), push_token=None, ci_verify=False)"
    )
