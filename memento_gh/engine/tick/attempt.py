"""One attempt at a claimed task: the prompt, the agent run, the guards on its change and
the task's verify command. Nothing here records anything (``results.py`` does)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from memento_gh import files
from memento_gh.changes import FileChange
from memento_gh.engine import context, guards, prompt, proof, wall
from memento_gh.engine.agents import limits, presets
from memento_gh.engine.books import lessons
from memento_gh.engine.records import AgentResult, Attempt, Claim
from memento_gh.engine.tick.session import Session, is_working_file
from memento_gh.formats import status_log
from memento_gh.formats.notes import Note, parse_notes
from memento_gh.formats.project_map import parse_project_map
from memento_gh.plan import budgets
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import Task
from memento_gh.workspace import TreeStatus

DEFAULT_SYSTEM_PROMPT = (
    "You are the worker of one memento tick. Do exactly the task below by editing files; "
    "stay inside its context_files, touch no guard_files, run no git command that changes "
    "anything, and check your work with its verify command before you exit.\n"
)


def attempt(session: Session, claim: Claim) -> Attempt:
    """Run the agent on ``claim`` behind the wall, check its change against the guards, and
    run verify (behind the same wall) when the change broke no rule."""
    started = session.clock()
    settings = session.plan_file.before_claim.settings  # a claim changes no Meta setting
    task = claim.task
    if settings.verify_first and task.needs_change:
        early = verify_before_the_agent(session, claim, settings, started)
        if early is not None:
            return early
    watched = (*task.guard_files, *task.context_files)
    with wall.kept(session.workspace, watched=watched, skip=is_working_file) as kept:
        result = run_agent(session, claim, settings, kept)
        failure = presets.failure_of(result)
        limit = provider_limit(session.agent, result, session.clock())
        plan_untouched = session.plan_file.text_on_disk() == claim.text  # git looks meanwhile
        changes = kept.changes(lambda after: agent_changes(session, plan_untouched, after))
        violations = list(kept.violations)
        if not plan_untouched:
            violations.append(f"the agent edited {session.plan_file.shown_as}")
        found = guards.check_guards(
            changes,
            task,
            max_diff_lines=settings.max_diff_lines,
            protected=guards.protected_paths(session.layout.plan_dir),
            max_file_size=settings.max_file_size,
            sizes=session.workspace.sizes(changes),
            max_diff_bytes=settings.max_diff_bytes,
        )
        violations += [violation.message for violation in found]
        if violations or failure or limit:
            return _stopped(tuple(violations), result, tuple(changes), started, failure, limit)
        unproven = proof.nothing_changed(changes, task)
        if unproven:
            return Attempt((), None, result, (), started, unproven=unproven)
        check, seen = kept.run_verify(
            task.verify or "false",
            changes,
            env=session.child_env,
            timeout=task.timeout or settings.verify_timeout,
            log=session.tick_log(),
        )
    # verify ran the agent's code: what it did against memento fails the attempt too
    return Attempt(kept.violations, check, result, tuple(changes), started, seen_by_verify=seen)


def verify_before_the_agent(
    session: Session, claim: Claim, settings: Settings, started: datetime
) -> Attempt | None:
    """verify on the tree the agent would start from (Meta ``verify_first``), behind the
    wall as after the agent; the failed attempt when it passes (or broke the wall), else
    None. What it wrote is rolled back and the claim written again, so that the agent's
    change is its own."""
    task = claim.task
    with wall.kept(session.workspace, skip=is_working_file) as kept:
        check, _ = kept.run_verify(
            task.verify or "false",
            (),
            env=session.child_env,
            timeout=task.timeout or settings.verify_timeout,
            log=session.tick_log(),
        )
    session.workspace.rollback(session.keep, label=f"tick-{claim.tick}-{task.id}-first")
    files.write_atomic(session.plan_file.path, claim.text, durable=False)
    unproven = proof.passed_before_the_agent(check)
    if kept.violations or unproven:
        return Attempt(kept.violations, check, None, (), started, unproven=unproven)
    return None


def provider_limit(agent: str, result: AgentResult, now: datetime) -> limits.Limit | None:
    """The provider limit the agent's run ended at (``limits.py``); a time the agent gives
    without a zone is this machine's local time, as the agent's own clock reads it."""
    done = result.process
    local = now.astimezone().tzinfo or timezone.utc
    return limits.provider_limit(
        agent, done.exit_code, done.timed_out, done.output, now=now, local=local
    )


def _stopped(
    violations: tuple[str, ...],
    result: AgentResult,
    changes: tuple[FileChange, ...],
    started: datetime,
    failure: str | None,
    limit: limits.Limit | None,
) -> Attempt:
    """An attempt that ends before verify: deferred when the provider stopped an agent that
    broke no rule; failed when it broke one, whatever stopped it afterwards."""
    if limit is not None and not violations:
        return Attempt((), None, result, changes, started, limit=limit)
    if limit is not None and failure is None:  # aider ends a limit with exit 0
        failure = f"the agent stopped at a provider limit: {limit.words}"
    return Attempt(violations, None, result, changes, started, failure)


def run_agent(session: Session, claim: Claim, settings: Settings, kept: wall.Kept) -> AgentResult:
    """The agent's run on ``claim``, behind ``kept``."""
    task = claim.task
    # One file per run: an agent that keys its session on the file name starts fresh.
    prompt_file = session.scratch / f"prompt-{claim.tick}-{task.id}.md"
    run = presets.AgentRun(
        prompt_file,
        task,
        session.root,
        settings.agent_timeout,
        guards.protected_paths(session.layout.plan_dir),
        model_for(task, settings, session.model),
        session.agent_args,
    )
    written: list[Path] = []  # the files the preset's command line names
    try:
        # Replaced, not written into: a FIFO or a link at this name would block or
        # redirect the write.
        text = build_prompt(session, claim, settings)
        files.write_atomic(prompt_file, text, durable=False)
        session.keep_prompt(task.id, text)
        written = presets.prepare_run(session.agent, run)
        log = session.tick_log()  # before the walk: the log is no change of the agent's
        ran = kept.run_agent(
            _agent_argv(session, run),
            env=session.child_env,
            timeout=settings.agent_timeout,
            log=log,
            prompt_file=prompt_file,
            agent=session.agent,
            identity=_identity_for(session),
            model=run.model,
        )
        _tell_spend(session, log, ran)
    finally:
        for path in (prompt_file, *written):
            with contextlib.suppress(OSError):  # gone with .git, if the agent took that away
                path.unlink()
    return ran


