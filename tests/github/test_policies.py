"""GitHub's policies, as a default repository has them (``testing/fake_policies.py``, the
origin's hook in ``testing/fake_origin.py``), each met by a real ``memento github`` run: the
run goes on, says what GitHub refused in GitHub's own words, names the setting or the
permission to change, and says it once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memento_gh.github import guidance, render, setup_issues
from memento_gh.github.failures import SyncError
from testing.action_runs import TOKEN, ActionProject, RunResult, comment_event
from testing.fake_github import FakeGitHub
from testing.fake_policies import NO_DRAFTS, NOT_PERMITTED
from testing.repos import clone, commit_all, git, write
from testing.ticks import good

pytestmark = pytest.mark.timeout(180)

WORKFLOW_REFUSAL = "refusing to allow a GitHub App to create or update workflow"
PUSHER = "github_pat_with_the_workflows_permission"


@pytest.fixture
def default_github() -> Iterator[FakeGitHub]:
    """A repository as GitHub makes it: every policy at its default."""
    with FakeGitHub("octo/project", TOKEN) as server:
        server.set_permission("alice", "admin")
        yield server


def project_on(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    project = ActionProject(tmp_path, github)
    github.git_dir = project.origin
    return project


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    return project_on(tmp_path, github)


def tick(project: ActionProject, task_id: str, **options: Any) -> RunResult:
    project.script({task_id: good(task_id)})
    result = project.run("schedule", **options)
    assert result.code == 0, result.said
    return result


def setup_issues_of(github: FakeGitHub, kind: str) -> list[dict[str, Any]]:
    return [
        issue
        for issue in github.issues(pulls=False)
        if issue["body"].startswith(render.marker(kind))
    ]


def warnings(result: RunResult) -> list[str]:
    return [line for line in result.said if line.startswith("::warning")]


def push_to_main(project: ActionProject, path: str, text: str) -> None:
    """A person changes ``path`` on main, pushing by path (nothing refuses them)."""
    person = project.tmp / "person"
    if not person.exists():
        clone(project.origin, person, "-b", "main")
    git(person, "pull", "-q", "--ff-only", "origin", "main")
    write(person, path, text)
    commit_all(person, f"a person changes {path}")
    git(person, "push", "-q", "origin", "main")


# -- 1. workflow files -----------------------------------------------------------------------


def test_a_workflow_change_on_main_costs_no_tick_and_waits_in_one_issue(
    project: ActionProject, github: FakeGitHub
) -> None:
    with project.served() as url:
        tick(project, "T-101", origin_url=url)
        push_to_main(project, ".github/workflows/ci.yml", "on: push\n")
        first = tick(project, "T-102", origin_url=url)
        assert project.marker("T-102") == "x", first.said  # the tick's work landed
        assert git(project.origin, "rev-list", "--count", "memento..main").strip() != "0"
        [issue] = setup_issues_of(github, setup_issues.WORKFLOWS_KIND)
        assert WORKFLOW_REFUSAL in issue["body"] and ".github/workflows/ci.yml" in issue["body"]
        assert guidance.WORKFLOWS_PERMISSION in issue["body"]
        said = "\n".join(first.said)
        assert WORKFLOW_REFUSAL in said and guidance.WORKFLOWS_PERMISSION in said
        assert warnings(first) == []
        second = tick(project, "T-103", origin_url=url)
        assert project.marker("T-103") == "x", second.said
        assert setup_issues_of(github, setup_issues.WORKFLOWS_KIND) == [issue]  # said once
        assert WORKFLOW_REFUSAL not in "\n".join(second.said)  # the issue says it
        assert github.comments(issue["number"]) == []
    env = {"MEMENTO_GITHUB_PUSH_TOKEN": PUSHER}
    with project.served([PUSHER], workflows=[PUSHER]) as url:
        project.run("workflow_dispatch", env={**env, "MEMENTO_COMMAND": "pause"}, origin_url=url)
    git(project.origin, "merge-base", "--is-ancestor", "main", "memento")
    [closed] = setup_issues_of(github, setup_issues.WORKFLOWS_KIND)
    assert closed["state"] == "closed"


def test_a_push_token_without_the_workflows_permission_is_refused_the_same_way(
    project: ActionProject, github: FakeGitHub
) -> None:
    env = {"MEMENTO_GITHUB_PUSH_TOKEN": PUSHER}
    with project.served([PUSHER]) as url:
        tick(project, "T-101", origin_url=url, env=env)
        push_to_main(project, ".github/workflows/memento.yml", "on: schedule\n")
        tick(project, "T-102", origin_url=url, env=env)
    assert project.marker("T-102") == "x"
    [issue] = setup_issues_of(github, setup_issues.WORKFLOWS_KIND)
    assert issue["state"] == "open" and "memento.yml" in issue["body"]


# -- 2. the pull-request setting -----------------------------------------------------------


def test_a_refused_pull_request_is_said_once_in_an_issue_that_names_the_setting(
    tmp_path: Path, default_github: FakeGitHub
) -> None:
    github = default_github
    project = project_on(tmp_path, github)
    first = tick(project, "T-101")
    assert github.pulls() == []
    [issue] = setup_issues_of(github, setup_issues.PULLS_KIND)
    for words in (NOT_PERMITTED, guidance.WORKFLOW_PERMISSIONS, guidance.PULLS_SETTING):
        assert words in issue["body"], issue["body"]
    assert "compare/main...memento" in issue["body"]
    assert "pull-requests: write" not in "\n".join(first.said) + issue["body"]
    assert warnings(first) == []
    second = tick(project, "T-102")
    assert warnings(second) == [] and NOT_PERMITTED not in "\n".join(second.said)
    assert setup_issues_of(github, setup_issues.PULLS_KIND) == [issue]
    assert github.comments(issue["number"]) == []
    github.set_policy(actions_may_open_pulls=True)  # the person ticks the box
    tick(project, "T-103")
    [pull] = github.pulls()
    assert pull["state"] == "open"
    [closed] = setup_issues_of(github, setup_issues.PULLS_KIND)
    assert closed["state"] == "closed"


# -- 3. drafts -------------------------------------------------------------------------------


def test_a_private_repository_on_free_gets_a_ready_pull_request_and_is_told_why(
    project: ActionProject, github: FakeGitHub
) -> None:
    github.set_policy(private=True, plan="free")
    result = tick(project, "T-101")
    [pull] = github.pulls()
    assert pull["draft"] is False
    said = "\n".join(result.said)
    assert NO_DRAFTS in said and guidance.DRAFTS_ADVICE in said
    assert "bug in memento-gh" not in said and warnings(result) == []
    github.reset_requests()
    tick(project, "T-102")
    assert github.request_count("POST", "pulls") == 0  # no retry on later runs


# -- 8. a protected branch -------------------------------------------------------------------


def merge_pull_by_squash(project: ActionProject, github: FakeGitHub, number: int) -> None:
    """The person squashes memento's pull request into main, on GitHub."""
    person = project.tmp / "merger"
    clone(project.origin, person, "-b", "main")
    head = git(person, "rev-parse", "origin/memento").strip()
    git(person, "merge", "-q", "--squash", "origin/memento")
    git(person, "commit", "-q", "-m", f"memento's work (#{number})")
    git(person, "push", "-q", "origin", "main")
    merged = git(person, "rev-parse", "main").strip()
    github.merge_pull(number, merged, head_sha=head, method="squash")


