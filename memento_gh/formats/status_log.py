"""``TICK_STATUS.md``: the tick log, one entry per task run and one-line events, newest last.

Text in, text out; the time is passed in. An entry::

    ## [2025-01-15T14:40:00Z] Tick #013
    - **Task**: T-201 [MODULE:auth] Connect auth middleware to database
    - **Status**: ❌ FAILED (retry 2/3)
    - **Verify Output**: `TypeError: pool.query is not a function` (exit code 1)
    - **Duration**: 4m52s
    - **Error Analysis**: DB module exports `pool` but middleware imports `connection`.
    - **Files Modified**: (rolled back)
    - **Git Commit**: (none — rollback)

    ---

A failed run names each reason in a field of its own after the Error Analysis, which sums
them up in one line: ``Tick Died`` (the tick running it died), ``Agent Failure`` (the agent's
exit code or timeout, and the last line it said, e.g. ``the agent exited with code 1: Not
logged in · Please run /login``), ``Conflict`` (on a branch shared by workers, its change no
longer applies to files another task changed) and ``Guard Violations`` (the rules its
change broke). Older logs put the first three under Guard Violations; every field is read
by name, so they read as before.

A run the agent's provider cut short (a rate limit, a spent quota, an overloaded model) is
``⏳ DEFERRED``, counting no retry: **Provider Limit** holds the agent's own words, **Try
Again** when it said to (a time in UTC and its words, or its words alone).

An event (a skipped tick, a reset claim, the end of the pipeline, a control)::

    - [2025-01-15T14:45:00Z] 🎉 ALL TASKS COMPLETE

Every value the engine does not control (verify output, task titles, analyses) is written so
that it cannot look like structure: one-line fields have their line breaks folded, and a
multi-line verify output sits in an indented fenced block whose fence is longer than any
backtick run in it, so a line ``## [...] Tick #999`` of output is never a new entry.
"""

# No `from __future__ import annotations` in this module: typing.NamedTuple compiles each
# annotation given as a string when it makes the class, a cost every start of `memento`
# paid for this module's records (benchmarks/bench_tick.py).

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from typing import NamedTuple

from memento_gh.durations import format_duration, parse_duration
from memento_gh.formats import runner_output
from memento_gh.markdown import FENCE_OPENED, NORMAL, CodeTracker
from memento_gh.plan import spend, values
from memento_gh.plan.scanner import split_lines

HEADER = "# TICK STATUS LOG"
ARCHIVE_DIR = "logs/status_archive"
SUCCESS, FAILED, BLOCKED, DEFERRED = "success", "failed", "blocked", "deferred"
OUTCOMES = (SUCCESS, FAILED, BLOCKED, DEFERRED)
ESCALATION = "⚠️ NEEDS ARCHITECT ATTENTION"
#: An entry shows this many lines of verify's output: where it reports the failure.
VERIFY_LINES = runner_output.EXCERPT_LINES
VERIFY_LINE_CHARS = 500  # one runaway line must not bloat the log
KEEP_ON_ROTATION = 5

_ENTRY = re.compile(
    r"##[ \t]+\[(?P<time>[^\]\s]+)\][ \t]+Tick[ \t]+#(?P<tick>\d+)"
    r"(?:[ \t]+\(continued,[ \t]*tasks_this_tick:[ \t]*(?P<index>\d+)/(?P<count>\d+)\))?"
    r"[ \t]*$"
)
# `- [time] text`, or `[time] text` without the bullet, as a shell `echo` appends it.
_EVENT = re.compile(r"(?:[-*][ \t]+)?\[(?P<time>[^\]\s]+)\][ \t]+(?P<text>\S.*?)[ \t]*$")
_FIELD = re.compile(r"-[ \t]+\*\*(?P<key>[^*]+)\*\*:[ \t]*(?P<value>.*?)[ \t]*$")
_VERIFY_TAIL = re.compile(
    r"(?:^|[ \t]+)\((?:exit code (?P<exit>-?\d+)|(?P<other>timed out|not run))\)$"
)
_RETRY = re.compile(r"\(retry[ \t]+(\d+)/(\d+)")
_COMMIT = re.compile(r"`(?P<sha>[0-9a-fA-F]{4,40})`")
_ROTATED = re.compile(r"<!--[ \t]*Rotated at\b.*-->[ \t]*$")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BACKTICKS = re.compile(r"`+")


