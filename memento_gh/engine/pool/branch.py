"""How a tick takes a task and publishes what it did, alone in its clone or in a pool of
workers that share a branch through a remote. The step order (``tick.py``) talks to either
through the same methods and never asks which one it has.

In a pool, each worker ticks in its own clone and the remote's branch is the lock. A claim
is a commit pushed before the agent starts: a rejected push means that another worker moved
the branch first, so the tick drops its commits for the remote's tip and decides again. A
result is pushed the same way and, on a rejection, made again on the new tip: the
bookkeeping from the files as they are there, the agent's change as a patch. So no worker's
bookkeeping overwrites another's.

When the branch does not take a result at once, the worker posts it on a ref of its own
(``handoff.py``), where nobody races it: from then on the result is published, and any
worker that pushes (a claim, its own result, nothing at all) records every posted result
on the tip it pushes, each as its worker would have, and notes the ref as recorded in the
same push. So one landing carries several results, and a rejected worker whose result
another worker recorded meanwhile is done without pushing again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from memento_gh.engine.books import bookkeeping
from memento_gh.engine.pool import handoff
from memento_gh.engine.pool.handoff import Assignment, Carried, Handoff, Posted, Request
from memento_gh.engine.records import Attempt, Claim, TaskOutcome
from memento_gh.engine.tick import pipeline, results
from memento_gh.engine.tick.recovery import RunningMarker
from memento_gh.engine.tick.session import Session
from memento_gh.errors import UserError
from memento_gh.formats import status_log
from memento_gh.plan.model import PENDING, RUNNING, Task
from memento_gh.plan.values import format_time, parse_claim
from memento_gh.workspace import RollbackReport

#: Seconds after which a worker's request for a task is left alone: its worker, which
#: withdraws a request it no longer waits for, may have died.
REQUEST_TIMEOUT = 60
#: Rounds a worker waiting on what it posted polls for another to record it, before it
#: records it itself: the waits grow up to ``POLL_CAP``, so about five seconds.
PATIENCE = 20
#: A worker waiting on what it posted polls first after up to 160 ms (10 ms doubled four
#: times), then after up to twice as long each time, up to ``POLL_CAP``.
POLL_START = 4
#: Seconds: the longest wait between two polls. A poll is one ``git ls-remote`` (about
#: 6 ms of CPU); its interval is how late, on average half of it, a worker learns that its
#: result was recorded and its next task claimed, each task.
POLL_CAP = 0.5
#: Seconds after which another worker's posted result is taken for abandoned, and recorded
#: by a worker that has no task of its own to ask for (``PATIENCE``, a few times over).
ABANDONED = 20
#: Results recorded per push by a worker whose turn it is (``_record_turn``).
CHUNK = 4


class Remote(Protocol):
    """The git side of a shared branch (``remote.SharedBranch``)."""

    attempts: int
    tip: str | None  # the remote's tip as last fetched or pushed
    #: Whether a posted result asks for the worker's next task too: its process ticks on.
    carry: bool
    #: The task claimed with the last result, for the next tick to run (None: none).
    carried: Carried | None

    def sync(self) -> str: ...
    def refresh(self) -> None: ...
    def publish(self) -> bool: ...
    def wait(self, attempt: int, *, urgent: bool = False, cap: float = ...) -> None: ...
    def post_result(self, name: str, tree_of: str, parent: str, message: str) -> str: ...
    def posted(self) -> list[Posted]: ...
    def note(self, posted: Posted, message: str) -> None: ...
    def withdraw(self, posted: str, name: str, message: str) -> bool: ...
    def waiting(self) -> tuple[str | None, dict[str, str]] | None: ...


class LocalBranch:
    """Nobody else ticks this clone: a claim stays uncommitted, and a result is recorded
    by one commit, with nothing to push."""

    #: Commits name no worker: there is one.
    worker: str | None = None

    def __init__(self, session: Session, marker: RunningMarker) -> None:
        self.session = session
        self.marker = marker

    def begin(self, dirty: Callable[[], list[str]]) -> None:
        """Nothing to do before the plan is read: the tree is checked after the mode."""

    def marker_fields(self, task_id: str | None) -> Mapping[str, str | None]:
        return {}

    def adopts(self, found: Mapping[str, Any]) -> bool:
        return False

    def release_carried(self) -> None:
        """Nothing is claimed ahead in a clone of one's own."""

    def finish(self) -> None:
        self.marker.clear()

    def take(self, tried: Collection[str], tick: int | None, index: int) -> Claim | None:
        """Choose the next task and claim it in the plan file, uncommitted."""
        session = self.session
        task = pipeline.choose(session, tried, index)
        if task is None:
            return None
        number = tick or pipeline.next_tick_number(session.plan_file.current)
        pipeline.announce_task(session, number, task)
        # The marker first: a tick that dies between the two writes leaves a claim that the
        # next tick knows to undo, not an uncommitted plan edit that blocks every tick.
        self.marker.write(task.id, number, {})
        session.checkpoint("marked")
        plan = session.plan_file.current
        claimed_by = f"{format_time(session.clock())} {session.worker_id}"
        edits = bookkeeping.claim_edits(plan, task.id, claimed_by)
        claimed, text, block = session.plan_file.write_claim(task, edits)
        return Claim(claimed, text, block, number, index)

    def publish(
        self, redo: Callable[[], object] | None = None, *, due: Callable[[], bool] | None = None
    ) -> bool:
        return True

    def publish_result(self, claim: Claim, attempt: Attempt, outcome: TaskOutcome) -> TaskOutcome:
        return outcome

    def recover(self, found: Mapping[str, Any], report: RollbackReport) -> None:
        """The dead tick's claim was never committed, and the rollback undid it: count the
        attempt, unless the task was recorded before the tick died."""
        session = self.session
        plan = session.plan_file.reread()
        task_id = found.get("task")
        task = plan.task(task_id) if isinstance(task_id, str) else None
        if task is None or task.marker not in (PENDING, RUNNING):
            if report.restored or report.removed:
                session.say("Rolled back the uncommitted bookkeeping of a tick that died")
            return
        session.say(f"Recovered from a tick that died while running {task.id}")
        record_death(session, task, self.worker)


