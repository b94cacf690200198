"""What the page is given: plan, status log and notes texts in, one value out (no I/O)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from memento_gh.dashboard import markup
from memento_gh.dashboard.snapshot import Schedule, build, eta, eta_line, next_tick, notes
from memento_gh.formats import status_log
from memento_gh.formats.status_log import FAILED, SUCCESS, TickEntry, parse_status
from memento_gh.plan.scanner import parse
from testing.ticks import STATUS, one_phase, plan_of, task
from tests.dashboard.conftest import sample_notes, sample_plan, sample_status

NOW = datetime(2025, 1, 15, 16, 7, tzinfo=timezone.utc)


def snapshot(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "errors": 0,
        "status_text": sample_status(),
        "notes_text": sample_notes(),
        "schedules": [Schedule(".github/workflows/memento.yml", "*/30 * * * *")],
        "alert": None,
        "now": NOW,
        **changes,
    }
    plan = parse(arguments.pop("plan", sample_plan()))
    return build(plan, "docs/MASTER_PLAN.md", **arguments)


def entry(tick: int, task_id: str, outcome: str, seconds: float) -> str:
    return status_log.render_entry(
        TickEntry(
            time=datetime(2025, 1, 15, 14, tick, tzinfo=timezone.utc),
            tick=tick,
            task=f"{task_id} [MODULE:core] Write it",
            outcome=outcome,
            duration=seconds,
            retry=None if outcome == SUCCESS else 1,
            max_retries=3,
        )
    )


def log_of(*entries: str) -> str:
    text = STATUS
    for block in entries:
        text = status_log.append(text, block)
    return text


def test_the_state_keeps_every_key_of_status_json() -> None:
    data = snapshot()

    assert data["schema"] == 1
    assert (data["total"], data["completed"], data["blocked"], data["pending"]) == (4, 1, 1, 2)
    assert [task["id"] for task in data["tasks"]] == ["T-101", "T-102", "T-103", "T-104"]
    assert data["next"]["task"] == "T-103"
    assert data["now"] == "2025-01-15T16:07:00Z"


def test_each_task_carries_its_last_run() -> None:
    tasks = {task["id"]: task for task in snapshot()["tasks"]}

    assert tasks["T-101"]["last"]["outcome"] == "success"
    assert tasks["T-101"]["last"]["duration"] == 120
    assert tasks["T-102"]["last"]["tick"] == 4  # the newest of its three runs
    assert tasks["T-102"]["last"]["analysis"] == "verify exited with code 1: src/b.py has no B"
    assert tasks["T-103"]["last"] is None


def test_the_timeline_is_newest_first_with_events_in_place() -> None:
    text = status_log.append(
        sample_status(),
        status_log.render_event(NOW, "Control: T-104 skipped — not needed"),
    )
    timeline = snapshot(status_text=text)["timeline"]

    assert timeline[0] == {
        "kind": "event",
        "time": "2025-01-15T16:07:00Z",
        "text": "Control: T-104 skipped — not needed",
    }
    assert [record["tick"] for record in timeline[1:]] == [4, 3, 2, 1]
    assert timeline[-1]["log"] == "logs/tick_20250115T140000Z.log"
    assert timeline[-1]["log_url"] is None


def test_a_log_that_is_a_url_is_given_as_a_link() -> None:
    block = status_log.render_entry(
        TickEntry(
            time=NOW,
            tick=1,
            task="T-101 Write it",
            outcome=SUCCESS,
            duration=1,
            log="https://github.com/o/r/actions/runs/1",
        )
    )
    record = snapshot(status_text=log_of(block))["timeline"][0]
    assert (record["log"], record["log_url"]) == (None, "https://github.com/o/r/actions/runs/1")


@pytest.mark.parametrize(
    ("entries", "remaining", "expected"),
    [
        ([], 3, {"seconds": None, "average": None, "samples": 0, "remaining": 3}),
        # failed runs are not finished tasks
        ([("T-1", FAILED, 999), ("T-1", SUCCESS, 60)], 4, {"seconds": 240, "average": 60.0}),
        ([("T-1", SUCCESS, 60), ("T-2", SUCCESS, 121)], 2, {"seconds": 181, "average": 90.5}),
        ([("T-1", SUCCESS, 60)], 0, {"seconds": 0, "remaining": 0}),
    ],
)
def test_the_eta_is_the_average_finished_task_times_the_tasks_left(
    entries: list[tuple[str, str, float]], remaining: int, expected: dict[str, Any]
) -> None:
    blocks = [entry(i + 1, task_id, outcome, s) for i, (task_id, outcome, s) in enumerate(entries)]
    parsed = [r for r in parse_status(log_of(*blocks)) if isinstance(r, status_log.ParsedEntry)]

    assert eta(parsed, remaining).items() >= expected.items()


def test_the_eta_counts_the_tasks_not_done_or_skipped() -> None:
    assert snapshot()["eta"] == {"seconds": 360, "average": 120.0, "samples": 1, "remaining": 3}


def test_the_next_tick_is_the_soonest_of_the_schedules() -> None:
    schedules = [Schedule("a.yml", "0 * * * *"), Schedule("b.yml", "*/30 * * * *")]

    assert next_tick(schedules, NOW) == {
        "source": "b.yml",
        "cron": "*/30 * * * *",
        "tz": "UTC",
        "at": "2025-01-15T16:30:00Z",
        "error": None,
    }
    assert next_tick([], NOW) is None


def test_an_unreadable_cron_line_is_reported_unless_another_one_works() -> None:
    broken = Schedule("a.yml", "every hour")
    alone = next_tick([broken], NOW)
    assert alone is not None
    assert (alone["at"], alone["source"]) == (None, "a.yml")
    assert "5 fields" in alone["error"]
    assert next_tick([broken, Schedule("b.yml", "0 * * * *")], NOW)["at"] == (  # type: ignore[index]
        "2025-01-15T17:00:00Z"
    )


def test_notes_are_newest_first_read_or_not_and_rendered_safely() -> None:
    listed = notes(sample_notes())

    assert [(note["target"], note["read"]) for note in listed] == [
        ("global", False),
        ("T-101", True),
    ]
    assert listed[1]["html"] == "<p>Keep <code>A</code> <strong>upper case</strong>.</p>\n"
    assert listed[0]["archived"] is False


def test_a_description_is_rendered_inline_with_its_html_escaped() -> None:
    plan = plan_of([one_phase(task("T-101"))]).replace(
        "Write module A", "Write <img src=x onerror=alert(1)> **now**"
    )
    (only,) = snapshot(plan=plan, status_text="", notes_text="")["tasks"]

    assert only["html"] == "Write &lt;img src=x onerror=alert(1)&gt; <strong>now</strong>"
    assert only["description"] == "Write <img src=x onerror=alert(1)> **now**"


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"),
        (
            '<a href="x" onclick="y">z</a>',
            "<p>&lt;a href=&quot;x&quot; onclick=&quot;y&quot;&gt;z&lt;/a&gt;</p>\n",
        ),
        ("`<b>`", "<p><code>&lt;b&gt;</code></p>\n"),
    ],
)
def test_raw_html_in_a_note_is_text(text: str, html: str) -> None:
    assert markup.block(text) == html


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "vbscript:x"]
)
def test_a_link_to_a_script_points_nowhere(url: str) -> None:
    assert 'href="#harmful-link"' in markup.block(f"[click]({url})")


def test_links_open_apart_and_images_are_never_fetched() -> None:
    html = markup.block("[docs](https://example.com/a) ![chart](https://example.com/c.png)")

    link = '<a href="https://example.com/a" target="_blank" rel="noopener noreferrer nofollow">'
    assert link + "docs</a>" in html
    assert "<img" not in html
    assert ">🖼 chart</a>" in html


def test_an_inline_description_is_never_a_heading_or_a_list() -> None:
    assert markup.inline("# 1. Setup") == "# 1. Setup"
    assert markup.inline("- [ ] a & b") == "- [ ] a &amp; b"


@pytest.mark.parametrize(
    ("numbers", "line"),
    [
        ({"seconds": 360, "average": 120.0, "remaining": 3}, "~6m of work (2m a task × 3)"),
        ({"seconds": 181, "average": 90.5, "remaining": 2}, "~3m1s of work (1m30s a task × 2)"),
        ({"seconds": None, "average": None, "remaining": 3}, "unknown (no task has finished yet)"),
        ({"seconds": 0, "average": 60.0, "remaining": 0}, "Nothing left to do"),
    ],
)
def test_the_eta_is_said_in_the_spelling_of_every_duration(
    numbers: dict[str, Any], line: str
) -> None:
    assert line in eta_line(numbers)


def test_each_run_carries_its_duration_spelled_out() -> None:
    tasks = {task["id"]: task for task in snapshot()["tasks"]}

    assert tasks["T-101"]["last"]["duration_text"] == "2m"
    assert snapshot()["eta_line"] == "Est. remaining: ~6m of work (2m a task × 3)"