@pytest.mark.parametrize("ruleset", [False, True])
def test_a_protected_branch_is_merged_into_after_a_merged_pull_request(
    project: ActionProject, github: FakeGitHub, ruleset: bool
) -> None:
    tick(project, "T-101")
    [pull] = github.pulls()
    github.protect_branch("memento", ruleset=ruleset)
    merge_pull_by_squash(project, github, pull["number"])
    result = tick(project, "T-102")
    assert project.marker("T-102") == "x", result.said
    git(project.origin, "merge-base", "--is-ancestor", "main", "memento")
    said = "\n".join(result.said)
    assert ("GH013" if ruleset else "GH006") in said and "Cannot force-push" in said
    assert guidance.FORCE_PUSH_ADVICE in said


# -- 4. trust is permission ------------------------------------------------------------------


def dashboard_of(project: ActionProject) -> dict[str, Any]:
    [dashboard] = project.memento_issues("dashboard")
    return dashboard


def test_a_read_only_collaborator_steers_nothing_whatever_their_association(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    github.set_permission("bob", "read")  # invited to read: GitHub says COLLABORATOR
    payload = comment_event(
        github,
        dashboard_of(project),
        "/memento skip T-102 not needed",
        author="bob",
        association="COLLABORATOR",
    )
    result = project.run("issue_comment", payload)
    assert result.outputs["outcome"] == "untrusted", result.said
    assert project.marker("T-102") == " "


def test_an_organisation_member_with_write_permission_steers_whatever_is_shown(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    github.add_member("carol", permission="write", public=True)  # MEMBER
    github.add_member("dave")  # a member who may only read: MEMBER says nothing of it
    payload = comment_event(
        github, dashboard_of(project), "/memento pause", author="dave", association="MEMBER"
    )
    assert project.run("issue_comment", payload).outputs["outcome"] == "untrusted"
    assert project.plan().settings.tick_mode == "auto"
    payload = comment_event(
        github, dashboard_of(project), "/memento pause", author="carol", association="MEMBER"
    )
    assert project.run("issue_comment", payload).outputs["outcome"] == "controls"
    assert project.plan().settings.tick_mode == "paused"


# -- 5. private members ----------------------------------------------------------------------


def private_member_comment(project: ActionProject, github: FakeGitHub, body: str) -> dict[str, Any]:
    """carol keeps her membership private (GitHub's default) and may push: GitHub shows her
    comment as NONE."""
    github.add_member("carol", permission="write")
    comment = github.add_comment(dashboard_of(project)["number"], body, author="carol")
    assert comment["author_association"] == "NONE"
    return comment


def test_a_private_members_comment_is_relayed_to_the_memento_job_and_served(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    comment = private_member_comment(project, github, "/memento tick")
    event = {
        "action": "created",
        "issue": dashboard_of(project),
        "comment": comment,
        "sender": comment["user"],
    }
    relayed = project.run("issue_comment", event, env={"MEMENTO_RELAY": "true"})
    assert relayed.outputs["outcome"] == "relayed", relayed.said
    assert project.marker("T-102") == " "  # the relay job ran nothing
    [dispatch] = github.dispatches()
    assert dispatch["event_type"] == "memento-comment"
    project.script({"T-102": good("T-102")})
    result = project.run(
        "repository_dispatch",
        {"action": "memento-comment", "client_payload": dispatch["client_payload"]},
    )
    assert result.code == 0, result.said
    assert project.marker("T-102") == "x"
    assert [r["content"] for r in github.reactions(comment["id"])] == ["+1"]


def test_a_strangers_comment_is_not_relayed(project: ActionProject, github: FakeGitHub) -> None:
    tick(project, "T-101")
    payload = comment_event(
        github, dashboard_of(project), "/memento tick", author="mallory", association="NONE"
    )
    result = project.run("issue_comment", payload, env={"MEMENTO_RELAY": "true"})
    assert result.outputs["outcome"] == "untrusted"
    assert github.dispatches() == []


def test_a_dropped_tick_of_a_private_member_is_caught_up_once_with_a_reaction(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    comment = private_member_comment(project, github, "/memento tick")  # its run dropped
    project.script({"T-102": good("T-102"), "T-103": good("T-103")})
    result = project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "resume"})
    assert project.marker("T-102") == "x", result.said
    assert [r["content"] for r in github.reactions(comment["id"])] == ["+1"]
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "resume"})
    assert project.marker("T-103") == " "  # answered already: no second tick


