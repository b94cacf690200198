"""The plan as values: every element knows the lines it came from.

Line numbers are 0-based indexes into ``Plan.lines``; messages add 1.
"""

# No `from __future__ import annotations` in this module: typing.NamedTuple compiles each
# annotation given as a string when it makes the class, a cost every start of `memento`
# paid for this module's records (benchmarks/bench_tick.py).

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import NamedTuple, TypeVar

from memento_gh.durations import parse_duration
from memento_gh.plan import spend as ledger
from memento_gh.plan import values
from memento_gh.plan.meta import Settings

T = TypeVar("T")

PENDING, DONE, BLOCKED, RUNNING, SKIPPED = " ", "x", "!", "~", "-"
MARKERS = {
    PENDING: "pending",
    DONE: "done",
    BLOCKED: "blocked",
    RUNNING: "running",
    SKIPPED: "skipped",
}
RESOLVED = frozenset({DONE, SKIPPED})
TASK_FIELDS = (
    "verify",
    "context_files",
    "guard_files",
    "estimate",
    "retries",
    "depends",
    "timeout",
    "claimed",
    "spend",
    "model",
    "needs_change",
)
REQUIRED_FIELDS = ("verify", "context_files")

ERROR, WARNING = "error", "warning"


class Rule(NamedTuple):
    """One rule of the plan, as a sentence for whoever writes a plan, and the severity of
    breaking it. The table of them is ``plan/rules.py``; the validator makes each problem
    through the rule it enforces (``problem``), so the two cannot drift apart."""

    severity: str
    text: str

    def problem(self, line: int, message: str) -> "Problem":
        return Problem(line, self.severity, message, rule=self)


class Problem(NamedTuple):
    """One finding: ``path:line: severity: message`` (line is 1-based, 0 = whole file).
    ``rule``: the plan rule it breaks (None for the other files' problems)."""

    line: int
    severity: str
    message: str
    path: str = ""
    rule: Rule | None = None

    def at(self, path: str) -> "Problem":
        return self._replace(path=path)

    def render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.severity}: {self.message}"


class Field(NamedTuple):
    """A ``- key: value`` line; ``start``/``end`` are the value's columns in its line."""

    key: str
    value: str
    line: int
    start: int
    end: int


class MetaEntry(NamedTuple):
    key: str
    value: str
    line: int
    start: int
    end: int


class Task(NamedTuple):
    """A task line and its field lines, ``line`` to ``end`` (inclusive).

    A NamedTuple rather than a dataclass: large plans hold tens of thousands of tasks and
    the validator's time budget is a few microseconds each. Typed field values are read
    from the raw text on access.
    """

    id: str
    marker: str
    module: str | None
    description: str
    line: int
    end: int
    marker_col: int
    indent: str
    phase: int
    fields: Mapping[str, Field]

    @property
    def status(self) -> str:
        return MARKERS.get(self.marker, "unknown")

    def raw(self, key: str) -> str | None:
        found = self.fields.get(key)
        return None if found is None else found.value

    @property
    def verify(self) -> str | None:
        return _lenient(values.parse_code, self.raw("verify"))

    @property
    def context_files(self) -> tuple[str, ...]:
        return _lenient(values.parse_list, self.raw("context_files")) or ()

    @property
    def guard_files(self) -> tuple[str, ...]:
        return _lenient(values.parse_list, self.raw("guard_files")) or ()

    @property
    def depends(self) -> tuple[str, ...]:
        raw = self.raw("depends")
        if raw is None or raw.strip().lower() == "none":
            return ()
        return _lenient(values.parse_task_ids, raw) or ()

    @property
    def estimate(self) -> float | None:
        return _lenient(parse_duration, self.raw("estimate"))

    @property
    def timeout(self) -> float | None:
        return _lenient(parse_duration, self.raw("timeout"))

    @property
    def retries(self) -> int:
        return _lenient(values.parse_int, self.raw("retries")) or 0

    @property
    def spend(self) -> ledger.Spend:
        """What the task's runs cost so far (engine-kept)."""
        return _lenient(ledger.parse_spend, self.raw("spend")) or ledger.Spend()

    @property
    def model(self) -> str | None:
        """The model this task's agent runs on, over the tick's own choice."""
        return _lenient(values.parse_model, self.raw("model"))

    @property
    def needs_change(self) -> bool:
        """False when the task says it may be done without changing a file (``needs_change:
        false``); a run that changes nothing fails otherwise."""
        return _lenient(values.parse_switch, self.raw("needs_change")) is not False

    @property
    def claimed(self) -> values.Claim | None:
        return _lenient(values.parse_claim, self.raw("claimed"))

    @property
    def title(self) -> str:
        """``T-101 [MODULE:db] Setup schema`` as the status log names a task."""
        module = f" [MODULE:{self.module}]" if self.module else ""
        return f"{self.id}{module} {self.description}".rstrip()


