"""The spend ledger (issues #14 item 5 and #18): what each agent run cost, kept in committed
files (a task's ``spend`` field, the Meta's ``spend_total`` and ``spend_day``), summed per
task, per UTC day and in total, and the budgets that stop a tick. Real ticks with the fake
agent printing claude's real ``--output-format json`` report, on a clock of our own."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memento_gh.engine.records import TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.layout import Layout
from testing.agents import Action, scripted_command
from testing.ticks import Project, good, make_project, one_phase, plan_of, task, wrong

#: 23:50 UTC: the third tick below runs after midnight.
EVENING = datetime(2026, 12, 1, 23, 50, tzinfo=timezone.utc)


def claude_report(usd: float, tokens_in: int, tokens_out: int) -> Action:
    """claude's result line as the real CLI prints it: tokens in ``modelUsage``, the price
    in ``total_cost_usd``, ``usage`` counting the main loop only."""
    report = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 3,
        "result": "Done.",
        "total_cost_usd": usd,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "modelUsage": {
            "claude-opus-4-8[1m]": {
                "inputTokens": tokens_in,
                "outputTokens": tokens_out,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "costUSD": usd,
            }
        },
    }
    return {"print": json.dumps(report)}


def tick_at(project: Project, moment: datetime) -> TickResult:
    config = TickConfig(agent="command", agent_cmd=scripted_command(), worker_id="w1")
    return run_tick(
        Layout(project.root), config, clock=lambda: moment, environ=project.env(), say=print
    )


def meta(project: Project, key: str) -> str | None:
    entry = project.plan().meta.get(key)
    return None if entry is None else entry.value


def task_spend(project: Project, task_id: str) -> str | None:
    found = project.plan().task(task_id)
    assert found is not None
    return found.raw("spend")


@pytest.mark.timeout(120)
def test_spend_adds_up_per_task_per_utc_day_and_in_total(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script(
        {
            "T-101": {
                "attempts": [
                    [*wrong("T-101"), claude_report(0.01, 1000, 100)],
                    [*good("T-101"), claude_report(0.0205, 2000, 200)],
                ]
            },
            "T-102": [*good("T-102"), claude_report(0.5, 40000, 3000)],
        }
    )

    assert tick_at(project, EVENING).tasks[0].outcome == "failed"
    assert meta(project, "spend_day") == "2026-12-01, $0.01, 1000 in, 100 out, 1 tick"
    assert task_spend(project, "T-101") == "$0.01, 1000 in, 100 out"

    assert tick_at(project, EVENING + timedelta(minutes=5)).tasks[0].outcome == "success"
    assert meta(project, "spend_day") == "2026-12-01, $0.0305, 3000 in, 300 out, 2 ticks"
    # the task's field sums its attempts, the failed one too
    assert task_spend(project, "T-101") == "$0.0305, 3000 in, 300 out"

    assert tick_at(project, EVENING + timedelta(minutes=20)).tasks[0].outcome == "success"
    # after midnight UTC the day starts again; the total keeps everything
    assert meta(project, "spend_day") == "2026-12-02, $0.50, 40000 in, 3000 out, 1 tick"
    assert meta(project, "spend_total") == "$0.5305, 43000 in, 3300 out"
    assert task_spend(project, "T-102") == "$0.50, 40000 in, 3000 out"
    # every run's own spend is in its status entry
    costs = [entry.fields.get("Cost") for entry in project.entries()]
    assert costs == [
        "$0.01, 1,000 tokens in / 100 out",
        "$0.0205, 2,000 tokens in / 200 out",
        "$0.50, 40,000 tokens in / 3,000 out",
    ]
    # committed, so a clone (the next GitHub run) has the ledger
    assert "spend_total: $0.5305" in project.git("show", "HEAD:docs/MASTER_PLAN.md")
    assert project.memento("validate").returncode == 0


@pytest.mark.timeout(120)
def test_an_agent_without_a_price_still_counts_tokens_and_ticks(tmp_path: Path) -> None:
    codex = '{"type":"turn.completed","usage":{"input_tokens":3200,"output_tokens":180}}'
    project = make_project(tmp_path)
    project.script({"T-101": [*good("T-101"), {"print": codex}]})

    tick_at(project, EVENING)

    assert meta(project, "spend_day") == "2026-12-01, 3200 in, 180 out, 1 tick"
    assert meta(project, "spend_total") == "3200 in, 180 out"
    assert task_spend(project, "T-101") == "3200 in, 180 out"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("- budget_per_day: lots", "Meta budget_per_day: 'lots' is not an amount in USD"),
        ("- budget_per_task: -2", "Meta budget_per_task: '-2' must be more than 0 USD"),
        ("- tokens_per_day: 1.5M", "Meta tokens_per_day:"),
        ("- max_ticks_per_day: 0", "Meta max_ticks_per_day:"),
        ("- spend_day: yesterday, $1", "Meta spend_day: 'yesterday' is not a date"),
        ("- spend_total: $1, 20 apples", "Meta spend_total: '20 apples' is not part of a spend"),
    ],
)
def test_validate_rejects_malformed_budget_and_ledger_keys_at_their_line(
    tmp_path: Path, line: str, message: str
) -> None:
    text = plan_of([one_phase()])
    text = text.replace("- tick_mode: auto\n", f"- tick_mode: auto\n{line}\n")
    project = make_project(tmp_path, text)
    at = text.splitlines().index(line) + 1

    result = project.memento("validate")

    assert result.returncode == 1
    assert f"docs/MASTER_PLAN.md:{at}: error: {message}" in result.stdout


@pytest.mark.timeout(60)
def test_validate_rejects_a_malformed_task_spend_at_its_line(tmp_path: Path) -> None:
    text = plan_of([one_phase(task("T-101", spend="about a dollar"))])
    project = make_project(tmp_path, text)
    at = text.splitlines().index("  - spend: about a dollar") + 1

    result = project.memento("validate")

    assert result.returncode == 1
    assert f"docs/MASTER_PLAN.md:{at}: error: T-101 spend:" in result.stdout


# -- shown: memento status --json ----------------------------------------------------------


@pytest.mark.timeout(60)
def test_status_json_spend_forecasts_from_the_completed_tasks(tmp_path: Path) -> None:
    tasks = [
        task("T-101", "x", spend="$0.30, 3000 in, 300 out"),
        task("T-102", "x", spend="$0.10, 1000 in, 100 out"),
        task("T-103", spend="$0.05, 500 in, 50 out"),  # a failed attempt so far
        task("T-104"),
    ]
    text = plan_of(
        [one_phase(*tasks)],
        total_tasks="4",
        spend_total="$0.45, 4500 in, 450 out",
        spend_day="2026-12-01, $0.05, 500 in, 50 out, 1 tick",
        budget_per_day="2",
    )
    project = make_project(tmp_path, text)

    result = project.memento("status", "--json")

    spend = json.loads(result.stdout)["spend"]
    assert spend["total"] == {"usd": 0.45, "tokens_in": 4500, "tokens_out": 450}
    assert spend["phases"] == [
        {"name": "Phase 1", "usd": 0.45, "tokens_in": 4500, "tokens_out": 450}
    ]
    assert spend["per_completed_task"] == {
        "usd": 0.2,
        "tokens_in": 2000,
        "tokens_out": 200,
        "sample": 2,
    }
    # the average × the tasks left (T-103 and T-104), with the sample it rests on
    assert spend["forecast"] == {
        "usd": 0.4,
        "tokens_in": 4000,
        "tokens_out": 400,
        "remaining_tasks": 2,
        "sample": 2,
    }
    assert spend["budgets"]["budget_per_day"] == 2.0
    assert set(spend["today"]) == {"date", "usd", "tokens_in", "tokens_out", "ticks"}
    assert "total $0.45, 4,950 tokens" in project.memento("status").stdout


# -- budgets -------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_day_over_its_budget_runs_no_task_and_says_when_it_resets(tmp_path: Path) -> None:
    text = plan_of(
        [one_phase()],
        budget_per_day="0.50",
        spend_day="2026-12-01, $0.5205, 4000 in, 300 out, 3 ticks",
        spend_total="$3.00, 9000 in, 900 out",
    )
    project = make_project(tmp_path, text)
    project.script({"T-101": [*good("T-101"), claude_report(0.01, 100, 10)]})
    head = project.head()

    result = tick_at(project, EVENING)

    assert result.status == "over_budget"
    assert result.tasks == ()
    assert "$0.5205 spent today" in result.message
    assert "resets at 2026-12-02T00:00:00Z" in result.message
    line = text.splitlines().index("- budget_per_day: 0.50") + 1
    assert f"raise budget_per_day (docs/MASTER_PLAN.md:{line})" in result.message
    assert project.head() == head and project.marker("T-101") == " "
    assert meta(project, "tick_mode") == "auto"  # nothing to resume: the day resets
    assert project.agent_runs() == {}

    # after midnight UTC the day's counter starts again, and the task runs
    assert tick_at(project, EVENING + timedelta(minutes=15)).status == "ran"
    assert project.marker("T-101") == "x"
    assert meta(project, "spend_day") == "2026-12-02, $0.01, 100 in, 10 out, 1 tick"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("key", "value", "said"),
    [("tokens_per_day", "4000", "4300 tokens used today"), ("max_ticks_per_day", "3", "3 ticks")],
)
def test_tokens_and_ticks_have_daily_budgets_too(
    tmp_path: Path, key: str, value: str, said: str
) -> None:
    day = "2026-12-01, 4000 in, 300 out, 3 ticks"
    project = make_project(tmp_path, plan_of([one_phase()], **{key: value, "spend_day": day}))

    result = tick_at(project, EVENING)

    assert result.status == "over_budget"
    assert said in result.message and f"raise {key}" in result.message


@pytest.mark.timeout(120)
def test_a_task_over_its_own_budget_ends_blocked_over_budget(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], budget_per_task="0.03"))
    project.script({"T-101": [*wrong("T-101"), claude_report(0.02, 1000, 100)]})

    tick_at(project, EVENING)
    assert project.marker("T-101") == " "  # $0.02 of $0.03: it may try again
    result = tick_at(project, EVENING + timedelta(minutes=5))

    assert project.marker("T-101") == "!"  # retry 2 of 3, but $0.04 spent
    assert result.tasks[0].outcome == "blocked"
    assert "over budget" in result.tasks[0].message
    entry = project.entries()[-1]
    assert (
        "over budget: T-101 has cost $0.04, budget_per_task is $0.03"
        in entry.fields["Error Analysis"]
    )
    assert task_spend(project, "T-101") == "$0.04, 2000 in, 200 out"


# -- a cap the agent keeps itself ----------------------------------------------------------

ARGV_CLAUDE = """#!{python}
import json, os, sys
json.dump(sys.argv[1:], open(os.environ["ARGV_FILE"], "w"))
os.makedirs("src", exist_ok=True)
open("src/a.py", "w").write("A = 1\\n")
print(json.dumps({{"type": "result", "total_cost_usd": 0.01, "is_error": False}}))
"""


@pytest.mark.timeout(120)
def test_claude_gets_what_is_left_of_the_days_and_the_tasks_budget(tmp_path: Path) -> None:
    import os
    import sys

    text = plan_of(
        [one_phase(task("T-101", spend="$0.70, 10 in, 1 out"))],
        budget_per_day="1.00",
        budget_per_task="1.50",
        spend_day="2026-12-01, $0.40, 10 in, 1 out, 1 tick",
    )
    project = make_project(tmp_path, text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(ARGV_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    argv_file = project.outside / "argv.json"
    env = project.env({"PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGV_FILE": str(argv_file)})
    config = TickConfig(agent="claude", worker_id="w1")

    run_tick(Layout(project.root), config, clock=lambda: EVENING, environ=env, say=print)

    argv = json.loads(argv_file.read_text())
    # $1.00 - $0.40 of the day is less than $1.50 - $0.70 of the task
    assert argv[argv.index("--max-budget-usd") + 1] == "0.60"
    assert argv.index("--max-budget-usd") < argv.index("--disallowedTools")
    assert project.marker("T-101") == "x"


@pytest.mark.timeout(60)
def test_status_sums_the_spend_per_model_the_entries_name(tmp_path: Path) -> None:
    from memento_gh.formats import status_log

    def entry(tick: int, cost: dict[str, object]) -> str:
        return status_log.render_entry(
            status_log.TickEntry(
                time=EVENING, tick=tick, task="T-101", outcome="failed", duration=1, cost=cost
            )
        )

    runs = [
        {"cost_usd": 0.5, "input_tokens": 1000, "output_tokens": 100, "model": "opus"},
        {"cost_usd": 0.25, "input_tokens": 500, "output_tokens": 50, "model": "opus"},
        {"cost_usd": 0.01, "input_tokens": 300, "output_tokens": 30, "model": "haiku"},
        {"input_tokens": 7, "output_tokens": 3},  # an agent that names no model
    ]
    log = "# TICK STATUS LOG\n"
    for number, cost in enumerate(runs, start=1):
        log = status_log.append(log, entry(number, cost))
    project = make_project(tmp_path, files={"docs/TICK_STATUS.md": log})

    spend = json.loads(project.memento("status", "--json").stdout)["spend"]

    assert spend["models"] == [
        {"model": "opus", "usd": 0.75, "tokens_in": 1500, "tokens_out": 150, "runs": 2},
        {"model": "haiku", "usd": 0.01, "tokens_in": 300, "tokens_out": 30, "runs": 1},
        {"model": None, "usd": None, "tokens_in": 7, "tokens_out": 3, "runs": 1},
    ]


@pytest.mark.timeout(120)
def test_a_deferred_runs_spend_counts_the_provider_calls_were_made(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    limited = {
        "is_error": True,
        "api_error_status": 429,
        "result": "API Error: Request rejected (429) · rate limit. Please try again later.",
        "total_cost_usd": 0.03,
        "modelUsage": {"claude-opus-4-8": {"inputTokens": 900, "outputTokens": 20}},
    }
    project.script({"T-101": [{"claude_result": limited}, {"exit": 1}]})

    result = tick_at(project, EVENING)

    assert result.tasks[0].outcome == "deferred"
    assert project.marker("T-101") == " "
    assert task_spend(project, "T-101") == "$0.03, 900 in, 20 out"
    assert meta(project, "spend_day") == "2026-12-01, $0.03, 900 in, 20 out, 1 tick"
