"""``pick``: given this plan, this task runs next, or nothing runs and this is why.

Seed §4.1 (pick algorithm) and §7.2 (pipeline blocked), plus task-level ``depends``.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from memento_gh.plan.model import Plan
from memento_gh.plan.picking import (
    ALL_COMPLETE,
    ALL_COMPLETE_LINE,
    NO_TASKS,
    PAUSED,
    PIPELINE_BLOCKED,
    READY,
    RETRIES_EXHAUSTED,
    RUNNING_ONLY,
    STOPPED,
    WAITING,
    pick,
)
from memento_gh.plan.scanner import parse
from testing.plans import DEFAULT_FIELDS, DEFAULT_META, phase_block, plan_text, task_block


def task(
    task_id: str,
    marker: str = " ",
    retries: int = 0,
    depends: str | None = None,
    claimed: str | None = None,
) -> str:
    fields = {**DEFAULT_FIELDS, "retries": str(retries)}
    if depends is not None:
        fields["depends"] = f"[{depends}]"
    if claimed is not None:
        fields["claimed"] = claimed
    return task_block(task_id, marker, fields=fields)


def phase(number: int, *tasks: str, parallel: bool | None = True, depends: str = "none") -> str:
    numbers = [] if depends == "none" else [int(n) for n in depends.replace("Phase", "").split(",")]
    return phase_block(number, f"Step {number}", tasks, parallel=parallel, depends=numbers)


def plan(*phases: str, mode: str = "auto", max_retries: int = 3) -> Plan:
    meta = {**DEFAULT_META, "tick_mode": mode, "max_retries": str(max_retries)}
    parsed = parse(plan_text(phases, meta=meta))
    assert not parsed.problems, parsed.problems  # the fixture itself must be a clean plan
    return parsed


RUNNING_CLAIM = "2025-01-15T14:35:00Z runner-1"


class Case(NamedTuple):
    plan: Plan
    task: str | None
    reason: str
    skip: tuple[str, ...] = ()


PICKS = {
    "the first pending task in phase order": Case(
        plan(phase(1, task("T-101"), task("T-102")), phase(2, task("T-201"))), "T-101", READY
    ),
    "done, blocked, skipped and running tasks are passed over": Case(
        plan(
            phase(
                1,
                task("T-101", "x"),
                task("T-102", "!", retries=3),
                task("T-103", "-"),
                task("T-104", "~", claimed=RUNNING_CLAIM),
                task("T-105"),
            )
        ),
        "T-105",
        READY,
    ),
    "an uppercase [X] counts as done": Case(
        plan(phase(1, task("T-101", "X"), task("T-102"))), "T-102", READY
    ),
    "a pending task that used all its retries is not picked": Case(
        plan(phase(1, task("T-101", retries=3), task("T-102", retries=2))), "T-102", READY
    ),
    "max_retries comes from Meta": Case(
        plan(phase(1, task("T-101", retries=1), task("T-102")), max_retries=1), "T-102", READY
    ),
    "a phase whose dependency is finished runs": Case(
        plan(
            phase(1, task("T-101", "x"), task("T-102", "-")),
            phase(2, task("T-201"), depends="Phase 1"),
        ),
        "T-201",
        READY,
    ),
    "a dependency with a pending task holds its dependant back": Case(
        plan(
            phase(1, task("T-101", retries=3)),
            phase(2, task("T-201"), depends="Phase 1"),
            phase(3, task("T-301")),
        ),
        "T-301",
        READY,
    ),
    "a dependency with a blocked task holds its dependant back; later phases still run": Case(
        plan(
            phase(1, task("T-101", "!", retries=3), task("T-102", "x")),
            phase(2, task("T-201"), depends="Phase 1"),
            phase(3, task("T-301")),
        ),
        "T-301",
        READY,
    ),
    "a dependency with a running task holds its dependant back": Case(
        plan(
            phase(1, task("T-101", "~", claimed=RUNNING_CLAIM)),
            phase(2, task("T-201"), depends="Phase 1"),
            phase(3, task("T-301")),
        ),
        "T-301",
        READY,
    ),
    "every listed dependency must be finished": Case(
        plan(
            phase(1, task("T-101", "x")),
            phase(2, task("T-201", "!", retries=3), task("T-202", "x")),
            phase(3, task("T-301"), depends="Phase 1, Phase 2"),
            phase(4, task("T-401"), depends="Phase 1"),
        ),
        "T-401",
        READY,
    ),
    "a phase that waits on an empty phase runs": Case(
        plan(phase(1), phase(2, task("T-201"), depends="Phase 1")), "T-201", READY
    ),
    "depends: none runs while earlier phases are unfinished": Case(
        plan(
            phase(1, task("T-101", "!", retries=3)),
            phase(2, task("T-201"), depends="Phase 1"),
            phase(3, task("T-301"), depends="none"),
        ),
        "T-301",
        READY,
    ),
    "earlier phases are scanned first even when a later one has depends: none": Case(
        plan(phase(1, task("T-101")), phase(2, task("T-201"), depends="none")), "T-101", READY
    ),
    "a task waits for the task it depends on": Case(
        plan(phase(1, task("T-101", depends="T-102"), task("T-102"))), "T-102", READY
    ),
    "a task runs once the task it depends on is done": Case(
        plan(phase(1, task("T-101", depends="T-102"), task("T-102", "x"))), "T-101", READY
    ),
    "a task runs once the task it depends on is skipped": Case(
        plan(phase(1, task("T-101", depends="T-102"), task("T-102", "-"))), "T-101", READY
    ),
    "a running dependency is not finished": Case(
        plan(
            phase(
                1,
                task("T-101", depends="T-102"),
                task("T-102", "~", claimed=RUNNING_CLAIM),
                task("T-103"),
            )
        ),
        "T-103",
        READY,
    ),
    "a task may depend on a task of another phase": Case(
        plan(
            phase(1, task("T-101")),
            phase(2, task("T-201", depends="T-101"), task("T-202")),
        ),
        "T-101",
        READY,
    ),
    "a sequential phase with a running task starts nothing else in it": Case(
        plan(
            phase(1, task("T-101", "~", claimed=RUNNING_CLAIM), task("T-102"), parallel=False),
            phase(2, task("T-201")),
        ),
        "T-201",
        READY,
    ),
    "a parallel phase with a running task starts the next one": Case(
        plan(
            phase(1, task("T-101", "~", claimed=RUNNING_CLAIM), task("T-102"), parallel=True),
            phase(2, task("T-201")),
        ),
        "T-102",
        READY,
    ),
    "a phase that does not say parallel runs one task at a time": Case(
        plan(
            phase(1, task("T-101", "~", claimed=RUNNING_CLAIM), task("T-102"), parallel=None),
            phase(2, task("T-201")),
        ),
        "T-201",
        READY,
    ),
    "a sequential phase without a running task picks its first pending task": Case(
        plan(phase(1, task("T-101", "x"), task("T-102"), task("T-103"), parallel=False)),
        "T-102",
        READY,
    ),
    "skip passes over the named tasks": Case(
        plan(phase(1, task("T-101"), task("T-102")), phase(2, task("T-201"))),
        "T-201",
        READY,
        skip=("T-101", "T-102"),
    ),
    "skip of an unknown ID changes nothing": Case(
        plan(phase(1, task("T-101"))), "T-101", READY, skip=("T-999",)
    ),
}


@pytest.mark.parametrize("case", PICKS.values(), ids=PICKS.keys())
def test_pick_chooses(case: Case) -> None:
    decision = pick(case.plan, skip=case.skip)

    assert decision.task is not None, decision
    assert (decision.task.id, decision.reason) == (case.task, case.reason)
    where = case.plan.phase_of(decision.task)
    assert decision.message == f"{case.task} is next ({where.name}: {where.title})"


class Nothing(NamedTuple):
    plan: Plan
    reason: str
    message: str
    skip: tuple[str, ...] = ()


NOTHING = {
    "paused": Nothing(
        plan(phase(1, task("T-101")), mode="paused"),
        PAUSED,
        "tick_mode is paused; `memento resume` sets it to auto",
    ),
    "stopped": Nothing(
        plan(phase(1, task("T-101")), mode="stopped"),
        STOPPED,
        "tick_mode is stopped; `memento resume` sets it to auto",
    ),
    "an empty plan": Nothing(plan(), NO_TASKS, "the plan has no tasks yet; add some under a phase"),
    "phases without tasks": Nothing(
        plan(phase(1), phase(2, depends="Phase 1")),
        NO_TASKS,
        "the plan has no tasks yet; add some under a phase",
    ),
    "all done or skipped": Nothing(
        plan(phase(1, task("T-101", "x"), task("T-102", "-")), phase(2, task("T-201", "x"))),
        ALL_COMPLETE,
        "🎉 ALL TASKS COMPLETE",
    ),
    "only blocked tasks left in the last phase": Nothing(
        plan(
            phase(1, task("T-101", "x")),
            phase(2, task("T-201", "!", retries=3), task("T-202", "x"), depends="Phase 1"),
        ),
        PIPELINE_BLOCKED,
        "⚠️ PIPELINE BLOCKED — Phase 2 has unresolved [!] tasks (T-201)",
    ),
    "a blocked phase holds back the phase after it (seed §7.2)": Nothing(
        plan(
            phase(1, task("T-101", "x")),
            phase(2, task("T-201", "!", retries=3), task("T-202", "x"), depends="Phase 1"),
            phase(3, task("T-301"), depends="Phase 2"),
        ),
        PIPELINE_BLOCKED,
        "⚠️ PIPELINE BLOCKED — Phase 2 has unresolved [!] tasks (T-201)",
    ),
    "blocked tasks in two phases are named under their own phase": Nothing(
        plan(
            phase(1, task("T-101", "!", retries=3), task("T-102", "!", retries=3)),
            phase(2, task("T-201", "x")),
            phase(3, task("T-301", "!", retries=3), task("T-302"), depends="Phase 1"),
        ),
        PIPELINE_BLOCKED,
        "⚠️ PIPELINE BLOCKED — Phase 1 has unresolved [!] tasks (T-101, T-102); "
        "Phase 3 has unresolved [!] tasks (T-301)",
    ),
    "a task waiting on a blocked task": Nothing(
        plan(phase(1, task("T-101", "!", retries=3), task("T-102", depends="T-101"))),
        PIPELINE_BLOCKED,
        "⚠️ PIPELINE BLOCKED — Phase 1 has unresolved [!] tasks (T-101)",
    ),
    "retries used up without a blocked marker": Nothing(
        plan(phase(1, task("T-101", "x"), task("T-102", retries=3))),
        RETRIES_EXHAUSTED,
        "T-102 used all 3 retries; `memento retry T-102` lets it run again",
    ),
    "retries used up by several tasks": Nothing(
        plan(phase(1, task("T-101", retries=2), task("T-102", retries=5)), max_retries=2),
        RETRIES_EXHAUSTED,
        "T-101, T-102 used all 2 retries; `memento retry T-101` lets it run again",
    ),
    "the only pending phase waits on a phase whose tasks are all claimed": Nothing(
        plan(
            phase(
                1,
                task("T-101", "~", claimed=RUNNING_CLAIM),
                task("T-102", "~", claimed="2025-01-15T14:36:00Z runner-2"),
            ),
            phase(2, task("T-201"), depends="Phase 1"),
        ),
        RUNNING_ONLY,
        "T-101, T-102 running; nothing else can start now",
    ),
    "a sequential phase whose one runner is busy": Nothing(
        plan(phase(1, task("T-101", "~", claimed=RUNNING_CLAIM), task("T-102"), parallel=False)),
        RUNNING_ONLY,
        "T-101 running; nothing else can start now",
    ),
    "running wins over blocked: the run may still free the way": Nothing(
        plan(
            phase(1, task("T-101", "!", retries=3)),
            phase(2, task("T-201", "~", claimed=RUNNING_CLAIM), task("T-202"), parallel=False),
        ),
        RUNNING_ONLY,
        "T-201 running; nothing else can start now",
    ),
    "every pending task was already tried this tick": Nothing(
        plan(phase(1, task("T-101", "x"), task("T-102", retries=1))),
        WAITING,
        "T-102 already tried this tick",
        skip=("T-102",),
    ),
    "two tasks waiting on each other": Nothing(
        plan(phase(1, task("T-101", depends="T-102"), task("T-102", depends="T-101"))),
        WAITING,
        "T-101 is waiting on T-102",
    ),
    "a deadlock in a phase others wait on is named at its root": Nothing(
        plan(
            phase(1, task("T-101", depends="T-102"), task("T-102", depends="T-101")),
            phase(2, task("T-201"), depends="Phase 1"),
        ),
        WAITING,
        "T-101 is waiting on T-102",
    ),
    "a task and a phase waiting on each other": Nothing(
        plan(
            phase(1, task("T-101", depends="T-201")),
            phase(2, task("T-201"), depends="Phase 1"),
        ),
        WAITING,
        "T-101 is waiting on T-201",
    ),
    "a finished phase that depends on a waiting one is not the one named": Nothing(
        plan(
            phase(1, task("T-101", "x"), depends="Phase 2"),
            phase(2, task("T-201"), depends="Phase 3"),
            phase(3, task("T-301"), depends="Phase 2"),
        ),
        WAITING,
        "Phase 2 is waiting on Phase 3",
    ),
    "two phases waiting on each other": Nothing(
        plan(
            phase(1, task("T-101"), depends="Phase 2"),
            phase(2, task("T-201"), depends="Phase 1"),
        ),
        WAITING,
        "Phase 1 is waiting on Phase 2",
    ),
}


@pytest.mark.parametrize("case", NOTHING.values(), ids=NOTHING.keys())
def test_pick_explains_why_nothing_runs(case: Nothing) -> None:
    decision = pick(case.plan, skip=case.skip)

    assert decision == (None, case.reason, case.message)


def test_all_complete_message_is_the_seeds_line() -> None:
    assert ALL_COMPLETE_LINE == "🎉 ALL TASKS COMPLETE"


@pytest.mark.parametrize("mode", ["paused", "stopped"])
def test_a_paused_or_stopped_plan_picks_nothing_even_when_complete(mode: str) -> None:
    decision = pick(plan(phase(1, task("T-101", "x")), mode=mode))

    assert (decision.task, decision.reason) == (None, mode)
    assert "`memento resume`" in decision.message


def test_pick_walks_a_plan_to_completion_in_order() -> None:
    """Run the seed's example plan tick by tick: each pick is marked done and the next one
    follows, phase dependencies included."""
    order = []
    markers = {"T-101": " ", "T-102": " ", "T-201": " ", "T-202": " ", "T-301": " "}

    def current() -> Plan:
        return plan(
            phase(1, task("T-101", markers["T-101"]), task("T-102", markers["T-102"])),
            phase(
                2,
                task("T-201", markers["T-201"], depends="T-202"),
                task("T-202", markers["T-202"]),
                parallel=False,
                depends="Phase 1",
            ),
            phase(3, task("T-301", markers["T-301"]), depends="Phase 2"),
        )

    for _ in range(len(markers) + 1):
        decision = pick(current())
        if decision.task is None:
            break
        order.append(decision.task.id)
        markers[decision.task.id] = "x"

    assert order == ["T-101", "T-102", "T-202", "T-201", "T-301"]
    assert decision.reason == ALL_COMPLETE
