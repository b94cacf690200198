"""The plan's rules (``plan/rules.py``), checked: a pure function from a parsed plan to
problems, each made by the rule it enforces."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from memento_gh.durations import parse_duration
from memento_gh.plan import rules, spend, values
from memento_gh.plan.meta import COUNTER_KEYS, check_meta_value
from memento_gh.plan.model import (
    DONE,
    PENDING,
    REQUIRED_FIELDS,
    RUNNING,
    TASK_FIELDS,
    Phase,
    Plan,
    Problem,
    Task,
)
from memento_gh.plan.risks import risk_problems
from memento_gh.plan.scanner import parse

_KNOWN_FIELDS = frozenset(TASK_FIELDS)
_FIELD_READERS: Mapping[str, Callable[[str], Any]] = {
    "verify": values.parse_code,
    "context_files": values.parse_list,
    "guard_files": values.parse_list,
    "estimate": parse_duration,
    "timeout": parse_duration,
    "retries": values.parse_int,
    "claimed": values.parse_claim,
    "spend": spend.parse_spend,
    "model": values.parse_model,
    "needs_change": values.parse_switch,
}


@functools.lru_cache(maxsize=4)
def parse_once(text: str) -> Plan:
    """The plan's parse, shared by the checks of the plan and of the notes (which need its
    task IDs): a 10,000-task plan takes a good part of validate's time to read."""
    return parse(text)


def check_plan(text: str, modules: Collection[str] | None) -> tuple[Plan, list[Problem]]:
    """The plan's problems, sorted by line; ``modules`` are the project map's module names
    (None: there is no map, so a task's module is not checked against one)."""
    plan = parse_once(text)
    problems = validate_plan(plan, modules)
    if plan.unusual_chunks:  # only then is there anything for the second reading to check
        from memento_gh.plan.crosscheck import crosscheck

        problems += crosscheck(plan)
    return plan, sorted(problems, key=lambda problem: problem.line)


def validate_plan(plan: Plan, modules: Collection[str] | None = None) -> list[Problem]:
    """Every problem of the plan; ``modules`` are the names PROJECT_MAP.md registers
    (None when there is no map to check against)."""
    problems = list(plan.problems)
    problems += _meta_problems(plan)
    problems += _phase_problems(plan)
    problems += _task_problems(plan, modules)
    problems += _cycle_problems(plan)
    problems += counter_problems(plan)
    problems += risk_problems(plan)
    return sorted(problems, key=lambda problem: problem.line)


def _meta_problems(plan: Plan) -> Iterator[Problem]:
    if plan.meta_line is None:
        yield rules.META_SECTION.problem(
            1, "the plan has no '## Meta' section; add one (see `memento init`)"
        )
        return
    for entry in plan.meta.values():
        message = check_meta_value(entry.key, entry.value)
        if message:
            yield rules.META_VALUES.problem(entry.line + 1, message)


def _phase_problems(plan: Plan) -> Iterator[Problem]:
    numbers = {phase.number for phase in plan.phases}
    for phase in plan.phases:
        if phase.depends_line is None:
            yield rules.PHASE_DEPENDS_LINE.problem(
                phase.line + 1,
                f"{phase.name} has no '<!-- depends: ... -->' line, so it waits on no other "
                "phase; add '<!-- depends: none -->' to say so",
            )
        for needed in phase.depends or ():
            if needed not in numbers:
                line = phase.depends_line if phase.depends_line is not None else phase.line
                yield rules.PHASE_DEPENDS_EXIST.problem(
                    line + 1, f"{phase.name} depends on Phase {needed}, which does not exist"
                )


def _task_problems(plan: Plan, modules: Collection[str] | None) -> list[Problem]:
    # One pass over the tasks, lists rather than generators, and shortcuts for the common
    # value shapes (in _value_problems): `memento validate` and every tick pay for it on the
    # whole plan (a 10,000-task plan holds 50,000 values).
    found: list[Problem] = []
    seen: dict[str, Task] = {}
    max_retries = plan.settings.max_retries
    for task in plan.tasks:
        first = seen.setdefault(task.id, task)
        if first is not task:
            found.append(_duplicate_id(task, first))
        fields = task.fields
        if "verify" not in fields or "context_files" not in fields:
            found += _missing_fields(task)
        found += _value_problems(task)
        if "depends" in fields or "claimed" in fields:
            found += _dependency_and_claim_problems(plan, task)
        module = task.module
        if not module or (modules is not None and module not in modules):
            found += _module_problems(task, modules)
        marker = task.marker
        if marker == RUNNING and "claimed" not in fields:
            found.append(_unclaimed(task))
        if marker == PENDING and _retries(task) >= max_retries:
            found.append(_out_of_retries(task, max_retries))
    return found


