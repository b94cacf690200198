"""The real page in a real headless Chromium, served by the real ``memento dashboard``.

Each test clicks what a person would click and then reads the files on disk: the plan, the
notes, the status log, git's history. Nothing is stubbed: the server runs as a subprocess
on 127.0.0.1 and a background tick is the real ``memento tick`` with the scripted agent.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from memento_gh.formats.notes import parse_notes
from testing.browser import Dashboard
from testing.plans import large_plan
from testing.ticks import Project, good, make_project
from tests.dashboard.conftest import ANALYSIS, sample_project, save_artifact

pytestmark = pytest.mark.slow  # a real Chromium

Serve = Callable[[Project], Dashboard]


def open_page(page: Page, dashboard: Dashboard) -> None:
    page.goto(dashboard.url)
    expect(page.locator("#task-list .task").first).to_be_visible()


def row(page: Page, task_id: str) -> Locator:
    return page.locator(f'#task-list .task[data-id="{task_id}"]')


def visible_ids(page: Page) -> list[str]:
    rows = page.locator("#task-list .task:visible")
    return [rows.nth(i).get_attribute("data-id") or "" for i in range(rows.count())]


def answered(page: Page, message: str) -> None:
    """The server's answer reached the page: the control is applied and committed (the page
    may show the new state earlier, from a poll that read the file before the commit)."""
    expect(page.locator("#toast")).to_contain_text(f"{message} (committed ")


def wait_for_file(path: Path, pattern: str, timeout: float = 15.0) -> str:
    """The file's text once it matches ``pattern`` (a write lands before the page shows it)."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(encoding="utf-8")
        if re.search(pattern, text, re.MULTILINE) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


# -- seeing ---------------------------------------------------------------------------------


