"""``summary``: the documented JSON of ``memento status --json``, shape and numbers."""

from __future__ import annotations

import json

from memento_gh.plan.picking import pick
from memento_gh.plan.progress import SCHEMA_VERSION, next_summary, summary
from memento_gh.plan.scanner import parse
from testing.plans import (
    DEFAULT_FIELDS,
    DEFAULT_META,
    SEED_PLAN,
    phase_block,
    plan_text,
    task_block,
)

TOP_KEYS = {
    "schema",
    "plan",
    "title",
    "mode",
    "total",
    "completed",
    "skipped",
    "blocked",
    "running",
    "pending",
    "ticks",
    "max_retries",
    "errors",
    "phases",
    "tasks",
    "next",
}
PHASE_KEYS = {
    "name",
    "number",
    "title",
    "done",
    "skipped",
    "total",
    "blocked",
    "running",
    "parallel",
    "depends",
}
TASK_KEYS = {
    "id",
    "status",
    "retries",
    "phase",
    "module",
    "description",
    "depends",
    "claimed",
    "line",
}
CLAIM_KEYS = {"at", "worker"}
NEXT_KEYS = {"task", "reason", "message"}


def fields(**extra: str) -> dict[str, str]:
    return {**DEFAULT_FIELDS, **extra}


MIXED = plan_text(
    [
        phase_block(
            1,
            "Foundation",
            [
                task_block("T-101", "x", "database", "Setup schema"),
                task_block("T-102", "-", "auth", "Old login", fields=fields(retries="1")),
                task_block("T-103", "!", "auth", "JWT tokens", fields=fields(retries="3")),
            ],
        ),
        phase_block(
            2,
            "Integration",
            [
                task_block(
                    "T-201",
                    "~",
                    "api",
                    "Wire the routes",
                    fields=fields(claimed="2025-01-15T16:35:00+02:00 runner-7"),
                ),
                task_block(
                    "T-202",
                    " ",
                    "api",
                    "Rate limits",
                    fields=fields(retries="1", depends="[T-201]"),
                ),
            ],
            parallel=False,
            depends=[1],
        ),
        phase_block(
            3,
            "Polish",
            [task_block("T-301", module=None, description="Write the docs")],
            parallel=None,
            depends=[1, 2],
        ),
    ],
    meta={**DEFAULT_META, "tick_mode": "paused", "max_retries": "3", "total_ticks": "12"},
    title="Shop",
)


def line_of(text: str, task_id: str) -> int:
    """1-based line of a task, found independently of the scanner."""
    lines = text.splitlines()
    return next(number for number, line in enumerate(lines, 1) if f"`{task_id}`" in line)


def test_summary_of_a_plan_in_every_state() -> None:
    data = summary(parse(MIXED), "docs/MASTER_PLAN.md", errors=2)

    assert data == {
        "schema": 1,
        "plan": "docs/MASTER_PLAN.md",
        "title": "MASTER_PLAN: Shop",
        "mode": "paused",
        "total": 6,
        "completed": 1,
        "skipped": 1,
        "blocked": 1,
        "running": 1,
        "pending": 2,
        "ticks": 12,
        "max_retries": 3,
        "errors": 2,
        "phases": [
            {
                "name": "Phase 1",
                "number": 1,
                "title": "Foundation",
                "done": 2,
                "skipped": 1,
                "total": 3,
                "blocked": 1,
                "running": 0,
                "parallel": True,
                "depends": [],
            },
            {
                "name": "Phase 2",
                "number": 2,
                "title": "Integration",
                "done": 0,
                "skipped": 0,
                "total": 2,
                "blocked": 0,
                "running": 1,
                "parallel": False,
                "depends": ["Phase 1"],
            },
            {
                "name": "Phase 3",
                "number": 3,
                "title": "Polish",
                "done": 0,
                "skipped": 0,
                "total": 1,
                "blocked": 0,
                "running": 0,
                "parallel": False,
                "depends": ["Phase 1", "Phase 2"],
            },
        ],
        "tasks": [
            {
                "id": "T-101",
                "status": "done",
                "retries": 0,
                "phase": "Phase 1",
                "module": "database",
                "description": "Setup schema",
                "depends": [],
                "claimed": None,
                "line": line_of(MIXED, "T-101"),
            },
            {
                "id": "T-102",
                "status": "skipped",
                "retries": 1,
                "phase": "Phase 1",
                "module": "auth",
                "description": "Old login",
                "depends": [],
                "claimed": None,
                "line": line_of(MIXED, "T-102"),
            },
            {
                "id": "T-103",
                "status": "blocked",
                "retries": 3,
                "phase": "Phase 1",
                "module": "auth",
                "description": "JWT tokens",
                "depends": [],
                "claimed": None,
                "line": line_of(MIXED, "T-103"),
            },
            {
                "id": "T-201",
                "status": "running",
                "retries": 0,
                "phase": "Phase 2",
                "module": "api",
                "description": "Wire the routes",
                "depends": [],
                "claimed": {"at": "2025-01-15T14:35:00Z", "worker": "runner-7"},
                "line": line_of(MIXED, "T-201"),
            },
            {
                "id": "T-202",
                "status": "pending",
                "retries": 1,
                "phase": "Phase 2",
                "module": "api",
                "description": "Rate limits",
                "depends": ["T-201"],
                "claimed": None,
                "line": line_of(MIXED, "T-202"),
            },
            {
                "id": "T-301",
                "status": "pending",
                "retries": 0,
                "phase": "Phase 3",
                "module": None,
                "description": "Write the docs",
                "depends": [],
                "claimed": None,
                "line": line_of(MIXED, "T-301"),
            },
        ],
        "next": {
            "task": None,
            "reason": "paused",
            "message": "tick_mode is paused; `memento resume` sets it to auto",
        },
    }


