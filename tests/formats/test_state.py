"""docs/STATE.md: the snapshot a person or an agent resumes from names what runs next."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memento_gh.formats.state import parse_state, render_state
from memento_gh.plan import picking
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing.plans import DEFAULT_META, phase_block, plan_text, task_block

NOW = datetime(2025, 1, 15, 14, 35, tzinfo=timezone.utc)
CLAIM = {"claimed": "2025-01-15T14:30:00Z runner-1"}


def plan_of(
    first: dict[str, str],
    second: dict[str, str] | None = None,
    *,
    mode: str = "auto",
    claims: dict[str, dict[str, str]] | None = None,
) -> Plan:
    """Phase 1 (parallel) and Phase 2 (sequential, after Phase 1); each task by its marker."""

    def tasks(markers: dict[str, str]) -> list[str]:
        return [
            task_block(
                task_id,
                marker,
                module="core",
                description=f"Step {task_id}",
                fields={
                    "verify": "`true`",
                    "context_files": "[src/*]",
                    "retries": "3" if marker == "!" else "0",
                    **(claims or {}).get(task_id, {}),
                },
            )
            for task_id, marker in markers.items()
        ]

    phases = [phase_block(1, "Foundation", tasks(first), parallel=True)]
    if second is not None:
        phases.append(phase_block(2, "Integration", tasks(second), parallel=False, depends=[1]))
    meta = {**DEFAULT_META, "tick_mode": mode, "total_ticks": "7"}
    return parse(plan_text(phases, meta=meta, title="Shop"))


def state_of(plan: Plan, alerts: tuple[str, ...] = ()) -> dict[str, str]:
    text = render_state(plan, now=NOW, last_action="Tick #007: T-101 success", alerts=alerts)
    return parse_state(text)


CASES = {
    "fresh plan": (plan_of({"T-101": " ", "T-102": " "}, {"T-201": " "}), "T-101"),
    "first done": (plan_of({"T-101": "x", "T-102": " "}, {"T-201": " "}), "T-102"),
    "phase 1 done": (plan_of({"T-101": "x", "T-102": "-"}, {"T-201": " ", "T-202": " "}), "T-201"),
    "a blocked task, another to do": (plan_of({"T-101": "!", "T-102": " "}), "T-102"),
}


@pytest.mark.parametrize("name", CASES)
def test_the_snapshot_names_the_task_the_scheduler_picks(name: str) -> None:
    plan, expected = CASES[name]
    state = state_of(plan)

    picked = picking.pick(plan).task
    assert picked is not None
    assert picked.id == expected
    assert state["Next"] == f"{expected} [MODULE:core] Step {expected}"
    assert state["Next action"] == f"the next tick runs {expected} [MODULE:core] Step {expected}"
    assert f"Continue with {expected}: `memento tick` runs it" in render_state(
        plan, now=NOW, last_action=""
    )


@pytest.mark.parametrize(
    ("plan", "next_line", "resume"),
    [
        pytest.param(
            plan_of({"T-101": "x", "T-102": "x"}, {"T-201": "-"}),
            "none — 🎉 ALL TASKS COMPLETE",
            "Nothing to resume: add tasks to docs/MASTER_PLAN.md",
            id="all complete",
        ),
        pytest.param(
            plan_of({"T-101": "x", "T-102": "!"}, {"T-201": " "}),
            "none — ⚠️ PIPELINE BLOCKED — Phase 1 has unresolved [!] tasks (T-102)",
            '`memento note --task T-ID "…"`, then `memento retry T-ID`',
            id="pipeline blocked",
        ),
        pytest.param(
            plan_of({"T-101": " "}, mode="paused"),
            "none — tick_mode is paused; `memento resume` sets it to auto",
            "fix that, then `memento resume`",
            id="paused",
        ),
        pytest.param(
            plan_of({"T-101": "x"}, {"T-201": "~", "T-202": " "}, claims={"T-201": CLAIM}),
            "none — T-201 running; nothing else can start now",
            "Nothing can start now (T-201 running; nothing else can start now)",
            id="a sequential phase busy",
        ),
    ],
)
def test_with_nothing_to_run_the_snapshot_says_why_and_how_to_go_on(
    plan: Plan, next_line: str, resume: str
) -> None:
    assert picking.pick(plan).task is None
    text = render_state(plan, now=NOW, last_action="Tick #007: T-101 success")
    assert parse_state(text)["Next"] == next_line
    assert resume in text


def test_the_snapshot_holds_the_seeds_current_state_fields() -> None:
    plan = plan_of(
        {"T-101": "x", "T-102": "!"}, {"T-201": "~", "T-202": " "}, claims={"T-201": CLAIM}
    )
    state = state_of(plan, alerts=("🔴 CIRCUIT BREAKER TRIGGERED — reason: disk",))

    assert state == {
        "Time": "2025-01-15T14:35:00Z",
        "Plan": "docs/MASTER_PLAN.md (MASTER_PLAN: Shop)",
        "Mode": "auto",
        "Phase": "Phase 2: Integration (0/2 done)",
        "Progress": "1/4 tasks done, 0 skipped, 1 blocked, 1 running; 7 ticks",
        "Spend": "today 0 tokens (0 ticks) · total 0 tokens",
        "Current": "T-201 [MODULE:core] Step T-201 (claimed 2025-01-15T14:30:00Z by runner-1)",
        "Next": "none — T-201 running; nothing else can start now",
        "Last action": "Tick #007: T-101 success",
        "Next action": "wait for the running task's tick to end",
        "Blockers": "🔴 CIRCUIT BREAKER TRIGGERED — reason: disk; "
        "T-102 is blocked [!] after 3/3 retries",
    }


def test_resume_commands_name_the_plan_folder_when_it_is_not_docs() -> None:
    text = render_state(plan_of({"T-101": " "}), now=NOW, last_action="x", plan_dir="plans/v2")
    assert "`memento --plan-dir plans/v2 status`" in text
    assert "`memento --plan-dir plans/v2 tick` runs it" in text
    assert "The plan is plans/v2/MASTER_PLAN.md; the tick log, newest entry last, is " in text
    assert "lessons are in plans/v2/memory/." in text
    assert parse_state(text)["Plan"] == "plans/v2/MASTER_PLAN.md (MASTER_PLAN: Shop)"


def test_a_plan_without_tasks_asks_for_some() -> None:
    text = render_state(parse(plan_text([], title="Empty")), now=NOW, last_action="init")
    state = parse_state(text)
    assert state["Phase"] == "none"
    assert state["Next action"] == "a person adds tasks to the plan"
    assert "Nothing to resume: add tasks to docs/MASTER_PLAN.md to go on." in text


def test_the_snapshot_is_a_pure_function_of_its_inputs() -> None:
    plan = plan_of({"T-101": " "})
    first = render_state(plan, now=NOW, last_action="a\nb")
    assert first == render_state(plan, now=NOW, last_action="a\nb")
    assert parse_state(first)["Last action"] == "a b"  # one line, whatever it was given
    assert first.startswith("# Current State\n")
    assert first.endswith("\n") and not first.endswith("\n\n")


def test_skipped_tasks_are_counted_apart_from_the_done_ones() -> None:
    plan = plan_of({"T-101": "x", "T-102": "-", "T-103": "x"}, {"T-201": " "})

    state = state_of(plan)

    assert state["Progress"] == "2/4 tasks done, 1 skipped, 0 blocked, 0 running; 7 ticks"
    assert state["Phase"] == "Phase 2: Integration (0/1 done)"
    finished = state_of(plan_of({"T-101": "x", "T-102": "-"}))
    assert finished["Phase"] == "Phase 1: Foundation (1/2 done, 1 skipped)"