class TickEntry(NamedTuple):
    """One task run: every field its entry shows, plus what the engine knows beyond them."""

    time: datetime
    tick: int
    task: str  # "T-101 [MODULE:database] Setup PostgreSQL schema"
    outcome: str  # SUCCESS | FAILED | BLOCKED | DEFERRED
    duration: float  # seconds
    verify_head: str = ""  # the first lines of the verify output (more are cut)
    exit_code: int | None = None  # verify's; None: it timed out or did not run
    verify_timed_out: bool = False
    #: (index, count) of this task among the tick's tasks; rendered "continued" from index 2
    continuation: tuple[int, int] | None = None
    retry: int | None = None  # the task's retries after this run ("retry 2/3" when failed)
    max_retries: int | None = None
    error_analysis: str | None = None
    #: (path, lines added, lines removed); None when the change was rolled back
    files: tuple[tuple[str, int, int], ...] | None = ()
    diff_size: int | None = None  # lines changed; None leaves the field out
    commit: tuple[str, str] | None = None  # (sha, message) of the work's commit
    outputs: str | None = None  # key interfaces created (success only, optional)
    violations: tuple[str, ...] = ()  # guard violations, one sentence each
    cost: Mapping[str, object] | None = None  # usd / input_tokens / output_tokens / model
    log: str | None = None  # the tick's log file or the workflow run's URL
    escalation: bool = False  # "⚠️ NEEDS ARCHITECT ATTENTION"
    #: the agent exited non-zero or ran past its timeout: how, and the last line it said
    agent_failure: str | None = None
    #: the last line the agent said in a run that failed otherwise (verify, a guard): often
    #: what it needs, "Please add a note …"
    agent_said: str | None = None
    tick_died: str | None = None  # the tick running the task died (a later one records it)
    conflict: str | None = None  # the change no longer applies on a shared branch's new tip
    #: deferred: the agent's words about its provider's limit, and when to try again
    provider_limit: str | None = None
    try_again: str | None = None


class ParsedEntry(NamedTuple):
    """An entry read back from the log; values the file does not hold are None."""

    line: int  # 0-based index of the ``## [time] Tick #N`` heading
    time: datetime
    tick: int
    continuation: tuple[int, int] | None
    task: str
    task_id: str | None
    outcome: str | None
    retry: int | None
    max_retries: int | None
    duration: float | None  # seconds
    verify_head: str | None
    exit_code: int | None
    error_analysis: str | None
    commit: str | None  # the short sha
    escalation: bool
    fields: Mapping[str, str]  # every field's raw value by name ("Files Modified", ...)


class Event(NamedTuple):
    line: int
    time: datetime
    text: str


Record = ParsedEntry | Event


# -- rendering -----------------------------------------------------------------------------


def render_entry(entry: TickEntry) -> str:
    """The entry's Markdown, ending with the ``---`` that separates it from the next."""
    if entry.outcome not in OUTCOMES:
        raise ValueError(f"outcome {entry.outcome!r} is not one of {', '.join(OUTCOMES)}")
    lines = [
        _heading(entry),
        f"- **Task**: {_one_line(entry.task)}",
        f"- **Status**: {_status(entry)}",
        *_verify(entry),
        f"- **Duration**: {format_duration(round(entry.duration))}",
    ]
    lines += [f"- **{key}**: {value}" for key, value in _later_fields(entry) if value]
    return "\n".join([*lines, "", "---"]) + "\n"


def _later_fields(entry: TickEntry) -> list[tuple[str, str]]:
    """The fields after Duration, in the order every entry lists them; an empty value leaves
    a field out."""
    size = entry.diff_size
    return [
        ("Error Analysis", _one_line(entry.error_analysis or "")),
        ("Provider Limit", _one_line(entry.provider_limit or "")),
        ("Try Again", _one_line(entry.try_again or "")),
        ("Tick Died", _one_line(entry.tick_died or "")),
        ("Agent Failure", _one_line(entry.agent_failure or "")),
        ("Agent Said", _one_line(entry.agent_said or "")),
        ("Conflict", _one_line(entry.conflict or "")),
        ("Guard Violations", "; ".join(_one_line(v) for v in entry.violations)),
        ("Escalation", escalation(entry.task) if entry.escalation else ""),
        ("Files Modified", _files(entry.files)),
        ("Diff Size", "" if size is None else f"{size} line{'' if size == 1 else 's'}"),
        ("Git Commit", _commit(entry)),
        ("Outputs", _one_line(entry.outputs or "")),
        ("Cost", cost_text(entry.cost)),
        ("Log", _one_line(entry.log or "")),
    ]


