"""The checks a proposal passes before it lands: the validator's, a test command per
phase that the repository really has, and for a revision what it may change."""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path

from memento_gh.plan.model import ERROR, Phase, Plan, Problem, Task
from memento_gh.plan.revision import revision_problems
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import check_plan


def proposal_problems(
    text: str | None,
    *,
    shown_as: str,
    root: Path,
    modules: Collection[str] | None,
    environ: Mapping[str, str],
    before: Plan | None = None,
) -> list[str]:
    """The problems of a proposed plan as ``path:line: severity: message`` lines (errors
    only: a warning does not keep a plan out); none: it may land."""
    if text is None or not text.strip():
        return [f"{shown_as}: error: the proposal is empty; write the whole plan into it"]
    plan, problems = check_plan(text, modules)
    found = [problem for problem in problems if problem.severity == ERROR]
    if not found:
        found += _test_command_problems(plan, root, environ.get("PATH", os.defpath))
    if not found and before is not None:
        found += revision_problems(before, parse(text))
    return [problem.at(shown_as).render() for problem in found]


def _test_command_problems(plan: Plan, root: Path, path: str) -> list[Problem]:
    if not plan.tasks:
        return [Problem(0, ERROR, "the plan has no task; a plan needs phases of tasks")]
    found = []
    for phase in plan.phases:
        tasks = [task for task in map(plan.task, phase.task_ids) if task is not None]
        reasons = [_why_not_runnable(task.verify or "", plan, root, path) for task in tasks]
        if tasks and all(reasons):
            found.append(_no_test_command(phase, tasks, reasons))
    return found


def _no_test_command(phase: Phase, tasks: list[Task], reasons: list[str | None]) -> Problem:
    said = "; ".join(f"{task.id}: {reason}" for task, reason in zip(tasks, reasons, strict=True))
    return Problem(
        phase.line + 1,
        ERROR,
        f"{phase.name} has no verify that runs a test command this repository has ({said}); "
        "make at least one verify run a program on PATH or in the repository, on paths that "
        "exist or that a task's context_files create",
    )


def _why_not_runnable(verify: str, plan: Plan, root: Path, path: str) -> str | None:
    """Why ``verify`` runs no test command the repository has (None: it does)."""
    try:
        words = shlex.split(verify)
    except ValueError as error:
        return f"`{verify}` does not read as a command line ({error})"
    words = [word for word in words if "=" not in word.partition("/")[0]] or [""]
    program = words[0]
    if "/" in program:
        if not (root / program).is_file():
            return f"`{program}` is not a file in the repository"
    elif not program or shutil.which(program, path=path) is None:
        return f"`{program}` is not on PATH"
    for word in words[1:]:
        named = word.rstrip(";")
        if _names_a_path(named) and not _exists_or_made(named, plan, root):
            return f"{named} does not exist and no task's context_files create it"
    return None


def _names_a_path(word: str) -> bool:
    """A word like ``tests/test_a.py``: a slash, no space, not an option nor a URL."""
    return (
        "/" in word
        and not any(c.isspace() for c in word)
        and "://" not in word
        and not word.startswith("-")
    )


def _exists_or_made(path: str, plan: Plan, root: Path) -> bool:
    if (root / path).exists():
        return True
    for task in plan.tasks:
        for pattern in task.context_files:
            folder = pattern if pattern.endswith("/") else pattern + "/"
            if path == pattern or fnmatch.fnmatch(path, pattern) or path.startswith(folder):
                return True
            if pattern.startswith(path.rstrip("/") + "/"):  # a folder the task writes into
                return True
    return False
