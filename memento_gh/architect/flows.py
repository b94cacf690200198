"""``plan draft`` and ``plan revise`` end to end, for the command line and the dashboard:
under the repository lock, the architect's rounds, the checks, and what lands."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from memento_gh import files
from memento_gh.architect import brief, land
from memento_gh.architect.proposal import proposal_problems
from memento_gh.architect.run import (
    AgentSettings,
    Outcome,
    proposal_file,
    run_rounds,
    scratch_folder,
)
from memento_gh.errors import UserError
from memento_gh.formats.project_map import parse_project_map
from memento_gh.layout import PROPOSAL_NAME, Layout
from memento_gh.lock import Busy, repo_lock
from memento_gh.plan.revision import plan_diff, same_plan
from memento_gh.plan.scanner import parse
from memento_gh.workspace import Workspace

#: Where a revision waits for Apply or Discard (memento's folder under .git/).
REVISION_NAME = "revision.md"


class Revision(NamedTuple):
    text: str
    diff: str
    task: str | None


class Unfixed(UserError):
    """The architect's proposal still had problems after its last round: nothing landed.
    ``outcome`` holds the problems (``path:line: severity: message``) and the proposal."""

    def __init__(self, message: str, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome


def draft(
    layout: Layout,
    settings: AgentSettings,
    spec: str,
    *,
    rounds: int,
    now: datetime,
    subject: str = land.DRAFT_SUBJECT,
) -> tuple[str, Outcome]:
    """Draft the plan from ``spec`` and land it as a commit with ``subject``; the commit's
    sha and the last round. ``Unfixed`` when the rounds ran out."""
    with _locked(layout):
        land.refuse_existing_plan(layout)
        workspace = Workspace(layout.root)

        def make_prompt(number: int, problems: Sequence[str]) -> str:
            return brief.draft_prompt(layout, spec, proposal_file(workspace), problems)

        outcome = run_rounds(
            layout,
            workspace,
            settings,
            rounds=rounds,
            make_prompt=make_prompt,
            check=lambda text: _problems(layout, settings, text, None),
            now=now,
        )
        _refuse_unfixed(outcome, "draft")
        assert outcome.text is not None
        return land.land(layout, workspace, outcome.text, subject, now), outcome


def propose_revision(
    layout: Layout,
    settings: AgentSettings,
    *,
    task: str | None,
    why: str | None,
    rounds: int,
    now: datetime,
) -> Revision:
    """The architect's checked revision of the plan, kept until applied or discarded."""
    with _locked(layout):
        workspace = Workspace(layout.root)
        current = _current_plan(layout)
        if task is not None and parse(current).task(task) is None:
            raise UserError(f"{layout.plan.as_posix()}: there is no task {task} in the plan")

        def make_prompt(number: int, problems: Sequence[str]) -> str:
            proposal = proposal_file(workspace)
            return brief.revise_prompt(layout, current, proposal, problems, task=task, why=why)

        outcome = run_rounds(
            layout,
            workspace,
            settings,
            rounds=rounds,
            make_prompt=make_prompt,
            check=lambda text: _problems(layout, settings, text, current),
            seed=current,
            now=now,
        )
        _refuse_unfixed(outcome, "revision")
        assert outcome.text is not None
        revision = Revision(outcome.text, plan_diff(current, outcome.text, _shown(layout)), task)
        _keep_revision(workspace, revision)
        return revision


def pending_revision(layout: Layout) -> Revision | None:
    """The revision waiting for Apply or Discard, if any."""
    path = scratch_folder(Workspace(layout.root)) / REVISION_NAME
    text = files.read_optional(path)
    if text is None:
        return None
    task_line, _, body = text.partition("\n")
    task = task_line.removeprefix("task: ").strip() or None
    current = files.read_optional(layout.plan) or ""
    return Revision(body, plan_diff(current, body, _shown(layout)), task)


def discard_revision(layout: Layout) -> bool:
    path = scratch_folder(Workspace(layout.root)) / REVISION_NAME
    if not path.exists():
        return False
    path.unlink()
    return True


def apply_revision(
    layout: Layout,
    revision: Revision,
    now: datetime,
    environ: dict[str, str],
    trailers: str = "",
) -> str:
    """Check ``revision`` against the plan as it is now, and land it (its commit carries
    ``trailers``); the commit's sha."""
    with _locked(layout):
        workspace = Workspace(layout.root)
        current = _current_plan(layout)
        settings = AgentSettings("command", None, None, environ)
        if same_plan(parse(current), parse(revision.text)):
            raise UserError("the plan already holds this revision; nothing to change")
        problems = _problems(layout, settings, revision.text, current)
        if problems:
            raise UserError(
                "the revision no longer fits the plan, and nothing changed:\n  "
                + "\n  ".join(problems)
                + "\npropose a new one with `memento plan revise`"
            )
        subject = land.revise_subject(revision.task)
        sha = land.land(layout, workspace, revision.text, subject, now, trailers)
        discard_revision(layout)
        return sha


def _keep_revision(workspace: Workspace, revision: Revision) -> None:
    path = scratch_folder(workspace) / REVISION_NAME
    files.write_atomic(path, f"task: {revision.task or ''}\n{revision.text}", durable=False)


def _current_plan(layout: Layout) -> str:
    text = files.read_optional(layout.plan)
    if text is None:
        raise UserError(
            f"{layout.plan.as_posix()}: no plan to revise; draft one with "
            "`memento plan draft --spec FILE`"
        )
    return text


def _shown(layout: Layout) -> str:
    return layout.plan.relative_to(layout.root).as_posix()


def _problems(
    layout: Layout,
    settings: AgentSettings,
    text: str | None,
    before: str | None,
) -> list[str]:
    map_text = files.read_optional(layout.project_map)
    modules = parse_project_map(map_text).modules if map_text is not None else None
    return proposal_problems(
        text,
        shown_as=PROPOSAL_NAME,  # the agent's working folder is the top of the work tree
        root=layout.root,
        modules=modules,
        environ=settings.environ,
        before=parse(before) if before is not None else None,
    )


def _refuse_unfixed(outcome: Outcome, what: str) -> None:
    if not outcome.problems:
        return
    rounds = f"{outcome.rounds} round" + ("s" if outcome.rounds != 1 else "")
    raise Unfixed(
        f"the architect's {what} still has problems after {rounds}, and nothing landed:\n  "
        + "\n  ".join(outcome.problems)
        + f"\nits last proposal is kept in {outcome.proposal} (the lines above are its "
        "lines); give it more rounds with --rounds, or say more in the spec",
        outcome,
    )


class _locked:
    """The repository lock, without waiting: a tick or a control holds it."""

    def __init__(self, layout: Layout) -> None:
        self._lock = repo_lock(layout.lock, wait=0)
        self._layout = layout

    def __enter__(self) -> None:
        try:
            self._lock.__enter__()
        except Busy:
            raise UserError(
                f"a tick holds the lock on this repository ({self._layout.lock}); "
                "try again when it ends"
            ) from None

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)  # type: ignore[arg-type]