def _duplicate_id(task: Task, first: Task) -> Problem:
    return rules.UNIQUE_IDS.problem(
        task.line + 1,
        f"duplicate task ID {task.id} (first at line {first.line + 1}); give every task its own ID",
    )


def _value_problems(task: Task) -> list[Problem]:
    """The task's values that do not read, and its fields memento does not know."""
    found: list[Problem] = []
    for key, field in task.fields.items():
        raw = field.value
        # The shapes nearly every value has pass without their reader.
        if key == "verify":
            if len(raw) >= 3 and raw[0] == "`" == raw[-1] and raw[1] != "`" and raw[1:-1].strip():
                continue
        elif key in ("context_files", "guard_files"):
            if raw[:1] == "[" and raw[-1:] == "]":
                continue
        elif key == "retries":
            if raw.isascii() and raw.isdigit():
                continue
        elif key not in _KNOWN_FIELDS:
            found.append(_unknown_field(key, field.line))
            continue
        message = _read_value(key, raw)
        if message:
            found.append(rules.VALUES.problem(field.line + 1, f"{task.id} {key}: {message}"))
    return found


def _unclaimed(task: Task) -> Problem:
    return rules.CLAIMED.problem(
        task.line + 1,
        f"{task.id} is [~] running but has no 'claimed: <time> <worker>' line; "
        "set it back to [ ] if no worker runs it",
    )


def _out_of_retries(task: Task, max_retries: int) -> Problem:
    return rules.RETRIES_LEFT.problem(
        task.line + 1,
        f"{task.id} has used {task.retries} of {max_retries} retries and will not "
        "be picked; set retries to 0 to try again, or mark it [!]",
    )


def _retries(task: Task) -> int:
    """``task.retries``, without its general reader for the usual plain number."""
    found = task.fields.get("retries")
    if found is None:
        return 0
    raw = found.value
    return int(raw) if raw.isdigit() and raw.isascii() else task.retries


def _missing_fields(task: Task) -> list[Problem]:
    return [
        rules.REQUIRED.problem(
            task.line + 1,
            f"{task.id} has no '{key}:' line; every task needs one "
            + (
                "(a command whose exit code 0 proves it done)"
                if key == "verify"
                else "(the files the agent may read and change)"
            ),
        )
        for key in REQUIRED_FIELDS
        if key not in task.fields
    ]


