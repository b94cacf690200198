"""The architect's rounds: write its prompt, run it behind the worker's wall, read its
proposal, check it; on problems prompt it again with them, up to the rounds allowed.

The proposal file is ``.memento_proposal.md`` at the top of the work tree (``PROPOSAL_NAME``
says why there): each agent writes it with its own file tool. A line of
``.git/info/exclude`` keeps it out of git, and it is removed after each run; the last
proposal is kept in memento's own folder under ``.git/``, for the person who reads why a
draft failed. The prompts stay in that folder: memento hands them to the agent (on stdin, or
as aider's ``--message-file``), no agent's tool opens them.

The agent's only allowed change is that file, as a regular file: a link, a FIFO, a folder or
an oversized file in its place is refused and removed (memento reads it without following
links and without blocking). It runs behind the worker's wall (``engine/wall``), with every
file of the tree watched: special files (FIFOs, links out of the repository) are removed
wherever it left them, the git folder put back byte for byte, git's index as it was (no flag
that hides a change survives, not even one the user set), the work tree to HEAD; the run
then ends with what it changed."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from memento_gh import files, gitrun
from memento_gh.changes import FileChange
from memento_gh.engine import context, wall
from memento_gh.engine.agents import presets
from memento_gh.engine.tick.session import WORKING_FILES, is_working_file
from memento_gh.errors import UserError
from memento_gh.layout import PROPOSAL_NAME, Layout
from memento_gh.plan.model import PENDING, Task
from memento_gh.redact import hidden_repr
from memento_gh.workspace import Workspace

#: The variable that names the proposal file to the agent.
PROPOSAL_VARIABLE = "MEMENTO_PROPOSAL_FILE"
#: The task the presets see: the architect works on the plan, not on a task of it.
ARCHITECT_TASK = Task("architect", PENDING, None, "architect", 0, 0, 0, "", 0, {})
#: The most bytes of a proposal memento reads: far above a 10,000-task plan (about 1 MB).
PROPOSAL_LIMIT = 8 << 20
#: The line of ``.git/info/exclude`` that keeps the proposal file out of git.
EXCLUDE_LINE = "/" + PROPOSAL_NAME
#: The last proposal, kept under ``.git/memento/`` once the work tree's copy is removed.
KEPT_NAME = "proposal.md"

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

    def __repr__(self) -> str:
        return hidden_repr(self, ("environ",))  # the agent's: a provider's key may be there


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


def proposal_file(workspace: Workspace) -> Path:
    """Where the agent writes its proposal: ``PROPOSAL_NAME`` at the top of the work tree."""
    return workspace.root / PROPOSAL_NAME


def kept_proposal(workspace: Workspace) -> Path:
    """Where the last proposal is kept after its run (memento's folder under ``.git/``)."""
    return scratch_folder(workspace) / KEPT_NAME


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
    keep = _keep_patterns(layout)
    if not workspace.is_clean(keep):
        raise UserError(
            "the work tree has uncommitted changes; commit them or `git stash -u` them first (the "
            "architect's run is checked against HEAD, and anything it changes is undone)"
        )
    _refuse_tracked_proposal(workspace)
    exclude_proposal(workspace)
    scratch = scratch_folder(workspace)
    proposal = proposal_file(workspace)
    kept = kept_proposal(workspace)
    log = layout.logs / f"architect_{now:%Y%m%dT%H%M%S}.log"
    problems: Sequence[str] = ()
    text: str | None = None
    for number in range(1, rounds + 1):
        start = seed if number == 1 else (text or seed)
        # Whatever is there goes first: a copy a killed run left, or what a worker planted.
        remove_proposal(proposal)
        if start:  # else no file: agents that must read a file before they overwrite it need not
            files.write_atomic(proposal, start, durable=False)
        prompt_file = scratch / f"architect-{number}.md"
        files.write_atomic(prompt_file, make_prompt(number, problems), durable=False)
        try:
            text = _run_behind_wall(workspace, settings, prompt_file, proposal, keep, log)
        finally:
            with contextlib.suppress(OSError):
                prompt_file.unlink()
            remove_proposal(proposal)
        _keep(kept, text)
        problems = check(text)
        if not problems:
            return Outcome(text, (), number, kept)
    return Outcome(text, tuple(problems), rounds, kept)


def exclude_proposal(workspace: Workspace) -> None:
    """Keep the proposal file out of git (``git status``, ``git add -A``) by a line of
    ``.git/info/exclude``: the repository's own list, never committed, where a .gitignore
    line would be a change to the user's files. Written once, before any agent runs (the
    wall then keeps the file as it is)."""
    exclude = workspace.common_dir / "info" / "exclude"
    text = files.read_optional(exclude) or ""
    if EXCLUDE_LINE in text.splitlines():
        return
    gap = "\n" if text and not text.endswith("\n") else ""
    said = "# memento plan: the architect's proposal file, removed after each run\n"
    files.write_atomic(exclude, f"{text}{gap}{said}{EXCLUDE_LINE}\n")


def remove_proposal(proposal: Path) -> None:
    """Remove whatever is at the proposal's path, never following a link: a file, a link,
    a FIFO, a folder (with what is in it)."""
    try:
        mode = proposal.lstat().st_mode
        if stat.S_ISDIR(mode):
            shutil.rmtree(proposal)
        else:
            proposal.unlink()
    except FileNotFoundError:
        return
    except OSError as error:
        raise UserError(
            f"{proposal}: cannot remove the architect's proposal file ({error.strerror or error}); "
            "remove it by hand, then run again"
        ) from None


def _refuse_tracked_proposal(workspace: Workspace) -> None:
    if gitrun.check(workspace.root, "ls-files", "-z", "--", PROPOSAL_NAME):
        raise UserError(
            f"{PROPOSAL_NAME} is committed in this repository, and memento's architect "
            "writes its proposal there; move it away (`git mv`) or remove it from git"
        )


def _keep(kept: Path, text: str | None) -> None:
    if text is None:
        kept.unlink(missing_ok=True)
    else:
        files.write_atomic(kept, text, durable=False)


def _keep_patterns(layout: Layout) -> list[str]:
    keep_file = layout.root / ".memento_cleanignore"
    patterns = context.read_ignore_file(keep_file) if keep_file.exists() else []
    return [*patterns, *WORKING_FILES]


def _run_behind_wall(
    workspace: Workspace,
    settings: AgentSettings,
    prompt_file: Path,
    proposal: Path,
    keep: list[str],
    log: Path,
) -> str | None:
    """One run of the agent, and the proposal it wrote (None: none); ``UserError`` when it
    changed anything but its proposal, left anything but a regular file there (all of it
    undone by then, the proposal by the caller), or failed."""
    argv, run = _command(workspace, settings, prompt_file, proposal)
    # Every file is watched: the architect may change none but its proposal.
    with wall.kept(workspace, watched=(".",), skip=is_working_file) as kept:
        written = presets.prepare_run(settings.agent, run)
        try:
            with files.open_append(log) as stream:
                result = kept.run_agent(
                    argv,
                    env={**settings.environ, PROPOSAL_VARIABLE: os.fspath(proposal)},
                    timeout=settings.timeout,
                    log=stream,
                    prompt_file=prompt_file,
                    agent=settings.agent,
                    model=settings.model,
                )
        finally:
            for path in written:
                path.unlink(missing_ok=True)
        changed = _roll_back_strays(workspace, kept, keep)
    data, refused = read_proposal(proposal)
    if refused:
        changed.append(refused)
    if changed:
        raise UserError(
            "the architect broke the rules, and what it changed was rolled back: "
            + "; ".join(changed)
            + f". Nothing landed; its output is in {log}"
        )
    failure = presets.failure_of(result)
    if failure:
        raise UserError(f"the architect failed: {failure}; its output is in {log}")
    return None if data is None else files.decode_utf8(data, proposal)


def _command(
    workspace: Workspace, settings: AgentSettings, prompt_file: Path, proposal: Path
) -> tuple[list[str], presets.AgentRun]:
    """The agent's command line, and its run as a preset sees it (gemini's policy file, say,
    is written beside the prompt)."""
    argv = presets.agent_argv(
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
    run = presets.AgentRun(
        prompt_file,
        ARCHITECT_TASK,
        workspace.root,
        settings.timeout,
        model=settings.model,
        proposal_file=proposal,
    )
    return argv, run


def _roll_back_strays(workspace: Workspace, kept: wall.Kept, keep: list[str]) -> list[str]:
    """Undo every change of the agent's but its proposal (the wall has put back what it
    could use against memento); what it had changed, one sentence per kind (none: nothing)."""
    paths = [change.path for change in kept.changes(lambda _after: _changes(workspace, keep))]
    changed = list(kept.violations)
    if not paths:
        return changed
    report = workspace.rollback(keep, "memento plan: the architect's stray changes")
    changed.append("the agent changed " + ", ".join(paths) + " (only its proposal file may change)")
    if report.stash:
        changed.append(
            f"memento stashed what it could not restore (`git stash list`: {report.stash})"
        )
    if report.left:
        changed.append(
            f"memento could not roll back {', '.join(report.left)}: remove it by hand (a folder "
            "with a .git of its own is a repository, which memento never deletes)"
        )
    return changed


def _changes(workspace: Workspace, keep: list[str]) -> list[FileChange]:
    """What differs from HEAD but memento's own files and the files ``keep`` spares."""
    return [change for change in workspace.changes(keep) if not is_working_file(change.path)]


def read_proposal(proposal: Path) -> tuple[bytes | None, str | None]:
    """The proposal's bytes (None: the agent wrote none), or why memento does not read it:
    only a regular file of up to ``PROPOSAL_LIMIT`` bytes, never through a link, never
    waiting on a FIFO."""
    try:
        found = proposal.lstat()
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(found.st_mode):
        kind = files.kind_of(found.st_mode)
        return None, f"the agent left {kind} as its proposal file {PROPOSAL_NAME}, not a file"
    if found.st_size > PROPOSAL_LIMIT:
        return None, (
            f"the agent's proposal file {PROPOSAL_NAME} holds {found.st_size:,} bytes, more "
            f"than the {PROPOSAL_LIMIT >> 20} MB memento reads of a plan"
        )
    try:  # no-follow and non-blocking again: a process the agent left may swap it meanwhile
        return files.read_bytes(proposal, limit=PROPOSAL_LIMIT), None
    except UserError as error:
        return None, f"the agent's proposal file could not be read ({error})"