# -- 6. checks on the pushed tip -------------------------------------------------------------

CI = {"MEMENTO_CI_VERIFY": "true", "MEMENTO_GITHUB_PUSH_TOKEN": "github_pat_for_pushes"}


def test_a_failing_check_on_the_pushed_tip_reopens_every_task_its_push_delivered(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    result = project.run("schedule", env={**CI, "MEMENTO_MAX_TASKS": "2"})
    assert project.marker("T-101") == "x" and project.marker("T-102") == "x", result.said
    tip = git(project.origin, "rev-parse", "memento").strip()
    github.add_check_run(tip, "tests", conclusion="failure", summary="test_a failed")
    project.script({})  # the retries' agents do nothing: the reopened tasks stay open
    result = project.run("schedule", env=CI)
    assert result.code == 0, result.said
    subjects = project.subjects()
    assert "memento: reopen T-101" in subjects and "memento: reopen T-102" in subjects
    notes = project.show("docs/HUMAN_NOTES.md")
    assert f"CI failed on {tip[:7]}" in notes and "test_a failed" in notes


def test_ci_verify_reads_every_status_of_the_tip_not_the_first_thirty(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101", env=CI)
    tip = git(project.origin, "rev-parse", "memento").strip()
    for n in range(30):
        github.add_status(tip, f"lint-{n:02}", "success")
    github.add_status(tip, "tests", "failure", description="test_a failed")  # the 31st
    project.script({})
    project.run("schedule", env=CI)
    assert "memento: reopen T-101" in project.subjects()


# -- 9. the smaller points -------------------------------------------------------------------


def test_a_secondary_rate_limit_without_retry_after_is_waited_a_minute(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    github.secondary_rate_limit("GET", "issues", times=5)
    with pytest.raises(SyncError) as raised:
        project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})
    said = str(raised.value)
    assert "You have exceeded a secondary rate limit" in said  # GitHub's own words
    assert "(in 60 seconds)" in said, said  # not the hour's reset


def test_a_managed_users_login_is_asked_about_not_refused(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    github.set_permission("ada_acme", "write")  # an Enterprise Managed User
    payload = comment_event(
        github, dashboard_of(project), "/memento pause", author="ada_acme", association="MEMBER"
    )
    assert project.run("issue_comment", payload).outputs["outcome"] == "controls"
    assert project.plan().settings.tick_mode == "paused"


# -- 7. body limits --------------------------------------------------------------------------

#: A verify that prints lines of four-byte characters: what memento keeps of it (20,000
#: characters) is 80,000 bytes, over the limit counted in bytes, not in characters.
LOUD_VERIFY = "`python3 -c \"print(('🙂' * 3000 + chr(10)) * 40); raise SystemExit(1)\"`"


def test_a_comment_longer_than_githubs_limit_is_cut_to_fit_and_points_to_the_run(
    tmp_path: Path, github: FakeGitHub
) -> None:
    from testing.ticks import one_phase, plan_of, task

    plan = plan_of([one_phase(task("T-101", verify=LOUD_VERIFY))], max_retries="1")
    project = ActionProject(tmp_path, github, plan)
    project.script({"T-101": [{"write": "src/a.py", "text": "A = 1\n"}]})
    result = project.run("schedule")
    assert result.code == 0, result.said
    assert project.marker("T-101") == "!"
    assert [line for line in warnings(result) if "sync" in line] == [], result.said
    [blocked] = project.memento_issues("blocked")
    [comment] = github.comments(blocked["number"])
    body = comment["body"]
    assert 50_000 < len(body.encode("utf-8")) <= 65536  # whole lines of 12,000 bytes kept
    run_url = f"{github.web_url}/octo/project/actions/runs/{1000 + project.runs}"
    assert body.rstrip().endswith(f"[the run's logs]({run_url}).")
    assert body.count("```") % 2 == 0 and body.count("<details>") == body.count("</details>")


# -- 10. the first run's checklist -----------------------------------------------------------


def test_the_first_run_writes_one_checklist_in_the_summary_and_the_dashboard(
    project: ActionProject, github: FakeGitHub
) -> None:
    github.protect_branch("memento", ruleset=True)
    first = tick(project, "T-101")
    protected = "refuses force pushes"
    assert "Set-up ❌" in first.summary and protected in first.summary
    assert "Set-up ❔" in first.summary and guidance.PULLS_SETTING in first.summary
    assert "Issues are on" in first.summary
    body = dashboard_of(project)["body"]
    assert "### Set-up" in body and protected in body and guidance.RULESETS in body
    github.reset_requests()
    second = tick(project, "T-102")
    assert "Set-up" not in second.summary  # said once: the dashboard keeps it
    assert github.request_count("GET", "rules/branches/*") == 0
    body = dashboard_of(project)["body"]
    assert protected in body  # carried, not read again
    assert "✅ memento's pull request is open." in body  # what this run knows, updated


def test_memento_github_check_prints_the_checklist_and_fails_on_a_failed_check(
    project: ActionProject, github: FakeGitHub
) -> None:
    from memento_gh.github import action
    from memento_gh.github.sync import GitHub

    env = {
        "MEMENTO_GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": "octo/project",
        "GITHUB_API_URL": github.url,
        "MEMENTO_AGENT": "claude",
    }

    def connect(settings: Any) -> GitHub:
        return GitHub(settings.api_url, settings.token, settings.repository, pace=False)

    said: list[str] = []
    assert action.check(env, say=said.append, connect=connect) == 1  # no ANTHROPIC_API_KEY
    assert any("No ANTHROPIC_API_KEY" in line and guidance.SECRETS in line for line in said)
    said.clear()
    assert (
        action.check({**env, "ANTHROPIC_API_KEY": "k" * 20}, say=said.append, connect=connect) == 0
    )
    assert len([line for line in said if line.startswith("Set-up")]) == 6
    assert github.issues() == []  # nothing changed
