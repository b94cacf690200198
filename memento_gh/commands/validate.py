"""``memento validate``: check the plan, the project map and the notes."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from memento_gh import files
from memento_gh.checks import check_plan_text
from memento_gh.errors import UserError
from memento_gh.formats.notes import GLOBAL, parse_notes
from memento_gh.formats.project_map import parse_project_map
from memento_gh.layout import (
    MAP_NAME,
    MEMORY_FILE_NAMES,
    MEMORY_FOLDER,
    NOTES_NAME,
    PLAN_NAME,
    Layout,
    display,
)
from memento_gh.output import paint, wants_color
from memento_gh.plan import editor
from memento_gh.plan.model import BLOCKED, ERROR, PENDING, WARNING, Problem
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import counted, parse_once

Reader = Callable[[Path], "str | None"]
KINDS = {PLAN_NAME: "plan", MAP_NAME: "map", NOTES_NAME: "notes"}
MISSING = "no such file; run `memento init` to create it"
NOT_STAGED = "not in git's index; `git add` it, or check the working tree without --index"


def check_file(path: Path, read: Reader, missing: str = MISSING) -> list[Problem]:
    """Problems of one file, with ``path`` attached; its siblings inform cross-file rules."""
    kind = KINDS.get(path.name) or ("memory" if path.name in MEMORY_FILE_NAMES else None)
    if kind is None:
        names = ", ".join(KINDS)
        raise UserError(f"{display(path)}: memento does not know this file; it checks {names}")
    try:
        text = read(path)
    except files.NotUtf8 as error:
        return [Problem(error.line, ERROR, error.reason, display(path))]
    if text is None:
        return [Problem(0, ERROR, missing, display(path))]
    if kind == "plan":
        _, problems = check_plan_text(text, _read_sibling(read, path.with_name(MAP_NAME)))
    elif kind == "map":
        problems = list(parse_project_map(text).problems)
    elif kind == "memory":
        from memento_gh.formats.memory import memory_problems  # only where there is memory

        problems = memory_problems(text, path.name)
    else:
        problems = _note_problems(text, _read_sibling(read, path.with_name(PLAN_NAME)))
    return [problem.at(display(path)) for problem in problems]


def _read_sibling(read: Reader, path: Path) -> str | None:
    """A file consulted for a cross-file rule; one that cannot be decoded is left out
    (its own check reports it)."""
    try:
        return read(path)
    except files.NotUtf8:
        return None


def _note_problems(text: str, plan_text: str | None) -> list[Problem]:
    notes = parse_notes(text)
    problems = list(notes.problems)
    if plan_text is not None:
        plan = parse_once(plan_text)
        for note in notes.active():
            if note.target != GLOBAL and plan.task(note.target) is None:
                problems.append(
                    Problem(
                        note.line + 1,
                        WARNING,
                        f"this note is for {note.target}, which is not a task in {PLAN_NAME}; "
                        "correct its target or move it under '## Archive'",
                    )
                )
    return problems


def default_files(layout: Layout) -> list[Path]:
    memory = [layout.docs / MEMORY_FOLDER / name for name in MEMORY_FILE_NAMES]
    chosen = (layout.plan, layout.project_map, layout.notes, *memory)
    found = [path for path in chosen if path.exists()]
    if not layout.plan.exists():
        raise UserError(
            f"{display(layout.plan)}: no plan here; run `memento init` to create one, "
            "or pass -C/--plan-dir to point at it"
        )
    return found


def fix_counters(path: Path) -> list[str]:
    """Rewrite total_tasks / completed_tasks that disagree with the tasks; what changed."""
    plan = parse(files.read_text(path))
    edits, changed = [], []
    for key, truth in counted(plan).items():
        entry = plan.meta.get(key)
        if entry is not None and entry.value.strip() != str(truth):
            edits.append(editor.set_meta(plan, key, str(truth)))
            changed.append(f"{display(path)}:{entry.line + 1}: fixed {key}: {truth}")
    if edits:
        files.write_atomic(path, editor.apply(plan, edits))
    return changed


def index_reader(root: Path) -> Reader:
    from memento_gh import workspace

    return lambda path: workspace.read_staged(root, path)


def run(args: argparse.Namespace, layout: Layout) -> int:
    # The process ends after the check: the cyclic garbage collector would only walk the
    # plan's objects (hundreds of thousands in a large plan, none in a cycle) again and again.
    gc.disable()
    paths: Sequence[Path] = [layout.root / path for path in args.files] or default_files(layout)
    if args.index and args.fix:
        raise UserError("--fix rewrites files in the working tree; it cannot be used with --index")
    read: Reader = index_reader(layout.root) if args.index else files.read_optional
    if args.fix:
        for path in paths:
            if path.name == PLAN_NAME and path.exists():
                for line in fix_counters(path):
                    print(line)
    missing = NOT_STAGED if args.index else MISSING
    problems = [problem for path in paths for problem in check_file(path, read, missing)]
    if args.check_verify:
        problems += verify_path_problems(paths, read, layout.root)
    if args.run_verify:
        problems += passing_verify_problems(paths, read, layout.root)
    return report(problems)


def verify_path_problems(paths: Sequence[Path], read: Reader, root: Path) -> list[Problem]:
    """``--check-verify``: the verify programs of the plans' tasks still to run that PATH
    finds inside memento's own environment, or not at all."""
    from memento_gh.engine.agents.verify_path import path_problems

    found = []
    for path in paths:
        text = _read_sibling(read, path) if path.name == PLAN_NAME else None
        if text is not None:
            found += [
                problem.at(display(path)) for problem in path_problems(parse_once(text), root)
            ]
    return found


def passing_verify_problems(paths: Sequence[Path], read: Reader, root: Path) -> list[Problem]:
    """``--run-verify``: each pending or blocked task's verify, run now in ``root``; a
    warning where it passes already, since then it cannot tell the task done from not done."""
    import os

    from memento_gh.engine.agents.verify import run_verify

    found = []
    for path in paths:
        text = _read_sibling(read, path) if path.name == PLAN_NAME else None
        if text is None:
            continue
        plan = parse_once(text)
        for task in plan.tasks:
            command = task.verify
            if task.marker not in (PENDING, BLOCKED) or not task.needs_change or command is None:
                continue
            timeout = task.timeout or plan.settings.verify_timeout
            if run_verify(command, cwd=root, env=os.environ, timeout=timeout).passed:
                line = task.fields["verify"].line + 1
                message = (
                    f"{task.id} verify passes before any agent ran, so it cannot tell the task "
                    "done from not done; make it fail until the task is done (a test of what "
                    "the task adds)"
                )
                found.append(Problem(line, WARNING, message, display(path)))
    return found


def report(problems: list[Problem]) -> int:
    color = wants_color(sys.stdout)
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        print(f"{where}: {paint(problem.severity, problem.severity, color)}: {problem.message}")
    errors = sum(1 for problem in problems if problem.severity == ERROR)
    warnings = len(problems) - errors
    if problems:
        print(f"{_count(errors, 'error')}, {_count(warnings, 'warning')}", file=sys.stderr)
    return 1 if errors else 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
