"""One attempt at a claimed task: the prompt, the agent run, the guards on its change and
the task's verify command. Nothing here records anything (``results.py`` does)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from memento_gh import files, gitindex
from memento_gh.changes import FileChange
from memento_gh.engine import context, guards, prompt
from memento_gh.engine.agents import limits, presets, verify
from memento_gh.engine.books import lessons
from memento_gh.engine.records import AgentResult, Attempt, Claim, VerifyResult
from memento_gh.engine.tick.session import Session, is_working_file
from memento_gh.engine.wall import fingerprint, hidden, special_files
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
    """Run the agent on ``claim``, check its change against the guards, and run verify when
    the change broke no rule."""
    started = session.clock()
    workspace = session.workspace
    head = workspace.quick_head()
    git_before = workspace.snapshot_git()
    settings = session.plan_file.before_claim.settings  # a claim changes no Meta setting
    task_files = hidden.stamp_files(
        session.root, (*claim.task.guard_files, *claim.task.context_files), is_working_file
    )
    index = gitindex.KeptIndex(session.root, workspace.index_file)
    result, tree = run_agent(session, claim, settings)
    failure = presets.failure_of(result)
    limit = provider_limit(session.agent, result, session.clock())
    # Before git looks: a FIFO in .git blocks it, one in place of a tracked file stops it.
    violations = _remove_strays(tree)
    # Before git runs again: whatever the agent planted in .git would run, or mislead it.
    violations += workspace.restore_git(git_before)
    violations += hidden.index_messages(index.put_back())  # before git reads the index again
    pending = workspace.start_status()  # git looks while the plan is read
    try:
        plan_untouched = session.plan_file.text_on_disk() == claim.text
        after: TreeStatus | None = pending.result()
    finally:
        pending.close()
    if after is None or after.head != head:
        violations.append("the agent moved HEAD (it ran a git command that commits)")
        after = None  # taken against the agent's commit: the change is read again below
        if head is not None:
            workspace.reset_soft(head)
    if not plan_untouched:
        violations.append(f"the agent edited {session.plan_file.shown_as}")
    changes, hid = _all_changes(session, plan_untouched, after, task_files, head)
    violations += hid
    found = guards.check_guards(
        changes,
        claim.task,
        max_diff_lines=settings.max_diff_lines,
        protected=guards.protected_paths(session.layout.plan_dir),
        max_file_size=settings.max_file_size,
        sizes=workspace.sizes(changes),
        max_diff_bytes=settings.max_diff_bytes,
    )
    violations += [violation.message for violation in found]
    if violations or failure or limit:
        return _stopped(tuple(violations), result, tuple(changes), started, failure, limit)
    seen = fingerprint.fingerprint(session.root, fingerprint.paths_of(changes))
    check = run_verify(session, claim, settings)
    # verify ran the agent's code: it too must leave .git as it was
    planted = tuple(f"while verify ran, {said}" for said in workspace.restore_git(git_before))
    return Attempt(planted, check, result, tuple(changes), started, seen_by_verify=seen)


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


def _all_changes(
    session: Session,
    plan_untouched: bool,
    after: TreeStatus | None,
    task_files: hidden.Stamps,
    head: str | None,
) -> tuple[list[FileChange], list[str]]:
    """The agent's change, including the task's files that git's index hid (made visible to
    git, so that the guards judge them and a rollback restores them), and the violation
    that names those."""
    changes = agent_changes(session, plan_untouched, after)
    seen = {path for change in changes for path in (change.path, change.old_path) if path}
    exposed = hidden.expose(session.root, task_files, head, seen)
    if not exposed:
        return changes, []
    changes = agent_changes(session, plan_untouched, None)
    return changes, hidden.hidden_messages(exposed, changes)


def _remove_strays(tree: special_files.Snapshot) -> list[str]:
    """The FIFOs, sockets, devices and links out of the repository the agent left, removed
    (each is a violation)."""
    return special_files.remove(tree, special_files.new_strays(tree))


def run_agent(
    session: Session, claim: Claim, settings: Settings
) -> tuple[AgentResult, special_files.Snapshot]:
    """The agent's run, and the work tree as it was before it (``special_files``)."""
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
    argv = presets.agent_argv(
        session.agent,
        session.agent_cmd,
        prompt_file=run.prompt_file,
        task=run.task,
        repo=run.repo,
        timeout=run.timeout,
        protected=run.protected,
        budget_usd=budgets.left_usd(
            session.plan_file.before_claim, task, session.clock().astimezone(timezone.utc).date()
        ),
        model=run.model,
        extra=run.extra,
    )
    listing = session.workspace.start_ignored_folders()  # git lists them meanwhile
    written: list[Path] = []  # the files the preset's command line names
    try:
        try:
            # Replaced, not written into: a FIFO or a link at this name would block or
            # redirect the write.
            text = build_prompt(session, claim, settings)
            files.write_atomic(prompt_file, text, durable=False)
            session.keep_prompt(task.id, text)
            written = presets.prepare_run(session.agent, run)
            log = session.tick_log()  # before the walk: the log is no change of the agent's
            # memento's own folder (logs/) is walked, ignored or not
            ignored = [path for path in listing.result() if not is_working_file(path + "/")]
            tree = special_files.snapshot(session.root, ignored)
        finally:
            listing.close()
        ran = presets.run_agent(
            argv,
            repo=session.root,
            env=dict(session.child_env),
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
    return ran, tree


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


def run_verify(session: Session, claim: Claim, settings: Settings) -> VerifyResult:
    task = claim.task
    return verify.run_verify(
        task.verify or "false",
        cwd=session.root,
        env=dict(session.child_env),
        timeout=task.timeout or settings.verify_timeout,
        log=session.tick_log(),
    )