class Phase(NamedTuple):
    number: int
    title: str
    line: int
    end: int
    parallel: bool | None = None
    depends: tuple[int, ...] | None = None
    depends_line: int | None = None
    task_ids: tuple[str, ...] = ()
    #: ``<!-- review: true -->``: the phase ends in a review gate; ``approved`` once its
    #: pull request was merged or a person approved (None: no comment).
    review: str | None = None
    review_line: int | None = None

    @property
    def name(self) -> str:
        return f"Phase {self.number}"


class Plan:
    """A parsed plan: its lines (without endings) and what the scanner found in them.

    A plain class (no dataclass machinery to import: ``memento validate`` is judged on its
    start-up time); treat it as immutable.
    """

    def __init__(
        self,
        lines: tuple[str, ...],
        eols: tuple[str, ...],
        *,
        bom: bool = False,
        title: str | None = None,
        meta_line: int | None = None,
        meta: Mapping[str, MetaEntry] | None = None,
        meta_end: int | None = None,
        phases: tuple[Phase, ...] = (),
        tasks: tuple[Task, ...] = (),
        problems: tuple[Problem, ...] = (),
        checkbox_lines: tuple[int, ...] = (),
        unusual_chunks: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.lines = lines
        self.eols = eols
        self.bom = bom
        self.title = title
        self.meta_line = meta_line
        self.meta: Mapping[str, MetaEntry] = meta or {}
        self.meta_end = meta_end
        self.phases = phases
        self.tasks = tasks
        self.problems = problems
        #: line indexes of every list item that starts with a ``[?]`` box (tasks or not)
        self.checkbox_lines = checkbox_lines
        #: line ranges ``[start, end)`` whose Markdown needs a CommonMark reading to be sure
        self.unusual_chunks = unusual_chunks

    @cached_property
    def by_id(self) -> Mapping[str, Task]:
        index: dict[str, Task] = {}
        for task in self.tasks:
            index.setdefault(task.id, task)
        return index

    def task(self, task_id: str) -> Task | None:
        return self.by_id.get(task_id)

    def phase_of(self, task: Task) -> Phase:
        return self.phases[task.phase]

    def tasks_in(self, phase: Phase) -> tuple[Task, ...]:
        return tuple(self.by_id[task_id] for task_id in phase.task_ids)

    @cached_property
    def settings(self) -> Settings:
        return Settings.from_raw({key: entry.value for key, entry in self.meta.items()})

    def text(self) -> str:
        parts = [""] * (2 * len(self.lines))
        parts[0::2] = self.lines
        parts[1::2] = self.eols
        return ("\ufeff" if self.bom else "") + "".join(parts)


def _lenient(reader: Callable[[str], T], raw: str | None) -> T | None:
    """Apply a value reader, answering None for a missing or unreadable value
    (the validator reports unreadable ones)."""
    if raw is None:
        return None
    try:
        return reader(raw)
    except ValueError:
        return None