def test_the_shape_is_exactly_the_documented_one() -> None:
    """A renamed or added key must be a deliberate, documented change (bump ``schema``)."""
    data = summary(parse(MIXED), "docs/MASTER_PLAN.md")

    assert SCHEMA_VERSION == 1
    assert set(data) == TOP_KEYS
    assert data["phases"]
    assert all(set(phase) == PHASE_KEYS for phase in data["phases"])
    assert data["tasks"]
    assert all(set(task) == TASK_KEYS for task in data["tasks"])
    claims = [task["claimed"] for task in data["tasks"] if task["claimed"] is not None]
    assert claims
    assert all(set(claim) == CLAIM_KEYS for claim in claims)
    assert set(data["next"]) == NEXT_KEYS


def test_the_summary_survives_a_json_round_trip() -> None:
    data = summary(parse(MIXED), "docs/MASTER_PLAN.md")

    assert json.loads(json.dumps(data)) == data


def test_counts_add_up_to_the_total() -> None:
    data = summary(parse(MIXED), "p")

    parts = ("completed", "skipped", "blocked", "running", "pending")
    assert sum(data[part] for part in parts) == data["total"]
    assert sum(phase["total"] for phase in data["phases"]) == data["total"]


def test_next_is_the_pick_of_an_auto_plan() -> None:
    plan = parse(SEED_PLAN)

    data = summary(plan, "docs/MASTER_PLAN.md")

    assert data["next"] == {
        "task": "T-101",
        "reason": "ready",
        "message": "T-101 is next (Phase 1: Foundation)",
    }
    assert data["next"] == next_summary(pick(plan))
    assert (data["total"], data["pending"], data["completed"]) == (4, 4, 0)
    assert [phase["depends"] for phase in data["phases"]] == [[], ["Phase 1"], ["Phase 2"]]
    assert [phase["parallel"] for phase in data["phases"]] == [True, False, True]


def test_a_plan_with_nothing_in_it() -> None:
    data = summary(parse(""), "docs/MASTER_PLAN.md")

    assert data["title"] is None
    assert data["mode"] == "auto"
    assert data["max_retries"] == 3
    assert [data[key] for key in ("total", "completed", "pending", "ticks", "errors")] == [0] * 5
    assert (data["phases"], data["tasks"]) == ([], [])
    assert data["next"]["reason"] == "no_tasks"
    assert data["next"]["task"] is None


def test_all_complete_plan() -> None:
    text = plan_text(
        [phase_block(1, "Only", [task_block("T-1", "x"), task_block("T-2", "-")])],
    )

    data = summary(parse(text), "p")

    assert data["phases"][0]["done"] == 2
    assert (data["completed"], data["skipped"], data["pending"]) == (1, 1, 0)
    assert data["next"] == {
        "task": None,
        "reason": "all_complete",
        "message": "🎉 ALL TASKS COMPLETE",
    }
