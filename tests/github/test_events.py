"""The event router, the trust gate's verdicts and the comment grammar, on webhook payloads
shaped like GitHub's (issue_comment, issues, workflow_dispatch, schedule)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from memento_gh.controls.model import Control
from memento_gh.errors import UserError
from memento_gh.formats.notes import add_note, has_source, parse_notes
from memento_gh.github import render
from memento_gh.github.events import (
    ASK,
    CONTROLS,
    IGNORE,
    PLAN,
    TICK,
    UNTRUSTED,
    Actor,
    Inputs,
    Request,
    comment_source,
    parse_comment,
    permission_trusts,
    route,
    trust,
)
from memento_gh.github.issue_texts import breaker_resolved_comment, task_unblocked_comment
from memento_gh.plan.scanner import parse
from testing.plans import phase_block, plan_text, task_block

URL = "https://github.com/o/r/issues/7#issuecomment-99"
TASK_BODY = render.marker(render.TASK_KIND, "T-201") + "\n**T-201** is blocked"
DASHBOARD_BODY = render.marker(render.DASHBOARD_KIND) + "\n## memento"
BREAKER_BODY = render.marker(render.BREAKER_KIND) + "\nThe circuit breaker paused the plan"
NOW = datetime(2025, 1, 15, 15, 0, tzinfo=timezone.utc)


def comment_event(
    body: str,
    *,
    action: str = "created",
    login: str = "alice",
    user_type: str = "User",
    association: str | None = "OWNER",
    issue_body: str | None = TASK_BODY,
    labels: tuple[str, ...] = ("memento", "memento:blocked"),
    pull_request: bool = False,
) -> dict[str, Any]:
    issue: dict[str, Any] = {
        "number": 7,
        "body": issue_body,
        "labels": [{"name": name, "color": "ededed"} for name in labels],
    }
    if pull_request:
        issue["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/7"}
    comment: dict[str, Any] = {
        "id": 99,
        "body": body,
        "html_url": URL,
        "user": {"login": login, "type": user_type},
    }
    if association is not None:
        comment["author_association"] = association
    return {"action": action, "issue": issue, "comment": comment, "sender": comment["user"]}


def note(text: str, task: str | None = "T-201", source: str | None = None) -> Control:
    return Control("note", task, text, source or f"{URL} by @alice (OWNER)")


# -- schedule, unknown events ----------------------------------------------------------------


def test_a_scheduled_run_is_one_tick_by_the_workflow_itself() -> None:
    request = route("schedule", {"schedule": "*/15 * * * *"}, Inputs())
    assert request.kind == TICK
    assert request.actor is None
    assert request.controls == ()


@pytest.mark.parametrize("event", ["push", "pull_request", "issues_opened", "", "Schedule"])
def test_events_memento_does_not_handle_are_ignored_with_their_name(event: str) -> None:
    request = route(event, {"action": "opened"}, Inputs())
    assert request.kind == IGNORE
    assert (event or "unnamed") in request.reason


# -- workflow_dispatch -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "kind", "controls"),
    [
        (Inputs(), TICK, ()),
        (Inputs(command="tick"), TICK, ()),
        (Inputs(command=" Tick "), TICK, ()),
        (Inputs(command="pause"), CONTROLS, (Control("pause"),)),
        (Inputs(command="RESUME"), CONTROLS, (Control("resume"),)),
        (Inputs(command="stop"), CONTROLS, (Control("stop"),)),
        (Inputs(command="retry", task="T-201"), CONTROLS, (Control("retry", "T-201"),)),
        (
            Inputs(command="retry", task="T-201", text="use redis"),
            CONTROLS,
            (Control("note", "T-201", "use redis"), Control("retry", "T-201")),
        ),
        (Inputs(command="skip", task="T-201"), CONTROLS, (Control("skip", "T-201", ""),)),
        (
            Inputs(command="skip", task=" T-201 ", text=" flaky upstream "),
            CONTROLS,
            (Control("skip", "T-201", "flaky upstream"),),
        ),
        (
            Inputs(command="note", text="all tests in Go"),
            CONTROLS,
            (Control("note", None, "all tests in Go"),),
        ),
        (
            Inputs(command="note", task="T-201", text="port 5433"),
            CONTROLS,
            (Control("note", "T-201", "port 5433"),),
        ),
    ],
)
def test_a_dispatch_runs_its_command(
    inputs: Inputs, kind: str, controls: tuple[Control, ...]
) -> None:
    request = route("workflow_dispatch", {"inputs": {}}, inputs)
    assert (request.kind, request.controls) == (kind, controls)
    assert request.actor is None  # only people with write access can dispatch a workflow
    assert request.reason.startswith("workflow_dispatch")


@pytest.mark.parametrize(
    ("inputs", "fix"),
    [
        (Inputs(command="explode"), "the `command` input is one of tick, pause"),
        (Inputs(command="retry"), "retry needs the `task` input"),
        (Inputs(command="skip", text="why"), "skip needs the `task` input"),
        (Inputs(command="note"), "note needs the `text` input"),
        (Inputs(command="note", task="T-201", text="  "), "note needs the `text` input"),
        (Inputs(command="pause", task="T-201"), "leave `task` empty"),
        (Inputs(command="tick", task="T-201"), "leave `task` empty"),
        (Inputs(command="", text="hello"), "use command note"),
        (Inputs(command="stop", text="for the weekend"), "use command note"),
        (Inputs(command="retry", task="T 201"), "not a task ID"),
        (Inputs(command="skip", task="../etc"), "not a task ID"),
    ],
)
def test_a_dispatch_whose_inputs_do_not_fit_says_how_to_fix_them(inputs: Inputs, fix: str) -> None:
    with pytest.raises(UserError) as raised:
        route("workflow_dispatch", {}, inputs)
    assert fix in str(raised.value)


# -- issue_comment -----------------------------------------------------------------------------


def test_a_plain_comment_on_a_task_issue_is_a_note_for_that_task() -> None:
    request = route("issue_comment", comment_event("Use Redis.\n\nConfig in redis.conf"), Inputs())
    assert request == Request(
        CONTROLS,
        controls=(note("Use Redis.\n\nConfig in redis.conf"),),
        actor=Actor("alice", "OWNER", is_bot=False),
        comment_id=99,
        issue_number=7,
        reason=request.reason,
    )
    assert "note T-201" in request.reason


@pytest.mark.parametrize("issue_body", [DASHBOARD_BODY, BREAKER_BODY])
def test_a_plain_comment_on_the_dashboard_or_the_breaker_issue_is_a_global_note(
    issue_body: str,
) -> None:
    event = comment_event("pause phase 3", issue_body=issue_body, labels=("memento",))
    request = route("issue_comment", event, Inputs())
    assert request.controls == (note("pause phase 3", task=None),)


@pytest.mark.parametrize(
    ("body", "controls", "tick_after"),
    [
        ("/memento retry", (Control("retry", "T-201"),), False),
        ("/memento retry T-203", (Control("retry", "T-203"),), False),
        ("/Memento  RETRY", (Control("retry", "T-201"),), False),
        ("/memento skip", (Control("skip", "T-201", ""),), False),
        ("/memento skip flaky upstream", (Control("skip", "T-201", "flaky upstream"),), False),
        ("/memento skip T-203 not needed", (Control("skip", "T-203", "not needed"),), False),
        ("/memento pause", (Control("pause", None, ""),), False),
        ("/memento resume", (Control("resume", None, ""),), False),
        ("/memento stop for the weekend", (Control("stop", None, "for the weekend"),), False),
        ("/memento tick", (), True),
        (
            "/memento retry\r\nThe secret is in JWT_SECRET now.\r\n",
            (
                Control("note", "T-201", "The secret is in JWT_SECRET now."),
                Control("retry", "T-201"),
            ),
            False,
        ),
        (
            "/memento retry T-203\nsee #12",
            (Control("note", "T-203", "see #12"), Control("retry", "T-203")),
            False,
        ),
        ("/memento tick\nafter the fix", (Control("note", "T-201", "after the fix"),), True),
    ],
)
def test_a_first_line_slash_memento_is_a_command(
    body: str, controls: tuple[Control, ...], tick_after: bool
) -> None:
    source = f"{URL} by @alice (OWNER)"
    request = route("issue_comment", comment_event(body), Inputs())
    assert request.kind == CONTROLS
    assert request.controls == tuple(control._replace(source=source) for control in controls)
    assert request.tick_after is tick_after
    assert not request.confused


@pytest.mark.parametrize(
    "body",
    [
        "please /memento retry",  # not the first word
        "> /memento retry",  # a quote of someone's command
        "/mementos retry",
        "`/memento retry`",
        "hello\n/memento stop",  # not the first line
    ],
)
def test_a_command_anywhere_but_the_start_of_the_first_line_is_part_of_a_note(body: str) -> None:
    request = route("issue_comment", comment_event(body), Inputs())
    assert request.controls == (note(body),)


@pytest.mark.parametrize(
    ("body", "issue_body", "says"),
    [
        ("/memento explode", TASK_BODY, "unknown command `/memento explode`"),
        ("/memento", TASK_BODY, "needs a command"),
        ("/memento note hi", TASK_BODY, "unknown command"),
        ("/memento retry", DASHBOARD_BODY, "`/memento retry T-201`"),
        ("/memento skip", BREAKER_BODY, "`/memento skip T-201`"),
        ("/memento retry T-1 T-2", TASK_BODY, "at most one task ID"),
        ("/memento retry ../x", TASK_BODY, "not a task ID"),
    ],
)
def test_a_command_memento_cannot_do_asks_for_a_confused_reaction(
    body: str, issue_body: str, says: str
) -> None:
    event = comment_event(body, issue_body=issue_body, labels=("memento",))
    request = route("issue_comment", event, Inputs())
    assert request.kind == CONTROLS
    assert request.controls == ()
    assert request.confused
    assert (request.comment_id, request.actor) == (99, Actor("alice", "OWNER", False))
    assert says in request.reason


@pytest.mark.parametrize(
    ("event", "why"),
    [
        (comment_event("hi", action="edited"), "comment edited"),
        (comment_event("hi", action="deleted"), "comment deleted"),
        (comment_event("hi", pull_request=True), "pull request"),
        (comment_event("hi", login="github-actions[bot]", user_type="Bot"), "bot"),
        (comment_event("hi", login="renovate[bot]", user_type="User"), "bot"),
        (comment_event("hi", login="helper", user_type="Bot", association="MEMBER"), "bot"),
        (comment_event("hi", issue_body="An ordinary issue"), "not a memento issue"),
        (comment_event("hi", issue_body=None), "not a memento issue"),
        (comment_event("hi", labels=()), "not a memento issue"),  # a stranger's forged marker
        (
            comment_event("hi", issue_body="text " + render.marker(render.CONTROL_KIND, "pause")),
            "not a memento issue",
        ),
        (comment_event(""), "empty"),
        (comment_event(" \r\n\t"), "empty"),
        (comment_event(task_unblocked_comment("T-201", "x")), "memento wrote"),
        ({"action": "created"}, "not a memento issue"),
        ({}, "comment event"),
    ],
)
def test_comments_memento_must_not_act_on_are_ignored_with_a_reason(
    event: dict[str, Any], why: str
) -> None:
    request = route("issue_comment", event, Inputs())
    assert request.kind == IGNORE
    assert request.controls == ()
    assert why in request.reason


@pytest.mark.parametrize("body", ["/memento plan", "  /Memento  PLAN \nthanks", "/memento plan\n"])
def test_memento_plan_on_an_issue_of_a_person_asks_for_a_draft(body: str) -> None:
    event = comment_event(body, issue_body="Build a shop", labels=())
    request = route("issue_comment", event, Inputs())
    assert request.kind == PLAN
    assert (request.issue_number, request.comment_id) == (7, 99)
    assert request.actor == Actor("alice", "OWNER", False)  # the trust gate decides
    assert request.controls == ()


@pytest.mark.parametrize("body", ["/memento plan it all", "please /memento plan", "/memento"])
def test_other_comments_on_an_issue_of_a_person_are_still_ignored(body: str) -> None:
    request = route("issue_comment", comment_event(body, issue_body="x", labels=()), Inputs())
    assert request.kind == IGNORE


def test_memento_plan_on_a_memento_issue_says_where_it_belongs() -> None:
    request = route("issue_comment", comment_event("/memento plan"), Inputs())
    assert request.kind == CONTROLS and request.confused
    assert "issue of yours" in request.reason


def test_an_untrusted_comment_is_routed_with_its_author_for_the_trust_gate() -> None:
    request = route("issue_comment", comment_event("rm -rf /", association="NONE"), Inputs())
    assert request.actor == Actor("alice", "NONE", is_bot=False)
    assert trust(request.actor) == ASK


def test_a_comment_without_an_association_asks_for_the_permission() -> None:
    request = route("issue_comment", comment_event("hi", association=None), Inputs())
    assert request.actor is not None and request.actor.association is None
    assert request.controls[0].source == f"{URL} by @alice (NONE)"


def test_a_redelivered_comment_is_recognised_by_its_note_source() -> None:
    event = comment_event("Use Redis for sessions.")
    first = route("issue_comment", event, Inputs()).controls[0]
    assert first.source is not None
    notes = add_note("", target="T-201", body=first.text, time=NOW, source=first.source)

    again = route("issue_comment", event, Inputs()).controls[0]
    other = route("issue_comment", comment_event("x", login="bob"), Inputs()).controls[0]

    assert again.source is not None and has_source(notes, again.source)
    assert other.source is not None and not has_source(notes, other.source)
    assert parse_notes(notes).notes[0].text == "Use Redis for sessions."


def test_comment_source_names_the_comment_its_author_and_association() -> None:
    assert comment_source(URL, "alice", "MEMBER") == f"{URL} by @alice (MEMBER)"


# -- issues: the dashboard's checkboxes --------------------------------------------------------


def dashboard_body(*tasks: str, mode: str = "auto") -> str:
    text = plan_text(
        [phase_block(1, "One", list(tasks) or [task_block("T-101")])],
        meta={"tick_mode": mode, "max_retries": "3"},
    )
    view = render.DashboardView(
        parse(text), [], {}, "https://github.com", "o/r", "memento", "2025-01-15T15:00:00Z"
    )
    return render.dashboard(view).body


def tick(body: str, hidden: str) -> str:
    box = f"- [ ] {hidden}"
    assert body.count(box) == 1, f"no box {hidden} in the body"
    return body.replace(box, f"- [x] {hidden}")


def edit_event(
    body: str,
    before: str | None,
    *,
    login: str = "alice",
    user_type: str = "User",
    action: str = "edited",
    labels: tuple[str, ...] = ("memento", "memento:dashboard"),
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "action": action,
        "issue": {
            "number": 3,
            "body": body,
            "labels": [{"name": name} for name in labels],
            "author_association": "NONE",  # the issue's author (the bot), not the editor
        },
        "sender": {"login": login, "type": user_type},
    }
    if before is not None:
        event["changes"] = {"body": {"from": before}}
    return event


BLOCKED = task_block(
    "T-201", "!", fields={"verify": "`true`", "context_files": "[a]", "retries": "3"}
)


@pytest.mark.parametrize(
    ("hidden", "words"),
    [
        (render.marker("control", "pause"), "pause"),
        (render.marker("control", "stop"), "stop"),
        (render.marker("control", "tick"), "a tick"),
        (render.marker("retry", "T-201"), "retry T-201"),
        (render.marker("skip", "T-201"), "skip T-201"),
    ],
)
def test_a_box_ticked_on_the_dashboard_has_the_run_decide_the_boxes(
    hidden: str, words: str
) -> None:
    # The sender made the latest edit, not necessarily the one that ticked the box: the
    # run reads who ticked each box from the issue's history (boxes.py), never the event.
    body = dashboard_body(BLOCKED)
    request = route("issues", edit_event(tick(body, hidden), body), Inputs())
    assert request.kind == CONTROLS
    assert (request.controls, request.tick_after) == ((), False)
    assert request.rerender_dashboard
    assert request.actor == Actor("alice", None, is_bot=False)
    assert request.issue_number == 3
    assert request.reason.endswith(f"boxes ticked: {words}")


def test_a_dashboard_editor_is_always_looked_up_by_permission() -> None:
    body = dashboard_body()
    ticked = tick(body, render.marker("control", "pause"))
    request = route("issues", edit_event(ticked, body), Inputs())
    assert request.actor is not None
    assert trust(request.actor) == ASK


def test_every_ticked_box_counts_also_one_an_earlier_edit_ticked() -> None:
    # The run of the earlier edit may have been dropped by the concurrency group.
    body = dashboard_body(BLOCKED)
    paused = tick(body, render.marker("control", "pause"))
    both = tick(paused, render.marker("retry", "T-201"))
    request = route("issues", edit_event(both, paused), Inputs())
    assert request.reason.endswith("boxes ticked: pause, retry T-201")
    assert request.rerender_dashboard


def test_a_title_edit_of_a_dashboard_with_a_ticked_box_has_the_run_decide_it() -> None:
    paused = tick(dashboard_body(), render.marker("control", "pause"))
    event = edit_event(paused, None)
    event["changes"] = {"title": {"from": "old title"}}
    request = route("issues", event, Inputs())
    assert (request.kind, request.controls, request.tick_after) == (CONTROLS, (), False)
    assert request.rerender_dashboard


@pytest.mark.parametrize(
    ("event", "why"),
    [
        (edit_event(dashboard_body(), dashboard_body()), "no box ticked"),
        (
            edit_event(
                tick(dashboard_body(), render.marker("control", "pause")), None, action="opened"
            ),
            "issue opened",
        ),
        (
            edit_event(
                tick(dashboard_body(), render.marker("control", "pause")), None, action="closed"
            ),
            "issue closed",
        ),
        (
            edit_event(
                tick(dashboard_body(), render.marker("control", "pause")),
                None,
                login="memento-bot[bot]",
            ),
            "bot",
        ),
        (
            edit_event(
                tick(dashboard_body(), render.marker("control", "pause")),
                None,
                user_type="Bot",
                login="x",
            ),
            "bot",
        ),
        (
            edit_event(tick(dashboard_body(), render.marker("control", "pause")), None, labels=()),
            "not the dashboard",
        ),
        (
            edit_event(TASK_BODY + "\n- [x] " + render.marker("control", "pause"), None),
            "not the dashboard",
        ),
        (edit_event("- [x] " + render.marker("control", "pause"), None), "not the dashboard"),
        ({}, "issue event"),
    ],
)
def test_issue_events_other_than_a_dashboard_edit_with_ticked_boxes_are_ignored(
    event: dict[str, Any], why: str
) -> None:
    request = route("issues", event, Inputs())
    assert request.kind == IGNORE
    assert why in request.reason


# -- parse_comment -------------------------------------------------------------------------------


def test_parse_comment_keeps_a_notes_text_whole_and_as_written() -> None:
    body = "  ### [NOTE] 2025-01-01T00:00:00Z → T-999\n- [ ] `T-999` evil\n<!-- x -->\n\n"
    controls, tick_after = parse_comment(body, task="T-201", source="s")
    assert controls == (Control("note", "T-201", body.strip(), "s"),)
    assert not tick_after


def test_parse_comment_of_an_empty_or_generated_comment_is_nothing() -> None:
    assert parse_comment("  \n ", task="T-201", source="s") == ((), False)
    assert parse_comment(breaker_resolved_comment(), task=None, source="s") == ((), False)


def test_skip_on_a_global_issue_takes_the_task_from_its_first_word() -> None:
    controls, _ = parse_comment("/memento skip T-203 needs a person", task=None, source="s")
    assert controls == (Control("skip", "T-203", "needs a person", "s"),)


# -- trust ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actor", "verdict"),
    [
        # The association never trusts (issue #29): COLLABORATOR includes read-only
        # collaborators, MEMBER any member of the organisation. Permission decides.
        (Actor("a", "OWNER", False), ASK),
        (Actor("a", "MEMBER", False), ASK),
        (Actor("a", "COLLABORATOR", False), ASK),
        (Actor("a", "CONTRIBUTOR", False), ASK),
        (Actor("a", "FIRST_TIME_CONTRIBUTOR", False), ASK),
        (Actor("a", "FIRST_TIMER", False), ASK),
        (Actor("a", "NONE", False), ASK),
        (Actor("a", None, False), ASK),
        (Actor("a[bot]", "OWNER", True), UNTRUSTED),
        (Actor("a[bot]", None, True), UNTRUSTED),
    ],
)
def test_trust(actor: Actor, verdict: str) -> None:
    assert trust(actor) == verdict


@pytest.mark.parametrize(
    ("permission", "trusted"),
    [
        ("admin", True),
        ("maintain", True),
        ("write", True),
        ("Admin", True),
        (" write\n", True),
        ("triage", False),
        ("read", False),
        ("none", False),
        ("", False),
        ("writer", False),
    ],
)
def test_permission_trusts_only_those_that_can_push(permission: str, trusted: bool) -> None:
    assert permission_trusts(permission) is trusted


def test_learn_from_a_comment_carries_the_kind_topic_and_text_to_the_control() -> None:
    body = "/memento learn decision Session storage: Keep sessions in Redis"
    controls, tick_after = parse_comment(body, task="T-201", source="s")
    assert controls == (
        Control("learn", "T-201", "decision Session storage: Keep sessions in Redis", "s"),
    )
    assert not tick_after


@pytest.mark.parametrize(
    "body",
    [
        "/memento learn",
        "/memento learn opinion Style: short",
        "/memento learn decision no colon here",
        "/memento learn preference : nothing named",
        "/memento learn preference Style:   ",
    ],
)
def test_learn_without_kind_topic_colon_and_text_is_refused(body: str) -> None:
    with pytest.raises(UserError, match="learn decision <topic>"):
        parse_comment(body, task=None, source="s")
