"""What memento writes on GitHub: hidden markers, the dashboard and its checkboxes, and the
neutralised text every other body is made of (the issues' in ``issue_texts.py``, the job
summary's in ``job_text.py``). Pure: values in, text out.

Text that comes from people or programs (task descriptions, verify output, notes, error
analyses) is data. Where it lands it is neutralised: ``escape`` makes inline text render as
typed (no HTML, so no hidden marker; one line, so no checkbox or heading; no ``@mention``
that would notify someone on every edit), ``fenced`` puts output in a fence longer than any
backtick run inside it, and ``ticked_controls`` reads a box only when its marker comes right
after the box at the start of a line, outside code. Bodies are deterministic (no clock
inside), so a caller can compare them with the issue's body and write only on a change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple
from urllib.parse import quote

from memento_gh.controls.model import Control
from memento_gh.formats import status_log
from memento_gh.markdown import NORMAL, CodeTracker
from memento_gh.plan import budgets, values
from memento_gh.plan.model import BLOCKED, DONE, RUNNING, SKIPPED, Plan, Task
from memento_gh.plan.picking import pick, review_gate
from memento_gh.plan.progress import done_text
from memento_gh.plan.spend import Spend, format_usd

LABEL = "memento"
BLOCKED_LABEL = "memento:blocked"
DASHBOARD_LABEL = "memento:dashboard"
BREAKER_LABEL = "memento:circuit-breaker"

TASK_KIND = "task"  # <!-- memento:task=T-201 -->: the issue of a blocked task
DASHBOARD_KIND = "dashboard"
BREAKER_KIND = "circuit-breaker"
IDENTITY_KINDS = (TASK_KIND, DASHBOARD_KIND, BREAKER_KIND)
CONTROL_KIND = "control"  # a dashboard box: control=pause|resume|stop|tick
RETRY_KIND = "retry"  # a dashboard box: retry=T-201
SKIP_KIND = "skip"
#: On every comment memento writes, so that it never reads its own words back as a note
#: (a personal token makes memento's comments look like a person's).
GENERATED_KIND = "generated"
#: ``<!-- memento:budget-warned=2026-12-01 -->`` in the dashboard: that day's 80% warning
#: was said (as a comment), so no later run says it again.
BUDGET_WARNED_KIND = "budget-warned"

DASHBOARD_TITLE = "memento dashboard"
BODY_LIMIT = 60_000  # GitHub refuses bodies over 65,536 characters; keep a margin
TITLE_DESCRIPTION_CHARS = 80
TEXT_CHARS = 120  # a description or a phase title in a list line
ANALYSIS_CHARS = 2_000
BAR_WIDTH = 20
TIMELINE_ROWS = 5

_KIND = re.compile(r"[a-z][a-z-]*")
_VALUE = re.compile(r"[A-Za-z0-9_.-]+")
_MARKER = re.compile(
    r"<!--[ \t]*memento:(?P<kind>[a-z][a-z-]*)(?:=(?P<value>[A-Za-z0-9_.-]+))?[ \t]*-->"
)
# A task-list item whose first content is a marker: `- [x] <!-- memento:retry=T-201 -->`.
_BOX = re.compile(
    r"[ \t]{0,3}[-*+][ \t]+\[(?P<mark>[ xX])\][ \t]+"
    r"<!--[ \t]*memento:(?P<kind>[a-z][a-z-]*)=(?P<value>[A-Za-z0-9_.-]+)[ \t]*-->"
)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]<>|~$])")
_BACKTICKS = re.compile(r"`+")
_BLOCK_START = re.compile(r"^(\d{0,9})([-+=#.)])")
_SAFE_URL = re.compile(r"https?://[^\s<>()\[\]`\"'\\]+")
_OUTCOME_ICONS = {
    status_log.SUCCESS: "✅",
    status_log.FAILED: "❌",
    status_log.BLOCKED: "🚫",
    status_log.DEFERRED: "⏳",
}
_MODE_LINES = {
    "auto": "▶️ **auto**: every scheduled run ticks",
    "paused": "⏸️ **paused**: scheduled runs skip their tick until someone resumes",
    "stopped": "⏹️ **stopped**: no tick runs until someone resumes",
}


# -- markers -------------------------------------------------------------------------------


def marker(kind: str, value: str | None = None) -> str:
    """``<!-- memento:task=T-201 -->``; ValueError for a kind or value no reader accepts."""
    if not _KIND.fullmatch(kind):
        raise ValueError(f"a marker kind is lower-case words joined by '-', not {kind!r}")
    if value is None:
        return f"<!-- memento:{kind} -->"
    if not _VALUE.fullmatch(value):
        raise ValueError(f"a marker value is letters, digits, '_', '.' or '-', not {value!r}")
    return f"<!-- memento:{kind}={value} -->"


def read_marker(body: str | None) -> tuple[str, str | None] | None:
    """What a memento issue is for: its first task, dashboard or circuit-breaker marker.

    memento writes that marker on the first line, before any quoted text, so a marker
    inside a task's description or verify output further down never decides.
    """
    for found in _MARKER.finditer(body or ""):
        kind, value = found.group("kind"), found.group("value")
        if kind == TASK_KIND and value and values.TASK_ID.fullmatch(value):
            return kind, value
        if kind in (DASHBOARD_KIND, BREAKER_KIND) and value is None:
            return kind, None
    return None


def is_generated(body: str | None) -> bool:
    """Whether memento wrote this comment (it carries the generated marker)."""
    return marker(GENERATED_KIND) in (body or "")


# -- neutralising text ---------------------------------------------------------------------


def one_line(text: str) -> str:
    """Line breaks (every kind a renderer knows), tabs and control characters folded into
    single spaces."""
    return " ".join(_CONTROL_CHARS.sub(" ", text).split())


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut at a word when one is near."""
    line = one_line(text)
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…"


