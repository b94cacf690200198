"""Landing a checked proposal: the plan written atomically with the counters the engine
computes and ``last_architect_edit`` set, and committed alone."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from memento_gh import files
from memento_gh.errors import UserError
from memento_gh.layout import Layout
from memento_gh.plan import editor
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import counted
from memento_gh.plan.values import format_time
from memento_gh.workspace import Workspace

#: The subject of a draft's commit; a revision's is ``memento: revise plan (T-201)``.
DRAFT_SUBJECT = "memento: draft plan"


def revise_subject(task: str | None) -> str:
    return "memento: revise plan" + (f" ({task})" if task else "")


def engine_edits(plan: Plan, now: datetime) -> list[editor.Edit]:
    """The Meta values the engine owns, as the tasks say and the time is."""
    edits = [editor.set_meta(plan, key, str(value)) for key, value in counted(plan).items()]
    edits.append(editor.set_meta(plan, "last_architect_edit", format_time(now)))
    return edits


def land(
    layout: Layout,
    workspace: Workspace,
    text: str,
    subject: str,
    now: datetime,
    trailers: str = "",
) -> str:
    """Write ``text`` as the plan (engine values filled in) and commit it with ``subject``
    (and ``trailers``, lines ``Key: value``); the commit's sha."""
    plan = parse(text)
    final = editor.apply(plan, engine_edits(plan, now))
    layout.plan.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(layout.plan, final)
    relative = _relative(workspace, layout.plan)
    message = f"{subject}\n" + (f"\n{trailers}" if trailers else "")
    return workspace.commit(message, [relative], new=[relative])


def _relative(workspace: Workspace, path: Path) -> str:
    return path.resolve().relative_to(workspace.root.resolve()).as_posix()


def refuse_existing_plan(layout: Layout) -> None:
    """A draft never replaces a plan, except the example ``memento init`` wrote, untouched."""
    text = files.read_optional(layout.plan)
    if text is None or untouched_example(text, layout.plan_dir):
        return
    raise UserError(
        f"{layout.plan.as_posix()}: a plan is already here, and a draft never replaces one; "
        "ask for changes with `memento plan revise`, or move the plan away to draft anew"
    )


def untouched_example(text: str, plan_dir: str) -> bool:
    """True when ``text`` is the example plan of ``memento init`` as it wrote it: the same
    phases and tasks, below a Meta section of any values."""
    from memento_gh.scaffold import plan_text

    plan = parse(text)
    if plan.meta_end is None or not plan.title:
        return False
    name = plan.title.removeprefix("MASTER_PLAN:").strip()
    example = parse(plan_text(name, date.today(), plan_dir))
    assert example.meta_end is not None
    return plan.lines[plan.meta_end :] == example.lines[example.meta_end :]