def escalation(task: str) -> str:
    """The Escalation field of a task (``T-201 [MODULE:auth] …``) blocked ``[!]``: the
    seed's words, then what a person does about it."""
    task_id = task.split(maxsplit=1)[0] if task.strip() else "the task"
    return (
        f"{ESCALATION}: tell the worker what it needs (`memento note --task {task_id} "
        f"'…'`, or a comment on the task's issue), then `memento retry {task_id}`; or "
        f"change the task, or `memento skip {task_id}`"
    )


def render_event(time: datetime, text: str) -> str:
    """One line: ``- [2025-01-15T14:40:00Z] Tick skipped: mode=paused``."""
    body = _one_line(text)
    if not body:
        raise ValueError("an event needs some text")
    return f"- [{values.format_time(time)}] {body}\n"


def tick_skipped(reason: str) -> str:
    return f"Tick skipped: {reason}"


def stale_claim_reset(task_id: str) -> str:
    return f"Stale [~] detected on {task_id}, reset to [ ]"


def claim_released(task_id: str, worker: str) -> str:
    """A task claimed for a worker's next tick that never started (it died, or the plan
    was paused or over budget by then): back to ``[ ]``, no attempt counted."""
    return f"[~] on {task_id} released: claimed for {worker}, whose agent never started on it"


#: How the circuit breaker's event starts; its reason follows.
BREAKER_PREFIX = "🔴 CIRCUIT BREAKER TRIGGERED — reason: "


def circuit_breaker(reason: str) -> str:
    return BREAKER_PREFIX + reason


def mentions_breaker(event_text: str) -> bool:
    """An event about the circuit breaker (its trip, or a line quoting one)."""
    return "CIRCUIT BREAKER" in event_text


def emergency_stash(message: str) -> str:
    return f"CRITICAL: Emergency stash created ({message}). Manual inspection required."


def _heading(entry: TickEntry) -> str:
    heading = f"## [{values.format_time(entry.time)}] Tick #{entry.tick:03d}"
    if entry.continuation is not None and entry.continuation[0] > 1:
        index, count = entry.continuation
        heading += f" (continued, tasks_this_tick: {index}/{count})"
    return heading


def _status(entry: TickEntry) -> str:
    if entry.outcome == SUCCESS:
        return "✅ SUCCESS"
    if entry.outcome == DEFERRED:
        if entry.retry is None or entry.max_retries is None:
            return "⏳ DEFERRED (a provider limit: no retry counted)"
        return (
            f"⏳ DEFERRED (retry {entry.retry}/{entry.max_retries}, not counted: a provider limit)"
        )
    label = "❌ FAILED" if entry.outcome == FAILED else "🚫 BLOCKED"
    retry, most = entry.retry, entry.max_retries
    if retry is None or most is None:
        return label
    reached = entry.outcome == BLOCKED and retry >= most
    return f"{label} (retry {retry}/{most}{' — max_retries reached' if reached else ''})"


