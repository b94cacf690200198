"""What the action's inputs and the runner's environment say, read once at the start of a run
and checked: a bad value is one sentence naming the input to fix. Every other step of the
run reads these records; none reads the environment again.

The records hold tokens, and print themselves without them (``redact.hidden_repr``): a
record that lands in a log, a traceback or a test failure shows ``***`` in their place.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh.engine.agents.check import ACTION_OPTIONS, check_model, read_agent_args
from memento_gh.errors import UserError
from memento_gh.github import events, pulls
from memento_gh.plan.values import check_worker_id
from memento_gh.redact import hidden_repr

TOKEN_VARIABLE = "MEMENTO_GITHUB_TOKEN"
PUSH_TOKEN_VARIABLE = "MEMENTO_GITHUB_PUSH_TOKEN"
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"", "0", "false", "no", "off"}


class DeliveryOptions(NamedTuple):
    """The action's delivery inputs, checked."""

    pull_request: str = "draft"  # draft | ready | off
    reviewers: tuple[str, ...] = ()  # asked to review when a review phase is done
    push_token: str | None = None  # pushes with it start the repository's workflows
    ci_verify: bool = False  # the checks of a task's commit are a second verify

    def __repr__(self) -> str:
        return hidden_repr(self, ("push_token",))


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
    #: The workflow's relay job: hand a comment on to the memento job (``relay.py``).
    relay: bool = False

    def __repr__(self) -> str:
        return hidden_repr(self, ("token",))

    @property
    def plan_path(self) -> str:
        """The plan as the repository names it: ``docs/MASTER_PLAN.md``."""
        return f"{self.plan_dir}/MASTER_PLAN.md"


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
        relay=_flag(env.get("MEMENTO_RELAY", ""), "relay"),
    )


def read_delivery_options(env: Mapping[str, str]) -> DeliveryOptions:
    mode = env.get("MEMENTO_PULL_REQUEST", "").strip().lower() or "draft"
    if mode not in pulls.MODES:
        raise UserError(
            f"pull-request must be draft, ready or off, not {mode!r}: draft opens the pull "
            "request as a draft, ready for review, off opens none"
        )
    reviewers = env.get("MEMENTO_REVIEWERS", "").split(",")
    push_token = env.get(PUSH_TOKEN_VARIABLE, "").strip() or None
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
