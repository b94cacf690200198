"""Who may write and what: headers, bodies and the plan in, a control or a refusal out."""

from __future__ import annotations

import json

import pytest

from memento_gh.controls.model import Control
from memento_gh.dashboard.writes import (
    MAX_BODY,
    HostRule,
    Order,
    Rejected,
    check_against,
    check_content_type,
    check_length,
    check_origin,
    check_token,
    host_allowed,
    host_name,
    host_rule,
    is_loopback,
    read_order,
)
from memento_gh.plan.scanner import parse
from tests.dashboard.conftest import sample_plan

TOKEN = "s3cret-token-of-this-run"
LOOPBACK = host_rule("127.0.0.1", "box")
NETWORK = host_rule("0.0.0.0", "Box")


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LocalHost:80", "localhost"),
        ("localhost", "localhost"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("[::1]x", None),
        ("[::1", None),
        ("host:port", None),
        (":80", None),
        ("", None),
        (None, None),
    ],
)
def test_the_name_in_a_host_header(header: str | None, name: str | None) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize(
    ("header", "rule", "allowed"),
    [
        ("127.0.0.1:8765", LOOPBACK, True),
        ("localhost:8765", LOOPBACK, True),
        ("[::1]:8765", LOOPBACK, True),
        ("evil.example:8765", LOOPBACK, False),  # DNS rebinding
        ("192.168.1.5:8765", LOOPBACK, False),
        ("192.168.1.5:8765", NETWORK, True),  # an address cannot be rebound
        ("[fe80::1]:8765", NETWORK, True),
        ("box:8765", NETWORK, True),  # this machine's name
        ("evil.example:8765", NETWORK, False),
        ("127.0.0.1.nip.io:8765", NETWORK, False),
        ("", NETWORK, False),
    ],
)
def test_which_hosts_the_server_answers_to(header: str, rule: HostRule, allowed: bool) -> None:
    assert host_allowed(header, rule) is allowed


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    "sent", [None, "", "s3cret", TOKEN + "x", "S3CRET-TOKEN-OF-THIS-RUN", "café"]
)
def test_a_wrong_or_missing_token_is_refused(sent: str | None) -> None:
    with pytest.raises(Rejected) as refused:
        check_token(sent, TOKEN)
    assert refused.value.status == 403


def test_the_right_token_passes() -> None:
    check_token(TOKEN, TOKEN)


@pytest.mark.parametrize(
    ("origin", "host", "site"),
    [
        (None, "127.0.0.1:8765", None),
        ("null", "127.0.0.1:8765", None),
        ("http://evil.example", "127.0.0.1:8765", None),
        ("http://127.0.0.1:9999", "127.0.0.1:8765", None),  # another local server
        ("https://127.0.0.1:8765", "127.0.0.1:8765", None),
        ("http://127.0.0.1:8765", None, None),
        ("http://127.0.0.1:8765", "127.0.0.1:8765", "cross-site"),
        ("http://127.0.0.1:8765", "127.0.0.1:8765", "same-site"),
    ],
)
def test_a_write_from_elsewhere_is_refused(
    origin: str | None, host: str | None, site: str | None
) -> None:
    with pytest.raises(Rejected) as refused:
        check_origin(origin, host, site)
    assert refused.value.status == 403


@pytest.mark.parametrize("site", [None, "same-origin"])
def test_a_write_from_the_page_itself_passes(site: str | None) -> None:
    check_origin("http://127.0.0.1:8765", "127.0.0.1:8765", site)
    check_origin("http://LOCALHOST:8765", "localhost:8765", site)


@pytest.mark.parametrize("value", [None, "", "text/plain", "application/x-www-form-urlencoded"])
def test_only_json_is_read(value: str | None) -> None:
    with pytest.raises(Rejected) as refused:
        check_content_type(value)
    assert refused.value.status == 415
    check_content_type("application/json; charset=utf-8")


@pytest.mark.parametrize(
    ("declared", "status"), [(str(MAX_BODY + 1), 413), ("12x", 400), ("-1", 400)]
)
def test_a_bad_or_too_large_declared_length_is_refused(declared: str, status: int) -> None:
    with pytest.raises(Rejected) as refused:
        check_length(declared)
    assert refused.value.status == status
    check_length(str(MAX_BODY))
    check_length(None)