def _unknown_field(key: str, line: int) -> Problem:
    import difflib  # only for the message about a mistyped field

    close = difflib.get_close_matches(key, TASK_FIELDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return rules.KNOWN_FIELDS.problem(line + 1, f"unknown task field {key!r}{hint}")


def _dependency_and_claim_problems(plan: Plan, task: Task) -> list[Problem]:
    fields = task.fields
    found: list[Problem] = []
    if "depends" in fields:
        line = fields["depends"].line + 1
        for needed in task.depends:
            if needed == task.id:
                found.append(rules.TASK_DEPENDS.problem(line, f"{task.id} depends on itself"))
            elif plan.task(needed) is None:
                found.append(
                    rules.TASK_DEPENDS.problem(
                        line, f"{task.id} depends on {needed}, which is not a task in this plan"
                    )
                )
    if "claimed" in fields and task.marker != RUNNING:
        found.append(
            rules.CLAIM_ONLY_RUNNING.problem(
                fields["claimed"].line + 1,
                f"{task.id} has a 'claimed:' line but is not [~]; remove the line",
            )
        )
    return found


@functools.lru_cache(maxsize=4096)
def _read_value(key: str, raw: str) -> str | None:
    """Cached: large plans repeat most values (``estimate: 5min``)."""
    if key == "depends":
        if raw.strip().lower() == "none":
            return None
        reader: Callable[[str], Any] = values.parse_task_ids
    else:
        reader = _FIELD_READERS[key]
    try:
        reader(raw)
    except ValueError as error:
        return str(error)
    return None


def _module_problems(task: Task, modules: Collection[str] | None) -> Iterator[Problem]:
    if task.module is None:
        # A tag the scanner could not read ("[MODULE: db]") is reported there already.
        if not task.description.startswith("[MODULE"):
            yield rules.MODULE_NAMED.problem(
                task.line + 1,
                f"{task.id} names no module; add [MODULE:name] after the ID so the worker "
                "gets its entry from PROJECT_MAP.md",
            )
    elif not task.module:
        yield rules.MODULE_NOT_EMPTY.problem(task.line + 1, f"{task.id} has an empty [MODULE:] tag")
    elif modules is not None and task.module not in modules:
        yield rules.MODULE_REGISTERED.problem(
            task.line + 1,
            f"[MODULE:{task.module}] is not registered in PROJECT_MAP.md; add a "
            f"'### [MODULE:{task.module}]' section there",
        )


# -- dependency cycles ---------------------------------------------------------------------


def _cycle_problems(plan: Plan) -> Iterator[Problem]:
    """Cycles among phases and tasks, found on one graph: a phase waits on the phases it
    depends on; a task waits on its phase's dependencies and on the tasks in its ``depends``;
    a phase waits on its tasks. Tasks that name no dependency and that no task names can
    only pass a phase's wait along (phase → task → dependency phase), which the direct
    phase → phase edge already says, so they stay out of the graph: a plan without
    task-level ``depends`` costs a walk over its phases alone."""
    # A second phase or task with the same number or ID is reported on its own; merged
    # into the first one here it would wait on itself, a cycle that is not in the plan.
    first: dict[int, Phase] = {}
    for phase in plan.phases:
        first.setdefault(phase.number, phase)
    graph: dict[str, list[str]] = {
        phase.name: [first[n].name for n in phase.depends or () if n in first]
        for phase in first.values()
    }
    named = {needed for task in plan.tasks if "depends" in task.fields for needed in task.depends}
    for task in plan.tasks:
        if "depends" not in task.fields and task.id not in named:
            continue
        if (not task.depends and task.id not in named) or plan.by_id[task.id] is not task:
            continue
        phase = plan.phase_of(task)
        if first[phase.number] is phase:
            graph[phase.name].append(task.id)
        edges = graph.setdefault(task.id, [])
        # A task naming itself is reported as "depends on itself", not as a cycle.
        edges.extend(
            needed for needed in task.depends if needed != task.id and plan.task(needed) is not None
        )
        edges.extend(first[n].name for n in phase.depends or () if n in first)
    for cycle in _find_cycles(graph):
        yield rules.NO_CYCLES.problem(
            _cycle_line(plan, cycle), "dependency cycle: " + " → ".join(cycle)
        )


def _cycle_line(plan: Plan, cycle: list[str]) -> int:
    lines = []
    for node in cycle:
        task = plan.task(node)
        if task is not None:
            lines.append(task.fields["depends"].line if "depends" in task.fields else task.line)
            continue
        for phase in plan.phases:
            if phase.name == node:
                lines.append(phase.depends_line if phase.depends_line is not None else phase.line)
    return min(lines) + 1


def _find_cycles(graph: Mapping[str, list[str]]) -> list[list[str]]:
    """One cycle per strongly connected component that has one (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            edges = graph.get(node, [])
            if position < len(edges):
                work.append((node, position + 1))
                child = edges[position]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, []):
                    cycles.append(_cycle_in(graph, set(component), node))
    return cycles


def _cycle_in(graph: Mapping[str, list[str]], component: set[str], start: str) -> list[str]:
    """The shortest cycle through ``start`` inside its strongly connected component."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in graph.get(node, []):
                if child not in component or child in came_from:
                    continue
                came_from[child] = node
                if child == start:
                    path = [start]
                    while path[-1] != start or len(path) == 1:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                following.append(child)
        frontier = following
    return [start, start]


# -- counters -------------------------------------------------------------------------------


def counted(plan: Plan) -> dict[str, int]:
    """What the Meta counters should say."""
    return {
        "total_tasks": len(plan.tasks),
        "completed_tasks": sum(1 for task in plan.tasks if task.marker == DONE),
    }


def counter_problems(plan: Plan) -> Iterator[Problem]:
    truth = counted(plan)
    for key in COUNTER_KEYS:
        entry = plan.meta.get(key)
        if entry is None or entry.value.strip() == str(truth[key]):
            continue
        yield rules.COUNTERS.problem(
            entry.line + 1,
            f"{key} says {entry.value.strip()!r} but the plan has {truth[key]}; "
            "`memento validate --fix` rewrites it",
        )
