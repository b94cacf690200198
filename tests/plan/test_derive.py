"""The plan an edit leaves, derived instead of read again, must be exactly what ``parse`` reads.

``derive`` may decline (None: the caller reads the text again), but what it answers must
equal ``parse`` of the edited text in every attribute, down to the order of the fields.
The generated plans hold every shape the scanner knows (fences, comments, odd indentation,
CR/CRLF/mixed endings, a BOM, no final newline); the edits are the editor's own.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memento_gh.plan import derive, editor
from memento_gh.plan.editor import Edit
from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.model import MARKERS, RUNNING, TASK_FIELDS, Plan
from memento_gh.plan.scanner import parse
from testing.plans import SEED_PLAN
from tests.plan.strategies import field_value, meta_value, plans

ATTRIBUTES = (
    "lines",
    "eols",
    "bom",
    "title",
    "meta_line",
    "meta_end",
    "phases",
    "tasks",
    "problems",
    "checkbox_lines",
    "unusual_chunks",
)


def as_read(plan: Plan) -> dict[str, Any]:
    """Everything a plan holds, dict and field order included."""
    found: dict[str, Any] = {name: getattr(plan, name) for name in ATTRIBUTES}
    found["meta"] = list(plan.meta.items())
    found["fields"] = [list(task.fields.items()) for task in plan.tasks]
    return found


@st.composite
def edits(draw: st.DrawFn, plan: Plan) -> list[Edit]:
    """One to four of the editor's edits: a status, a field set or removed, a Meta value."""
    found: list[Edit] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("status", "field", "remove", "meta")))
        task = draw(st.sampled_from(plan.tasks))
        if kind == "status":
            found.append(editor.set_status(plan, task.id, draw(st.sampled_from(sorted(MARKERS)))))
        elif kind == "field":
            key = draw(st.sampled_from(TASK_FIELDS))
            found.append(editor.set_field(plan, task.id, key, draw(field_value(key))))
        elif kind == "remove" and task.fields:
            removed = editor.remove_field(plan, task.id, draw(st.sampled_from(sorted(task.fields))))
            assert removed is not None
            found.append(removed)
        elif kind == "meta" and plan.meta_line is not None:
            key = draw(st.sampled_from(sorted(META_KEYS)))
            found.append(editor.set_meta(plan, key, draw(meta_value(key))))
    return found


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_derived_plan_is_what_parse_reads(data: st.DataObject) -> None:
    plan = parse(data.draw(plans()).text)
    assume(plan.tasks and not plan.problems)
    chosen = data.draw(edits(plan))
    try:
        lines, eols = editor.edit_lines(plan, chosen)
    except ValueError:  # two edits of the same bytes: the editor refuses them
        assume(False)
    text = editor.join_lines(lines, eols, bom=plan.bom)
    assert text == editor.apply(plan, chosen)

    derived = derive.derive(plan, chosen, lines, eols)

    if derived is not None:
        assert as_read(derived) == as_read(parse(text))
    assert as_read(derive.edit(plan, chosen)[1]) == as_read(parse(text))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_claimed_task_is_the_task_parse_reads(data: st.DataObject) -> None:
    plan = parse(data.draw(plans()).text)
    assume(plan.tasks and not plan.problems)
    task = data.draw(st.sampled_from(plan.tasks))
    claim = [
        editor.set_status(plan, task.id, RUNNING),
        editor.set_field(plan, task.id, "claimed", "2025-01-15T14:35:00Z worker-1"),
    ]
    lines, _ = editor.edit_lines(plan, claim)

    claimed = derive.edit_task(plan, task, claim, lines)

    if claimed is not None:
        read = parse(editor.apply(plan, claim)).tasks[plan.tasks.index(task)]
        assert claimed == read
        assert list(claimed.fields.items()) == list(read.fields.items())


# -- the edits a tick makes are derived, not read again --------------------------------------


def bench_plan(tasks: int, counters: str) -> Plan:
    """A plan in the shape `memento init` writes, as benchmarks/bench_tick.py uses."""
    parts = [f"# MASTER_PLAN: Bench\n\n## Meta\n- tick_mode: auto\n{counters}\n"]
    for phase in (1, 2):
        parts.append(f"## Phase {phase}: Part {phase}\n<!-- parallel: false -->\n")
        parts.append("<!-- depends: none -->\n\n")
        for number in range(phase * 100, phase * 100 + tasks):
            parts.append(
                f"- [ ] `T-{number}` [MODULE:core] Step {number}\n"
                f"  - verify: `true`\n  - context_files: [src/step_{number}.py]\n"
                "  - estimate: 1min\n  - retries: 0\n\n"
            )
    return parse("".join(parts))


COUNTERS = "- total_ticks: 4\n- total_tasks: 6\n- completed_tasks: 0\n"


