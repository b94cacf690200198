"""The JSON API over real HTTP to the real ``memento dashboard`` on 127.0.0.1.

Every refused request must leave the repository exactly as it was: the plan, the notes and
the status log byte for byte, the same HEAD, a clean tree. Accepted ones must change exactly
what the same control would change from the command line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from memento_gh.lock import repo_lock
from testing.browser import Answer, Dashboard, start_dashboard
from testing.ticks import Project, good
from tests.dashboard.conftest import sample_project

Serve = Callable[[Project], Dashboard]
OTHER_TOKEN = "x" * 43  # as long as a real one


class Frozen(NamedTuple):
    files: dict[str, bytes]
    head: str
    dirty: list[str]


def freeze(project: Project) -> Frozen:
    paths = (project.plan_path, project.notes_path, project.status_path)
    return Frozen({p.name: p.read_bytes() for p in paths}, project.head(), project.dirty())


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Project, Dashboard]]:
    """One server for the requests that must change nothing."""
    project = sample_project(tmp_path_factory.mktemp("api"))
    with start_dashboard(project.root) as dashboard:
        yield project, dashboard


class Bad(NamedTuple):
    """A write that must be refused with ``status`` and a message holding ``says``."""

    path: str
    body: Any = None
    headers: Mapping[str, str] | None = None
    raw: bytes | None = None
    status: int = 400
    says: str = ""


BAD_WRITES = {
    "no token": Bad("/api/controls/pause", headers={"X-Memento-Token": ""}, status=403),
    "another run's token": Bad(
        "/api/controls/pause", headers={"X-Memento-Token": OTHER_TOKEN}, status=403, says="token"
    ),
    "token with non-ASCII": Bad(
        "/api/controls/pause", headers={"X-Memento-Token": "caf\xe9"}, status=403
    ),
    "no Origin": Bad("/api/controls/pause", headers={"Origin": ""}, status=403, says="missing"),
    "another site's Origin": Bad(
        "/api/controls/pause", headers={"Origin": "http://evil.example"}, status=403
    ),
    "opaque Origin": Bad("/api/controls/pause", headers={"Origin": "null"}, status=403),
    "https Origin": Bad("/api/controls/pause", headers={"Origin": "https://x"}, status=403),
    "cross-site fetch": Bad(
        "/api/controls/pause", headers={"Sec-Fetch-Site": "cross-site"}, status=403
    ),
    "rebound Host": Bad("/api/controls/pause", headers={"Host": "evil.example:80"}, says="host"),
    "form post": Bad(
        "/api/controls/pause",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        raw=b"a=1",
        status=415,
    ),
    "declared too large": Bad(
        "/api/controls/note", headers={"Content-Length": str(10**7)}, raw=b"{}", status=413
    ),
    "too large": Bad(
        "/api/controls/note",
        {"target": "global", "text": "x" * 70_000},
        status=413,
        says="64 KiB",
    ),
    "not JSON": Bad("/api/controls/pause", raw=b"{pause", says="not JSON"),
    "not UTF-8": Bad("/api/controls/note", raw=b'{"text": "\xff"}', says="not JSON"),
    "JSON not an object": Bad("/api/controls/pause", [], says="JSON object"),
    "unknown field": Bad("/api/controls/pause", {"force": "yes"}, says="'force'"),
    "missing field": Bad("/api/controls/retry", {"task": "T-102"}, says="'seen' is missing"),
    "wrong type": Bad("/api/controls/retry", {"task": 102, "seen": "blocked"}, says="string"),
    "unknown control": Bad("/api/controls/explode", {}, status=404, says="no control"),
    "unknown task": Bad(
        "/api/controls/retry", {"task": "T-999", "seen": "blocked"}, status=404, says="T-999"
    ),
    "not a task ID": Bad(
        "/api/controls/skip", {"task": "../etc", "seen": "pending"}, says="not a task ID"
    ),
    "unknown status": Bad("/api/controls/retry", {"task": "T-102", "seen": "maybe"}, says="seen"),
    "empty note": Bad("/api/controls/note", {"target": "global", "text": " \n\t"}, says="empty"),
    "note too long": Bad(
        "/api/controls/note", {"target": "global", "text": "x" * 20_001}, status=413
    ),
    "note for an unknown task": Bad(
        "/api/controls/note", {"target": "T-999", "text": "hi"}, status=404
    ),
    "note for a bad target": Bad("/api/controls/note", {"target": "-", "text": "hi"}),
    "reason too long": Bad(
        "/api/controls/skip", {"task": "T-103", "seen": "pending", "why": "w" * 501}, status=413
    ),
    "stale status": Bad(
        "/api/controls/retry",
        {"task": "T-102", "seen": "pending"},
        status=409,
        says="T-102 is blocked now, not pending",
    ),
    "retry a done task": Bad(
        "/api/controls/retry", {"task": "T-101", "seen": "done"}, status=409, says="is done"
    ),
    "skip a done task": Bad(
        "/api/controls/skip", {"task": "T-101", "seen": "done"}, status=409, says="is done"
    ),
}


@pytest.mark.parametrize("bad", BAD_WRITES.values(), ids=BAD_WRITES.keys())
def test_a_bad_write_is_refused_with_a_message_and_changes_nothing(
    shared: tuple[Project, Dashboard], bad: Bad
) -> None:
    project, dashboard = shared
    before = freeze(project)

    answer = dashboard.post(bad.path, bad.body, raw=bad.raw, headers=bad.headers)

    assert answer.status == bad.status, answer.body
    message = answer.json()["error"]
    assert bad.says.lower() in message.lower()
    assert freeze(project) == before


BAD_READS = {
    "rebound Host on the page": ("/", {"Host": "attacker.example:8765"}, 400),
    "rebound Host on the state": ("/api/state", {"Host": "attacker.example"}, 400),
    "no Host": ("/api/version", {"Host": ""}, 400),
    "a log outside logs/": ("/api/log?path=docs/MASTER_PLAN.md", {}, 404),
    "a log path that climbs out": ("/api/log?path=logs/../docs/MASTER_PLAN.md", {}, 404),
    "an absolute log path": ("/api/log?path=/etc/passwd", {}, 400),
    "a missing log": ("/api/log?path=logs/tick_20990101T000000Z.log", {}, 404),
    "a diff without a tick": ("/api/diff?task=T-101", {}, 400),
    "a diff of a bad task": ("/api/diff?tick=1&task=$(id)", {}, 400),
    "a diff of no run": ("/api/diff?tick=99&task=T-101", {}, 404),
    "a diff of a run without a commit": ("/api/diff?tick=2&task=T-102", {}, 404),
    "GET on a control": ("/api/controls/pause", {}, 405),
    "an unknown path": ("/api/nothing", {}, 404),
}


@pytest.mark.parametrize(("path", "headers", "status"), BAD_READS.values(), ids=BAD_READS.keys())
def test_a_bad_read_is_refused_with_a_message(
    shared: tuple[Project, Dashboard], path: str, headers: dict[str, str], status: int
) -> None:
    project, dashboard = shared
    before = freeze(project)

    answer = dashboard.get(path, headers=headers)

    assert answer.status == status, answer.body
    assert answer.json()["error"]
    assert dashboard.token.encode() not in answer.body
    assert freeze(project) == before


def test_every_answer_carries_the_headers_that_keep_the_page_to_itself(
    shared: tuple[Project, Dashboard],
) -> None:
    _, dashboard = shared
    for answer in (
        dashboard.get("/"),
        dashboard.get("/static/app.js"),
        dashboard.get("/api/state"),
        dashboard.get("/api/nothing"),
        dashboard.get("/", headers={"Host": "evil.example"}),
        dashboard.post("/api/controls/pause", headers={"X-Memento-Token": OTHER_TOKEN}),
    ):
        headers = {name.lower(): value for name, value in answer.headers.items()}
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
        assert "access-control-allow-origin" not in headers


def test_the_state_is_status_json_plus_what_the_page_needs(
    shared: tuple[Project, Dashboard],
) -> None:
    project, dashboard = shared
    state = dashboard.get("/api/state").json()
    status = json.loads(project.memento("status", "--json").stdout)

    for key in status.keys() - {"plan", "tasks"}:
        assert state[key] == status[key], key
    for ours, theirs in zip(state["tasks"], status["tasks"], strict=True):
        assert ours.items() >= theirs.items()
    assert state["version"] == dashboard.get("/api/version").json()["version"]
    assert state["eta"] == {"seconds": 360, "average": 120.0, "samples": 1, "remaining": 3}
    assert state["schedule"]["cron"] == "*/30 * * * *"
    assert [record["tick"] for record in state["timeline"]] == [4, 3, 2, 1]
    blocked = next(task for task in state["tasks"] if task["id"] == "T-102")
    assert blocked["last"]["outcome"] == "blocked"
    assert blocked["last"]["retry"] == 3


def test_each_run_has_its_own_token(shared: tuple[Project, Dashboard]) -> None:
    project, first = shared
    with start_dashboard(project.root) as second:
        assert second.token != first.token
        refused = second.post("/api/controls/pause", headers={"X-Memento-Token": first.token})
        assert refused.status == 403


# -- accepted writes ----------------------------------------------------------------------


def ok(answer: Answer) -> dict[str, Any]:
    assert answer.status == 200, answer.body
    data: dict[str, Any] = answer.json()
    return data


def test_pause_rewrites_tick_mode_commits_it_and_moves_the_version(
    tmp_path: Path, serve: Serve
) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)
    version = dashboard.get("/api/version").json()["version"]

    answer = ok(dashboard.post("/api/controls/pause", {}))

    assert answer["message"].startswith("pause: tick_mode is now paused (committed ")
    assert answer["version"] != version
    assert dashboard.get("/api/state").json()["mode"] == "paused"
    assert project.plan().settings.tick_mode == "paused"
    assert project.subjects()[0] == "memento: pause"
    assert project.dirty() == []


def test_retry_skip_and_note_do_what_the_command_line_does(tmp_path: Path, serve: Serve) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)

    ok(dashboard.post("/api/controls/retry", {"task": "T-102", "seen": "blocked"}))
    ok(
        dashboard.post(
            "/api/controls/skip", {"task": "T-103", "seen": "pending", "why": "by\nhand"}
        )
    )
    ok(dashboard.post("/api/controls/note", {"target": "T-104", "text": "> quoted\n# heading"}))

    plan = project.plan()
    assert (plan.task("T-102").status, plan.task("T-102").retries) == ("pending", 0)  # type: ignore[union-attr]
    assert plan.task("T-103").status == "skipped"  # type: ignore[union-attr]
    assert project.events()[-1] == "Control: T-103 skipped — by hand"
    note = project.notes()[-1]
    assert (note.target, note.text, note.read) == ("T-104", "> quoted\n# heading", False)
    assert project.subjects()[:3] == [
        "memento: note T-104",
        "memento: skip T-103",
        "memento: retry T-102",
    ]
    assert project.dirty() == []


def test_a_hand_edit_made_while_the_page_is_open_is_kept(tmp_path: Path, serve: Serve) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)
    dashboard.get("/api/state")  # the page has read the plan
    edited = project.plan_path.read_text(encoding="utf-8").replace(
        "## Phase 2: Polish", "<!-- the architect was here -->\n## Phase 2: Polish"
    )
    project.plan_path.write_text(edited, encoding="utf-8")

    answer = ok(dashboard.post("/api/controls/pause", {}))

    plan = project.plan_path.read_text(encoding="utf-8")
    assert "<!-- the architect was here -->" in plan
    assert "- tick_mode: paused\n" in plan
    assert "not committed: the file had other uncommitted changes" in answer["message"]


def test_a_control_while_a_tick_holds_the_lock_is_refused_and_changes_nothing(
    tmp_path: Path, serve: Serve
) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)
    before = freeze(project)

    with repo_lock(project.root / ".memento.lock"):
        answer = dashboard.post("/api/controls/pause", {})

    assert answer.status == 503
    assert "a tick is running" in answer.json()["error"]
    assert freeze(project) == before


def test_the_log_and_the_diff_of_a_real_tick(tmp_path: Path, serve: Serve) -> None:
    project = sample_project(tmp_path)
    project.script({"T-103": good("T-103")})
    dashboard = serve(project)
    done = project.tick()
    assert done.returncode == 0, done.stdout + done.stderr

    latest = dashboard.get("/api/state").json()["timeline"][0]
    assert (latest["tick"], latest["task"], latest["outcome"]) == (5, "T-103", "success")
    log = dashboard.get(f"/api/log?path={latest['log']}")
    diff = dashboard.get("/api/diff?tick=5&task=T-103")

    assert log.status == diff.status == 200
    assert "fake agent: task T-103" in log.text
    assert "memento: complete T-103 Write module C" in diff.text
    assert "\n+C = 1\n" in diff.text
    assert diff.headers["content-type"].startswith("text/plain")


def test_a_plan_that_goes_missing_is_a_message_until_it_is_back(
    tmp_path: Path, serve: Serve
) -> None:
    project = sample_project(tmp_path)
    dashboard = serve(project)
    text = project.plan_path.read_bytes()
    project.plan_path.unlink()

    gone = dashboard.get("/api/state")
    still = dashboard.get("/api/version")
    project.plan_path.write_bytes(text)
    back = dashboard.get("/api/state")

    assert gone.status == 503
    assert "MASTER_PLAN.md: no such file" in gone.json()["error"]
    assert still.status == 200
    assert back.status == 200
    assert back.json()["total"] == 4


@pytest.mark.timeout(90)
def test_a_log_that_is_a_fifo_is_refused_at_once_not_waited_on(
    tmp_path: Path, serve: Callable[[Project], Dashboard]
) -> None:
    """Reading a FIFO waits for a writer that never comes: the request hung until the
    browser gave up, and the thread that served it for good."""
    project = sample_project(tmp_path)
    log = project.root / "logs" / "tick_20250115T140000Z.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(log)
    dashboard = serve(project)
    try:
        answer = dashboard.get("/api/log?path=logs/tick_20250115T140000Z.log")
    finally:  # lets a reader blocked on the FIFO go, so that the server can stop
        with suppress(OSError):
            os.close(os.open(log, os.O_WRONLY | os.O_NONBLOCK))

    assert answer.status == 404, answer.body
    assert "not a regular file (a FIFO)" in answer.json()["error"]


@pytest.mark.timeout(120)
def test_a_retry_from_the_page_takes_the_alert_down_and_a_second_one_changes_nothing(
    tmp_path: Path, serve: Serve
) -> None:
    project = sample_project(tmp_path)
    alert = project.root / ".memento_alert"
    alert.write_text("blocked_tasks: 1\ncircuit_breaker: OK\n", encoding="utf-8")
    dashboard = serve(project)
    assert dashboard.get("/api/state").json()["alert"]

    ok(dashboard.post("/api/controls/retry", {"task": "T-102", "seen": "blocked"}))

    assert not alert.exists()
    assert dashboard.get("/api/state").json()["alert"] is None
    head = project.head()
    again = ok(dashboard.post("/api/controls/retry", {"task": "T-102", "seen": "pending"}))
    assert again["message"] == "nothing to change: retry T-102"
    assert project.head() == head
    assert project.dirty() == []
