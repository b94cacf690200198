"""A sample project as a person would have it a few ticks in, the real dashboard serving it,
and a real headless Chromium to look at it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memento_gh.formats import notes, status_log
from memento_gh.formats.status_log import BLOCKED, SUCCESS, TickEntry
from testing.browser import Dashboard, chromium_path, launch_chromium, start_dashboard
from testing.plans import phase_block
from testing.repos import bare_repo, git
from testing.ticks import NOTES, STATUS, Project, make_project, plan_of, task

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

#: Where a test's screenshot is copied for people to look at (git-ignored).
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "dashboard"
WORKFLOW = """\
name: memento
on:
  schedule:
    - cron: "*/30 * * * *"
  workflow_dispatch:
jobs:
  memento:
    runs-on: ubuntu-latest
    steps:
      - run: echo tick
"""
ANALYSIS = "verify exited with code 1: src/b.py has no B"


def sample_plan() -> str:
    """Phase 1: T-101 done, T-102 blocked (retries used up), T-103 pending; Phase 2, which
    waits for Phase 1: T-104."""
    core = phase_block(
        1, "Core", [task("T-101", "x"), task("T-102", "!", retries="3"), task("T-103")]
    )
    polish = phase_block(2, "Polish", [task("T-104")], parallel=True, depends=[1])
    return plan_of([core, polish], total_tasks="4", completed_tasks="1", total_ticks="4")


def sample_status() -> str:
    """T-101 took 2 minutes; T-102 failed three times."""
    text = STATUS
    text = status_log.append(
        text,
        status_log.render_entry(
            TickEntry(
                time=datetime(2025, 1, 15, 14, 0, tzinfo=timezone.utc),
                tick=1,
                task="T-101 [MODULE:core] Write module A",
                outcome=SUCCESS,
                duration=120,
                verify_head="",
                exit_code=0,
                files=(("src/a.py", 1, 0),),
                log="logs/tick_20250115T140000Z.log",
            )
        ),
    )
    for tick in (2, 3, 4):
        text = status_log.append(
            text,
            status_log.render_entry(
                TickEntry(
                    time=datetime(2025, 1, 15, 14, tick * 10, tzinfo=timezone.utc),
                    tick=tick,
                    task="T-102 [MODULE:core] Write module B",
                    outcome=BLOCKED if tick == 4 else status_log.FAILED,
                    duration=30,
                    verify_head="src/b.py has no B",
                    exit_code=1,
                    retry=tick - 1,
                    max_retries=3,
                    error_analysis=ANALYSIS,
                    files=None,
                    escalation=tick == 4,
                )
            ),
        )
    return text


def sample_notes() -> str:
    text = notes.add_note(
        NOTES,
        target="T-101",
        body="Keep `A` **upper case**.",
        time=datetime(2025, 1, 15, 13, 0, tzinfo=timezone.utc),
    )
    text = notes.mark_read(text, "T-101")
    return notes.add_note(
        text,
        target="global",
        body="Phase 2 waits until Phase 1 is stable.",
        time=datetime(2025, 1, 15, 15, 0, tzinfo=timezone.utc),
    )


def sample_project(tmp_path: Path) -> Project:
    project = make_project(
        tmp_path,
        sample_plan(),
        files={
            "docs/TICK_STATUS.md": sample_status(),
            "docs/HUMAN_NOTES.md": sample_notes(),
            "src/a.py": "A = 1\n",
            ".github/workflows/memento.yml": WORKFLOW,
        },
    )
    # Pushed: GitHub runs the schedule of the workflow on the remote only.
    origin = bare_repo(tmp_path / "origin.git")
    git(project.root, "remote", "add", "origin", str(origin))
    git(project.root, "push", "-q", "-u", "origin", "HEAD")
    return project


@pytest.fixture
def serve() -> Iterator[Callable[[Project], Dashboard]]:
    """Start ``memento dashboard`` on a project; every server started is stopped after."""
    running: list[Dashboard] = []

    def start(project: Project) -> Dashboard:
        dashboard = start_dashboard(project.root)
        running.append(dashboard)
        return dashboard

    yield start
    for dashboard in running:
        errors = dashboard.stop()
        assert "Traceback" not in errors, errors


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if chromium_path() is None:
        pytest.skip("Chromium is not installed: scripts/setup installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


class PageProblems(list[str]):
    """Script errors on the page (a failing fetch that the test asked for is not one)."""


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    problems = PageProblems()
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and "Failed to load resource" not in message.text
            else None
        ),
    )
    yield opened
    context.close()
    assert problems == [], problems


def save_artifact(source: Path, name: str) -> Path:
    """Copy a test's file to ``artifacts/dashboard/`` at the repository root."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / name
    shutil.copyfile(source, target)
    return target
