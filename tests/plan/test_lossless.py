"""Properties of the plan reader and editor over generated plans.

Given any plan the generator writes (Meta, phases, tasks with all five markers, fields in
any order, emoji and CJK text, trailing spaces, tabs, LF/CRLF/CR/mixed endings, a BOM or
none, no final newline, prose, code fences and HTML comments full of task-looking lines):
reading it and writing it back changes no byte, the reader finds exactly the real tasks,
and one edit changes exactly the bytes it names.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memento_gh.plan import editor
from memento_gh.plan.crosscheck import crosscheck
from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.model import MARKERS, TASK_FIELDS, Plan
from memento_gh.plan.scanner import parse
from tests.plan.strategies import (
    GeneratedPlan,
    TaskSpec,
    field_value,
    meta_value,
    plans,
)

T = TypeVar("T")
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- what the reader should find ------------------------------------------------------------


def tasks_read(plan: Plan, with_lines: bool = True) -> list[tuple[Any, ...]]:
    found = []
    for task in plan.tasks:
        fields = {
            key: (field.value, field.line, field.start, field.end) if with_lines else field.value
            for key, field in task.fields.items()
        }
        where = (task.line, task.marker_col) if with_lines else ()
        found.append(
            (task.id, task.marker, task.module, task.description, task.phase, *where, fields)
        )
    return found


def tasks_written(generated: GeneratedPlan, with_lines: bool = True) -> list[tuple[Any, ...]]:
    written = []
    for task in generated.tasks:
        fields = {
            key: (
                (field.value, field.line, len(field.prefix), len(field.prefix) + len(field.value))
                if with_lines
                else field.value
            )
            for key, field in task.fields.items()
        }
        where = (task.line, task.box_col) if with_lines else ()
        written.append(
            (task.id, task.marker, task.module, task.description, task.phase, *where, fields)
        )
    return written


def meta_read(plan: Plan) -> dict[str, str]:
    return {key: entry.value for key, entry in plan.meta.items()}


def meta_written(generated: GeneratedPlan) -> dict[str, str]:
    return {key: entry.value for key, entry in generated.meta.items()}


def phases_read(plan: Plan) -> list[tuple[Any, ...]]:
    return [
        (phase.number, phase.title, phase.parallel, phase.depends, phase.task_ids)
        for phase in plan.phases
    ]


def phases_written(generated: GeneratedPlan) -> list[tuple[Any, ...]]:
    return [
        (phase.number, phase.title, phase.parallel, phase.depends, phase.task_ids)
        for phase in generated.phases
    ]


def assert_reads_back(generated: GeneratedPlan) -> Plan:
    text = generated.text
    plan = parse(text)
    assert plan.text() == text
    assert plan.lines == generated.lines
    assert plan.eols == generated.eols
    assert plan.bom == generated.bom
    assert plan.problems == ()
    assert plan.title == generated.title
    assert plan.meta_line == generated.meta_line
    assert meta_read(plan) == meta_written(generated)
    for key, entry in generated.meta.items():
        found = plan.meta[key]
        assert (found.line, found.start, found.end) == (
            entry.line,
            len(entry.prefix),
            len(entry.prefix) + len(entry.value),
        )
    assert phases_read(plan) == phases_written(generated)
    assert [phase.line for phase in plan.phases] == [phase.line for phase in generated.phases]
    assert tasks_read(plan) == tasks_written(generated)
    return plan


# -- round trip -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_corpus_of_over_2000_generated_lines_reads_back_byte_for_byte() -> None:
    """Each generated plan reads back unchanged, with exactly its real tasks; the plans
    together hold at least 2,000 lines."""
    lines_checked: list[int] = []

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plans(max_phases=6))
    def check(generated: GeneratedPlan) -> None:
        assert_reads_back(generated)
        lines_checked.append(len(generated.lines))

    check()
    assert sum(lines_checked) >= 2000, f"{sum(lines_checked)} lines in {len(lines_checked)} plans"


@pytest.mark.slow
@SETTINGS
@given(plans())
def test_markdown_agrees_with_the_scanner_on_generated_plans(generated: GeneratedPlan) -> None:
    assert crosscheck(parse(generated.text)) == []


# -- single edits ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    kind: str  # status | set-field | add-field | remove-field | set-meta | add-meta
    key: str
    value: str
    task: TaskSpec | None = None


def often(preferred: list[T], everything: list[T]) -> st.SearchStrategy[T]:
    """One of ``everything``, drawn from ``preferred`` half of the time (if there are any)."""
    if not preferred:
        return st.sampled_from(everything)
    return st.sampled_from(preferred) | st.sampled_from(everything)


@st.composite
def changes(draw: st.DrawFn, generated: GeneratedPlan) -> Change:
    """One edit of a generated plan. Empty values are picked more often: filling one is
    where an edit is most likely to write an unreadable line."""
    kinds = ["set-meta", "add-meta"]
    if generated.tasks:
        kinds += ["status", "add-field", "set-field", "set-field", "remove-field"]
    kind = draw(st.sampled_from(kinds))
    if kind == "set-meta" and generated.meta:
        empty_keys = [key for key, entry in generated.meta.items() if not entry.value]
        key = draw(often(empty_keys, list(generated.meta)))
        return Change("set-meta", key, draw(meta_value(key)))
    if kind.endswith("-meta"):
        key = draw(st.sampled_from([key for key in META_KEYS if key not in generated.meta]))
        return Change("add-meta", key, draw(meta_value(key)))
    fields = [(task, key) for task in generated.tasks for key in task.fields]
    missing = [
        (task, key) for task in generated.tasks for key in TASK_FIELDS if key not in task.fields
    ]
    if kind in ("set-field", "remove-field") and not fields:
        kind = "add-field"
    if kind == "add-field" and not missing:
        kind = "status"
    if kind == "status":
        task = draw(st.sampled_from(generated.tasks))
        return Change("status", "", draw(st.sampled_from(sorted(MARKERS))), task)
    if kind == "add-field":
        task, key = draw(st.sampled_from(missing))
        return Change("add-field", key, draw(field_value(key)), task)
    empty_fields = [(task, key) for task, key in fields if not task.fields[key].value]
    task, key = draw(often(empty_fields, fields))
    if kind == "remove-field":
        return Change("remove-field", key, "", task)
    return Change("set-field", key, draw(field_value(key)), task)


def make_edit(plan: Plan, change: Change) -> editor.Edit | None:
    task_id = change.task.id if change.task else ""
    if change.kind == "status":
        return editor.set_status(plan, task_id, change.value)
    if change.kind in ("set-field", "add-field"):
        return editor.set_field(plan, task_id, change.key, change.value)
    if change.kind == "remove-field":
        return editor.remove_field(plan, task_id, change.key)
    return editor.set_meta(plan, change.key, change.value)


def most_common_endings(eols: tuple[str, ...]) -> set[str]:
    counts = Counter(eol for eol in eols if eol)
    if not counts:
        return {"\n"}
    top = max(counts.values())
    return {eol for eol, count in counts.items() if count == top}


def expected_lines(generated: GeneratedPlan, change: Change) -> tuple[list[str], list[str | None]]:
    """The lines and endings after ``change``, worked out from what the generator wrote."""
    lines = list(generated.lines)
    eols: list[str | None] = list(generated.eols)
    task = change.task
    if change.kind == "status":
        assert task is not None
        line = lines[task.line]
        lines[task.line] = line[: task.box_col] + change.value + line[task.box_col + 1 :]
    elif change.kind == "set-field":
        assert task is not None
        found = task.fields[change.key]
        lines[found.line] = found.with_value(change.value)
    elif change.kind == "remove-field":
        assert task is not None
        del lines[task.fields[change.key].line]
        del eols[task.fields[change.key].line]
    elif change.kind == "set-meta":
        entry = generated.meta[change.key]
        lines[entry.line] = entry.with_value(change.value)
    else:
        if change.kind == "add-field":
            assert task is not None
            after = task.last_line
            bullet = task.field_bullet if task.fields else "  - "
        else:
            last = max(generated.meta.values(), key=lambda entry: entry.line, default=None)
            after = generated.meta_line if last is None else last.line
            bullet = "- " if last is None else last.prefix[: -len(last.prefix.lstrip("- "))]
        lines.insert(after + 1, f"{bullet}{change.key}: {change.value}")
        eols.insert(after + 1, eols[after])
        if not eols[after]:
            eols[after] = None  # the last line gains one of the file's usual endings
    return lines, eols


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_one_edit_changes_only_the_line_it_targets(data: st.DataObject) -> None:
    generated = data.draw(plans())
    change = data.draw(changes(generated))
    plan = parse(generated.text)
    edit = make_edit(plan, change)
    assert edit is not None

    new_text = editor.apply(plan, [edit])

    after = parse(new_text)
    lines, eols = expected_lines(generated, change)
    assert list(after.lines) == lines
    assert after.bom == generated.bom
    for number, eol in enumerate(eols):
        if eol is None:
            assert after.eols[number] in most_common_endings(generated.eols)
            eols[number] = after.eols[number]
    assert list(after.eols) == eols
    assert after.problems == ()
    assert phases_read(after) == phases_written(generated)
    expected_tasks = tasks_written(generated, with_lines=False)
    expected_meta = meta_written(generated)
    if change.kind in ("set-meta", "add-meta"):
        expected_meta[change.key] = change.value
    else:
        assert change.task is not None
        position = generated.tasks.index(change.task)
        task_id, marker, module, description, phase, fields = expected_tasks[position]
        if change.kind == "status":
            marker = change.value
        elif change.kind == "remove-field":
            fields = {key: value for key, value in fields.items() if key != change.key}
        else:
            fields = {**fields, change.key: change.value}
        expected_tasks[position] = (task_id, marker, module, description, phase, fields)
    assert tasks_read(after, with_lines=False) == expected_tasks
    assert meta_read(after) == expected_meta
