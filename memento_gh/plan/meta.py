"""The keys of the plan's ``## Meta`` section: their types, defaults and a typed view."""

# No `from __future__ import annotations` in this module: typing.NamedTuple compiles each
# annotation given as a string when it makes the class, a cost every start of `memento`
# paid for this module's records (benchmarks/bench_tick.py).

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from memento_gh.durations import parse_duration
from memento_gh.plan import spend, values

TICK_MODES = ("auto", "paused", "stopped")
ARCHITECT_MODES = ("off", "auto")
CLEAN_STRATEGIES = ("git-clean", "git-stash")


class MetaKey(NamedTuple):
    name: str
    read: Callable[[str], Any]
    help: str


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def read(raw: str) -> str:
        value = raw.strip()
        if value not in options:
            raise ValueError(f"{value!r} is not one of {' | '.join(options)}")
        return value

    return read


def _positive(raw: str) -> int:
    return values.parse_int(raw, minimum=1)


def _counter(raw: str) -> int:
    return values.parse_int(raw, minimum=0)


def _file_size(raw: str) -> int:
    value = values.parse_size(raw)
    if value < 1:
        raise ValueError(f"{raw.strip()!r} would allow no file at all; write e.g. 5MB")
    return value


def _text(raw: str) -> str:
    return raw.strip()


def _model_or_none(raw: str) -> str | None:
    return None if raw.strip().lower() == "none" else values.parse_model(raw)


def _time_or_date(raw: str) -> str:
    values.parse_time(raw)
    return raw.strip()


_KEYS = (
    MetaKey("created", _time_or_date, "date the plan was made"),
    MetaKey("last_architect_edit", _time_or_date, "time of the last human plan edit"),
    MetaKey("tick_mode", _choice(TICK_MODES), "auto | paused | stopped"),
    MetaKey("max_retries", _positive, "failed attempts before a task is blocked [!]"),
    MetaKey("max_tasks_per_tick", _positive, "tasks one tick may run back to back"),
    MetaKey("max_diff_lines", _positive, "changed lines above which a change is rejected"),
    MetaKey("max_file_size", _file_size, "file size above which a change is rejected"),
    MetaKey(
        "max_diff_bytes", _file_size, "bytes of changed files above which a change is rejected"
    ),
    MetaKey("stale_lock_timeout", parse_duration, "age after which [~] is reset"),
    MetaKey("circuit_breaker_threshold", _positive, "failing ticks in a row that pause"),
    MetaKey("clean_strategy", _choice(CLEAN_STRATEGIES), "how a failure is undone"),
    MetaKey("clean_ignore", _text, "file of paths cleanup keeps"),
    MetaKey("status_max_entries", _positive, "TICK_STATUS entries before rotation"),
    MetaKey("status_archive_dir", _text, "where rotated logs go"),
    MetaKey("total_ticks", _counter, "ticks run so far (engine)"),
    MetaKey("total_tasks", _counter, "tasks in the plan (engine)"),
    MetaKey("completed_tasks", _counter, "tasks marked [x] (engine)"),
    MetaKey("consecutive_failed_ticks", _counter, "failing ticks in a row (engine)"),
    MetaKey("max_deferrals", _positive, "deferred runs in a row that pause"),
    MetaKey("consecutive_deferrals", _counter, "deferred runs in a row (engine)"),
    MetaKey("agent_timeout", parse_duration, "time limit of one agent run"),
    MetaKey("verify_timeout", parse_duration, "time limit of one verify run"),
    MetaKey("blocked_ratio_limit", values.parse_ratio, "blocked share that pauses"),
    MetaKey("min_free_disk", values.parse_size, "free disk below which ticks pause"),
    MetaKey("memory_stale_after", parse_duration, "age that archives a lesson"),
    MetaKey("budget_per_day", spend.parse_usd, "USD the agent may spend a UTC day"),
    MetaKey("tokens_per_day", spend.parse_limit, "tokens the agent may use a UTC day"),
    MetaKey("budget_per_task", spend.parse_usd, "USD a task may cost before it is blocked"),
    MetaKey("max_ticks_per_day", spend.parse_limit, "ticks that may run a task a UTC day"),
    MetaKey("spend_total", spend.parse_spend, "what every run cost so far (engine)"),
    MetaKey("spend_day", spend.parse_day, "what the UTC day's runs cost (engine)"),
    MetaKey("retry_model", _model_or_none, "model a failed task's retries run on; none: the same"),
    MetaKey("redact_logs", values.parse_switch, "true: credentials out of logs/ too"),
    MetaKey("architect", _choice(ARCHITECT_MODES), "auto: a run proposes revisions for [!]"),
    MetaKey(
        "verify_first", values.parse_switch, "true: a verify that passes before the agent fails"
    ),
)

META_KEYS: Mapping[str, MetaKey] = {key.name: key for key in _KEYS}
COUNTER_KEYS = ("total_tasks", "completed_tasks")


def check_meta_value(name: str, raw: str) -> str | None:
    """The problem with ``name: raw`` as a sentence, or None when it is fine."""
    key = META_KEYS.get(name)
    if key is None:
        import difflib  # only for the message about a mistyped key

        close = difflib.get_close_matches(name, META_KEYS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(META_KEYS)}"
        return f"unknown Meta key {name!r}{hint}"
    try:
        key.read(raw)
    except ValueError as error:
        return f"Meta {name}: {error}"
    return None


class Settings(NamedTuple):
    """The Meta section with defaults filled in; invalid values fall back to the default
    (the validator reports them, and a tick refuses to run on an invalid plan)."""

    tick_mode: str = "auto"
    max_retries: int = 3
    max_tasks_per_tick: int = 1
    max_diff_lines: int = 200
    max_file_size: int = 5 * 1000**2
    max_diff_bytes: int = 10 * 1000**2
    stale_lock_timeout: float = 15 * 60
    circuit_breaker_threshold: int = 5
    clean_strategy: str = "git-clean"
    clean_ignore: str = ".memento_cleanignore"
    status_max_entries: int = 50
    status_archive_dir: str = "logs/status_archive/"
    total_ticks: int = 0
    total_tasks: int = 0
    completed_tasks: int = 0
    consecutive_failed_ticks: int = 0
    max_deferrals: int = 5
    consecutive_deferrals: int = 0
    agent_timeout: float = 30 * 60
    verify_timeout: float = 10 * 60
    blocked_ratio_limit: float = 0.3
    min_free_disk: int = 500 * 1000**2
    memory_stale_after: float = 30 * 86400
    budget_per_day: Decimal | None = None
    tokens_per_day: int | None = None
    budget_per_task: Decimal | None = None
    max_ticks_per_day: int | None = None
    spend_total: spend.Spend = spend.Spend()
    spend_day: spend.DaySpend = spend.DaySpend()
    retry_model: str | None = None
    redact_logs: bool = True
    architect: str = "off"
    verify_first: bool = False

    @classmethod
    def from_raw(cls, raw: Mapping[str, str]) -> "Settings":
        known = cls._fields
        chosen: dict[str, Any] = {}
        for name, text in raw.items():
            if name not in known:
                continue
            try:
                chosen[name] = META_KEYS[name].read(text)
            except ValueError:
                continue
        return cls(**chosen)
