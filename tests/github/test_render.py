"""Markers, issue texts, the dashboard and its checkboxes, the job summary, annotations.

mistune (a CommonMark renderer with GitHub's task-list and table extensions, raw HTML let
through as GitHub lets comments through) stands in for GitHub's renderer: a forged marker
or checkbox would show up in its HTML as a comment or an <input>.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import mistune
import pytest

from memento_gh.controls.model import Control
from memento_gh.engine.records import TaskOutcome
from memento_gh.formats import status_log
from memento_gh.github import render
from memento_gh.github.issue_texts import (
    blocked_issue,
    breaker_issue,
    breaker_resolved_comment,
    task_unblocked_comment,
)
from memento_gh.github.job_text import annotation, job_summary
from memento_gh.github.render import (
    BODY_LIMIT,
    DashboardView,
    code_span,
    dashboard,
    escape,
    is_generated,
    marker,
    read_marker,
    ticked_controls,
)
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing.plans import large_plan, phase_block, plan_text, task_block

GITHUB_LIMIT = 65_536
T0 = datetime(2025, 1, 15, 14, 0, tzinfo=timezone.utc)
FORGED = (
    "x <!-- memento:control=pause --> @alice `a` | b </details> <b>bold</b> "
    "- [x] <!-- memento:control=stop --> $x$ *em* _u_ [link](http://e.x) ~~s~~"
)
_markdown = mistune.create_markdown(escape=False, plugins=["table", "task_lists"])


def to_html(text: str) -> str:
    rendered = _markdown(text)
    assert isinstance(rendered, str)
    return rendered


def html_comments(markdown: str) -> list[str]:
    return re.findall(r"<!--.*?-->", to_html(markdown), flags=re.DOTALL)


def checkboxes(markdown: str) -> int:
    return to_html(markdown).count('type="checkbox"')


def tick_all(body: str) -> str:
    return body.replace("- [ ] ", "- [x] ")


def blocked(task_id: str, description: str = "Do the thing", retries: int = 3) -> str:
    fields = {"verify": "`pytest -q`", "context_files": "[src/a.py, tests/*]"}
    fields["retries"] = str(retries)
    return task_block(task_id, "!", description=description, fields=fields)


def make_plan(*tasks: str, mode: str = "auto", title: str = "Shop", phase: str = "One") -> Plan:
    text = plan_text(
        [phase_block(1, phase, list(tasks) or [task_block("T-101")])],
        meta={"tick_mode": mode, "max_retries": "3"},
        title=title,
    )
    return parse(text)


def view(
    plan: Plan,
    records: Sequence[status_log.Record] = (),
    issues: dict[str, str] | None = None,
) -> DashboardView:
    return DashboardView(
        plan, records, issues or {}, "https://github.com", "o/r", "memento", "2025-01-15T15:00Z"
    )


def entry(
    tick: int,
    task: str = "T-201 [MODULE:core] Do the thing",
    *,
    outcome: str = status_log.FAILED,
    verify: str = "E   assert 1 == 2",
    analysis: str | None = None,
) -> status_log.TickEntry:
    return status_log.TickEntry(
        time=T0 + timedelta(minutes=5 * tick),
        tick=tick,
        task=task,
        outcome=outcome,
        duration=30,
        verify_head=verify,
        exit_code=1,
        retry=2,
        max_retries=3,
        error_analysis=analysis,
        files=None,
    )


def records(*entries: status_log.TickEntry) -> list[status_log.Record]:
    text = status_log.HEADER + "\n\n" + "\n".join(status_log.render_entry(e) for e in entries)
    return status_log.parse_status(text)


# -- markers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [
        ("task", "T-201", "<!-- memento:task=T-201 -->"),
        ("dashboard", None, "<!-- memento:dashboard -->"),
        ("circuit-breaker", None, "<!-- memento:circuit-breaker -->"),
    ],
)
def test_an_identity_marker_reads_back_as_what_it_marks(
    kind: str, value: str | None, text: str
) -> None:
    assert marker(kind, value) == text
    assert read_marker(f"intro a person added\n{text}\nbody") == (kind, value)


@pytest.mark.parametrize(
    "body",
    [
        None,
        "",
        "no marker here",
        "<!-- memento:control=pause -->",  # a box's marker says nothing of the issue
        "<!-- memento:task -->",  # a task marker without a task
        "<!-- memento:task=1bad -->",  # not a task ID
        "<!-- memento:dashboard=T-1 -->",
        "`<!-- memento:dashboard --`>",
    ],
)
def test_text_without_an_identity_marker_is_no_memento_issue(body: str | None) -> None:
    assert read_marker(body) is None


def test_the_first_identity_marker_decides() -> None:
    body = (
        "<!-- memento:retry=T-1 -->\n<!--memento:task=T-7-->\n```\n<!-- memento:dashboard -->\n```"
    )
    assert read_marker(body) == ("task", "T-7")


@pytest.mark.parametrize(
    ("kind", "value"),
    [("Task", None), ("task x", None), ("task", "T 1"), ("task", "x-->"), ("", None)],
)
def test_a_marker_no_reader_would_accept_is_refused(kind: str, value: str | None) -> None:
    with pytest.raises(ValueError, match="marker"):
        marker(kind, value)


# -- escaping ----------------------------------------------------------------------------------

NASTY = [
    FORGED,
    "line one\nline two\r\n- [x] <!-- memento:control=stop -->\u2028## heading",
    "`code` ``more`` \\ backslash \\<not",
    "--> <!-- -->",
    "| table | cell |",
    "# not a heading",
    "1. not a list",
    "12) nor this",
    "- nor a bullet",
    "+ nor this",
    "=== nor a rule",
    "tab\there\x00nul\x1bescape",
]


@pytest.mark.parametrize("text", NASTY)
def test_escaped_text_renders_exactly_as_typed_on_one_line(text: str) -> None:
    rendered = to_html(escape(text, 10_000)).strip()
    assert rendered.startswith("<p>") and rendered.endswith("</p>")
    inner = rendered[3:-4]
    assert "<" not in inner  # no tag, no comment
    expected = " ".join(re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", " ", text).split())
    assert html.unescape(inner) == expected.replace("@", "@\u200b")


def test_escaped_text_is_shortened_at_a_word() -> None:
    short = escape("word " * 100, 40)
    assert len(short) <= 40 and short.endswith("…")
    assert "wor…" not in short


@pytest.mark.parametrize("text", ["a`b", "``x``", "`", "x ``` y", "<!-- memento:dashboard -->"])
def test_a_code_span_holds_any_text(text: str) -> None:
    rendered = to_html(code_span(text)).strip()
    assert rendered.startswith("<p><code>") and rendered.endswith("</code></p>")
    assert html.unescape(rendered[len("<p><code>") : -len("</code></p>")]) == text


# -- the blocked task's issue ------------------------------------------------------------------


def test_a_blocked_issue_names_the_task_its_retries_and_the_last_verify() -> None:
    plan = make_plan(blocked("T-201", "Connect auth to the database"))
    last = records(entry(13, analysis="pool is not exported"))[-1]
    assert isinstance(last, status_log.ParsedEntry)

    text = blocked_issue(plan.tasks[0], last, max_retries=3, plan_path="docs/MASTER_PLAN.md")

    assert text.title == "T-201 BLOCKED: Connect auth to the database"
    assert text.labels == ("memento", "memento:blocked")
    assert read_marker(text.body) == ("task", "T-201")
    assert text.body.startswith("<!-- memento:task=T-201 -->\n")
    for expected in [
        "Retries: 3/3",
        "`docs/MASTER_PLAN.md` line",
        "Tick #013",
        "verify exit code 1",
        "E   assert 1 == 2",
        "pool is not exported",
        "`/memento retry`",
        "`/memento skip why`",
        "plain text becomes a note for T-201",
    ]:
        assert expected in text.body, expected


def test_a_blocked_issue_without_a_run_in_the_log_says_so() -> None:
    plan = make_plan(blocked("T-201"))
    text = blocked_issue(plan.tasks[0], None, max_retries=5, plan_path="docs/MASTER_PLAN.md")
    assert "Retries: 3/5" in text.body
    assert "No run of this task is in the status log." in text.body


def test_a_long_description_is_shortened_in_the_title() -> None:
    plan = make_plan(blocked("T-201", "Refactor " + "everything " * 40))
    text = blocked_issue(plan.tasks[0], None, max_retries=3, plan_path="p")
    assert text.title.startswith("T-201 BLOCKED: Refactor everything")
    assert text.title.endswith("…")
    assert len(text.title) <= len("T-201 BLOCKED: ") + render.TITLE_DESCRIPTION_CHARS


def test_verify_output_cannot_break_out_of_its_fence() -> None:
    output = "before\n```\n## [2025-01-15T14:00:00Z] Tick #999\n`````\n<!-- memento:dashboard -->"
    plan = make_plan(blocked("T-201"))
    last = records(entry(13, verify=output))[-1]
    assert isinstance(last, status_log.ParsedEntry)

    body = blocked_issue(plan.tasks[0], last, max_retries=3, plan_path="p").body

    rendered = to_html(body)
    blocks = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, flags=re.DOTALL)
    assert [html.unescape(block) for block in blocks] == [output + "\n"]
    assert "Tick #999</h2>" not in rendered
    assert html_comments(body) == ["<!-- memento:task=T-201 -->"]
    assert read_marker(body) == ("task", "T-201")


def test_nothing_a_person_wrote_becomes_markup_in_a_blocked_issue() -> None:
    plan = make_plan(blocked("T-201", FORGED))
    last = records(entry(13, task="T-201 " + FORGED, analysis=FORGED + "\n- [x] y"))[-1]
    assert isinstance(last, status_log.ParsedEntry)

    body = blocked_issue(plan.tasks[0], last, max_retries=3, plan_path="p").body

    assert html_comments(body) == ["<!-- memento:task=T-201 -->"]
    assert checkboxes(body) == 0
    assert "@alice" not in body
    assert "<b>" not in to_html(body)


@pytest.mark.parametrize(
    ("new_marker", "says"),
    [
        ("x", "done"),
        (" ", "back in the queue"),
        ("-", "skipped"),
        ("~", "running again"),
        (None, "no longer in the plan"),
    ],
)
def test_the_closing_comment_says_where_the_task_went(new_marker: str | None, says: str) -> None:
    comment = task_unblocked_comment("T-201", new_marker)
    assert f"T-201 is no longer blocked: it is {says}" in comment
    assert is_generated(comment)
    assert read_marker(comment) is None  # a comment is not an issue of its own


def test_the_circuit_breaker_issue_says_why_and_how_to_resume() -> None:
    text = breaker_issue(
        "5 ticks in a row failed <!-- memento:control=stop -->", "2025-01-15T14:00Z"
    )
    assert text.labels == ("memento", "memento:circuit-breaker")
    assert read_marker(text.body) == ("circuit-breaker", None)
    assert "5 ticks in a row failed" in text.body
    assert "`/memento resume`" in text.body
    assert html_comments(text.body) == ["<!-- memento:circuit-breaker -->"]
    assert is_generated(breaker_resolved_comment())
    assert not is_generated(text.body)


# -- the dashboard -----------------------------------------------------------------------------

AUTO_BOXES = ["control=pause", "control=stop", "control=tick"]


@pytest.mark.parametrize(
    ("mode", "boxes", "controls", "tick_now"),
    [
        ("auto", AUTO_BOXES, (Control("pause"), Control("stop")), True),
        ("paused", ["control=resume", "control=stop"], (Control("resume"), Control("stop")), False),
        ("stopped", ["control=resume"], (Control("resume"),), False),
    ],
)
def test_the_dashboard_offers_only_the_controls_that_make_sense_now(
    mode: str, boxes: list[str], controls: tuple[Control, ...], tick_now: bool
) -> None:
    body = dashboard(view(make_plan(mode=mode))).body
    assert html_comments(body) == ["<!-- memento:dashboard -->"] + [
        f"<!-- memento:{box} -->" for box in boxes
    ]
    assert checkboxes(body) == len(boxes)
    assert ticked_controls(body) == ((), False)  # rendered unticked
    assert ticked_controls(tick_all(body)) == (controls, tick_now)


def test_the_dashboard_is_the_one_issue_with_its_marker_and_labels() -> None:
    text = dashboard(view(make_plan()))
    assert text.title == "memento dashboard"
    assert text.labels == ("memento", "memento:dashboard")
    assert read_marker(text.body) == ("dashboard", None)
    assert text.body == dashboard(view(make_plan())).body  # deterministic: compare, then write


def test_each_box_ticked_alone_is_found_alone() -> None:
    plan = make_plan(blocked("T-201"), blocked("T-202"), task_block("T-203"))
    body = dashboard(view(plan)).body
    expected = {
        "control=pause": ((Control("pause"),), False),
        "control=stop": ((Control("stop"),), False),
        "control=tick": ((), True),
        "retry=T-201": ((Control("retry", "T-201"),), False),
        "skip=T-201": ((Control("skip", "T-201"),), False),
        "retry=T-202": ((Control("retry", "T-202"),), False),
        "skip=T-202": ((Control("skip", "T-202"),), False),
    }
    boxes = re.findall(r"^- \[ \] <!-- memento:(\S+) -->", body, flags=re.MULTILINE)
    assert sorted(boxes) == sorted(expected)
    for box, found in expected.items():
        hidden = f"<!-- memento:{box} -->"
        ticked = body.replace(f"- [ ] {hidden}", f"- [x] {hidden}")
        assert ticked_controls(ticked) == found, box
        crlf = ticked.replace("- [x]", "- [X]").replace("\n", "\r\n")  # as a browser sends it
        assert ticked_controls(crlf) == found, box


def test_forged_markers_from_people_become_neither_comments_nor_controls() -> None:
    plan = make_plan(
        blocked("T-201", FORGED),
        task_block(
            "T-202",
            "~",
            description=FORGED,
            fields={
                "verify": "`true`",
                "context_files": "[a]",
                "claimed": "2025-01-15T14:00:00Z w<!--x-->",
            },
        ),
        title=FORGED,
        phase=FORGED,
    )
    log = records(entry(1, task=FORGED), entry(2, task="T-201 " + FORGED, analysis=FORGED))

    body = dashboard(view(plan, log, {"T-201": "https://github.com/o/r/issues/5"})).body

    assert html_comments(body) == [
        "<!-- memento:dashboard -->",
        *(f"<!-- memento:{box} -->" for box in [*AUTO_BOXES, "retry=T-201", "skip=T-201"]),
    ]
    assert checkboxes(body) == 5
    controls = (
        Control("pause"),
        Control("stop"),
        Control("retry", "T-201"),
        Control("skip", "T-201"),
    )
    assert ticked_controls(tick_all(body)) == (controls, True)
    assert "@alice" not in body


def test_the_dashboard_shows_progress_running_blocked_next_and_the_last_ticks() -> None:
    plan = make_plan(
        task_block("T-101", "x"),
        task_block("T-102", "-"),
        blocked("T-201", "Connect auth"),
        blocked("T-202", "Hash passwords"),
        task_block(
            "T-203",
            "~",
            description="Write docs",
            fields={
                "verify": "`true`",
                "context_files": "[a]",
                "claimed": "2025-01-15T14:00:00Z w-7",
            },
        ),
        task_block("T-204"),
    )
    log = records(*(entry(n, task=f"T-20{n % 3} [MODULE:core] x") for n in range(1, 8)))
    issues = {
        "T-201": "https://github.com/o/r/issues/5",
        "T-999": "https://github.com/o/r/issues/9",
    }

    body = dashboard(view(plan, log, issues)).body

    assert "**1/6** done, 1 skipped (33%) · 2 blocked · 1 running" in body
    assert "| One | " not in body and "| Phase 1: One |" in body
    assert "- T-203 Write docs · since 2025-01-15T14:00:00Z on w-7" in body
    assert "- T-201 Connect auth · retries 3/3 · [issue](https://github.com/o/r/issues/5)" in body
    assert "- T-202 Hash passwords · retries 3/3 · issue not yet opened" in body
    assert "### Next\n\nT-204 is next" in body
    ticks = re.findall(r"^\| \S+ \| #(\d+) \|", body, flags=re.MULTILINE)
    assert ticks == ["007", "006", "005", "004", "003"]  # the last five, newest first
    assert "## 🧠 memento · Shop" in body
    assert "[`memento`](https://github.com/o/r/tree/memento)" in body
    assert "(https://github.com/o/r/blob/memento/docs/MASTER_PLAN.md)" in body


def running(task_id: str, description: str, claimed: str) -> str:
    fields = {"verify": "`true`", "context_files": "[a]", "claimed": claimed}
    return task_block(task_id, "~", description=description, fields=fields)


def test_the_dashboard_shows_each_running_task_with_its_worker_and_since_when() -> None:
    plan = make_plan(
        running("T-101", "Schema", "2025-01-15T14:00:00Z worker-1"),
        running("T-102", "Tokens", "2025-01-15T14:05:30Z worker-3"),
        running("T-103", "Claimed by hand", "soon " + FORGED),  # not a claim: no worker shown
        task_block("T-104"),
    )

    body = dashboard(view(plan)).body

    assert "### Running (3)" in body
    assert "- T-101 Schema · since 2025-01-15T14:00:00Z on worker-1" in body
    assert "- T-102 Tokens · since 2025-01-15T14:05:30Z on worker-3" in body
    assert "- T-103 Claimed by hand\n" in body
    assert "· 3 running" in body
    boxes = html_comments("\n".join(render.control_boxes(plan)))
    assert html_comments(body) == [marker(render.DASHBOARD_KIND), *boxes]
    # The time comes from the plan, not the clock: the same plan is the same body, so a
    # run that changed nothing makes no edit.
    assert dashboard(view(plan)).body == body


def test_an_issue_url_that_is_not_a_plain_web_address_is_not_linked() -> None:
    plan = make_plan(blocked("T-201"))
    body = dashboard(view(plan, (), {"T-201": "javascript:alert(1)) [x](http://e"})).body
    assert "javascript" not in body
    assert "- T-201 Do the thing · retries 3/3 · issue" in body


def test_a_plan_of_10000_tasks_keeps_the_dashboard_under_githubs_limit() -> None:
    tasks = [blocked(f"T-{n:05d}", FORGED * 3) for n in range(10_000)]
    phases = [
        phase_block(number + 1, FORGED, tasks[number * 10 : number * 10 + 10], depends=None)
        for number in range(1_000)
    ]
    plan = parse(plan_text(phases, meta={"tick_mode": "auto", "max_retries": "3"}, title=FORGED))
    assert len(plan.tasks) == 10_000
    issues = {task.id: f"https://github.com/o/r/issues/{n}" for n, task in enumerate(plan.tasks)}

    body = dashboard(view(plan, (), issues)).body

    assert len(body) <= BODY_LIMIT < GITHUB_LIMIT
    assert "…and" in body and "more blocked tasks: steer them from their issues" in body
    controls, tick_now = ticked_controls(tick_all(body))
    assert controls[:2] == (Control("pause"), Control("stop")) and tick_now
    assert 2 < len(controls) < 100


def test_a_long_plan_shows_the_phases_around_the_first_open_one() -> None:
    plan = parse(large_plan(10_000))  # 100 phases, the first 50 done
    body = dashboard(view(plan, (), {})).body
    rows = re.findall(r"^\| Phase (\d+): ", body, flags=re.MULTILINE)
    assert rows == [str(number) for number in range(51, 81)]
    assert "The 50 phases before these are finished." in body
    assert "…and 20 more phases." in body
    assert len(body) < 20_000


# -- reading ticked boxes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("- [x] <!-- memento:control=pause --> Pause", ((Control("pause"),), False)),
        ("* [X] <!-- memento:control=stop -->", ((Control("stop"),), False)),
        ("   + [x]   <!--memento:retry=T-1-->", ((Control("retry", "T-1"),), False)),
        ("- [x] <!-- memento:control=tick --> now", ((), True)),
        ("- [ ] <!-- memento:control=pause --> Pause", ((), False)),
        ("text <!-- memento:control=pause -->", ((), False)),
        ("- [x] Pause <!-- memento:control=pause -->", ((), False)),
        ("- T-1 [x] <!-- memento:control=pause -->", ((), False)),
        ("    - [x] <!-- memento:control=pause -->", ((), False)),  # indented code
        ("```\n- [x] <!-- memento:control=pause -->\n```", ((), False)),
        ("<!--\n- [x] <!-- memento:control=pause -->", ((), False)),
        ("- [x] <!-- memento:control=explode -->", ((), False)),
        ("- [x] <!-- memento:frobnicate=T-1 -->", ((), False)),
        ("- [x] <!-- memento:retry=1abc -->", ((), False)),
        ("- [x] <!-- memento:dashboard -->", ((), False)),
        (
            "- [x] <!-- memento:skip=T-1 -->\n- [x] <!-- memento:skip=T-1 -->\n"
            "- [x] <!-- memento:control=resume -->",
            ((Control("skip", "T-1"), Control("resume")), False),
        ),
        (None, ((), False)),
    ],
)
def test_ticked_controls(body: str | None, expected: tuple[tuple[Control, ...], bool]) -> None:
    assert ticked_controls(body) == expected


# -- the job summary ---------------------------------------------------------------------------


def test_the_job_summary_tells_this_runs_result_progress_and_blocked_tasks() -> None:
    plan = make_plan(task_block("T-101", "x"), blocked("T-201", "Connect auth"))
    summary = job_summary(
        plan,
        outcome="success",
        lines=["Tick: ran — T-101 done", "Applied: pause: tick_mode is now paused"],
        tasks=[TaskOutcome("T-101", "success", "a3f7b2c9d", "verify passed")],
        blocked_issues={"T-201": "https://github.com/o/r/issues/5"},
        dashboard_url="https://github.com/o/r/issues/3",
        run_url="https://github.com/o/r/actions/runs/1",
    )
    assert summary.startswith("## memento: success\n")
    assert "- Tick: ran — T-101 done" in summary
    assert "- Applied: pause: tick\\_mode is now paused" in summary
    assert "| T-101 | ✅ success | `a3f7b2c` | verify passed |" in summary
    assert "**1/2** done (50%) · 1 blocked" in summary
    assert (
        "- T-201 Connect auth · retries 3/3 · [issue](https://github.com/o/r/issues/5)" in summary
    )
    assert (
        "[dashboard](https://github.com/o/r/issues/3) · [run](https://github.com/o/r/actions/runs/1)"
        in summary
    )


def test_the_job_summary_names_its_worker_the_tasks_it_ran_and_the_others_running() -> None:
    plan = make_plan(
        task_block("T-101", "x"),
        task_block("T-102", "x"),
        running("T-103", "Write docs", "2025-01-15T14:00:00Z worker-1"),
    )
    tasks = [
        TaskOutcome("T-101", "success", "a3f7b2c9d", "verify passed"),
        TaskOutcome("T-102", "success", "b4e8c3d0e", "verify passed"),
    ]

    summary = job_summary(plan, outcome="success", tasks=tasks, worker="worker-2")

    head = "## memento: success\n\n**Worker:** `worker-2` · ran T-101, T-102\n"
    assert summary.startswith(head)
    running_now = "### Running (1)\n\n- T-103 Write docs · since 2025-01-15T14:00:00Z on worker-1"
    assert running_now in summary


@pytest.mark.parametrize(
    ("worker", "line"),
    [
        ("actions-4242", "**Worker:** `actions-4242` · ran no task"),
        (None, None),
    ],
)
def test_a_job_summary_that_ran_no_task_says_so_for_its_worker(
    worker: str | None, line: str | None
) -> None:
    summary = job_summary(make_plan(), outcome="controls", worker=worker)
    found = [text for text in summary.splitlines() if text.startswith("**Worker:**")]
    assert found == ([line] if line else [])


def test_a_job_summary_without_a_plan_says_only_why() -> None:
    summary = job_summary(None, outcome="ignored", lines=["a comment on a pull request " + FORGED])
    assert "### Progress" not in summary
    assert html_comments(summary) == []
    assert "@alice" not in summary


# -- annotations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "line"),
    [
        (("error", "bad"), {}, "::error::bad"),
        (
            ("error", "missing verify"),
            {"file": "docs/MASTER_PLAN.md", "line": 12},
            "::error file=docs/MASTER_PLAN.md,line=12::missing verify",
        ),
        (
            ("warning", "100% done\r\nnext::x"),
            {"title": "a: b, c"},
            "::warning title=a%3A b%2C c::100%25 done%0D%0Anext::x",
        ),
        (
            ("notice", "m"),
            {"file": "we,ird:na%me\n.md", "line": 1, "title": "t"},
            "::notice file=we%2Cird%3Ana%25me%0A.md,line=1,title=t::m",
        ),
    ],
)
def test_annotation_escapes_data_and_properties(
    args: tuple[str, str], kwargs: dict[str, object], line: str
) -> None:
    assert annotation(*args, **kwargs) == line  # type: ignore[arg-type]


def test_an_annotation_is_one_line_whatever_its_message() -> None:
    assert "\n" not in annotation("error", "a\nb\rc", file="x\ny")


def test_an_unknown_annotation_level_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of debug, notice, warning, error"):
        annotation("fatal", "x")


def test_progress_counts_skipped_tasks_apart_from_the_done_ones() -> None:
    plan = make_plan(task_block("T-101", "x"), task_block("T-102", "-"), task_block("T-103", "x"))

    lines = render.progress_lines(plan)

    assert lines[0] == "████████████████████ **2/3** done, 1 skipped (100%) · 0 blocked · 0 running"
    assert "| Phase 1: One | ████████████ | 2/3, 1 skipped (100%) |  |" in lines


def test_the_job_summary_of_a_pool_worker_says_how_many_pushes_each_result_took() -> None:
    tasks = [
        TaskOutcome("T-101", "success", "a3f7b2c9d", "verify passed", pushes=1),
        TaskOutcome("T-102", "success", "b4e8c3d0e", "verify passed", pushes=7),
    ]

    summary = job_summary(make_plan(), outcome="success", tasks=tasks, worker="worker-2")

    assert "| Task | Outcome | Commit | Pushes | |" in summary
    assert "| T-101 | ✅ success | `a3f7b2c` | 1 | verify passed |" in summary
    assert "| T-102 | ✅ success | `b4e8c3d` | 7 | verify passed |" in summary


def test_the_job_summary_of_a_lone_worker_has_no_pushes_column() -> None:
    tasks = [TaskOutcome("T-101", "success", "a3f7b2c9d", "verify passed")]

    summary = job_summary(make_plan(), outcome="success", tasks=tasks)

    assert "| Task | Outcome | Commit | |" in summary
    assert "| T-101 | ✅ success | `a3f7b2c` | verify passed |" in summary