def _agent_argv(session: Session, run: presets.AgentRun) -> list[str]:
    """The agent's command line for ``run``, with what is left of the task's budget."""
    today = session.clock().astimezone(timezone.utc).date()
    return presets.agent_argv(
        session.agent,
        session.agent_cmd,
        prompt_file=run.prompt_file,
        task=run.task,
        repo=run.repo,
        timeout=run.timeout,
        protected=run.protected,
        budget_usd=budgets.left_usd(session.plan_file.before_claim, run.task, today),
        model=run.model,
        extra=run.extra,
    )


def _tell_spend(session: Session, log: BinaryIO, ran: AgentResult) -> None:
    """The run's cost report, said and kept in the tick's log (and what of it was refused)."""
    refused = ran.cost.get("refused") if ran.cost else None
    if refused:
        session.say(f"  agent spend: {refused}")
        log.write(f"\n[memento] {refused}\n".encode())
    said = status_log.cost_text(ran.cost)
    if said:
        session.say(f"  agent spend: {said}")
        log.write(f"\n[memento] the agent's spend: {said}\n".encode())


def _identity_for(session: Session) -> tuple[str, ...]:
    """The identity memento commits with, for an agent that would otherwise write one into
    .git/config (aider, where git names nobody); read only for such an agent, since reading
    it is a git command of its own."""
    return session.workspace.identity() if presets.writes_identity(session.agent) else ()


def model_for(task: Task, settings: Settings, chosen: str | None) -> str | None:
    """The model this run of ``task`` takes: Meta's ``retry_model`` for a task that failed
    before, else the task's own ``model:``, else the tick's (``--model``, ``MEMENTO_MODEL``,
    the action's input); None leaves the agent on its own default."""
    if task.retries > 0 and settings.retry_model:
        return settings.retry_model
    return task.model or chosen


def build_prompt(session: Session, claim: Claim, settings: Settings) -> str:
    """The worker's whole prompt: its task's slice of the plan, its module's map entry, the
    notes for it, its lessons and its context files."""
    task = claim.task
    layout = session.layout
    module_entry = None
    if task.module and layout.project_map.exists():
        modules = parse_project_map(files.read_text(layout.project_map)).modules
        found = modules.get(task.module)
        module_entry = found.entry if found else None
    notes: tuple[Note, ...] = ()
    if layout.notes.exists():
        notes = parse_notes(files.read_text(layout.notes)).pending_for(task.id)
    ignore = context.read_ignore_file(session.root / ".memento_ignore")
    protected = guards.protected_paths(layout.plan_dir)
    gathered = context.gather_context(session.root, task.context_files, ignore, exclude=protected)
    system_path = layout.worker_prompt
    system = files.read_text(system_path) if system_path.exists() else DEFAULT_SYSTEM_PROMPT
    return prompt.build_prompt(
        system=system,
        task_block=claim.block,
        task=task,
        module_entry=module_entry,
        notes=notes,
        context=gathered,
        lessons=lessons.lessons_for(session.ledger, task, settings, session.clock()),
        max_diff_lines=settings.max_diff_lines,
        notes_file=layout.notes.relative_to(layout.root).as_posix(),
        last_attempt=lessons.last_attempt(session.ledger, task),
        status_file=layout.status.relative_to(layout.root).as_posix(),
    )


def agent_changes(
    session: Session, plan_untouched: bool, after: TreeStatus | None
) -> list[FileChange]:
    """The agent's change: everything that differs from HEAD except the engine's own
    working files, the claim the engine itself wrote into the plan, and untracked files
    .memento_cleanignore keeps (a developer's .env is nobody's change, nor committed).
    ``after`` is the status taken after the agent, when HEAD is where it was: when it shows
    nothing but those, no diff is needed to know that the change is empty."""
    plan_path = session.plan_file.shown_as

    def engine_own(path: str) -> bool:
        return is_working_file(path) or (plan_untouched and path == plan_path)

    if after is not None and all(engine_own(path) for path in after.paths):
        return []
    return [
        change for change in session.workspace.changes(session.keep) if not engine_own(change.path)
    ]