def tick_edits(plan: Plan, task_id: str) -> list[Edit]:
    """A success's bookkeeping: the marker, and the counters (one of them maybe new)."""
    return [
        editor.set_status(plan, task_id, "x"),
        editor.set_meta(plan, "total_ticks", "5"),
        editor.set_meta(plan, "completed_tasks", "1"),
        editor.set_meta(plan, "consecutive_failed_ticks", "0"),
    ]


def test_a_success_is_derived_when_the_counters_exist() -> None:
    plan = bench_plan(3, COUNTERS + "- consecutive_failed_ticks: 2\n")
    chosen = tick_edits(plan, "T-201")
    lines, eols = editor.edit_lines(plan, chosen)

    derived = derive.derive(plan, chosen, lines, eols)

    assert derived is not None
    assert as_read(derived) == as_read(parse(editor.apply(plan, chosen)))
    assert derived.task("T-201") is not None
    assert derived.settings.total_ticks == 5


def test_a_new_meta_line_moves_every_task_below_it() -> None:
    plan = bench_plan(3, COUNTERS)
    chosen = tick_edits(plan, "T-101")
    lines, eols = editor.edit_lines(plan, chosen)

    derived = derive.derive(plan, chosen, lines, eols)

    assert derived is not None
    assert [task.line for task in derived.tasks] == [task.line + 1 for task in plan.tasks]
    assert as_read(derived) == as_read(parse(editor.apply(plan, chosen)))


def test_a_claim_and_its_release_are_derived() -> None:
    plan = bench_plan(3, COUNTERS)
    task = plan.tasks[4]
    claim = [
        editor.set_status(plan, task.id, RUNNING),
        editor.set_field(plan, task.id, "claimed", "2025-01-15T14:35:00Z w"),
    ]
    lines, eols = editor.edit_lines(plan, claim)
    claimed_plan = derive.derive(plan, claim, lines, eols)
    assert claimed_plan is not None
    assert derive.edit_task(plan, task, claim, lines) == claimed_plan.tasks[4]

    released = editor.remove_field(claimed_plan, task.id, "claimed")
    assert released is not None
    back = [editor.set_status(claimed_plan, task.id, " "), released]
    lines, eols = editor.edit_lines(claimed_plan, back)
    derived = derive.derive(claimed_plan, back, lines, eols)

    assert derived is not None
    assert as_read(derived) == as_read(plan)


def test_a_plan_with_problems_is_read_again() -> None:
    plan = parse(SEED_PLAN + "\n- [?] `T-999` odd marker\n")
    assert plan.problems
    chosen = [editor.set_meta(plan, "total_ticks", "9")]
    lines, eols = editor.edit_lines(plan, chosen)

    assert derive.derive(plan, chosen, lines, eols) is None
    assert as_read(derive.edit(plan, chosen)[1]) == as_read(parse(editor.apply(plan, chosen)))


def success_edits(plan: Plan, task_id: str) -> list[Edit]:
    """What a tick writes when a task succeeds (engine/tick/steps.py ``_success_edits``)."""
    found = [editor.set_status(plan, task_id, "x")]
    removed = editor.remove_field(plan, task_id, "claimed")
    if removed is not None:
        found.append(removed)
    done = sum(1 for task in plan.tasks if task.marker == "x" or task.id == task_id)
    found += [editor.set_meta(plan, "completed_tasks", str(done))]
    found += [editor.set_meta(plan, "total_ticks", "8")]
    return found


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_success_written_over_the_unclaimed_plan_gives_the_same_bytes(
    data: st.DataObject,
) -> None:
    """The tick computes a success's edits on the plan before its claim (which it has read),
    not on the claimed plan (which it has not): the claim's line is removed and its marker
    replaced either way, so both must give the same text."""
    plan = parse(data.draw(plans()).text)
    assume(plan.tasks and not plan.problems and plan.meta_line is not None)
    task = data.draw(st.sampled_from(plan.tasks))
    # Not a task that ends the file without a line ending: the claim's new last line gives
    # the task line one, and removing the claim removes exactly the claim's bytes
    # (test_editor's test_deleting_the_last_line_of_a_file_without_final_newline), so
    # there the two ways differ by that one line ending, both valid.
    assume(task.end < len(plan.lines) - 1 or plan.eols[task.end])
    claim = [
        editor.set_status(plan, task.id, RUNNING),
        editor.set_field(plan, task.id, "claimed", "2025-01-15T14:35:00Z worker-1"),
    ]
    claimed = parse(editor.apply(plan, claim))
    assume(not claimed.problems)

    via_claim = editor.apply(claimed, success_edits(claimed, task.id))
    direct = editor.apply(plan, success_edits(plan, task.id))

    assert direct == via_claim