def record_death(session: Session, task: Task, worker: str | None) -> TaskOutcome:
    """The attempt a dead tick was making counts as failed, under the next tick number."""
    tick = pipeline.next_tick_number(session.plan_file.current)
    died = Attempt((), None, None, (), session.clock(), tick_died=bookkeeping.DIED)
    return results.fail(session, Claim(task, "", "", tick), died, worker)


class PoolBranch:
    """A branch shared with other workers through ``remote``: claims and results are
    pushed, and made again on the remote's tip when another worker pushed first."""

    def __init__(self, session: Session, marker: RunningMarker, remote: Remote) -> None:
        self.session = session
        self.marker = marker
        self.remote = remote
        self.worker: str | None = session.worker_id
        #: A commit the remote has, after which every local commit is this tick's own:
        #: what a tick that dies leaves for the next one to drop.
        self.base: str | None = None
        #: The claim this tick holds on the remote, while it holds one.
        self.claimed_by: str | None = None
        #: The name of this worker's result ref.
        self.ref_name = handoff.ref_name(session.worker_id)
        # What the tick writes is pushed (the remote keeps it) or dropped by the next tick
        # for the remote's tip: flushing each write to the disk would save nothing, and
        # the worker recording twenty results writes the plan and the log forty times.
        session.plan_file.durable = session.ledger.durable = False
        #: The claim under which this worker asked for its next task with its result,
        #: while that is outstanding.
        self.next_claimed: str | None = None
        #: Who waits, in the order they posted, as this worker's last poll listed them.
        self._listed: Mapping[str, str] | None = None

    def begin(self, dirty: Callable[[], list[str]]) -> None:
        """Stand on the remote's tip; the tree must be clean before the branch moves. A
        tick that carries a task claimed with the last result stands there already: the
        tip it fetched then holds the claim, which is all its agent needs."""
        refuse_dirty_tree(dirty())
        if self.remote.carried is not None:
            self._moved()
            return
        self._sync()

    def marker_fields(self, task_id: str | None) -> Mapping[str, str | None]:
        carried = self.remote.carried
        ahead = self.next_claimed or (carried.claimed if carried else None)
        return {"base": self.base, "claim": self.claimed_by if task_id else None, "next": ahead}

    def adopts(self, found: Mapping[str, Any]) -> bool:
        """The marker was left by this process's last tick, which ended with a task claimed
        for this one: it is no dead tick's."""
        carried = self.remote.carried
        return (
            carried is not None
            and found.get("task") is None
            and found.get("next") == carried.claimed
        )

    def finish(self) -> None:
        """The tick is over. A task claimed for the next one stays in the marker until that
        tick takes it: if the process dies first, whoever ticks in this clone next releases
        it."""
        carried = self.remote.carried
        if carried is None:
            self.marker.clear()
        else:
            self.marker.write(None, None, {"base": self.base, "next": carried.claimed})

    def release_carried(self) -> None:
        """The tick ends before its first task (paused, over budget, the breaker): the task
        claimed for it with the last result goes back to the pool."""
        carried, self.remote.carried = self.remote.carried, None
        if carried is not None:
            self._release(carried.claimed)

    def take(self, tried: Collection[str], tick: int | None, index: int) -> Claim | None:
        """Choose a task on the remote's tip and push the claim; a rejected push means that
        another worker moved the branch: start again from its new tip.

        A tick's first claim, rejected once or while other workers' posts wait, is asked
        of the pool instead (``_request``): the next push claims a task for it, together
        with whatever else waits."""
        first = tick is None and index == 0
        carried = self._take_carried()
        if carried is not None:
            return carried
        if first and self._waiting():
            if (
                not self._abandoned_results()
                and pipeline.choose(self.session, tried, index) is None
            ):
                return None  # nothing to ask the pool for, nor to record: said why
            return self._request()  # the next push records them all, this request too
        for attempt in range(1, self.remote.attempts + 1):
            if attempt > 1:
                self.remote.wait(attempt - 1)
                self._refresh()
            task = pipeline.choose(self.session, tried, index)
            claim = None if task is None else self._claim(task, tick, index)
            if self.remote.publish():
                self._published()
                if claim is not None:
                    pipeline.announce_task(self.session, claim.tick, claim.task)
                return claim
            if first and claim is not None:
                return self._request()
        self._refresh()
        self.session.say("The branch kept moving: no task could be claimed this tick")
        return None

    def _take_carried(self) -> Claim | None:
        """The task claimed for this tick with the last one's result, as the plan in hand
        shows it (None: none was, or the claim is gone, reset or retried by a person
        meanwhile)."""
        carried, self.remote.carried = self.remote.carried, None
        if carried is None:
            return None
        self.claimed_by = carried.claimed
        task, tick, commit = carried.assignment
        claim = self._claim_landed(task, tick, commit)
        if claim is None:
            self.claimed_by = None
            return None
        self.session.checkpoint("carried")
        self.marker.write(claim.task.id, claim.tick, self.marker_fields(claim.task.id))
        pipeline.announce_task(self.session, claim.tick, claim.task)
        return claim

    def _request(self) -> Claim | None:
        """Ask the pool for a task, on this worker's own ref, and push what is posted
        (claiming a task for each request, this one too) until a claim for it lands, by
        this worker's push or another's. None when no task is left for it, or the branch
        kept moving: the request is withdrawn then."""
        session = self.session
        if session.workspace.quick_head() != self.remote.tip:
            self._refresh()  # the claim just refused stays out of the request's way
        self.claimed_by = f"{format_time(session.clock())} {session.worker_id}"
        # The marker first: a tick that dies once a claim for it landed leaves that claim
        # for the next one to find, by the claim it asked under.
        self.marker.write(None, None, {"base": self.base, "claim": self.claimed_by})
        session.checkpoint("marked")
        request = handoff.Request(session.worker_id, self.claimed_by)
        tip = self.remote.tip or session.workspace.head() or ""
        posted = self.remote.post_result(self.ref_name, tip, tip, handoff.request_message(request))
        session.checkpoint("requested")
        pushes = rounds = 0
        while pushes < self.remote.attempts:
            rounds += 1
            if not self._poll(rounds):
                continue
            claim = self._assigned(posted)
            if claim is None:
                if not self._abandoned_results() and pipeline.pick_quietly(session) is None:
                    # Every task left is claimed (or none can start), and no other result
                    # waits for a hand: waiting for a turn would only find that out again.
                    return self._withdraw(posted)
                if not self._my_turn(rounds):
                    continue
                pushed, own, made = self._record_turn()
                pushes += made
                if not pushed:
                    continue
                claim = own.claim if own else None
                if claim is None:
                    # No task left for it: what it recorded for the others landed all the
                    # same, rather than wait for another worker's patience to run out.
                    return self._withdraw(posted)
                # The plan as it stands after every claim of that push, as the agent finds it.
                landed = self._claim_landed(claim.task.id, claim.tick, claim.commit or "")
                claim = landed or claim
            self.marker.write(claim.task.id, claim.tick, self.marker_fields(claim.task.id))
            pipeline.announce_task(session, claim.tick, claim.task)
            return claim
        self.session.say("The branch kept moving: no task could be claimed this tick")
        return self._withdraw(posted)

    def _poll(self, rounds: int) -> bool:
        """Wait, then stand on the remote's tip if there is something for this worker to
        do there: False when there is not (one ``git ls-remote`` says so), unless the worker
        whose turn it was kept still past ``PATIENCE``.

        The ls-remote lists the branch's tip and who waits (``remote.WAITING``). A worker no
        longer listed was recorded (or withdrew): it fetches, to read how. Of those listed,
        the one that posted first records, and fetches whenever the tip or the list changed
        since it last looked (at once, the first time). The others do not fetch at all
        while they wait: with twenty workers the branch moves every second, and a fetch
        each time, in every waiting worker, was most of the pool's CPU. (The turn used to
        go by name: a worker posting later, first by name, raced the one recording.)"""
        self.remote.wait(rounds + POLL_START, urgent=True, cap=POLL_CAP)
        if rounds <= PATIENCE:
            listed = self.remote.waiting()
            self._listed = None if listed is None else listed[1]
            if listed is not None:
                tip, waiting = listed
                if self.ref_name in waiting:
                    if self._first_waiting(waiting) != self.ref_name:
                        return False
                    if rounds > 1 and tip == self.remote.tip and not self._new_posts(waiting):
                        return False
        self._refresh()
        return True

    def _first_waiting(self, waiting: Mapping[str, str]) -> str | None:
        """Whose turn it is to record, of the workers ``waiting`` lists in the order they
        posted: the first, passing over requests (as last fetched) old enough that their
        workers may be gone."""
        known = {posted.name: posted for posted in self.remote.posted()}
        now = self.session.clock()

        def gone(name: str, sha: str) -> bool:
            posted = known.get(name)
            if posted is None or posted.sha != sha:
                return False
            request = handoff.read_request(posted.message)
            return request is not None and _expired(request, now)

        return next((name for name, sha in waiting.items() if not gone(name, sha)), None)

    def _new_posts(self, waiting: Mapping[str, str]) -> bool:
        """``waiting`` lists a post this worker has not fetched."""
        known = {posted.name: posted.sha for posted in self.remote.posted()}
        return any(known.get(name) != sha for name, sha in waiting.items())

    def _recorder(self) -> str | None:
        """The ref of the worker whose turn it is to record what waits, as the last poll
        listed them (else as last fetched, first by name; None: nothing waits)."""
        if self._listed is not None:
            return self._first_waiting(self._listed)
        waiting = self._waiting()
        return min(waiting) if waiting else None

    def _my_turn(self, rounds: int) -> bool:
        """Whether this worker records what is posted now. One push records it all, so of
        the workers waiting on what they posted, the first by name does it, and the others
        poll until it lands; after ``PATIENCE`` rounds (several seconds) they do it too."""
        if rounds > PATIENCE:
            return True
        return self._recorder() in (None, self.ref_name)

    def _abandoned_results(self) -> bool:
        """Another worker's result waits, posted ``ABANDONED`` seconds ago or more: its own
        worker, which records it within seconds when alive, may be dead. A worker with no
        task to ask for stays out of the way of the others, unless one is."""
        now = self.session.clock().timestamp()
        return any(
            ref.name != self.ref_name
            and now - ref.at >= ABANDONED
            and handoff.read_result(ref.message) is not None
            for ref in self.remote.posted()
        )

    def _waiting(self) -> list[str]:
        """The refs whose posted result or request waits to be recorded: a push that does
        not record them would only delay them."""
        now = self.session.clock()
        waiting = []
        for ref in self.remote.posted():
            request = handoff.read_request(ref.message)
            if request is not None:
                if not _expired(request, now):
                    waiting.append(ref.name)
            elif handoff.read_result(ref.message) is not None:
                waiting.append(ref.name)
        return waiting

    def _assigned(self, posted: str) -> Claim | None:
        """The claim another worker landed for this worker's request ``posted``, or None."""
        for ref in self.remote.posted():
            if ref.name != self.ref_name or ref.parent != posted or ref.sha == posted:
                continue
            assignment = handoff.read_assignment(ref.message)
            if assignment is None:
                return None
            return self._claim_landed(assignment.task, assignment.tick, assignment.commit)
        return None

    def _claim_landed(self, task_id: str, tick: int, commit: str) -> Claim | None:
        """This worker's claim of ``task_id`` as the tip shows it (None: it is not)."""
        plan_file = self.session.plan_file
        task = plan_file.current.task(task_id)
        if task is None or task.claimed is None or task.claimed.render() != self.claimed_by:
            return None
        text = plan_file.text_on_disk()
        block = "\n".join(text.splitlines()[task.line : task.end + 1])
        return Claim(task, text, block, tick, 0, commit)

    def _withdraw(self, posted: str) -> Claim | None:
        """Take the request back; when another worker claimed a task for it first, that
        claim is this tick's."""
        withdrawn = self.remote.withdraw(posted, self.ref_name, handoff.assignment_message(None))
        self._refresh()
        claim = None if withdrawn else self._assigned(posted)
        if claim is None:
            self.claimed_by = None
            return None
        self.marker.write(claim.task.id, claim.tick, self.marker_fields(claim.task.id))
        pipeline.announce_task(self.session, claim.tick, claim.task)
        return claim

    def _claim(self, task: Task, tick: int | None, index: int) -> Claim:
        """Commit the claim: [~], who and when, and the tick's number in the Meta. The first
        claim of a tick takes the next number on the branch; a later one keeps it."""
        session = self.session
        plan_file = session.plan_file
        number = tick or pipeline.next_tick_number(plan_file.current)
        self.claimed_by = f"{format_time(session.clock())} {session.worker_id}"
        # The marker first: a tick that dies after the push leaves a claim its marker names.
        self.marker.write(task.id, number, self.marker_fields(task.id))
        session.checkpoint("marked")
        edits = bookkeeping.claim_edits(plan_file.current, task.id, self.claimed_by, number)
        claimed, text, block = plan_file.write_and_show(task, edits)
        claim = Claim(claimed, text, block, number, index)
        sha = session.ledger.commit_with_state(
            bookkeeping.claim_message(claim, self.worker), tick=number
        )
        return claim._replace(commit=sha)

    def publish(
        self, redo: Callable[[], object] | None = None, *, due: Callable[[], bool] | None = None
    ) -> bool:
        """Push the bookkeeping just committed; on each rejection, move to the remote's tip
        and ``redo`` it there (None: push once). False when the branch kept moving.

        ``due`` says, on the new tip, whether the bookkeeping is still to be recorded there:
        as long as it is, the pushes go on past the usual number of attempts (a record
        nobody else can make, such as a dead tick's attempt); once it is not, they stop."""
        if redo is None:
            return self.remote.publish()
        attempt = 0
        while True:
            attempt += 1
            if self.remote.publish():
                self._published()
                return True
            self.remote.wait(attempt, urgent=due is not None)
            self._refresh()
            if due is not None and not due():
                return False  # recorded meanwhile, by another worker: nothing left to push
            if attempt >= self.remote.attempts and due is None:
                break
            redo()
        self._refresh()
        self.session.say("The branch kept moving: this tick's bookkeeping was not pushed")
        return False

    def publish_result(self, claim: Claim, attempt: Attempt, outcome: TaskOutcome) -> TaskOutcome:
        """Push the task's result; on each rejection make it again on the remote's new tip,
        as long as the claim there is still this tick's."""
        try:
            return self._publish_result(claim, attempt, outcome)
        finally:
            self.claimed_by = None
            self.next_claimed = None

    def _publish_result(self, claim: Claim, attempt: Attempt, outcome: TaskOutcome) -> TaskOutcome:
        """A result is a whole agent run. Rejected once, it is posted on this worker's own
        ref, and from then on it is pushed again, with growing jittered waits, recorded on
        each new tip together with every other result posted, for as long as the claim on
        the remote is this tick's and live, unless another worker recorded it first. It
        fails only for a reason of its own: the claim was reset, the change no longer
        applies, or the claim went stale before the branch let the result in."""
        task = claim.task
        # A push made on a tip that moved meanwhile is refused, and one made while others'
        # posts wait would only delay them: one ls-remote (a fraction of a push's cost)
        # tells both, and with many workers one or the other holds most times.
        listed = self.remote.waiting()
        if listed == (self.remote.tip, {}) and self.remote.publish():
            self._published()
            return outcome._replace(pushes=1)
        if self.remote.carry:
            # The next task rides with this result: whoever records it claims one for this
            # worker in the same push, instead of in a second round trip after it.
            self.next_claimed = f"{format_time(self.session.clock())} {self.session.worker_id}"
            self.marker.write(task.id, claim.tick, self.marker_fields(task.id))
        posted = self._post(claim, attempt, outcome)
        self.session.checkpoint("posted")
        number = rounds = 1
        while True:
            if not self._poll(rounds):
                rounds += 1
                continue
            noted = self._noted(posted)
            if noted is not None:  # another worker recorded it, and that landed
                done, assignment = noted
                self._carry(assignment)
                return done._replace(pushes=number)
            held = self.session.plan_file.current.task(task.id)
            if number >= self.remote.attempts and held is not None and self._stale(held):
                break
            rounds += 1
            if not self._my_turn(rounds):
                continue
            landed, mine, made = self._record_turn()
            number += made
            if not landed:
                continue
            if mine is None or mine.outcome is None:
                return self._gone(task.id, number)
            self._carry(mine.assignment)
            return mine.outcome._replace(pushes=number)
        self._refresh()
        return TaskOutcome(
            task.id,
            "unpublished",
            None,
            f"the branch kept moving for {number} pushes, until the claim was older than "
            "stale_lock_timeout; the claim goes stale and the task runs again (raise "
            "stale_lock_timeout in the plan's Meta)",
            pushes=number,
        )

    def _post(self, claim: Claim, attempt: Attempt, outcome: TaskOutcome) -> str:
        """Post the result on this worker's own ref; the posted commit."""
        session = self.session
        task = claim.task
        paths = [c.path for c in attempt.changes] + [
            c.old_path for c in attempt.changes if c.old_path
        ]
        success = outcome.outcome == bookkeeping.SUCCESS and outcome.commit is not None
        base = claim.commit or session.workspace.head() or ""
        record = Handoff(
            worker=self.worker,
            task=task.id,
            claimed=task.claimed.render() if task.claimed else "",
            tick=claim.tick,
            position=claim.position,
            claim_commit=base,
            log=claim.log or session.log_name,
            outcome=outcome.outcome,
            paths=tuple(paths) if success else (),
            attempt=attempt,
            next=self.next_claimed,
        )
        tree_of = outcome.commit if success and outcome.commit else base
        message = handoff.result_message(record)
        return self.remote.post_result(self.ref_name, tree_of, base, message)

    def _noted(self, posted: str) -> tuple[TaskOutcome, Assignment | None] | None:
        """How the result posted as ``posted`` ended, and the task claimed with it, when
        another worker recorded it and noted so on the remote; None while it waits."""
        for ref in self.remote.posted():
            if ref.name == self.ref_name and ref.parent == posted and ref.sha != posted:
                outcome = handoff.read_note(ref.message)
                return None if outcome is None else (outcome, handoff.read_assignment(ref.message))
        return None

    def _carry(self, assignment: Assignment | None) -> None:
        """Keep the task claimed with this result for the next tick."""
        if assignment is not None and self.next_claimed is not None:
            self.remote.carried = Carried(assignment, self.next_claimed)

    def _gone(self, task_id: str, pushes: int) -> TaskOutcome:
        return TaskOutcome(
            task_id,
            "unpublished",
            None,
            "the result posted on this worker's ref is gone from the remote (replaced or "
            "deleted); the claim goes stale and the task runs again",
            pushes=pushes,
        )

    def _record_turn(self) -> tuple[bool, Recorded | None, int]:
        """Record what is posted, ``CHUNK`` results a push, this worker's own last, until
        its own is recorded or nothing is left: whether every push landed, what was recorded
        for this worker (None: its post was not there), and how many pushes it made.

        Twenty results arriving together take a second or two to record; pushed a few at
        a time, the first of their workers start their next tasks that much sooner, and
        the next results arrive spread out instead of all together again."""
        pushes = 0
        while True:
            started = time.monotonic()
            recorded = self._record_posted(limit=CHUNK)
            if not recorded:
                return True, None, pushes
            head = (self.session.workspace.quick_head() or "")[:7]
            self.session.say(
                f"  the branch moved: recorded {len(recorded)} posted on {head} "
                f"in {time.monotonic() - started:.1f} s"
            )
            pushes += 1
            if not self.remote.publish():
                return False, None, pushes
            self._published()
            own = recorded.get(self.ref_name)
            if own is not None:
                return True, own, pushes

    def _record_posted(
        self, *, own_next: bool = True, limit: int | None = None
    ) -> dict[str, Recorded]:
        """Record on the commits in hand every result posted and not recorded yet, each
        as its worker would have, and claim a task for every request, alone or riding
        with a result (this worker's own, unless not ``own_next``); note each ref so with
        the next push. The other workers' posts come first (by name), this worker's own
        last; with a ``limit``, only that many results are recorded, and that many tasks
        claimed (for the requests that ride with those results first). What was recorded
        and claimed, by ref."""
        outcomes: dict[str, TaskOutcome] = {}
        riding: list[tuple[Posted, Request]] = []
        asking: list[tuple[Posted, Request]] = []
        posts = sorted(self.remote.posted(), key=lambda p: (p.name == self.ref_name, p.name))
        for posted in posts:
            request = handoff.read_request(posted.message)
            found = handoff.read_result(posted.message)
            if found is not None and (limit is None or len(outcomes) < limit):
                outcomes[posted.name] = self._record_handoff(posted, found)
                ride = handoff.request_of(found)
                if ride is not None and (own_next or posted.name != self.ref_name):
                    riding.append((posted, ride))
            elif request is not None:
                asking.append((posted, request))
        # The results first: the tasks they free are there to claim.
        claims: dict[str, Claim] = {}
        for posted, request in riding + asking:
            if limit is not None and len(claims) >= limit:
                break
            claim = self._claim_for(request, mine=posted.name == self.ref_name)
            if claim is not None:
                claims[posted.name] = claim
        recorded: dict[str, Recorded] = {}
        for posted in posts:
            entry = Recorded(outcomes.get(posted.name), claims.get(posted.name))
            if entry.outcome is not None:
                self.remote.note(posted, handoff.note_message(entry.outcome, entry.assignment))
            elif entry.assignment is not None:
                self.remote.note(posted, handoff.assignment_message(entry.assignment))
            else:
                continue  # a note (recorded already), or a request no task is left for
            recorded[posted.name] = entry
        return recorded

    def _claim_for(self, request: Request, *, mine: bool) -> Claim | None:
        """Claim the next task for ``request`` on the commits in hand, as its worker would
        have; None when there is none to claim (a request of another worker's stays then,
        for that worker to withdraw)."""
        session = self.session
        if not mine and _expired(request, session.clock()):
            return None  # its worker gave up on it long ago: it may be gone
        task = pipeline.choose(session, (), 0) if mine else pipeline.pick_quietly(session)
        if task is None:
            return None
        plan_file = session.plan_file
        number = pipeline.next_tick_number(plan_file.current)
        edits = bookkeeping.claim_edits(plan_file.current, task.id, request.claimed, number)
        claimed, text, block = plan_file.write_and_show(task, edits)
        claim = Claim(claimed, text, block, number, 0)
        sha = session.ledger.commit_with_state(
            bookkeeping.claim_message(claim, request.worker), tick=number
        )
        return claim._replace(commit=sha)

    def _record_handoff(self, posted: Posted, found: Handoff) -> TaskOutcome:
        """A posted result recorded on the tip, while the claim it was run under holds
        there; a result whose claim was reset meanwhile is dropped, and the log says so."""
        session = self.session
        held = session.plan_file.current.task(found.task)
        if (
            held is None
            or held.marker != RUNNING
            or held.claimed is None
            or held.claimed.render() != found.claimed
        ):
            return self._record_lost(found.task, found.worker or "a worker")
        claim = Claim(held, "", "", found.tick, found.position, found.claim_commit, found.log)
        patch = b""
        if found.outcome == bookkeeping.SUCCESS and found.paths:
            patch = session.workspace.change_between(
                found.claim_commit, posted.sha, list(found.paths)
            )
        before = TaskOutcome(found.task, found.outcome, None, "")
        outcome, _ = self._make_again(
            claim, found.attempt, before, patch, list(found.paths), found.worker
        )
        return outcome

    def _stale(self, task: Task) -> bool:
        """The claim is older than the plan's stale_lock_timeout: another worker may reset it
        at any moment, so it no longer holds the task."""
        claimed = task.claimed
        if claimed is None:
            return True
        timeout = self.session.plan_file.current.settings.stale_lock_timeout
        return (self.session.clock() - claimed.at).total_seconds() >= timeout

    def _make_again(
        self,
        claim: Claim,
        attempt: Attempt,
        outcome: TaskOutcome,
        patch: bytes,
        paths: list[str],
        worker: str | None,
    ) -> tuple[TaskOutcome, Attempt]:
        """The result recorded again on the new tip, under ``worker``'s name: a failure as
        a failure, a deferral as a deferral, a success with its change applied as a patch,
        or failed when the patch no longer applies."""
        session = self.session
        if outcome.outcome == bookkeeping.DEFERRED:
            return results.defer(session, claim, attempt, worker), attempt
        if outcome.outcome != bookkeeping.SUCCESS:
            return results.fail(session, claim, attempt, worker), attempt
        if session.workspace.apply_change(patch):
            # memento's own patch of the checked commit, on a new base: its bytes may
            # differ from verify's by the other tasks' lines, which parallel: true allows.
            attempt = attempt._replace(seen_by_verify=None)
            return results.succeed(session, claim, attempt, worker, staged=True), attempt
        clash = f"its change no longer applies to {', '.join(paths[:5])}"
        attempt = attempt._replace(
            conflict=clash + ": another task changed them since the claim", verify=None
        )
        return results.fail(session, claim, attempt, worker), attempt

    def _record_lost(self, task_id: str, worker: str) -> TaskOutcome:
        """The claim was reset (it looked stale) while the agent worked: the result is
        dropped, for the task's next run is someone else's."""
        ledger = self.session.ledger
        line = (
            f"{task_id}: the result of {worker} was dropped, its claim was "
            "reset meanwhile (stale_lock_timeout too short for the task?)"
        )
        ledger.append_event(line)
        ledger.commit_with_state(f"memento: {task_id} claim lost")
        return TaskOutcome(task_id, "lost", None, line)

    def recover(self, found: Mapping[str, Any], report: RollbackReport) -> None:
        """Drop the commits the dead tick never pushed and, when the remote still shows its
        claim, count that attempt as failed there."""
        session = self.session
        base, claim = found.get("base"), found.get("claim")
        if isinstance(base, str):
            subjects = session.workspace.subjects_since(base)
            if subjects and all(subject.startswith("memento: ") for subject in subjects):
                session.workspace.reset_hard(base)
        self._sync()
        self._withdraw_waiting_request()
        if self._own_result_waits():
            # The dead tick posted its result: it is recorded, as any worker would; the
            # next task it asked for with it is not, for it is dead.

            def record_own() -> None:
                self._record_posted(own_next=False)

            record_own()
            self.publish(record_own, due=self._own_result_waits)
        ahead = found.get("next")
        if isinstance(ahead, str):
            self._release(ahead)  # claimed for the dead tick's next: none of it ran
        task_id = found.get("task")
        plan = session.plan_file.current
        task = plan.task(task_id) if isinstance(task_id, str) else None
        if task_id is None and isinstance(claim, str):
            # It died while it asked the pool for a task: one may have been claimed for it.
            task = next((t for t in plan.tasks if t.claimed and t.claimed.render() == claim), None)
        if task is None or task.marker != RUNNING or task.claimed is None:
            return
        if task.claimed.render() != claim:
            return
        session.say(f"Recovered from a tick that died while running {task.id}")

        def record() -> None:
            record_death(session, task, self.worker)

        def due() -> bool:
            """The dead tick's claim is still on the branch: only this clone knows it died."""
            held = session.plan_file.current.task(task.id)
            return held is not None and held.marker == RUNNING and held.claimed == task.claimed

        record()
        self.publish(record, due=due)

    def _release(self, claimed: str) -> None:
        """Put back to ``[ ]`` the tasks claimed under ``claimed`` for a tick of this
        worker's that never started their agent: nothing ran, so no attempt counts."""
        session = self.session

        def held() -> list[Task]:
            return [
                task
                for task in session.plan_file.current.tasks
                if task.marker == RUNNING
                and task.claimed is not None
                and task.claimed.render() == claimed
            ]

        def release() -> None:
            tasks = held()
            if not tasks:
                return
            session.plan_file.edit(lambda plan: bookkeeping.reset_edits(plan, tasks))
            for task in tasks:
                session.ledger.append_event(status_log.claim_released(task.id, session.worker_id))
            ids = ", ".join(task.id for task in tasks)
            session.ledger.commit_with_state(f"memento: release the claim on {ids}")
            session.say(f"Released {ids}: claimed for this worker, never started")

        release()
        self.publish(release, due=lambda: bool(held()))

    def _withdraw_waiting_request(self) -> None:
        """A request the dead tick left that no worker answered is taken back."""
        for ref in self.remote.posted():
            if ref.name == self.ref_name and handoff.read_request(ref.message) is not None:
                note = handoff.assignment_message(None)
                self.remote.withdraw(ref.sha, self.ref_name, note)
                self._refresh()

    def _own_result_waits(self) -> bool:
        """This worker's ref holds a result nobody recorded yet."""
        return any(
            ref.name == self.ref_name and handoff.read_result(ref.message) is not None
            for ref in self.remote.posted()
        )

    def _sync(self) -> None:
        self.session.say(f"Shared branch: {self.remote.sync()}")
        self._moved()

    def _refresh(self) -> None:
        """Drop the local commits not published and stand on the remote's tip."""
        self.remote.refresh()
        self._moved()

    def _moved(self) -> None:
        """The branch moved under the tick: what it knew of the files is void."""
        session = self.session
        session.plan_file.forget()
        self.base = self.remote.tip or session.workspace.head()
        # Every bookkeeping file there is committed: a clean tree stands on the tip.
        session.ledger.know_tracked()

    def _published(self) -> None:
        self.base = self.session.workspace.quick_head()


class Recorded(NamedTuple):
    """What a push records for one ref: its result's outcome (None: it held a request),
    and the task claimed for its request (None: none asked, or none left)."""

    outcome: TaskOutcome | None
    claim: Claim | None

    @property
    def assignment(self) -> Assignment | None:
        """The claim as the ref's note names it."""
        claim = self.claim
        return None if claim is None else Assignment(claim.task.id, claim.tick, claim.commit or "")


def _expired(request: Request, now: datetime) -> bool:
    """A request older than ``REQUEST_TIMEOUT`` (or unreadable) is left alone."""
    try:
        asked = parse_claim(request.claimed)
    except ValueError:
        return True
    return (now - asked.at).total_seconds() > REQUEST_TIMEOUT


def refuse_dirty_tree(dirty: list[str]) -> None:
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise UserError(
            f"the working tree has uncommitted changes ({shown}); a tick starts from a "
            "clean tree so that it can undo the agent's work exactly: commit them, or stash "
            "them with `git stash -u` (-u takes untracked files too)"
        )
