"""The architect's rounds: write its prompt, run it behind the worker's wall, read its
proposal, check it; on problems prompt it again with them, up to the rounds allowed.

The proposal file and the prompts live in memento's own folder under ``.git/`` (never in
the work tree, never committed). Anything else the agent changes is put back: the git
folder byte for byte, the work tree to HEAD; the run then ends with what it changed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from memento_gh import files
from memento_gh.engine import agents, context
from memento_gh.engine.records import AgentResult
from memento_gh.engine.session import WORKING_FILES, is_working_file
from memento_gh.errors import UserError
from memento_gh.layout import Layout
from memento_gh.plan.model import PENDING, Task
from memento_gh.workspace import Workspace

#: The variable that names the proposal file to the agent.
PROPOSAL_VARIABLE = "MEMENTO_PROPOSAL_FILE"
#: The task the presets see: the architect works on the plan, not on a task of it.
ARCHITECT_TASK = Task("architect", PENDING, None, "architect", 0, 0, 0, "", 0, {})

#: The problems of one proposal (the text, or None when the agent wrote none), as
#: ``path:line: severity: message`` lines; none: it may land.
Check = Callable[[str | None], list[str]]
#: The prompt of round N (1-based), given the problems of the round before.
MakePrompt = Callable[[int, Sequence[str]], str]


class AgentSettings(NamedTuple):
    agent: str
    agent_cmd: str | None
    timeout: float | None
    environ: Mapping[str, str]
    model: str | None = None
    #: The user's own arguments for the agent's command line (``--agent-args``).
    extra: tuple[str, ...] = ()


class Outcome(NamedTuple):
    """The last proposal and its problems (none: it may land), after ``rounds`` runs."""

    text: str | None
    problems: tuple[str, ...]
    rounds: int
    proposal: Path


def scratch_folder(workspace: Workspace) -> Path:
    folder = workspace.git_dir / "memento"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_rounds(
    layout: Layout,
    workspace: Workspace,
    settings: AgentSettings,
    *,
    rounds: int,
    make_prompt: MakePrompt,
    check: Check,
    seed: str = "",
    now: datetime,
) -> Outcome:
    """Up to ``rounds`` runs of the architect, until ``check`` finds no problem."""
    keep = _keep(layout)
    if not workspace.is_clean(keep):
        raise UserError(
            "the work tree has uncommitted changes; commit or stash them first (the "
            "architect's run is checked against HEAD, and anything it changes is undone)"
        )
    scratch = scratch_folder(workspace)
    proposal = scratch / "proposal.md"
    log = layout.logs / f"architect_{now:%Y%m%dT%H%M%S}.log"
    problems: Sequence[str] = ()
    text: str | None = None
    for number in range(1, rounds + 1):
        start = seed if number == 1 else (text or seed)
        if start:
            files.write_atomic(proposal, start, durable=False)
        else:  # a new file: agents that must read a file before they overwrite it need not
            proposal.unlink(missing_ok=True)
        prompt_file = scratch / f"architect-{number}.md"
        files.write_atomic(prompt_file, make_prompt(number, problems), durable=False)
        try:
            _run_behind_wall(workspace, settings, prompt_file, proposal, keep, log)
        finally:
            with contextlib.suppress(OSError):
                prompt_file.unlink()
        text = files.read_optional(proposal)
        problems = check(text)
        if not problems:
            return Outcome(text, (), number, proposal)
    return Outcome(text, tuple(problems), rounds, proposal)


def _keep(layout: Layout) -> list[str]:
    keep_file = layout.root / ".memento_cleanignore"
    patterns = context.read_ignore_file(keep_file) if keep_file.exists() else []
    return [*patterns, *WORKING_FILES]


def _run(
    workspace: Workspace,
    settings: AgentSettings,
    argv: list[str],
    prompt_file: Path,
    proposal: Path,
    log: Path,
) -> AgentResult:
    with files.open_append(log) as stream:
        return agents.run_agent(
            argv,
            repo=workspace.root,
            env={**settings.environ, PROPOSAL_VARIABLE: os.fspath(proposal)},
            timeout=settings.timeout,
            log=stream,
            prompt_file=prompt_file,
            agent=settings.agent,
            model=settings.model,
        )


def _run_behind_wall(
    workspace: Workspace,
    settings: AgentSettings,
    prompt_file: Path,
    proposal: Path,
    keep: list[str],
    log: Path,
) -> None:
    """One run of the agent; ``UserError`` when it changed anything but its proposal (all
    of it undone by then) or failed."""
    head = workspace.quick_head()
    git_before = workspace.snapshot_git()
    argv = agents.agent_argv(
        settings.agent,
        settings.agent_cmd,
        prompt_file=prompt_file,
        task=ARCHITECT_TASK,
        repo=workspace.root,
        timeout=settings.timeout,
        model=settings.model,
        extra=settings.extra,
        proposal_file=proposal,
    )
    # The files a preset's command line names (gemini's policy), beside the prompt.
    run = agents.AgentRun(
        prompt_file, ARCHITECT_TASK, workspace.root, settings.timeout, model=settings.model
    )
    written = agents.prepare_run(settings.agent, run)
    try:
        result = _run(workspace, settings, argv, prompt_file, proposal, log)
    finally:
        for path in written:
            path.unlink(missing_ok=True)
    changed = workspace.restore_git(git_before)
    if workspace.quick_head() != head and head is not None:
        changed.append("the agent moved HEAD (it ran a git command that commits)")
        workspace.reset_soft(head)
    paths = [c.path for c in workspace.changes(keep) if not is_working_file(c.path)]
    if paths:
        workspace.rollback(keep, "memento plan: the architect's stray changes")
        changed.append(
            "the agent changed " + ", ".join(paths) + " (only its proposal file may change)"
        )
    if changed:
        raise UserError(
            "the architect broke the rules, and what it changed was rolled back: "
            + "; ".join(changed)
            + f". Nothing landed; its output is in {log}"
        )
    failure = agents.failure_of(result)
    if failure:
        raise UserError(f"the architect failed: {failure}; its output is in {log}")
