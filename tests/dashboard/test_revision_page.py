"""The architect on the local dashboard, in a real headless Chromium: a blocked task offers
"Propose a revision", the diff shows with Apply and Discard, and the files say what landed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from testing.agents import scripted_command
from testing.browser import Dashboard, start_dashboard
from testing.ticks import Project
from tests.dashboard.conftest import sample_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]  # a real Chromium

PROPOSAL = "$MEMENTO_PROPOSAL_FILE"
#: Give T-102 its retries back with a verify that can pass.
UNBLOCK = [
    {"replace": PROPOSAL, "old": "- [!] `T-102`", "new": "- [ ] `T-102`"},
    {"replace": PROPOSAL, "old": "  - retries: 3", "new": "  - retries: 0"},
]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    project = sample_project(tmp_path)
    project.script({"architect": UNBLOCK})
    return project


@pytest.fixture
def dashboard(project: Project) -> Iterator[Dashboard]:
    running = start_dashboard(project.root, "--agent-cmd", scripted_command(), env=project.env())
    yield running
    errors = running.stop()
    assert "Traceback" not in errors, errors


def propose(page: Page, dashboard: Dashboard) -> None:
    page.goto(dashboard.url)
    blocked = page.locator('#task-list .task[data-id="T-102"]')
    blocked.locator(".summary").click()
    blocked.get_by_role("button", name="Propose a revision").click()
    expect(page.locator("#revision")).to_be_visible()
    diff = page.locator("#revision-diff")
    expect(diff).to_contain_text("-- [!] `T-102`")
    expect(diff).to_contain_text("+- [ ] `T-102`")


def test_a_proposed_revision_applies_as_one_commit(
    project: Project, dashboard: Dashboard, page: Page
) -> None:
    head = project.head()
    propose(page, dashboard)
    assert project.head() == head  # a proposal changes nothing
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#toast")).to_contain_text("revised the plan (T-102) (committed ")
    expect(page.locator("#revision")).to_be_hidden()
    assert project.subjects()[0] == "memento: revise plan (T-102)"
    assert project.git("rev-list", f"{head}..HEAD").split() == [project.head()]
    assert project.marker("T-102") == " "
    expect(page.locator('#task-list .task[data-id="T-102"]')).to_have_attribute(
        "data-status", "pending"
    )


def test_a_discarded_revision_leaves_the_plan_as_it_was(
    project: Project, dashboard: Dashboard, page: Page
) -> None:
    before = project.plan_path.read_bytes()
    head = project.head()
    propose(page, dashboard)
    page.get_by_role("button", name="Discard").click()
    expect(page.locator("#toast")).to_contain_text("discarded the proposed revision")
    expect(page.locator("#revision")).to_be_hidden()
    assert project.plan_path.read_bytes() == before
    assert project.head() == head
    assert not (project.root / ".git/memento/revision.md").exists()


def test_without_an_agent_a_blocked_task_offers_no_revision(project: Project, page: Page) -> None:
    plain = start_dashboard(project.root)
    try:
        page.goto(plain.url)
        blocked = page.locator('#task-list .task[data-id="T-102"]')
        blocked.locator(".summary").click()
        expect(blocked.locator(".task-body")).to_be_visible()
        expect(blocked.get_by_role("button", name="Propose a revision")).to_have_count(0)
    finally:
        plain.stop()