def escape(text: str, limit: int = TEXT_CHARS) -> str:
    """Inline Markdown that renders as the text was typed: one line, shortened, with every
    character that could start markup backslash-escaped (``<`` included, so no HTML and no
    hidden marker) and ``@`` followed by a zero-width space (no mention, no notification)."""
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", shorten(text, limit))
    # At the start of a line, these would open a heading, a list or a setext underline.
    escaped = _BLOCK_START.sub(r"\1\\\2", escaped, count=1)
    return escaped.replace("@", "@\u200b")


def code_span(text: str) -> str:
    """Inline code that no backtick inside can end early."""
    line = one_line(text)
    longest = max((len(run) for run in _BACKTICKS.findall(line)), default=0)
    ticks = "`" * (longest + 1)
    if line.startswith("`") or line.endswith("`"):
        line = f" {line} "  # CommonMark strips one space from each side
    return f"{ticks}{line}{ticks}"


def fenced(text: str, info: str = "text") -> list[str]:
    """A fenced block no line of ``text`` can close: the fence is longer than any backtick
    run inside; control characters other than tabs are dropped."""
    lines = [_CONTROL_CHARS.sub("", line).rstrip() for line in text.splitlines()]
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *lines, fence]


def link(label: str, url: str) -> str:
    """``[label](url)`` when the URL is a plain web address, else the label alone."""
    return f"[{label}]({url})" if _SAFE_URL.fullmatch(url) else label


# -- issues --------------------------------------------------------------------------------


class IssueText(NamedTuple):
    title: str
    body: str
    labels: tuple[str, ...]


# -- the dashboard -------------------------------------------------------------------------


class DashboardView(NamedTuple):
    """Everything the dashboard shows, gathered by the caller.

    ``updated`` is shown as given: pass a time that changes only when the plan does (the
    newest status-log record's, or the commit's), or every run edits the issue.
    """

    plan: Plan
    records: Sequence[status_log.Record]
    blocked_issues: Mapping[str, str]  # task id -> the task's issue URL
    server_url: str
    repository: str
    branch: str
    updated: str
    plan_path: str = "docs/MASTER_PLAN.md"
    #: memento's pull request: (number, URL, state: draft, open, merged or closed).
    pull: tuple[int, str, str] | None = None
    #: The set-up checklist's lines (``setup_checks.py``), shown under its own heading.
    setup: tuple[str, ...] = ()


class _Limits(NamedTuple):
    """How many rows each list shows; halved until the body fits GitHub's limit."""

    phases: int = 30
    tasks: int = 20


