"""One tick, enforced in code (DESIGN "The tick"; seed §4, §5, §7).

The tick takes the repository lock, recovers from a tick that died, reads and validates the
plan, picks a task, claims it, gives the agent only that task, checks the agent's change
against the guards, runs ``verify``, then commits the change with the bookkeeping or rolls
the change back and commits the bookkeeping alone. The agent is a subprocess that only
edits files; everything else happens here.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from memento_gh import files
from memento_gh.changes import FileChange
from memento_gh.checks import check_plan_text
from memento_gh.engine import (
    agents,
    breaker,
    context,
    globs,
    guards,
    process,
    prompt,
    verify,
)
from memento_gh.errors import UserError
from memento_gh.formats import status_log
from memento_gh.gitrun import GitError, NetworkError
from memento_gh.layout import MEMORY_FILE_NAMES, MEMORY_FOLDER, Layout
from memento_gh.lock import Busy, repo_lock
from memento_gh.plan import derive, editor, schedule
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import BLOCKED, DONE, ERROR, PENDING, RUNNING, Plan, Task
from memento_gh.plan.scanner import no_cyclic_gc, parse
from memento_gh.plan.values import format_time
from memento_gh.workspace import TreeStatus, Workspace, start_status

if TYPE_CHECKING:
    from memento_gh.formats.notes import Note

Clock = Callable[[], datetime]
STATUS_HEADER = "# TICK STATUS LOG\n\n"
#: One tick in this many lets git's automatic maintenance follow its commits.
MAINTENANCE_EVERY = 20
#: Files the engine itself writes during a tick; never the agent's change, never committed.
WORKING_FILES = ("logs/", ".memento.lock", ".memento_alert")
#: Set in the environment of the agent and verify to a value of this tick's own (their
#: children inherit it), so that the next tick can stop what a killed tick left running.
RUN_TAG = "MEMENTO_RUN"
DEFAULT_SYSTEM_PROMPT = (
    "You are the worker of one memento tick. Do exactly the task below by editing files; "
    "stay inside its context_files, touch no guard_files, run no git command that changes "
    "anything, and check your work with its verify command before you exit.\n"
)


class SharedBranch(Protocol):
    """The branch a pool of workers shares through a remote (``remote.SharedBranch``)."""

    attempts: int
    tip: str | None  # the remote's tip as last fetched or pushed

    def sync(self) -> str: ...
    def refresh(self) -> None: ...
    def publish(self) -> bool: ...
    def wait(self, attempt: int, *, urgent: bool = False) -> None: ...


class TickConfig(NamedTuple):
    agent: str = "command"
    agent_cmd: str | None = None
    worker_id: str = ""
    max_tasks: int | None = None
    #: Set when other workers share the branch: claims and results are pushed through it.
    shared: SharedBranch | None = None


class TaskOutcome(NamedTuple):
    task_id: str
    outcome: str  # "success" | "failed" | "blocked"
    commit: str | None
    message: str


class TickResult(NamedTuple):
    status: str  # "ran" | "idle" | "skipped"
    tick: int | None
    tasks: tuple[TaskOutcome, ...]
    message: str


def default_worker_id() -> str:
    # os.uname() is what socket.gethostname() reads, without importing socket.
    return f"{os.uname().nodename}-{os.getpid()}"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def run_tick(
    layout: Layout,
    config: TickConfig,
    *,
    clock: Clock = utc_now,
    environ: Mapping[str, str] = os.environ,
    say: Callable[[str], None] = print,
) -> TickResult:
    """Run one tick; a tick already running on this repository makes this one a no-op."""
    try:
        # The cyclic collector stays off: a large plan is hundreds of thousands of small
        # objects, none in a cycle, that each collection would walk again for nothing.
        with repo_lock(layout.lock), no_cyclic_gc():
            return _Tick(layout, config, clock, environ, say).run()
    except Busy:
        message = "Tick skipped: another tick holds the lock on this repository"
        _log_line(layout, clock(), message)
        say(message)
        return TickResult("skipped", None, (), message)


def checkpoint(name: str, environ: Mapping[str, str]) -> None:
    """Crash here when MEMENTO_CRASH_AT names this point: the recovery tests kill a real
    tick (SIGKILL, no clean-up) between two of its steps and check the next one recovers."""
    if environ.get("MEMENTO_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _log_line(layout: Layout, moment: datetime, text: str) -> None:
    """Ticks that change nothing leave a line in logs/memento.log, not a commit."""
    layout.logs.mkdir(parents=True, exist_ok=True)
    with (layout.logs / "memento.log").open("a", encoding="utf-8") as stream:
        stream.write(f"[{format_time(moment)}] {text}\n")


class _Claim(NamedTuple):
    """A task claimed for this tick: the plan as the claim wrote it, and the task in it."""

    task: Task
    text: str
    block: str  # the task's lines in the claimed plan, for the prompt
    commit: str | None = None  # the claim's commit, on a shared branch


class _Attempt(NamedTuple):
    """What happened to one task before the bookkeeping."""

    violations: tuple[str, ...]
    verify: verify.VerifyResult | None
    agent: agents.AgentResult | None
    changes: tuple[FileChange, ...]
    started: datetime


class _Tick:
    def __init__(
        self,
        layout: Layout,
        config: TickConfig,
        clock: Clock,
        environ: Mapping[str, str],
        say: Callable[[str], None],
    ) -> None:
        self.layout = layout
        self.config = config._replace(worker_id=config.worker_id or default_worker_id())
        self.clock = clock
        self.environ = environ
        self.say = say
        # git looks at the work tree while it is asked where the repository is.
        self.early_status = start_status(layout.root)
        try:
            self.workspace = Workspace(layout.root)
        except BaseException:
            self.early_status.close()
            raise
        self.root = self.workspace.root
        self.resolved_root: Path | None = None
        self.relative: dict[Path, str] = {}  # the paths of memento's files, as git names them
        self.scratch = self.root / ".git" / "memento"
        self.started = clock()
        self.tick_number: int | None = None
        self.outcomes: list[TaskOutcome] = []
        #: The plan as last read or derived, its text, and the edits of a claim written
        #: on top of it since (the plan on disk is then ``current`` plus ``unapplied``).
        self.current: Plan | None = None
        self.current_text = ""
        self.unapplied: tuple[editor.Edit, ...] = ()
        #: HEAD as this tick last saw or made it, and the bookkeeping files git knows.
        self.head: str | None = None
        self.known: set[str] = set()
        self.keep: list[str] | None = None
        self.child_env: dict[str, str] | None = None
        self.run_tag = os.urandom(16).hex()
        #: On a shared branch: a commit the remote has, after which every local commit is
        #: this tick's own (what a tick that dies leaves for the next one to drop), and the
        #: claim this tick holds there.
        self.base: str | None = None
        self.claim_value: str | None = None
        self.log_path = layout.logs / f"tick_{self.started.strftime('%Y%m%dT%H%M%SZ')}.log"

    # -- the tick ---------------------------------------------------------------------------

    def run(self) -> TickResult:
        # The status begun with the tick comes back while the plan is read and checked,
        # unless a dead tick's work was undone meanwhile.
        pending = self.early_status
        try:
            if self._recover_dead_tick():
                pending.close()
                pending = self.workspace.start_status()
            if self.config.shared is not None:
                # The tree must be clean before the branch moves to the remote's tip.
                self._require_clean_tree(pending.result())
                self._sync()
            plan = self._validated_plan()
            mode = plan.settings.tick_mode
            if mode != "auto":
                return self._skip(f"Tick skipped: mode={mode}")
            if self.config.shared is None:
                self._require_clean_tree(pending.result())
        finally:
            pending.close()
        # From here until the tick ends, whatever differs from HEAD is this tick's unfinished
        # work: the marker tells the next tick to roll it back if this one dies.
        self._mark_running(None)
        if self.config.shared is None:
            plan = self._reset_stale_claims(plan)  # on a shared branch, with each claim
        reason = breaker.disk_reason(plan.settings, _free_disk(self.root))
        if reason:
            self._trip_breaker(reason)
            self._publish(lambda: self._trip_breaker(reason))
            self._clear_running_marker()
            return TickResult("ran", None, (), f"circuit breaker: {reason}")
        try:
            self._run_tasks(plan)
        except NetworkError:
            raise  # the remote is out of reach, the repository is fine: nothing to pause
        except GitError as error:
            self._git_failed(error)
            raise
        if self.outcomes:
            self._after_tasks()
            self._publish(self._after_tasks)
        self._clear_running_marker()
        return self._result()

    def _git_failed(self, error: GitError) -> None:
        """Git broke in the middle of a task: pause the plan (and try to record why), so
        that no further tick runs on a repository in an unknown state. The running-marker
        stays: once git works again, the next tick rolls the half-done task back and counts
        the attempt, as for a tick that died."""
        try:
            self._trip_breaker(f"git failed: {error}")
            if self.config.shared is not None:
                self.config.shared.publish()  # once: the next tick drops it if not pushed
        except (GitError, OSError):
            self.say("could not record the circuit breaker trip; the plan file says paused")

    def _run_tasks(self, plan: Plan) -> None:
        limit = self.config.max_tasks or plan.settings.max_tasks_per_tick
        tried: set[str] = set()
        while len(self.outcomes) < limit:
            claim = self._take_shared(tried) if self.config.shared else self._take_local(tried)
            if claim is None:
                break
            tried.add(claim.task.id)
            self.outcomes.append(self._run_task(claim))
            if self._plan().settings.tick_mode != "auto":
                break

    def _take_local(self, tried: set[str]) -> _Claim | None:
        """Pick the next task and claim it, uncommitted: nobody else ticks this clone."""
        plan = self._plan()
        decision = schedule.pick(plan, skip=tried)
        if decision.task is None:
            if not self.outcomes:
                self._announce_rest(decision)
            return None
        if self.outcomes and not self._fits_budget(decision.task, plan.settings):
            return None
        self._announce_task(decision.task)
        return self._claim(decision.task)

    def _fits_budget(self, task: Task, settings: Settings) -> bool:
        """A tick must end before its claims look stale, so it starts another task only
        when that task's estimate still fits within stale_lock_timeout."""
        elapsed = (self.clock() - self.started).total_seconds()
        return elapsed + (task.estimate or 0) <= settings.stale_lock_timeout

    def _result(self) -> TickResult:
        if not self.outcomes:
            return TickResult("idle", self.tick_number, (), "no task ran")
        summary = "; ".join(f"{o.task_id} {o.outcome}" for o in self.outcomes)
        return TickResult("ran", self.tick_number, tuple(self.outcomes), summary)

    def _skip(self, message: str) -> TickResult:
        _log_line(self.layout, self.clock(), message)
        self.say(message)
        return TickResult("skipped", None, (), message)

    # -- one task ---------------------------------------------------------------------------

    def _announce_task(self, task: Task) -> None:
        self.say(f"Tick #{self._tick_number():03d}: {task.title}")

    def _run_task(self, claimed: _Claim) -> TaskOutcome:
        checkpoint("claimed", self.environ)
        task = claimed.task
        attempt = self._attempt(task, claimed)
        checkpoint("attempted", self.environ)
        if not attempt.violations and attempt.verify and attempt.verify.exit_code == 0:
            outcome = self._succeed(task, attempt)
        else:
            outcome = self._fail(task, attempt)
        if self.config.shared is not None:
            outcome = self._publish_result(claimed, attempt, outcome)
            self.claim_value = None
        # Not flushed: lost to a power cut, the marker left names a task that is committed
        # by now, and the next tick's recovery finds nothing of it to undo.
        self._mark_running(None, durable=False)
        self.say(f"  {outcome.outcome}: {outcome.message}")
        return outcome

    def _claim(self, task: Task) -> _Claim:
        """Mark the task [~] with who and when; the claim stays uncommitted on a local run.
        A marker under .git/ says a tick is running it, so a tick that dies is recognised."""
        # The marker first: a tick that dies between the two writes leaves a claim that the
        # next tick knows to undo, not an uncommitted plan edit that blocks every tick.
        self._mark_running(task.id)
        checkpoint("marked", self.environ)
        moment = format_time(self.clock())
        plan = self._plan()
        edits = (
            editor.set_status(plan, task.id, RUNNING),
            editor.set_field(plan, task.id, "claimed", f"{moment} {self.config.worker_id}"),
        )
        lines, eols = editor.edit_lines(plan, edits)
        text = editor.join_lines(lines, eols, bom=plan.bom)
        # Not flushed to the disk: after a power cut the marker, which is, makes the next
        # tick restore the plan from HEAD, whatever became of this write.
        files.write_atomic(self.layout.plan, text, durable=False)
        # Nothing but the prompt needs the claimed plan's structure, and the claim's result
        # is written over the plan before it, so only the claimed task is worked out here.
        claimed = derive.edit_task(plan, task, edits, lines)
        if claimed is None:
            whole = self._set_current(parse(text), text)
            claimed = whole.task(task.id) or task
        else:
            self.unapplied = edits
        return _Claim(claimed, text, "\n".join(lines[claimed.line : claimed.end + 1]))

    def _attempt(self, task: Task, claim: _Claim) -> _Attempt:
        started = self.clock()
        head = self.head
        fingerprint = self.workspace.git_state()
        settings = self._base_plan().settings  # a claim changes no Meta setting
        result = self._run_agent(claim, settings)
        violations = list(self._agent_process_problems(result))
        pending = self.workspace.start_status()  # git looks while .git/ and the plan are read
        try:
            git_changed = self.workspace.git_state() != fingerprint
            plan_untouched = self._plan_on_disk() == claim.text
            after: TreeStatus | None = pending.result()
        finally:
            pending.close()
        if after is None or after.head != head:
            violations.append("the agent moved HEAD (it ran a git command that commits)")
            after = None  # taken against the agent's commit: the change is read again below
            if head is not None:
                self.workspace.reset_soft(head)
        if git_changed:
            violations.append("the agent changed git's configuration or hooks under .git/")
        if not plan_untouched:
            violations.append(f"the agent edited {self._relative(self.layout.plan)}")
        changes = self._agent_changes(plan_untouched, after)
        found = guards.check_guards(
            changes,
            task,
            max_diff_lines=settings.max_diff_lines,
            protected=guards.protected_paths(self.layout.plan_dir),
        )
        violations += [violation.message for violation in found]
        check = None if violations else self._verify(task, settings)
        return _Attempt(tuple(violations), check, result, tuple(changes), started)

    def _agent_process_problems(self, result: agents.AgentResult) -> list[str]:
        process = result.process
        if process.timed_out:
            return [f"the agent ran past agent_timeout ({process.duration:.0f}s) and was killed"]
        if process.exit_code != 0:
            return [f"the agent exited with code {process.exit_code}"]
        return []

    def _run_agent(self, claim: _Claim, settings: Settings) -> agents.AgentResult:
        task = claim.task
        # One file per run: an agent that keys its session on the file name starts fresh.
        prompt_file = self.scratch / f"prompt-{self._tick_number()}-{task.id}.md"
        prompt_file.write_text(self._prompt(claim, settings), encoding="utf-8")
        argv = agents.agent_argv(
            self.config.agent,
            self.config.agent_cmd,
            prompt_file=prompt_file,
            task=task,
            repo=self.root,
            timeout=settings.agent_timeout,
        )
        try:
            return agents.run_agent(
                argv,
                repo=self.root,
                env=self._child_env(),
                timeout=settings.agent_timeout,
                log=self.log_path,
                prompt_file=prompt_file,
                agent=self.config.agent,
            )
        finally:
            prompt_file.unlink(missing_ok=True)

    def _prompt(self, claim: _Claim, settings: Settings) -> str:
        task = claim.task
        module_entry = None
        if task.module and self.layout.project_map.exists():
            from memento_gh.formats.project_map import parse_project_map

            modules = parse_project_map(files.read_text(self.layout.project_map)).modules
            found = modules.get(task.module)
            module_entry = found.entry if found else None
        notes: tuple[Note, ...] = ()
        if self.layout.notes.exists():
            from memento_gh.formats.notes import parse_notes

            notes = parse_notes(files.read_text(self.layout.notes)).pending_for(task.id)
        ignore = context.read_ignore_file(self.root / ".memento_ignore")
        protected = guards.protected_paths(self.layout.plan_dir)
        gathered = context.gather_context(self.root, task.context_files, ignore, exclude=protected)
        system_path = self.layout.worker_prompt
        system = files.read_text(system_path) if system_path.exists() else DEFAULT_SYSTEM_PROMPT
        return prompt.build_prompt(
            system=system,
            task_block=claim.block,
            task=task,
            module_entry=module_entry,
            notes=notes,
            context=gathered,
            lessons=self._lessons(task, settings),
            max_diff_lines=settings.max_diff_lines,
        )

    # -- a branch shared with other workers -------------------------------------------------
    #
    # Each worker ticks in its own clone; the remote's branch is the lock. A claim is a
    # commit pushed before the agent starts: a rejected push means another worker moved the
    # branch first, so the tick drops its commits for the remote's tip and decides again.
    # A result is made the same way, and on a rejection made again on the new tip (the
    # bookkeeping from the files as they are there, the agent's change as a patch), so that
    # no worker's bookkeeping overwrites another's.

    def _sync(self) -> None:
        shared = self.config.shared
        assert shared is not None
        self.say(f"Shared branch: {shared.sync()}")
        self._forget_files()

    def _refresh(self) -> None:
        """Drop the local commits not published and stand on the remote's tip."""
        shared = self.config.shared
        assert shared is not None
        shared.refresh()
        self._forget_files()

    def _forget_files(self) -> None:
        """The branch moved under the tick: what it knew of the files is void."""
        self.current, self.current_text, self.unapplied = None, "", ()
        shared = self.config.shared
        tip = shared.tip if shared is not None else None
        self.head = self.base = tip or self.workspace.head()
        # Every bookkeeping file there is committed: a clean tree stands on the tip.
        self.known = set(self._bookkeeping_paths())

    def _publish(self, redo: Callable[[], object]) -> bool:
        """Push the bookkeeping just committed; on each rejection, move to the remote's tip
        and ``redo`` it there. False when the branch kept moving (the commits are dropped)."""
        shared = self.config.shared
        if shared is None:
            return True
        for attempt in range(1, shared.attempts + 1):
            if shared.publish():
                self.base = self.head
                return True
            shared.wait(attempt)
            self._refresh()
            redo()
        self._refresh()
        self.say("The branch kept moving: this tick's bookkeeping was not pushed")
        return False

    def _take_shared(self, tried: set[str]) -> _Claim | None:
        """Pick a task on the remote's tip and push the claim; a rejected push means another
        worker moved the branch: start again from its new tip."""
        shared = self.config.shared
        assert shared is not None
        for attempt in range(1, shared.attempts + 1):
            if attempt > 1:
                shared.wait(attempt - 1)
                self._refresh()
            plan = self._plan()
            if plan.settings.tick_mode != "auto":
                return None
            plan = self._reset_stale_claims(plan)
            decision = schedule.pick(plan, skip=tried)
            task = decision.task
            claim = None
            if task is None:
                if not self.outcomes:
                    self._announce_rest(decision)
            elif not self.outcomes or self._fits_budget(task, plan.settings):
                if not self.outcomes:
                    self.tick_number = None  # each claim takes the next number on the branch
                claim = self._claim_shared(task)
            if shared.publish():
                self.base = self.head
                if claim is not None:
                    self._announce_task(claim.task)
                return claim
        self._refresh()
        self.say("The branch kept moving: no task could be claimed this tick")
        return None

    def _claim_shared(self, task: Task) -> _Claim:
        """Commit the claim: [~], who and when, and the tick's number in the Meta."""
        tick = self._tick_number()
        self.claim_value = f"{format_time(self.clock())} {self.config.worker_id}"
        # The marker first: a tick that dies after the push leaves a claim its marker names.
        self._mark_running(task.id)
        checkpoint("marked", self.environ)
        plan = self._plan()
        edits = [
            editor.set_status(plan, task.id, RUNNING),
            editor.set_field(plan, task.id, "claimed", self.claim_value),
        ]
        if plan.settings.total_ticks < tick:
            edits.append(editor.set_meta(plan, "total_ticks", str(tick)))
        claimed_plan = self._write_plan(plan, edits)
        sha = self._commit(
            f"memento: claim {task.id} {task.description}".rstrip()
            + "\n\n"
            + self._trailers(task.id),
            self._bookkeeping_paths(),
        )
        claimed = claimed_plan.task(task.id) or task
        block = "\n".join(self.current_text.splitlines()[claimed.line : claimed.end + 1])
        return _Claim(claimed, self.current_text, block, sha)

    def _publish_result(
        self, claim: _Claim, attempt: _Attempt, outcome: TaskOutcome
    ) -> TaskOutcome:
        """Push the task's result; on each rejection make it again on the remote's new tip,
        as long as the claim there is still this tick's."""
        shared = self.config.shared
        assert shared is not None and claim.commit is not None
        task = claim.task
        paths = [c.path for c in attempt.changes] + [
            c.old_path for c in attempt.changes if c.old_path
        ]
        for number in range(1, shared.attempts + 1):
            if shared.publish():
                self.base = self.head
                return outcome
            shared.wait(number, urgent=True)
            patch = b""
            if outcome.outcome == "success" and outcome.commit:
                patch = self.workspace.change_between(claim.commit, outcome.commit, paths)
            self._refresh()
            self.say(f"  the branch moved: making the result again on {(self.head or '')[:7]}")
            held = self._plan().task(task.id)
            if held is None or held.marker != RUNNING or held.claimed != task.claimed:
                return self._claim_lost(task)
            if outcome.outcome != "success":
                outcome = self._fail(task, attempt)
            elif self.workspace.apply_change(patch):
                outcome = self._succeed(task, attempt)
            else:
                clash = f"its change no longer applies to {', '.join(paths[:5])}"
                attempt = attempt._replace(
                    violations=(clash + ": another task changed them since the claim",),
                    verify=None,
                )
                outcome = self._fail(task, attempt)
        self._refresh()
        return TaskOutcome(
            task.id,
            "unpublished",
            None,
            "the branch kept moving, so the result was not pushed; the claim goes stale and "
            "the task runs again",
        )

    def _claim_lost(self, task: Task) -> TaskOutcome:
        """The claim was reset (it looked stale) while the agent worked: the result is
        dropped, for the task's next run is someone else's."""
        line = (
            f"{task.id}: the result of {self.config.worker_id} was dropped, its claim was "
            "reset meanwhile (stale_lock_timeout too short for the task?)"
        )

        def record() -> None:
            self._append_event(line)
            self._commit(f"memento: {task.id} claim lost", self._bookkeeping_paths())

        record()
        self._publish(record)
        return TaskOutcome(task.id, "lost", None, line)

    def _recover_shared(self, found: Mapping[str, object]) -> None:
        """A tick on a shared branch died: drop the commits it never pushed, and when the
        remote still shows its claim, count that attempt as failed there."""
        base, claim = found.get("base"), found.get("claim")
        if isinstance(base, str):
            subjects = self.workspace.subjects_since(base)
            if subjects and all(subject.startswith("memento: ") for subject in subjects):
                self.workspace.reset_hard(base)
        self._sync()
        task_id = found.get("task")
        task = self._plan().task(task_id) if isinstance(task_id, str) else None
        if task is None or task.marker != RUNNING or task.claimed is None:
            return
        if task.claimed.render() != claim:
            return
        self.say(f"Recovered from a tick that died while running {task.id}")
        died = _Attempt(
            ("the previous tick died while running this task",), None, None, (), self.clock()
        )
        self.tick_number = None  # the failure is recorded under the next number

        def record() -> None:
            self._fail(task, died)

        record()
        self._publish(record)
        self.tick_number = None  # and this tick, if it runs a task, takes the one after

    def _trailers(self, task_id: str) -> str:
        lines = [f"Memento-Task: {task_id}", f"Memento-Tick: {self._tick_number()}"]
        if self.config.shared is not None:
            lines.append(f"Memento-Worker: {self.config.worker_id}")
        return "".join(line + "\n" for line in lines)

    # -- memory -----------------------------------------------------------------------------

    def _memory_folder(self) -> Path:
        return self.layout.docs / MEMORY_FOLDER

    def _lesson_texts(self) -> dict[str, str]:
        """The lesson files that hold records, by file name: the memory module (and its
        import) is only needed when there is something to read."""
        folder = self._memory_folder()
        found: dict[str, str] = {}
        for name in MEMORY_FILE_NAMES:
            path = folder / name
            if path.exists():
                text = files.read_text(path)
                if "\n## " in text:  # a record's heading
                    found[name] = text
        return found

    def _lessons(self, task: Task, settings: Settings) -> tuple[str, ...]:
        """The few lessons relevant to ``task`` (formats/memory.py chooses, within a budget)."""
        texts = self._lesson_texts()
        if not texts:
            return ()
        from memento_gh.formats import memory

        failure = memory.last_failure(status_log.parse_status(self._status_text()), task.id)
        signature = memory.failure_signature(failure) if failure else None
        by_kind = {memory.KIND_OF_FILE[name]: text for name, text in texts.items()}
        return memory.lessons_for(
            memory.read_all(by_kind),
            task,
            last_failure=signature,
            now=self.clock(),
            stale_after=settings.memory_stale_after,
        )

    def _learn_from_success(self, task: Task, attempt: _Attempt) -> None:
        """A task that passes after failing in its verify teaches a known issue: the
        failure's signature, with this change as its fix (formats/memory.py)."""
        status = self._status_text()
        if task.id not in status:  # it never ran before: nothing failed
            return
        from memento_gh.formats import memory

        failure = memory.last_failure(status_log.parse_status(status), task.id)
        if failure is None:
            return
        kind = memory.KNOWN_ISSUE
        path = self._memory_folder() / memory.FILE_NAMES[kind]
        old = files.read_text(path) if path.exists() else memory.empty_file(kind)
        new = memory.learn_from_success(
            old,
            task=task,
            previous_failure=failure,
            changes=[(c.path, c.added, c.removed) for c in attempt.changes],
            commit=None,
            verify_command=task.verify or "",
            now=self.clock(),
            tick=self._tick_number(),
        )
        if new != old:
            files.write_atomic(path, new)

    def _archive_stale_lessons(self, settings: Settings) -> None:
        """Lessons not verified within memory_stale_after leave the active list."""
        texts = self._lesson_texts()
        if not texts:
            return
        from memento_gh.formats import memory

        moved_any = False
        for name, old in texts.items():
            text, moved = memory.archive_stale(
                old,
                memory.KIND_OF_FILE[name],
                now=self.clock(),
                stale_after=settings.memory_stale_after,
            )
            if moved:
                files.write_atomic(self._memory_folder() / name, text)
                moved_any = True
        if moved_any:
            self._commit("memento: archive stale lessons", self._bookkeeping_paths())

    def _write_state(self, last_action: str) -> None:
        """STATE.md, the snapshot to resume from, goes with every bookkeeping commit."""
        from memento_gh.formats.state import render_state

        plan = self._plan()
        alerts: tuple[str, ...] = ()
        if plan.settings.tick_mode == "paused":
            last = status_log.last_event(self._status_text()) or ""
            alerts = (last,) if "CIRCUIT BREAKER" in last else ()
        text = render_state(
            plan,
            now=self.clock(),
            last_action=last_action,
            plan_dir=self.layout.plan_dir,
            alerts=alerts,
        )
        # Written whole from the plan on every commit: a copy lost to a power cut is
        # written again by the next one.
        files.write_atomic(self.layout.state, text, durable=False)

    def _agent_changes(self, plan_untouched: bool, after: TreeStatus | None) -> list[FileChange]:
        """The agent's change: everything that differs from HEAD except the engine's own
        working files, the claim the engine itself wrote into the plan, and untracked files
        .memento_cleanignore keeps (a developer's .env is nobody's change, nor committed).
        ``after`` is the status taken after the agent, when HEAD is where it was: when it
        shows nothing but those, no diff is needed to know that the change is empty."""
        plan_path = self._relative(self.layout.plan)
        own_claim = plan_untouched
        if after is not None and all(
            _is_working_file(path) or (own_claim and path == plan_path) for path in after.paths
        ):
            return []
        return [
            change
            for change in self.workspace.changes(self._cleanup_keep())
            if not _is_working_file(change.path) and not (own_claim and change.path == plan_path)
        ]

    def _child_env(self) -> dict[str, str]:
        """The environment of the agent and verify: no credentials, and this tick's tag."""
        if self.child_env is None:
            self.child_env = {**agents.agent_env(self.environ), RUN_TAG: self.run_tag}
        return dict(self.child_env)

    def _verify(self, task: Task, settings: Settings) -> verify.VerifyResult:
        command = task.verify or "false"
        return verify.run_verify(
            command,
            cwd=self.root,
            env=self._child_env(),
            timeout=task.timeout or settings.verify_timeout,
            log=self.log_path,
        )

    # -- bookkeeping ------------------------------------------------------------------------

    def _succeed(self, task: Task, attempt: _Attempt) -> TaskOutcome:
        message = (
            f"memento: complete {task.id} {task.description}".rstrip()
            + "\n\n"
            + self._trailers(task.id)
        )
        # The edits go on the plan as it was before the claim (unless the claimed plan had to
        # be read back): they undo the claim (its line goes, the marker is set again), so
        # the bytes are the same, and the plan they leave is derived from the one in hand.
        base = self._base_plan()
        self._write_plan(base, self._success_edits(base, task))
        checkpoint("plan-written", self.environ)
        self._learn_from_success(task, attempt)
        entry = self._entry(task, attempt, "success", retries=task.retries)
        self._append_status(entry._replace(commit=("", message.split("\n", 1)[0])))
        checkpoint("status-written", self.environ)
        if self.layout.notes.exists():
            from memento_gh.formats.notes import mark_read

            text = files.read_text(self.layout.notes)
            marked = mark_read(text, task.id)
            if marked != text:
                files.write_atomic(self.layout.notes, marked)
        paths = [change.path for change in attempt.changes]
        paths += [change.old_path for change in attempt.changes if change.old_path]
        added = [change.path for change in attempt.changes if change.kind == "untracked"]
        sha = self._commit(message, paths + self._bookkeeping_paths(), added)
        checkpoint("committed", self.environ)
        return TaskOutcome(task.id, "success", sha, f"verify passed, committed {sha[:7]}")

    def _success_edits(self, plan: Plan, task: Task) -> list[editor.Edit]:
        edits: list[editor.Edit] = [editor.set_status(plan, task.id, DONE)]
        removed = editor.remove_field(plan, task.id, "claimed")
        if removed is not None:
            edits.append(removed)
        done = sum(1 for t in plan.tasks if t.marker == DONE or t.id == task.id)
        edits += self._counter_edits(plan, completed=done, failed_ticks=0)
        return edits

    def _fail(self, task: Task, attempt: _Attempt) -> TaskOutcome:
        keep = self._cleanup_keep()
        report = self.workspace.rollback(keep, label=f"tick-{self._tick_number()}-{task.id}")
        plan = self._reload()
        current = plan.task(task.id) or task
        retries = current.retries + 1
        max_retries = plan.settings.max_retries
        blocked = retries >= max_retries
        outcome = "blocked" if blocked else "failed"
        # The breaker counts failed ticks (seed §7.4): only the tick's first task moves the
        # count; a later one finds it already raised, or reset by a success.
        failed_ticks = plan.settings.consecutive_failed_ticks + (0 if self.outcomes else 1)

        def edits(plan: Plan) -> list[editor.Edit]:
            found: list[editor.Edit] = [
                editor.set_status(plan, task.id, BLOCKED if blocked else PENDING),
                editor.set_field(plan, task.id, "retries", str(retries)),
            ]
            removed = editor.remove_field(plan, task.id, "claimed")
            if removed is not None:
                found.append(removed)
            return found + self._counter_edits(plan, failed_ticks=failed_ticks)

        self._edit_plan(edits)
        checkpoint("failure-plan-written", self.environ)
        self._append_status(self._entry(task, attempt, outcome, retries=retries))
        if report.stash:
            self._append_event(status_log.emergency_stash(report.stash))
        sha = self._commit(
            f"memento: {task.id} {outcome} (retry {retries}/{max_retries})\n\n"
            + self._trailers(task.id),
            self._bookkeeping_paths(),
        )
        if report.left:
            self._trip_breaker(
                f"the rollback of {task.id} could not restore {', '.join(report.left)}; "
                "clean the working tree by hand, then `memento resume`"
            )
        return TaskOutcome(task.id, outcome, sha, _analysis(attempt) or outcome)

    def _counter_edits(
        self, plan: Plan, *, completed: int | None = None, failed_ticks: int | None = None
    ) -> list[editor.Edit]:
        # Another worker's claim may have numbered a later tick meanwhile: never go back.
        ticks = max(self._tick_number(), plan.settings.total_ticks)
        values = {"total_tasks": str(len(plan.tasks)), "total_ticks": str(ticks)}
        if completed is not None:
            values["completed_tasks"] = str(completed)
        if failed_ticks is not None:
            values["consecutive_failed_ticks"] = str(failed_ticks)
        return [editor.set_meta(plan, key, value) for key, value in values.items()]

    def _entry(
        self, task: Task, attempt: _Attempt, outcome: str, *, retries: int
    ) -> status_log.TickEntry:
        plan = self._plan()
        check = attempt.verify
        index = len(self.outcomes)
        success = outcome == "success"
        return status_log.TickEntry(
            time=attempt.started,
            tick=self._tick_number(),
            continuation=(index + 1, plan.settings.max_tasks_per_tick) if index else None,
            task=task.title,
            outcome=outcome,
            retry=retries,
            max_retries=plan.settings.max_retries,
            verify_head=check.head if check else "",
            exit_code=check.exit_code if check else None,
            verify_timed_out=check.timed_out if check else False,
            duration=(self.clock() - attempt.started).total_seconds(),
            error_analysis=None if success else _analysis(attempt),
            files=tuple((c.path, c.added, c.removed) for c in attempt.changes) if success else None,
            diff_size=sum(c.added + c.removed for c in attempt.changes),
            commit=None,
            outputs=None,
            violations=attempt.violations,
            cost=attempt.agent.cost if attempt.agent else None,
            log=self._relative(self.log_path),
            escalation=outcome == "blocked",
        )

    def _after_tasks(self) -> None:
        reason = breaker.breaker_reason(self._plan(), None)
        if reason:
            self._trip_breaker(reason)
        self._rotate_status(self._plan().settings)
        self._archive_stale_lessons(self._plan().settings)
        self._write_alert(self._plan())

    # -- recovery ---------------------------------------------------------------------------

    def _recover_dead_tick(self) -> bool:
        """A running-marker while we hold the lock means the tick that wrote it died (killed,
        out of memory, power cut): stop the agent or verify it left running, undo its
        half-done work and, when it died during a task, count the attempt as failed.
        True when there was such a tick."""
        marker = self.scratch / "running.json"
        if not marker.exists():
            return False
        import json  # only a tick that finds a marker reads one

        try:
            found = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = {}
        found = found if isinstance(found, dict) else {}
        task_id, tag = found.get("task"), found.get("run")
        if isinstance(tag, str) and tag:
            groups = process.stop_tagged(RUN_TAG, tag)
            if groups:
                self.say(f"Stopped {len(groups)} process group(s) the dead tick left running")
        report = self.workspace.rollback(self._cleanup_keep(), label="dead-tick")
        if self.config.shared is not None:
            self._recover_shared(found)
            marker.unlink(missing_ok=True)
            return True
        plan = self._reload()
        task = plan.task(task_id) if isinstance(task_id, str) else None
        if task is None or task.marker not in (PENDING, RUNNING):
            # It died outside a task, or after the task's commit: that result is recorded.
            if report.restored or report.removed:
                self.say("Rolled back the uncommitted bookkeeping of a tick that died")
        else:
            self.say(f"Recovered from a tick that died while running {task.id}")
            died = ("the previous tick died while running this task",)
            # The marker stays until this is committed: dying here is recovered the same way.
            self._fail(task, _Attempt(died, None, None, (), self.clock()))
            self.tick_number = None  # that was the dead tick's number; this tick is the next
        marker.unlink(missing_ok=True)
        return True

    def _reset_stale_claims(self, plan: Plan) -> Plan:
        now = self.clock()
        timeout = plan.settings.stale_lock_timeout
        stale = [
            task
            for task in plan.tasks
            if task.marker == RUNNING
            and (task.claimed is None or (now - task.claimed.at).total_seconds() > timeout)
        ]
        if not stale:
            return plan

        def edits(plan: Plan) -> list[editor.Edit]:
            found: list[editor.Edit] = []
            for task in stale:
                found.append(editor.set_status(plan, task.id, PENDING))
                removed = editor.remove_field(plan, task.id, "claimed")
                if removed is not None:
                    found.append(removed)
            return found

        self._edit_plan(edits)
        for task in stale:
            self._append_event(f"Stale [~] detected on {task.id}, reset to [ ]")
        ids = ", ".join(task.id for task in stale)
        checkpoint("stale-reset-written", self.environ)
        self._commit(f"memento: reset stale claim on {ids}", self._bookkeeping_paths())
        self.say(f"Reset stale claims: {ids}")
        return self._plan()

    def _require_clean_tree(self, snapshot: TreeStatus) -> None:
        self.head = snapshot.head
        self.known.update(p for p in self._bookkeeping_paths() if p not in snapshot.untracked)
        keep = self._cleanup_keep()
        if not any(
            not _is_working_file(path) and (path in snapshot.tracked or not _keeps(keep, path))
            for path in snapshot.paths
        ):
            return
        # Something is dirty: name it as the full list of changes does.
        dirty = [
            change.path
            for change in self.workspace.changes()
            if not _is_working_file(change.path) and not _matches_keep(change, keep)
        ]
        if dirty:
            shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
            raise UserError(
                f"the working tree has uncommitted changes ({shown}); a tick starts from a "
                "clean tree so that it can undo the agent's work exactly: commit or stash them"
            )

    # -- pipeline states --------------------------------------------------------------------

    def _announce_rest(self, decision: schedule.Decision) -> None:
        if decision.reason == schedule.ALL_COMPLETE:
            self._announce_once(schedule.ALL_COMPLETE_LINE)
        elif decision.reason == schedule.PIPELINE_BLOCKED:
            self._announce_once(decision.message)
        self.say(f"Nothing to run: {decision.message}")

    def _announce_once(self, line: str) -> None:
        """ALL TASKS COMPLETE / PIPELINE BLOCKED are written when the state is reached,
        not on every tick that finds it unchanged."""
        text = self._status_text()
        if status_log.is_latest_event(text, line):
            return
        self._append_event(line)
        self._commit(f"memento: {line}", self._bookkeeping_paths())
        self._write_alert(self._plan())

    def _trip_breaker(self, reason: str) -> None:
        self._edit_plan(lambda plan: [editor.set_meta(plan, "tick_mode", "paused")])
        self._append_event(breaker.BREAKER_LINE.format(reason=reason))
        self._write_alert(self._plan())  # before the commit, which fails when git is broken
        self._commit(
            "memento: circuit breaker paused the plan\n\n" + reason + "\n",
            self._bookkeeping_paths(),
        )
        self.say(breaker.BREAKER_LINE.format(reason=reason))

    def _rotate_status(self, settings: Settings) -> None:
        now = self.clock()
        archive = status_log.archive_path(now, settings.status_archive_dir)
        kept, archived = status_log.rotate(
            self._status_text(),
            settings.status_max_entries,
            now,
            archive_dir=settings.status_archive_dir,
        )
        if archived is None:
            return
        files.write_atomic(self.root / archive, archived)
        files.write_atomic(self.layout.status, kept)
        self._commit("memento: rotate the tick status log", self._bookkeeping_paths())

    def _write_alert(self, plan: Plan) -> None:
        blocked = sum(1 for task in plan.tasks if task.marker == BLOCKED)
        text = self._status_text()
        tripped = "CIRCUIT BREAKER" in text and "CIRCUIT BREAKER" in (
            status_log.last_event(text) or ""
        )
        alert = self.layout.alert
        if not blocked and not tripped:
            alert.unlink(missing_ok=True)
            return
        alert.write_text(
            f"timestamp: {format_time(self.clock())}\n"
            f"blocked_tasks: {blocked}\n"
            f"circuit_breaker: {'TRIGGERED' if tripped else 'OK'}\n"
            f"message: Pipeline needs attention. {blocked} task(s) blocked.\n",
            encoding="utf-8",
        )

    # -- files ------------------------------------------------------------------------------

    def _validated_plan(self) -> Plan:
        """The plan as the tick starts: a plan with errors is never ticked."""
        text = files.read_text(self.layout.plan)
        map_path = self.layout.project_map
        map_text = files.read_text(map_path) if map_path.exists() else None
        plan, problems = check_plan_text(text, map_text)
        errors = [problem for problem in problems if problem.severity == ERROR]
        if errors:
            shown = "\n".join(
                problem.at(self._relative(self.layout.plan)).render() for problem in errors[:20]
            )
            raise UserError(f"the plan has errors; a tick runs only on a valid plan:\n{shown}")
        return self._set_current(plan, text)

    def _plan(self) -> Plan:
        """The plan as the tick last wrote or read it."""
        if self.unapplied:
            # Something needs the claimed plan itself (a breaker trip during a task).
            text, plan = derive.edit(self._base_plan(), self.unapplied)
            self._set_current(plan, text)
        return self.current if self.current is not None else self._reload()

    def _base_plan(self) -> Plan:
        """The plan as last read or derived, before a claim written since."""
        return self.current if self.current is not None else self._reload()

    def _set_current(self, plan: Plan, text: str) -> Plan:
        self.current, self.current_text, self.unapplied = plan, text, ()
        return plan

    def _reload(self) -> Plan:
        """Read the plan again after something else (a rollback) changed the file."""
        text = self._plan_on_disk()
        if self.current is not None and text == self.current_text:
            return self._set_current(self.current, text)  # rolled back to the plan we know
        return self._set_current(parse(text), text)

    def _plan_on_disk(self) -> str:
        return files.read_text(self.layout.plan)

    def _edit_plan(self, make_edits: Callable[[Plan], Sequence[editor.Edit]]) -> Plan:
        plan = self._plan()
        return self._write_plan(plan, make_edits(plan))

    def _write_plan(self, plan: Plan, edits: Sequence[editor.Edit]) -> Plan:
        """Write ``plan`` with ``edits`` applied; the result is the current plan."""
        text, edited = derive.edit(plan, edits)
        files.write_atomic(self.layout.plan, text)
        return self._set_current(edited, text)

    def _commit(self, message: str, paths: Sequence[str], added: Sequence[str] = ()) -> str:
        """Commit ``paths``: the bookkeeping, and the agent's change with the paths of it
        that git does not know yet (``added``)."""
        self._write_state(message.split("\n", 1)[0])
        bookkeeping = self._bookkeeping_paths()
        paths = [*paths, *(path for path in bookkeeping if path not in paths)]
        new = [*added, *(path for path in bookkeeping if path not in self.known)]
        # git's automatic maintenance (a process of its own after each commit) runs on one
        # tick in MAINTENANCE_EVERY: often enough to pack what the ticks leave loose.
        maintenance = self._tick_number() % MAINTENANCE_EVERY == 0
        self.head = self.workspace.commit(message, paths, new=new, maintenance=maintenance)
        self.known.update(bookkeeping)
        return self.head

    def _status_text(self) -> str:
        path = self.layout.status
        return files.read_text(path) if path.exists() else STATUS_HEADER

    def _append_status(self, entry: status_log.TickEntry) -> None:
        text = status_log.append(self._status_text(), status_log.render_entry(entry))
        files.write_atomic(self.layout.status, text)

    def _append_event(self, line: str) -> None:
        block = status_log.render_event(self.clock(), line)
        files.write_atomic(self.layout.status, status_log.append(self._status_text(), block))

    def _bookkeeping_paths(self) -> list[str]:
        paths = [self.layout.plan, self.layout.status, self.layout.notes, self.layout.state]
        folder = self._memory_folder()
        if folder.is_dir():
            paths += sorted(folder.glob("*.md"))
        return [self._relative(path) for path in paths if path.exists()]

    def _cleanup_keep(self) -> list[str]:
        if self.keep is None:
            keep_file = self.root / self._plan().settings.clean_ignore
            patterns = context.read_ignore_file(keep_file) if keep_file.exists() else []
            self.keep = [*patterns, *WORKING_FILES]
        return self.keep

    def _mark_running(self, task_id: str | None, *, durable: bool = True) -> None:
        """Say under .git/ that this tick is writing (and which task it runs), with the tag
        of the processes it starts."""
        marker = {
            "task": task_id,
            "tick": self.tick_number,
            "worker": self.config.worker_id,
            "run": self.run_tag,
        }
        if self.config.shared is not None:
            marker["base"] = self.base
            marker["claim"] = self.claim_value if task_id else None
        files.write_atomic(self.scratch / "running.json", json_object(marker), durable=durable)

    def _clear_running_marker(self) -> None:
        (self.scratch / "running.json").unlink(missing_ok=True)

    def _tick_number(self) -> int:
        if self.tick_number is None:
            self.tick_number = self._plan().settings.total_ticks + 1
        return self.tick_number

    def _relative(self, path: Path) -> str:
        found = self.relative.get(path)
        if found is None:
            if self.resolved_root is None:
                self.resolved_root = self.root.resolve()
            found = self.relative[path] = path.resolve().relative_to(self.resolved_root).as_posix()
        return found


