"""The plan file as the tick last read or wrote it.

Every step that reads or edits the plan goes through one ``PlanFile``, so that the plan in
hand and the file on disk never disagree. Edits are surgical (``plan.derive``): a write
derives the edited plan from the one in hand instead of parsing the file again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memento_gh import files
from memento_gh.checks import check_plan_text
from memento_gh.errors import UserError
from memento_gh.plan import derive, editor
from memento_gh.plan.model import ERROR, Plan, Task
from memento_gh.plan.scanner import parse


class PlanFile:
    def __init__(self, path: Path, shown_as: str) -> None:
        self.path = path
        self.shown_as = shown_as  # the path as messages name it
        self._plan: Plan | None = None
        self._text = ""
        #: A local claim's edits: written to the file, not yet derived into ``_plan``
        #: (only the prompt needs the claimed plan, and the result is written over it).
        self._claim: tuple[editor.Edit, ...] = ()
        #: Whether a write reaches the disk before it replaces the file (``files.write_atomic``).
        self.durable = True

    def read_validated(self, map_text: str | None) -> Plan:
        """The plan as the tick starts: a plan with errors is never ticked."""
        text = files.read_text(self.path)
        plan, problems = check_plan_text(text, map_text)
        errors = [problem for problem in problems if problem.severity == ERROR]
        if errors:
            shown = "\n".join(problem.at(self.shown_as).render() for problem in errors[:20])
            raise UserError(f"the plan has errors; a tick runs only on a valid plan:\n{shown}")
        return self._keep(plan, text)

    @property
    def current(self) -> Plan:
        """The plan as the file holds it."""
        if self._claim:
            text, plan = derive.edit(self.before_claim, self._claim)
            self._keep(plan, text)
        return self.before_claim

    @property
    def before_claim(self) -> Plan:
        """The plan in hand, without a local claim written over it since."""
        return self._plan if self._plan is not None else self.reread()

    def text_on_disk(self) -> str:
        return files.read_text(self.path)

    def reread(self) -> Plan:
        """Read the file again after something else (a rollback) changed it."""
        text = self.text_on_disk()
        if self._plan is not None and text == self._text:
            return self._keep(self._plan, text)  # back to the plan in hand
        return self._keep(parse(text), text)

    def forget(self) -> None:
        """The branch moved under the tick: the next read is from the file."""
        self._plan, self._text, self._claim = None, "", ()

    def write(self, plan: Plan, edits: Sequence[editor.Edit]) -> Plan:
        """Write ``plan`` with ``edits`` applied; that is the plan from now on."""
        text, edited = derive.edit(plan, edits)
        files.write_atomic(self.path, text, durable=self.durable)
        return self._keep(edited, text)

    def edit(self, make_edits: Callable[[Plan], Sequence[editor.Edit]]) -> Plan:
        plan = self.current
        return self.write(plan, make_edits(plan))

    def write_claim(self, task: Task, edits: Sequence[editor.Edit]) -> tuple[Task, str, str]:
        """Write a claim that stays uncommitted: the claimed task, the claimed text and the
        task's lines in it. Only the claimed task is derived (``derive.edit_task``)."""
        plan = self.current
        lines, eols = editor.edit_lines(plan, edits)
        text = editor.join_lines(lines, eols, bom=plan.bom)
        # Not flushed to the disk: after a power cut the running marker, which is, makes the
        # next tick restore the plan from HEAD, whatever became of this write.
        files.write_atomic(self.path, text, durable=False)
        claimed = derive.edit_task(plan, task, edits, lines)
        if claimed is None:
            claimed = self._keep(parse(text), text).task(task.id) or task
        else:
            self._claim = tuple(edits)
        return claimed, text, "\n".join(lines[claimed.line : claimed.end + 1])

    def write_and_show(self, task: Task, edits: Sequence[editor.Edit]) -> tuple[Task, str, str]:
        """``write``, answered like ``write_claim``: for a claim that is committed at once."""
        claimed = self.write(self.current, edits).task(task.id) or task
        block = "\n".join(self._text.splitlines()[claimed.line : claimed.end + 1])
        return claimed, self._text, block

    def _keep(self, plan: Plan, text: str) -> Plan:
        self._plan, self._text, self._claim = plan, text, ()
        return plan