@pytest.mark.parametrize(
    ("action", "body", "order"),
    [
        ("pause", {}, Order(Control("pause"))),
        ("resume", {}, Order(Control("resume"))),
        ("stop", {}, Order(Control("stop"))),
        ("retry", {"task": "T-2", "seen": "blocked"}, Order(Control("retry", "T-2"), "blocked")),
        (
            "skip",
            {"task": "T-2", "seen": "pending", "why": " done\n by  hand "},
            Order(Control("skip", "T-2", "done by hand"), "pending"),
        ),
        ("skip", {"task": "T-2", "seen": "pending"}, Order(Control("skip", "T-2", ""), "pending")),
        ("note", {"target": "global", "text": "hi"}, Order(Control("note", None, "hi"))),
        ("note", {"target": "T-2", "text": " # x\n"}, Order(Control("note", "T-2", " # x\n"))),
    ],
)
def test_what_a_good_body_asks_for(action: str, body: object, order: Order) -> None:
    assert read_order(action, json.dumps(body).encode()) == order


@pytest.mark.parametrize(
    ("action", "body", "status", "says"),
    [
        ("launch", b"{}", 404, "no control 'launch'"),
        ("pause", b"", 400, "not JSON"),
        ("pause", b"{", 400, "not JSON"),
        ("pause", b"\xff", 400, "not JSON"),
        ("pause", b'"pause"', 400, "JSON object"),
        ("pause", b'{"mode": "paused"}', 400, "this control takes no fields"),
        ("retry", b'{"task": "T-1"}', 400, "'seen' is missing"),
        ("retry", b'{"task": "T-1", "seen": null}', 400, "must be a string"),
        ("retry", b'{"task": "T 1", "seen": "blocked"}', 400, "not a task ID"),
        ("retry", b'{"task": "T-1", "seen": "gone"}', 400, "seen must be one of"),
        ("skip", b'{"task": "T-1", "seen": "pending", "why": "' + b"w" * 501 + b'"}', 413, "500"),
        ("note", b'{"target": "global", "text": ""}', 400, "empty"),
        ("note", b'{"target": "global"}', 400, "'text' is missing"),
        ("note", b'{"target": "../x", "text": "x"}', 400, "not a task ID"),
        ("note", b'{"target": "global", "text": "' + b"x" * 20_001 + b'"}', 413, "20,000"),
        ("note", b'{"target": "global", "text": "x", "task": "T-1"}', 400, "unknown field 'task'"),
    ],
)
def test_a_bad_body_is_refused_with_a_sentence(
    action: str, body: bytes, status: int, says: str
) -> None:
    with pytest.raises(Rejected) as refused:
        read_order(action, body)
    assert (refused.value.status, says in refused.value.message) == (status, True)


@pytest.mark.parametrize(
    ("order", "status", "says"),
    [
        (Order(Control("retry", "T-9"), "blocked"), 404, "no task T-9"),
        (Order(Control("note", "T-9", "x")), 404, "no task T-9"),
        (Order(Control("retry", "T-102"), "pending"), 409, "T-102 is blocked now, not pending"),
        (Order(Control("skip", "T-103"), "blocked"), 409, "T-103 is pending now"),
    ],
)
def test_a_control_on_a_missing_or_changed_task_is_refused(
    order: Order, status: int, says: str
) -> None:
    with pytest.raises(Rejected) as refused:
        check_against(parse(sample_plan()), order)
    assert (refused.value.status, says in refused.value.message) == (status, True)


@pytest.mark.parametrize(
    "order",
    [
        Order(Control("pause")),
        Order(Control("note", None, "x")),
        Order(Control("note", "T-104", "x")),
        Order(Control("retry", "T-102"), "blocked"),
        Order(Control("skip", "T-103"), "pending"),
    ],
)
def test_a_control_on_the_state_the_page_showed_passes(order: Order) -> None:
    check_against(parse(sample_plan()), order)