def dashboard(view: DashboardView) -> IssueText:
    """The one dashboard issue: mode, progress, running and blocked tasks, the last ticks,
    the next task, and unticked checkboxes that steer the plan."""
    limits = _Limits()
    body = _dashboard_body(view, limits)
    while len(body) > BODY_LIMIT and limits.tasks + limits.phases > 0:
        limits = _Limits(limits.phases // 2, limits.tasks // 2)
        body = _dashboard_body(view, limits)
    return IssueText(DASHBOARD_TITLE, body, (LABEL, DASHBOARD_LABEL))


def _dashboard_body(view: DashboardView, limits: _Limits) -> str:
    plan = view.plan
    title = escape(_plan_name(plan) or view.repository)
    lines = [
        marker(DASHBOARD_KIND),
        f"## 🧠 memento · {title}",
        "",
        *_where(view),
        "",
        "### Progress",
        "",
        *progress_lines(plan, limits.phases),
        *spend_lines(plan),
        *task_section("Running", running_tasks(plan), limits.tasks, view.blocked_issues, plan),
        *task_section("Blocked", blocked_tasks(plan), limits.tasks, view.blocked_issues, plan),
        "",
        "### Next",
        "",
        _next_line(plan),
        *_timeline(view.records),
        "",
        "### Controls",
        "",
        "Tick a box: memento applies it in a workflow run and unticks it. Only people with "
        "write access count.",
        "",
        *control_boxes(plan, limits.tasks),
        *(["", "### Set-up", "", *view.setup] if view.setup else []),
    ]
    warned = budget_warning(plan)
    if warned is not None:
        lines.append(marker(BUDGET_WARNED_KIND, warned[0]))
    return join_lines(lines)


def spend_lines(plan: Plan) -> list[str]:
    """The spend as of the day the ledger last counted, and why no task starts (over
    budget). As of that day, not the clock's: the body changes only when the plan does."""
    day = plan.settings.spend_day.day
    if day is None and plan.settings.spend_total.empty:
        return []
    lines = ["", f"**Spend:** {escape(budgets.spend_line(plan, day or _NO_DAY))}"]
    over = budgets.over_budget(plan, day) if day else None
    warning = budget_warning(plan)
    if over:
        lines.append(f"**Over budget:** {escape(over)}")
    elif warning is not None:
        lines.append(f"⚠️ **Budget:** {escape(warning[1])}")
    return lines


def budget_warning(plan: Plan) -> tuple[str, str] | None:
    """(the day, the warning) once the ledger's day passed 80% of a daily budget."""
    day = plan.settings.spend_day.day
    warning = budgets.near_budget(plan, day) if day else None
    return None if warning is None or day is None else (day.isoformat(), warning)


def budget_warning_comment(warning: str) -> str:
    return join_lines([marker(GENERATED_KIND), f"⚠️ **Budget:** {escape(warning)}"]) + "\n"


def spend_of_run(spent: Spend) -> str:
    """``$0.01, 1,100 tokens`` (tokens only when no run reported a price)."""
    tokens = f"{spent.tokens:,} tokens"
    return tokens if spent.usd is None else f"${format_usd(spent.usd)}, {tokens}"


_NO_DAY = __import__("datetime").date(1970, 1, 1)


def _plan_name(plan: Plan) -> str:
    """The plan's heading without its ``MASTER_PLAN:`` prefix."""
    heading = plan.title or ""
    prefix, colon, name = heading.partition(":")
    return name.strip() if colon and prefix.strip().upper() == "MASTER_PLAN" else heading


def _where(view: DashboardView) -> list[str]:
    mode = view.plan.settings.tick_mode
    base = f"{view.server_url.rstrip('/')}/{view.repository}"
    branch = quote(view.branch, safe="/")
    branch_link = link(code_span(view.branch), f"{base}/tree/{branch}")
    plan_link = link(code_span(view.plan_path), f"{base}/blob/{branch}/{quote(view.plan_path)}")
    lines = [
        f"**Mode:** {_MODE_LINES.get(mode, escape(mode))}",
        "",
        f"**Branch:** {branch_link} · **Plan:** {plan_link} · **Updated:** "
        f"{escape(view.updated, 40)}",
    ]
    if view.pull is not None:
        number, url, state = view.pull
        lines += ["", f"**Pull request:** {link(f'#{number}', url)} ({escape(state, 20)})"]
    return lines


def progress_lines(plan: Plan, max_phases: int = 30) -> list[str]:
    """The overall bar and a table of phases; with many phases, the finished ones before
    the first open phase fold into one line and the rest past ``max_phases`` into another."""
    tasks = plan.tasks
    done = sum(1 for task in tasks if task.marker == DONE)
    skipped = sum(1 for task in tasks if task.marker == SKIPPED)
    blocked = sum(1 for task in tasks if task.marker == BLOCKED)
    running = sum(1 for task in tasks if task.marker == RUNNING)
    resolved = done + skipped
    lines = [
        f"{_bar(resolved, len(tasks))} **{done}/{len(tasks)}** done"
        + (f", {skipped} skipped" if skipped else "")
        + f" ({_percent(resolved, len(tasks))}) · {blocked} blocked · {running} running"
    ]
    rows = [_phase_row(plan, index) for index in range(len(plan.phases))]
    if not rows:
        return lines
    first_open = next((i for i, row in enumerate(rows) if not row.finished), len(rows))
    start = max(0, min(first_open, len(rows) - max_phases))
    shown = rows[start : start + max_phases]
    lines += ["", "| Phase | Progress | Done | Blocked |", "|---|---|---|---|"]
    lines += [row.text for row in shown]
    if start:
        lines += ["", f"The {start} phases before these are finished."]
    hidden = len(rows) - start - len(shown)
    if hidden:
        lines += ["", f"…and {hidden} more phases."]
    return lines


class _PhaseRow(NamedTuple):
    text: str
    finished: bool


def _phase_row(plan: Plan, index: int) -> _PhaseRow:
    phase = plan.phases[index]
    tasks = plan.tasks_in(phase)
    done = sum(1 for task in tasks if task.marker == DONE)
    skipped = sum(1 for task in tasks if task.marker == SKIPPED)
    resolved = done + skipped
    blocked = sum(1 for task in tasks if task.marker == BLOCKED)
    name = escape(f"{phase.name}: {phase.title}".rstrip(": "))
    text = (
        f"| {name} | {_bar(resolved, len(tasks), 12)} | {done_text(done, skipped, len(tasks))} "
        f"({_percent(resolved, len(tasks))}) | {blocked or ''} |"
    )
    return _PhaseRow(text, resolved == len(tasks))


def _bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    filled = round(width * done / total) if total else 0
    return "█" * filled + "░" * (width - filled)


def _percent(done: int, total: int) -> str:
    return f"{100 * done // total}%" if total else "0%"


def running_tasks(plan: Plan) -> list[Task]:
    return [task for task in plan.tasks if task.marker == RUNNING]


def blocked_tasks(plan: Plan) -> list[Task]:
    return [task for task in plan.tasks if task.marker == BLOCKED]


def task_section(
    heading: str, tasks: Sequence[Task], limit: int, issues: Mapping[str, str], plan: Plan
) -> list[str]:
    if not tasks:
        return []
    lines = ["", f"### {heading} ({len(tasks)})", ""]
    lines += [_task_line(task, issues, plan) for task in tasks[:limit]]
    if len(tasks) > limit:
        lines.append(f"- …and {len(tasks) - limit} more")
    return lines


def _task_line(task: Task, issues: Mapping[str, str], plan: Plan) -> str:
    line = f"- {escape(task.id, 40)} {escape(task.description)}"
    if task.marker == BLOCKED:
        line += f" · retries {task.retries}/{plan.settings.max_retries}"
        url = issues.get(task.id)
        line += f" · {link('issue', url)}" if url else " · issue not yet opened"
    claim = task.claimed
    if task.marker == RUNNING and claim is not None:
        line += f" · since {values.format_time(claim.at)} on {escape(claim.worker, 60)}"
    return line


def _next_line(plan: Plan) -> str:
    decision = pick(plan)
    if decision.task is None:
        return "Nothing to run: " + escape(decision.message, 300)
    return escape(decision.message, 300)


def _timeline(records: Sequence[status_log.Record]) -> list[str]:
    entries = [record for record in records if isinstance(record, status_log.ParsedEntry)]
    if not entries:
        return []
    lines = ["", "### Last ticks", "", "| Time | Tick | Task | Outcome |", "|---|---|---|---|"]
    for entry in reversed(entries[-TIMELINE_ROWS:]):
        task = entry.task_id or entry.task
        lines.append(
            f"| {values.format_time(entry.time)} | #{entry.tick:03d} | {escape(task, 60)} "
            f"| {_entry_outcome(entry)} |"
        )
    return lines


def _entry_outcome(entry: status_log.ParsedEntry) -> str:
    text = outcome_text(entry.outcome)
    if entry.retry is not None and entry.max_retries is not None and entry.outcome != "success":
        text += f" (retry {entry.retry}/{entry.max_retries})"
    return text


def outcome_text(outcome: str | None) -> str:
    if outcome is None:
        return "unknown"
    return f"{_OUTCOME_ICONS.get(outcome, '')} {outcome}".strip()


# -- the dashboard's checkboxes ------------------------------------------------------------

_MODE_BOXES = {
    "auto": (("pause", "Pause: finish the running tick, then stop ticking"), ("stop", "Stop")),
    "paused": (("resume", "Resume"), ("stop", "Stop")),
    "stopped": (("resume", "Resume"),),
}


def control_boxes(plan: Plan, max_tasks: int = 20) -> list[str]:
    """Unticked boxes for the controls that make sense now: no Pause while paused, no tick
    unless ticking is on, retry and skip for each blocked task (the first ``max_tasks``)."""
    mode = plan.settings.tick_mode
    boxes = [
        _box(marker(CONTROL_KIND, action), label) for action, label in _MODE_BOXES.get(mode, ())
    ]
    if mode == "auto":
        boxes.append(_box(marker(CONTROL_KIND, "tick"), "Run a tick now"))
    gate = review_gate(plan)
    if gate is not None:
        label = f"Approve {gate.name}: the next phase starts without waiting for the merge"
        boxes.append(_box(marker(CONTROL_KIND, "approve"), label))
    blocked = blocked_tasks(plan)
    for task in blocked[:max_tasks]:
        shown = escape(task.id, 40)
        boxes.append(_box(marker(RETRY_KIND, task.id), f"Retry {shown}: reset its retries"))
        boxes.append(_box(marker(SKIP_KIND, task.id), f"Skip {shown}: mark it `[-]`"))
    if len(blocked) > max_tasks:
        boxes.append(
            f"- {len(blocked) - max_tasks} more blocked tasks: steer them from their issues"
        )
    return boxes


def _box(hidden: str, label: str) -> str:
    return f"- [ ] {hidden} {label}"


class Box(NamedTuple):
    """One dashboard box, by its marker: ``Box("retry", "T-201")``."""

    kind: str
    value: str

    @property
    def control(self) -> Control | None:
        """What ticking it asks for; None for "Run a tick now" and for a box memento does
        not know (an unknown kind, or a value that is no task ID)."""
        return _BOX_READERS.get(self.kind, _no_control)(self.value)

    @property
    def is_tick(self) -> bool:
        return self == TICK_BOX

    @property
    def counts(self) -> bool:
        """Whether ticking it asks for anything."""
        return self.is_tick or self.control is not None


TICK_BOX = Box(CONTROL_KIND, "tick")


def ticked_boxes(body: str | None) -> tuple[Box, ...]:
    """The boxes ticked in a dashboard body that ask for something, in body order, each once.

    A box counts only when its marker comes right after it at the start of a list line,
    outside code blocks and comments; unknown markers and values are ignored.
    """
    found: list[Box] = []
    code = CodeTracker()
    for number, line in enumerate((body or "").splitlines()):
        if code.step(number, line.lstrip(" \t")) != NORMAL:
            continue
        match = _BOX.match(line)
        if match is None or match.group("mark") == " ":
            continue
        box = Box(match.group("kind"), match.group("value"))
        if box.counts and box not in found:
            found.append(box)
    return tuple(found)


def ticked_controls(body: str | None) -> tuple[tuple[Control, ...], bool]:
    """(controls, tick now) from the boxes ticked in a dashboard body, in body order."""
    boxes = ticked_boxes(body)
    controls = tuple(control for box in boxes if (control := box.control) is not None)
    return controls, TICK_BOX in boxes


def _mode_box(value: str) -> Control | None:
    return Control(value) if value in ("pause", "resume", "stop", "approve") else None


def _task_box(action: str) -> Callable[[str], Control | None]:
    def read(value: str) -> Control | None:
        return Control(action, value) if values.TASK_ID.fullmatch(value) else None

    return read


def _no_control(value: str) -> Control | None:
    return None


_BOX_READERS: Mapping[str, Callable[[str], Control | None]] = {
    CONTROL_KIND: _mode_box,
    RETRY_KIND: _task_box("retry"),
    SKIP_KIND: _task_box("skip"),
}


def join_lines(lines: Sequence[str]) -> str:
    return "\n".join(lines)


def last_change(records: Sequence[status_log.Record]) -> str:
    """The dashboard's "updated" time: that of the newest status-log record, not the clock,
    so that a run that changed nothing leaves the body (and the API budget) alone."""
    if not records:
        return "never"
    latest = max(records, key=lambda record: record.line)
    return latest.time.strftime("%Y-%m-%dT%H:%M:%SZ")