def json_object(fields: Mapping[str, str | int | None]) -> str:
    """A flat JSON object of strings, integers and nulls, as ``json.dumps`` would write it
    (ASCII only, every other character escaped): importing json cost more than the marker
    it wrote on every tick."""
    items = (f"{json_string(key)}: {_json_value(value)}" for key, value in fields.items())
    return "{" + ", ".join(items) + "}"


def _json_value(value: str | int | None) -> str:
    if value is None:
        return "null"
    return str(value) if isinstance(value, int) else json_string(value)


_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def json_string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code > 0xFFFF:  # outside the basic plane: a surrogate pair, as JSON spells it
            code -= 0x10000
            out.append(f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}")
        else:
            out.append(f"\\u{code:04x}")
    out.append('"')
    return "".join(out)


def _analysis(attempt: _Attempt) -> str | None:
    if attempt.violations:
        return "; ".join(attempt.violations)
    check = attempt.verify
    if check is None:
        return None
    if check.timed_out:
        return f"verify ran past its timeout ({check.duration:.0f}s) and was killed"
    first = check.head.splitlines()[0] if check.head else "no output"
    return f"verify exited with code {check.exit_code}: {first}"


def _is_working_file(path: str) -> bool:
    return any(path == name or path.startswith(name) for name in WORKING_FILES)


def _matches_keep(change: FileChange, keep: Sequence[str]) -> bool:
    return change.kind == "untracked" and _keeps(keep, change.path)


def _keeps(keep: Sequence[str], path: str) -> bool:
    return globs.is_ignored(keep, path)


def _free_disk(root: Path) -> int | None:
    # What shutil.disk_usage computes, without importing shutil (and its compressors).
    try:
        found = os.statvfs(root)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize
