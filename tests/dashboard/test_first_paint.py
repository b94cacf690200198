"""The page's first paint: the snapshot drawn into ``index.html`` on the server (no I/O)."""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import resources

from memento_gh.dashboard.first_paint import PLACEHOLDER, fill
from memento_gh.formats import status_log
from tests.dashboard.test_snapshot import sample_status, snapshot

TEMPLATE = (resources.files("memento_gh.dashboard") / "static" / "index.html").read_text(
    encoding="utf-8"
)


def test_every_mark_of_the_page_is_filled() -> None:
    page = fill(TEMPLATE, snapshot())

    assert "@FIRST:" not in page
    assert PLACEHOLDER not in page
    assert '<span id="overall-count">1/4 (25%)</span>' in page
    assert '<div id="alert" class="alert" hidden>' in page


def test_without_a_plan_the_page_shows_placeholders_and_hides_the_rest() -> None:
    page = fill(TEMPLATE, None)

    assert "@FIRST:" not in page
    assert f'<span id="project">{PLACEHOLDER}</span>' in page
    assert '<div id="alert" class="alert" hidden></div>' in page
    assert '<div id="task-list" class="task-list" data-filter="all"></div>' in page


def test_text_from_the_files_is_escaped() -> None:
    state = snapshot(alert="<script>alert(1)</script> & more")
    state["title"] = "MASTER_PLAN: <b>Shop</b>"

    page = fill(TEMPLATE, state)

    assert '<div id="alert" class="alert">&lt;script&gt;alert(1)&lt;/script&gt; &amp; more' in page
    assert '<span id="project">&lt;b&gt;Shop&lt;/b&gt;</span>' in page


def test_the_pull_request_the_runs_saw_is_shown_with_its_link() -> None:
    event = status_log.render_event(
        datetime(2025, 1, 15, 15, 0, tzinfo=timezone.utc),
        "Pull request #12 is draft, checks pending: https://github.com/o/n/pull/12",
    )
    state = snapshot(status_text=sample_status() + event)
    assert state["pull_request"] == {
        "number": 12,
        "url": "https://github.com/o/n/pull/12",
        "state": "draft",
        "checks": "pending",
    }
    page = fill(TEMPLATE, state)
    assert (
        '<p id="pull-request-line"><a id="pull-request" href="https://github.com/o/n/pull/12">'
        "Pull request #12 (draft, checks pending)</a></p>"
    ) in page
    assert '<p id="pull-request-line" hidden>' in fill(TEMPLATE, snapshot())


def test_a_pull_request_record_whose_link_is_not_http_is_not_read() -> None:
    event = status_log.render_event(
        datetime(2025, 1, 15, 15, 0, tzinfo=timezone.utc),
        "Pull request #12 is draft: javascript:alert(1)",
    )
    assert snapshot(status_text=sample_status() + event)["pull_request"] is None
