"""What a revision of the plan may change, as a pure check of the old plan against the
proposed one, and the proposal as a diff (``memento plan revise``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from memento_gh.plan.model import BLOCKED, ERROR, PENDING, RESOLVED, Plan, Problem, Task

#: Meta keys a revision may leave to the engine: it computes them when the plan lands.
ENGINE_META = frozenset({"total_tasks", "completed_tasks", "last_architect_edit"})


def revision_problems(old: Plan, new: Plan) -> list[Problem]:
    """Why ``new`` may not replace ``old``: a done or skipped task changed, a task ID
    dropped or given to another task, Meta changed, a dependency that cannot be met.
    Lines are ``new``'s (0: the whole file)."""
    problems = list(_kept_tasks(old, new))
    problems += _meta_changes(old, new)
    problems += _unmet_depends(old, new)
    return sorted(problems, key=lambda problem: problem.line)


def _block(plan: Plan, task: Task) -> tuple[str, ...]:
    return plan.lines[task.line : task.end + 1]


def _kept_tasks(old: Plan, new: Plan) -> Iterator[Problem]:
    for before in old.tasks:
        after = new.task(before.id)
        if after is None:
            yield Problem(
                0,
                ERROR,
                f"{before.id} is gone; a task is never deleted: mark it [-] to drop it "
                "(its ID stays taken)",
            )
        elif before.marker in RESOLVED and _block(old, before) != _block(new, after):
            yield Problem(
                after.line + 1,
                ERROR,
                f"{before.id} is [{before.marker}] and must stay byte for byte as it was "
                f"(line {before.line + 1} of the plan); only pending and blocked tasks change",
            )
        elif (before.module, before.description) != (after.module, after.description):
            yield Problem(
                after.line + 1,
                ERROR,
                f"{before.id} now names another task ({after.title!r}, was {before.title!r}); "
                "an ID is never reused: mark the old task [-] and give the new one a new ID",
            )


def _meta_changes(old: Plan, new: Plan) -> Iterator[Problem]:
    keys = (set(old.meta) | set(new.meta)) - ENGINE_META
    for key in sorted(keys):
        before, after = old.meta.get(key), new.meta.get(key)
        if (before and before.value.strip()) != (after and after.value.strip()):
            line = after.line + 1 if after else (new.meta_line or 0) + 1
            yield Problem(
                line, ERROR, f"Meta {key} changed; a revision changes tasks, not the settings"
            )


def _waits_on_blocked(plan: Plan) -> set[tuple[str, str]]:
    """(task, dependency) pairs where a pending task waits on a blocked one."""
    pairs = set()
    for task in plan.tasks:
        if task.marker != PENDING:
            continue
        for needed in task.depends:
            found = plan.task(needed)
            if found is not None and found.marker == BLOCKED:
                pairs.add((task.id, needed))
    return pairs


def _unmet_depends(old: Plan, new: Plan) -> Iterator[Problem]:
    """A pending task made to wait on a task the revision leaves blocked (a wait the plan
    had before is not the revision's doing)."""
    for task_id, needed in sorted(_waits_on_blocked(new) - _waits_on_blocked(old)):
        task = new.task(task_id)
        if task is not None:
            yield Problem(
                task.fields["depends"].line + 1,
                ERROR,
                f"{task.id} depends on {needed}, which stays blocked [!]: the dependency "
                f"can never be met; revise {needed} too, or mark it [-]",
            )


def same_plan(old: Plan, new: Plan) -> bool:
    """Whether ``new`` says what ``old`` says, but for the Meta values the engine sets."""

    def kept(plan: Plan) -> list[str]:
        engine = {entry.line for key, entry in plan.meta.items() if key in ENGINE_META}
        return [line for number, line in enumerate(plan.lines) if number not in engine]

    return kept(old) == kept(new)


def plan_diff(old: str, new: str, path: str) -> str:
    """``new`` against ``old`` as a unified diff of ``path``."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