def test_the_page_shows_status_progress_eta_schedule_and_filters_the_tasks(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    dashboard = serve(sample_project(tmp_path))
    open_page(page, dashboard)

    expect(page.locator("#project")).to_have_text("Demo")
    expect(page.locator("#mode")).to_have_text("● AUTO")
    expect(page.locator("#last-tick")).to_contain_text("#4")
    expect(page.locator("#last-tick")).to_contain_text("BLOCKED T-102")
    expect(page.locator("#next-tick")).to_contain_text("*/30 * * * *")
    expect(page.locator("#overall-count")).to_have_text("1/4 (25%)")
    expect(page.locator("#phases li")).to_have_count(2)
    expect(page.locator("#phases li").first).to_contain_text("1/3 · 1 blocked")
    expect(page.locator("#blocked-count")).to_have_text("Blocked: 1 ⚠")
    # one finished task took 2 minutes; three are left
    expect(page.locator("#eta")).to_contain_text("~6m of work (2m a task × 3)")
    expect(page.locator("#mode-hint")).to_have_text("T-103 is next (Phase 1: Core)")

    assert visible_ids(page) == ["T-101", "T-102", "T-103", "T-104"]
    for name, ids in [
        ("Pending", ["T-103", "T-104"]),
        ("Completed", ["T-101"]),
        ("Blocked", ["T-102"]),
        ("All", ["T-101", "T-102", "T-103", "T-104"]),
    ]:
        page.locator("button[data-filter]", has_text=name).click()
        expect(page.locator("#task-list .task:visible")).to_have_count(len(ids))
        assert visible_ids(page) == ids, name
    expect(page.locator("button[data-filter='pending'] .count")).to_have_text("2")


def test_a_task_expands_to_its_last_run_with_the_actions_its_state_allows(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    open_page(page, serve(sample_project(tmp_path)))

    blocked = row(page, "T-102")
    blocked.locator(".summary").click()
    body = blocked.locator(".task-body")
    expect(body).to_contain_text("Retries3/3")
    expect(body).to_contain_text("Tick #4")
    expect(body).to_contain_text("BLOCKED (retry 3/3)")
    expect(body).to_contain_text(ANALYSIS)
    expect(body.locator("pre")).to_have_text("src/b.py has no B")
    expect(body.get_by_role("button")).to_have_text(["Add note", "↺ Reset retries", "Skip…"])

    done = row(page, "T-101")
    done.locator(".summary").focus()
    page.keyboard.press("Enter")
    expect(done.locator(".summary")).to_have_attribute("aria-expanded", "true")
    expect(done.locator(".task-body")).to_contain_text("SUCCESS · 2m")
    expect(done.locator(".task-body").get_by_role("button")).to_have_text(["Add note"])
    done.locator(".summary").click()
    expect(done.locator(".task-body")).to_have_count(0)


def test_the_timeline_lists_ticks_latest_first_and_the_notes_fold_the_read_ones(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    open_page(page, serve(sample_project(tmp_path)))

    ticks = page.locator("#timeline-list > li strong")
    expect(ticks).to_have_text(["Tick #004", "Tick #003", "Tick #002", "Tick #001"])
    expect(page.locator("#timeline-list > li").first).to_contain_text(ANALYSIS)
    expect(page.locator("#notes-pending > li")).to_have_count(1)
    expect(page.locator("#notes-pending")).to_contain_text("Phase 2 waits until Phase 1")
    expect(page.locator("#read-count")).to_have_text("1")
    expect(page.locator("#notes-read")).to_be_hidden()  # folded
    page.locator("#notes-read-box > summary").click()
    expect(page.locator("#notes-read strong").last).to_have_text("upper case")
    expect(page.locator("#notes-read code")).to_have_text("A")


# -- steering --------------------------------------------------------------------------------


def test_pause_then_resume_rewrite_tick_mode_in_the_plan(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    open_page(page, serve(project))

    page.get_by_role("button", name="Pause").click()
    plan = wait_for_file(project.plan_path, r"^- tick_mode: paused$")
    assert "- tick_mode: paused\n" in plan
    expect(page.locator("#mode")).to_have_text("❚❚ PAUSED")
    expect(page.get_by_role("button", name="Pause")).to_be_disabled()
    answered(page, "pause: tick_mode is now paused")
    assert project.subjects()[0] == "memento: pause"

    page.get_by_role("button", name="Resume").click()
    plan = wait_for_file(project.plan_path, r"^- tick_mode: auto$")
    assert "- tick_mode: auto\n" in plan
    expect(page.locator("#mode")).to_have_text("● AUTO")
    answered(page, "resume: tick_mode is now auto")
    assert project.subjects()[:2] == ["memento: resume", "memento: pause"]


def test_a_note_from_the_panel_and_one_from_a_task_land_in_human_notes(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    open_page(page, serve(project))

    page.locator("#note-text").fill("Use **Redis** for sessions")
    page.get_by_role("button", name="Send note").last.click()
    expect(page.locator("#notes-pending > li")).to_have_count(2)
    expect(page.locator("#note-text")).to_have_value("")

    task_row = row(page, "T-103")
    task_row.locator(".summary").click()
    task_row.get_by_role("button", name="Add note").click()
    task_row.get_by_label("Note for T-103").fill("C must be a constant")
    task_row.get_by_role("button", name="Send note").click()
    expect(page.locator("#notes-pending > li")).to_have_count(3)
    expect(page.locator("#notes-pending > li").first).to_contain_text("→ T-103")

    pending = {(n.target, n.text) for n in project.notes() if not n.read}
    assert pending == {
        ("global", "Phase 2 waits until Phase 1 is stable."),
        ("global", "Use **Redis** for sessions"),
        ("T-103", "C must be a constant"),
    }
    answered(page, "note for T-103 added")
    assert project.subjects()[:2] == ["memento: note T-103", "memento: note"]
    expect(page.locator("#notes-pending strong").filter(has_text="Redis")).to_have_count(1)


def test_reset_retries_puts_a_blocked_task_back_in_line(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    open_page(page, serve(project))

    blocked = row(page, "T-102")
    blocked.locator(".summary").click()
    blocked.get_by_role("button", name="Reset retries").click()

    plan = wait_for_file(project.plan_path, r"^- \[ \] `T-102`")
    assert "- [ ] `T-102` [MODULE:core] Write module B\n" in plan
    assert project.plan().task("T-102").retries == 0  # type: ignore[union-attr]
    expect(row(page, "T-102")).to_have_attribute("data-status", "pending")
    # the row was open and stays open, now without the button
    expect(row(page, "T-102").get_by_role("button", name="Reset retries")).to_have_count(0)
    expect(page.locator("#blocked-count")).to_have_text("Blocked: 0")
    answered(page, "retry T-102")
    assert project.subjects()[0] == "memento: retry T-102"


def test_skip_marks_a_task_skipped_and_logs_why(tmp_path: Path, serve: Serve, page: Page) -> None:
    project = sample_project(tmp_path)
    open_page(page, serve(project))

    pending = row(page, "T-103")
    pending.locator(".summary").click()
    pending.get_by_role("button", name="Skip…").click()
    pending.get_by_label("Why skip T-103").fill("done by hand")
    pending.get_by_role("button", name="Skip T-103").click()

    answered(page, "skip T-103 — done by hand")
    plan = project.plan_path.read_text(encoding="utf-8")
    assert "- [-] `T-103` [MODULE:core] Write module C\n" in plan
    assert project.events()[-1] == "Control: T-103 skipped — done by hand"
    expect(row(page, "T-103")).to_have_attribute("data-group", "skipped")
    expect(page.locator("#timeline-list > li").first).to_contain_text("skipped — done by hand")


# -- watching --------------------------------------------------------------------------------


def test_a_tick_run_in_the_background_shows_up_without_a_reload(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    project.script({"T-103": good("T-103")})
    open_page(page, serve(project))
    page.evaluate("window.sameDocument = true")  # gone if the page reloads

    tick = project.start_tick()
    out, err = tick.communicate(timeout=120)
    assert tick.returncode == 0, out + err

    latest = page.locator("#timeline-list > li").first
    expect(latest).to_contain_text("Tick #005")
    expect(latest).to_contain_text("T-103")
    expect(latest).to_contain_text("SUCCESS")
    expect(row(page, "T-103")).to_have_attribute("data-status", "done")
    expect(page.locator("#overall-count")).to_have_text("2/4 (50%)")
    assert page.evaluate("window.sameDocument") is True

    latest.get_by_role("button", name="View full log").click()
    expect(latest.locator("pre.log")).to_contain_text("fake agent: task T-103")
    latest.get_by_role("button", name="View diff").click()
    expect(latest.locator("pre.diff")).to_contain_text("memento: complete T-103")
    expect(latest.locator("pre.diff .add").filter(has_text="+C = 1")).to_have_count(1)

    row(page, "T-102").locator(".summary").click()
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    save_artifact(shot, "dashboard.png")


def test_markdown_in_notes_and_descriptions_is_shown_never_run(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    hostile = (
        "<img src=x onerror=\"window.pwned='img'\"> <script>window.pwned='script'</script> "
        "[click me](javascript:window.pwned='link') **bold**"
    )
    project = sample_project(tmp_path)
    plan = project.plan_path.read_text(encoding="utf-8")
    project.plan_path.write_text(
        plan.replace("Write module C", "Write <b onmouseover=alert(1)>C</b> `now`")
    )
    project.git("commit", "-qam", "a hostile description")
    open_page(page, serve(project))

    page.locator("#note-text").fill(hostile)
    page.get_by_role("button", name="Send note").last.click()
    note = page.locator("#notes-pending > li").first.locator(".body")
    expect(note).to_contain_text("<img src=x onerror=")
    expect(note).to_contain_text("<script>window.pwned='script'</script>")
    expect(note.locator("strong")).to_have_text("bold")
    expect(note.locator("a")).to_have_attribute("href", "#harmful-link")
    expect(note.locator("img, script")).to_have_count(0)

    description = row(page, "T-103").locator(".desc")
    expect(description).to_have_text("Write <b onmouseover=alert(1)>C</b> now")
    expect(description.locator("code")).to_have_text("now")
    expect(description.locator("b")).to_have_count(0)
    assert page.evaluate("window.pwned") is None
    assert parse_notes(project.notes_path.read_text(encoding="utf-8")).notes[-1].text == hostile


def test_a_thousand_task_plan_renders_and_filters(tmp_path: Path, serve: Serve, page: Page) -> None:
    project = make_project(tmp_path, large_plan(1000))
    open_page(page, serve(project))

    expect(page.locator("#task-list .task")).to_have_count(1000)
    page.locator("button[data-filter]", has_text="Blocked").click()
    expect(page.locator("#task-list .task:visible")).to_have_count(1)
    assert visible_ids(page) == ["T-00501"]
    expect(page.locator("button[data-filter='completed'] .count")).to_have_text("500")
    expect(page.locator("button[data-filter='skipped'] .count")).to_have_text("1")


@pytest.mark.timeout(180)
def test_skipped_tasks_have_a_filter_of_their_own_and_are_counted_apart(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    assert project.memento("skip", "T-103", "--why", "by hand").returncode == 0
    open_page(page, serve(project))

    expect(page.locator("#overall-count")).to_have_text("1/4, 1 skipped (50%)")
    expect(page.locator("#phases li").first).to_contain_text("1/3, 1 skipped · 1 blocked")
    expect(page.locator("button[data-filter='completed'] .count")).to_have_text("1")
    expect(page.locator("button[data-filter='skipped'] .count")).to_have_text("1")
    page.locator("button[data-filter]", has_text="Completed").click()
    expect(page.locator("#task-list .task:visible")).to_have_count(1)
    assert visible_ids(page) == ["T-101"]
    page.locator("button[data-filter]", has_text="Skipped").click()
    expect(page.locator("#task-list .task:visible")).to_have_count(1)
    assert visible_ids(page) == ["T-103"]


# -- the first paint ------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_the_page_shows_the_state_before_any_script_runs(
    tmp_path: Path, serve: Serve, browser: Browser
) -> None:
    # What a screenshot taken at load shows: the server renders the first state into the
    # HTML, the same snapshot /api/state gives the script, which then keeps it fresh.
    dashboard = serve(sample_project(tmp_path))
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    try:
        page = context.new_page()
        page.goto(dashboard.url)

        assert page.locator("#project").inner_text() == "Demo"
        assert page.locator("#mode").inner_text() == "● AUTO"
        assert "#4" in page.locator("#last-tick").inner_text()
        assert "BLOCKED T-102" in page.locator("#last-tick").inner_text()
        assert "*/30 * * * *" in page.locator("#next-tick").inner_text()
        assert page.locator("#overall-count").inner_text() == "1/4 (25%)"
        assert page.locator("#phases li").count() == 2
        assert "1/3 · 1 blocked" in page.locator("#phases li").first.inner_text()
        assert page.locator("#blocked-count").inner_text() == "Blocked: 1 ⚠"
        assert "~6m of work (2m a task × 3)" in page.locator("#eta").inner_text()
        assert page.locator("#mode-hint").inner_text() == "T-103 is next (Phase 1: Core)"
        assert visible_ids(page) == ["T-101", "T-102", "T-103", "T-104"]
        assert page.locator("button[data-filter='pending'] .count").inner_text() == "2"
        ticks = page.locator("#timeline-list > li strong")
        assert ticks.all_inner_texts() == ["Tick #004", "Tick #003", "Tick #002", "Tick #001"]
        assert ANALYSIS in page.locator("#timeline-list > li").first.inner_text()
        assert "Phase 2 waits until Phase 1" in page.locator("#notes-pending").inner_text()
        assert page.locator("#read-count").inner_text() == "1"
        assert "…" not in page.locator("body").inner_text()
        page.screenshot(path=str(tmp_path / "first-paint.png"))
        save_artifact(tmp_path / "first-paint.png", "dashboard-first-paint.png")
    finally:
        context.close()


def test_the_script_takes_over_the_page_the_server_drew(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)
    open_page(page, dashboard)
    expect(page.locator("#task-list .task")).to_have_count(4)  # drawn once, not twice
    expect(page.locator("#timeline-list > li")).to_have_count(4)

    project.memento("pause")  # a change made after the first paint shows up without a reload

    expect(page.locator("#mode")).to_have_text("❚❚ PAUSED")
    row(page, "T-102").locator(".summary").click()
    expect(row(page, "T-102").locator(".task-body")).to_contain_text(ANALYSIS)


def test_the_spend_is_shown_and_follows_a_tick_without_a_reload(
    tmp_path: Path, serve: Serve, page: Page
) -> None:
    import json

    from testing.plans import phase_block
    from testing.ticks import plan_of, task

    done = task("T-101", "x", spend="$0.20, 2000 in, 200 out")
    core = phase_block(1, "Core", [done, task("T-102"), task("T-103")], parallel=True)
    plan = plan_of([core], completed_tasks="1", spend_total="$0.20, 2000 in, 200 out")
    project = make_project(
        tmp_path,
        plan,
        files={"src/a.py": "A = 1\n"},
    )
    report = {
        "type": "result",
        "total_cost_usd": 0.05,
        "modelUsage": {"claude-opus-4-8": {"inputTokens": 900, "outputTokens": 100}},
    }
    project.script({"T-102": [*good("T-102"), {"print": json.dumps(report)}]})
    open_page(page, serve(project))
    page.evaluate("window.sameDocument = true")

    spend = page.locator("#spend")
    expect(spend).to_contain_text("total $0.20, 2,200 tokens")
    # one completed task cost $0.20; two are left
    expect(spend).to_contain_text("to finish about $0.40")

    tick = project.start_tick()
    out, err = tick.communicate(timeout=120)
    assert tick.returncode == 0, out + err

    expect(spend).to_contain_text("total $0.25, 3,200 tokens")
    assert page.evaluate("window.sameDocument") is True