def _verify(entry: TickEntry) -> list[str]:
    head = verify_lines(entry.verify_head)
    if entry.exit_code is not None:
        tail = f"(exit code {entry.exit_code})"
    elif entry.verify_timed_out:
        tail = "(timed out)"
    else:
        tail = "(not run)"
    if not head:
        prefix = "" if tail == "(not run)" else "(no output) "
        return [f"- **Verify Output**: {prefix}{tail}"]
    if len(head) == 1:
        return [f"- **Verify Output**: {_code_span(head[0])} {tail}"]
    longest = max((len(run) for line in head for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    block = [f"  {line}" if line else "" for line in head]
    return [f"- **Verify Output**: {tail}", f"  {fence}text", *block, f"  {fence}"]


def verify_lines(output: str) -> list[str]:
    """The first lines of a command's output as the log shows them: escape sequences and
    control characters gone, trailing spaces and blank edges trimmed, long lines cut."""
    lines = [
        _CONTROL.sub("", _ANSI.sub("", line)).rstrip()
        for line in output.splitlines()  # \r alone (progress bars) breaks a line too
    ]
    while lines and not lines[0].strip():
        lines.pop(0)
    lines = lines[:VERIFY_LINES]
    while lines and not lines[-1].strip():
        lines.pop()
    return [
        line if len(line) <= VERIFY_LINE_CHARS else line[: VERIFY_LINE_CHARS - 1] + "…"
        for line in lines
    ]


def _code_span(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    if text.startswith(("`", " ")) or text.endswith(("`", " ")):
        text = f" {text} "  # CommonMark strips one space from each side
    return f"{ticks}{text}{ticks}"


def _files(files: Sequence[tuple[str, int, int]] | None) -> str:
    if files is None:
        return "(rolled back)"
    if not files:
        return "(none)"
    return ", ".join(f"{_one_line(path)} (+{added} -{removed})" for path, added, removed in files)


def _commit(entry: TickEntry) -> str:
    if entry.commit is None:
        return "(none)" if entry.outcome == SUCCESS else "(none — rollback)"
    sha, message = entry.commit
    if not sha:
        # The entry is written into the very commit it names, whose sha it cannot know:
        # the commit carries a Memento-Tick trailer with this entry's tick number.
        return f'this commit — "{_one_line(message)}"'
    return f'`{sha[:7]}` — "{_one_line(message)}"'


def cost_text(cost: Mapping[str, object] | None) -> str:
    """``$0.0247, 12,345 tokens in / 2,345 out, claude-sonnet-4``; unknown keys are left
    out. The price is exact to the millionth (``spend.format_usd``), so the entries add up."""
    if not cost:
        return ""
    parts = []
    usd = next((cost[k] for k in ("usd", "total_cost_usd", "cost_usd") if k in cost), None)
    if isinstance(usd, int | float) and not isinstance(usd, bool) and math.isfinite(usd):
        parts.append(f"${spend.format_usd(Decimal(str(max(float(usd), 0.0))))}")
    tokens_in, tokens_out = cost.get("input_tokens"), cost.get("output_tokens")
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        parts.append(f"{tokens_in:,} tokens in / {tokens_out:,} out")
    elif isinstance(tokens_in, int):
        parts.append(f"{tokens_in:,} tokens in")
    elif isinstance(tokens_out, int):
        parts.append(f"{tokens_out:,} tokens out")
    if isinstance(cost.get("model"), str):
        parts.append(_one_line(str(cost["model"])))
    return ", ".join(parts)


_COST_TOKENS = re.compile(
    r"(?:(?P<in>[\d,]+) tokens in(?: / (?P<out>[\d,]+) out)?|(?P<only>[\d,]+) tokens out)"
)


def read_cost(value: str) -> tuple[spend.Spend, str | None]:
    """A Cost field read back: the run's spend and the model it names (None: none)."""
    usd: Decimal | None = None
    tokens_in = tokens_out = 0
    model = None
    for part in value.split(", "):
        tokens = _COST_TOKENS.fullmatch(part)
        if part.startswith("$"):
            try:
                usd = Decimal(part[1:])
            except ArithmeticError:
                model = part
        elif tokens is not None:
            tokens_in = int((tokens["in"] or "0").replace(",", ""))
            tokens_out = int((tokens["out"] or tokens["only"] or "0").replace(",", ""))
        elif part:
            model = part
    return spend.Spend(usd, tokens_in, tokens_out), model


def spend_per_model(records: Sequence["Record"]) -> list[dict[str, object]]:
    """Each model's spend over the entries the log holds, the costliest first; the runs of
    an agent that named no model under ``None``."""
    totals: dict[str | None, tuple[spend.Spend, int]] = {}
    for record in records:
        value = record.fields.get("Cost") if isinstance(record, ParsedEntry) else None
        if not value:
            continue
        run, model = read_cost(value)
        held, runs = totals.get(model, (spend.Spend(), 0))
        totals[model] = (held + run, runs + 1)
    ranked = sorted(
        totals.items(),
        key=lambda item: (item[0] is None, -(item[1][0].usd or 0), -item[1][0].tokens),
    )
    return [{"model": model, **held.as_json(), "runs": runs} for model, (held, runs) in ranked]


def _one_line(text: str) -> str:
    """Line breaks, tabs and control characters folded into single spaces."""
    return " ".join(_CONTROL.sub(" ", _ANSI.sub("", text)).split())


# -- the file ------------------------------------------------------------------------------


def append(text: str, block: str) -> str:
    """``text`` with ``block`` added at the end, in the file's line-ending style.

    A blank line separates the block from what comes before, except that events written one
    after another form one list. An empty file gets the log's header first.
    """
    lines, eols = split_lines(text)
    eol = next((ending for ending in eols if ending), "\n")
    added = block.rstrip("\r\n").replace("\r\n", "\n").replace("\n", eol) + eol
    if not text.strip("\ufeff \t\r\n"):
        return text.rstrip(" \t\r\n") + HEADER + eol + eol + added
    if not text.endswith(("\n", "\r")):
        text += eol
    last = lines[-1] if lines else ""
    first = block.splitlines()[0] if block else ""
    if last.strip() and not (_is_event_line(last) and _is_event_line(first)):
        text += eol
    return text + added


def _is_event_line(line: str) -> bool:
    match = _EVENT.fullmatch(line)
    return match is not None and _time(match.group("time")) is not None


def parse_status(text: str) -> list[Record]:
    """Entries and events in file order. Lines that are neither are left alone (a human's
    remark, the rotation comment); code blocks and HTML comments hold no records."""
    lines, _ = split_lines(text.removeprefix("\ufeff"))
    return _Reader(lines).run()


class _Reader:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.entry = _ENTRY.fullmatch
        self.event = _EVENT.fullmatch
        self.field = _FIELD.fullmatch
        self.records: list[Record] = []
        self.code = CodeTracker()
        self.heading: tuple[int, re.Match[str]] | None = None  # of the entry being read
        self.fields: dict[str, str] = {}
        self.block: list[str] | None = None  # verify output lines inside the fence
        self.last_key: str | None = None

    def run(self) -> list[Record]:
        for number, line in enumerate(self.lines):
            stripped = line.lstrip(" \t")
            kind = self.code.step(number, stripped)
            if kind != NORMAL:
                self._code(kind, line)
                continue
            self._line(number, line)
        self._close()
        return self.records

    def _code(self, kind: str, line: str) -> None:
        opened_under_verify = self.heading is not None and self.last_key == "Verify Output"
        if kind == FENCE_OPENED:
            self.block = [] if opened_under_verify and line.startswith("  ") else None
            self.last_key = None
        elif self.block is not None:
            if self.code.open:
                self.block.append(line[2:] if line.startswith("  ") else line.lstrip(" "))
            else:  # the closing fence
                self.fields["Verify Output"] += "\n" + "\n".join(self.block)
                self.block = None

    def _line(self, number: int, line: str) -> None:
        entry = self.entry(line)
        if entry and _time(entry.group("time")) is not None:
            self._close()
            self.heading, self.fields = (number, entry), {}
            return
        event = self.event(line)
        if event:
            moment = _time(event.group("time"))
            if moment is not None:
                self._close()
                self.records.append(Event(number, moment, event.group("text")))
                return
        if self.heading is None:
            return
        field = self.field(line)
        if field:
            key = field.group("key").strip()
            self.fields.setdefault(key, field.group("value"))
            self.last_key = key
        elif line.startswith("#") or _THEMATIC_BREAK.fullmatch(line.strip()):
            self._close()
        elif line.strip():
            self.last_key = None

    def _close(self) -> None:
        if self.heading is not None:
            number, match = self.heading
            self.records.append(_entry(number, match, self.fields))
        self.heading, self.fields, self.last_key = None, {}, None


def _entry(number: int, match: re.Match[str], fields: dict[str, str]) -> ParsedEntry:
    moment = _time(match.group("time"))
    assert moment is not None
    continuation = None
    if match.group("index"):
        continuation = (int(match.group("index")), int(match.group("count")))
    task = fields.get("Task", "")
    first = task.split(" ", 1)[0]
    status = fields.get("Status", "")
    retry = _RETRY.search(status)
    head, exit_code = _verify_value(fields.get("Verify Output"))
    commit = _COMMIT.search(fields.get("Git Commit", ""))
    return ParsedEntry(
        line=number,
        time=moment,
        tick=int(match.group("tick")),
        continuation=continuation,
        task=task,
        task_id=first if values.TASK_ID.fullmatch(first) else None,
        outcome=next((o for o in OUTCOMES if o.upper() in status.upper()), None),
        retry=int(retry.group(1)) if retry else None,
        max_retries=int(retry.group(2)) if retry else None,
        duration=_seconds(fields.get("Duration")),
        verify_head=head,
        exit_code=exit_code,
        error_analysis=fields.get("Error Analysis"),
        commit=commit.group("sha") if commit else None,
        escalation="NEEDS ARCHITECT ATTENTION" in fields.get("Escalation", "")
        or "NEEDS ARCHITECT ATTENTION" in status,
        fields=fields,
    )


def _verify_value(value: str | None) -> tuple[str | None, int | None]:
    if value is None:
        return None, None
    first, _, block = value.partition("\n")
    tail = _VERIFY_TAIL.search(first)
    exit_code = int(tail.group("exit")) if tail and tail.group("exit") else None
    rest = first[: tail.start()] if tail else first
    if block or (tail and not rest):
        return block, exit_code
    if rest == "(no output)":
        return "", exit_code
    try:
        return values.parse_code(rest), exit_code
    except ValueError:
        return rest, exit_code  # prose, as a person or an agent wrote it


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def _time(raw: str) -> datetime | None:
    try:
        return values.parse_time(raw)
    except ValueError:
        return None


def entry_count(text: str) -> int:
    """Tick entries (not events) in the log."""
    return sum(isinstance(record, ParsedEntry) for record in parse_status(text))


def last_event(text: str) -> str | None:
    """The newest record's text when that record is an event; None after an entry."""
    records = parse_status(text)
    return records[-1].text if records and isinstance(records[-1], Event) else None


def is_latest_event(text: str, event_text: str) -> bool:
    """True when the newest record of the log is this very event.

    The engine writes "🎉 ALL TASKS COMPLETE", "⚠️ PIPELINE BLOCKED …" or a skip line only
    when this is False, so a state is logged once, and again only after something else
    happened in between.
    """
    return last_event(text) == _one_line(event_text)


def _most_records(text: str) -> int:
    """At least as many as the log's records: its lines that could start one (an entry's
    ``##`` heading, an event's ``[time]`` after an optional bullet)."""
    return sum(1 for line in text.splitlines() if _may_start_record(line))


def _may_start_record(line: str) -> bool:
    lead = line[:1]
    if lead in ("-", "*"):
        return line[1:2] in (" ", "\t") and line[2:].lstrip(" \t")[:1] == "["
    return lead in ("#", "[", "\ufeff")


def archive_path(now: datetime, archive_dir: str = ARCHIVE_DIR) -> str:
    """Where ``rotate``'s archived text goes, relative to the repository root."""
    stamp = now.astimezone(timezone.utc)
    return f"{archive_dir.rstrip('/')}/TICK_STATUS_{stamp:%Y%m%d_%H%M%S}.md"


def rotate(
    text: str,
    max_entries: int,
    now: datetime,
    keep: int = KEEP_ON_ROTATION,
    archive_dir: str = ARCHIVE_DIR,
) -> tuple[str, str | None]:
    """Archive the log once it holds more than ``max_entries`` records (entries and events).

    Returns (the new log, the archived text to write at ``archive_path(now, archive_dir)``), or
    (``text``, None) when the log is small enough. The new log does not start empty: the
    newest ``keep`` records stay, so the dashboard still shows the recent ticks,
    and ``is_latest_event`` still sees the last event, so a rotation does not make the
    engine write "🎉 ALL TASKS COMPLETE" again. The archive holds the file's bytes up to
    the first record kept (header included), unchanged.
    """
    if _most_records(text) <= max_entries:
        return text, None  # without reading the log: most ticks end here
    records = parse_status(text)
    if len(records) <= max_entries:
        return text, None
    kept = min(max(keep, 0), max_entries)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines, eols = split_lines(text.removeprefix("\ufeff"))
    eol = next((ending for ending in eols if ending), "\n")
    cut = records[-kept].line if kept else len(lines)
    archived = bom + "".join(line + end for line, end in zip(lines[:cut], eols[:cut], strict=True))
    if archived and not archived.endswith(("\n", "\r")):
        archived += eol
    preamble = [line for line in lines[: records[0].line] if not _ROTATED.fullmatch(line.strip())]
    while preamble and not preamble[-1].strip():
        preamble.pop()
    if not any(line.strip() for line in preamble):
        preamble = [HEADER]
    comment = (
        f"<!-- Rotated at {values.format_time(now)}; {len(records) - kept} entries archived "
        f"in {archive_path(now, archive_dir)} -->"
    )
    rest = "".join(line + end for line, end in zip(lines[cut:], eols[cut:], strict=True))
    head = eol.join([*preamble, "", comment, ""]) + eol
    fresh = bom + head + (rest if rest.endswith(("\n", "\r")) or not rest else rest + eol)
    return fresh, archived
