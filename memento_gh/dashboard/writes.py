"""Who may ask the dashboard to change something, and what they may ask: checked before
anything is touched.

Pure: headers, bodies and the parsed plan in; a ``Control`` out, or ``Rejected`` with the
HTTP status and a sentence. The server only reads the request and applies the control.

The threats: another web page in the user's browser posting to ``127.0.0.1`` (stopped by the
token, which only our page holds, and by the Origin check), a name that resolves to
``127.0.0.1`` turning a hostile site into a "same-origin" one (DNS rebinding: stopped by the
Host check on every request), and a page showing stale state (the task's status it showed
comes with the request; a different status now is a 409).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any, NamedTuple

from memento_gh.controls.model import Control
from memento_gh.formats.notes import GLOBAL
from memento_gh.plan.model import MARKERS, Plan
from memento_gh.plan.values import TASK_ID

TOKEN_HEADER = "x-memento-token"
MAX_BODY = 64 * 1024  # bytes; a note is the largest thing the page sends
MAX_NOTE = 20_000  # characters
MAX_WHY = 500
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
STATUSES = frozenset(MARKERS.values())

#: Each action's fields: (required, optional).
_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pause": ((), ()),
    "resume": ((), ()),
    "stop": ((), ()),
    "retry": (("task", "seen"), ()),
    "skip": (("task", "seen"), ("why",)),
    "note": (("target", "text"), ()),
}
ACTIONS = tuple(_SHAPES)


class Rejected(Exception):
    """A request refused with ``status`` and a sentence that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Order(NamedTuple):
    """A control the page asked for, and the task's status the page showed (None: any)."""

    control: Control
    seen: str | None = None


class HostRule(NamedTuple):
    """The Host header values the server answers to."""

    names: frozenset[str]  # lower case, without port or brackets
    #: Also any IP address: rebinding needs a *name* an attacker controls, never an address.
    any_ip: bool = False


def host_rule(bind: str, hostname: str) -> HostRule:
    """Loopback names always; on a non-loopback bind also the bound name, this machine's
    name, and addresses (how other machines on the network reach it)."""
    names = set(LOOPBACK_NAMES) | {bind.lower().strip("[]")}
    if is_loopback(bind):
        return HostRule(frozenset(names))
    return HostRule(frozenset(names | {hostname.lower()}), any_ip=True)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str | None) -> str | None:
    """``127.0.0.1:8765`` → ``127.0.0.1``, ``[::1]:80`` → ``::1``; None when malformed."""
    if not header:
        return None
    text = header.strip().lower()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
        ok = bracket and (not rest or (rest.startswith(":") and port.isdigit()))
        return name if ok else None
    name, colon, port = text.partition(":")
    if not name or (colon and not port.isdigit()):
        return None
    return name


def host_allowed(header: str | None, rule: HostRule) -> bool:
    name = host_name(header)
    if name is None:
        return False
    if name in rule.names:
        return True
    if not rule.any_ip:
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_token(sent: str | None, token: str) -> None:
    if not sent or not hmac.compare_digest(sent.encode(), token.encode()):
        raise Rejected(
            403, "missing or wrong dashboard token; reload the page (each run has a new one)"
        )


def check_origin(origin: str | None, host: str | None, fetch_site: str | None) -> None:
    """A write must come from a page of this very server (the Host was checked already)."""
    if not origin or not host or origin.lower() != f"http://{host}".lower():
        raise Rejected(403, f"cross-origin request refused (Origin {origin or 'missing'})")
    if fetch_site is not None and fetch_site != "same-origin":
        raise Rejected(403, f"cross-site request refused (Sec-Fetch-Site {fetch_site})")


def check_content_type(value: str | None) -> None:
    if (value or "").split(";")[0].strip().lower() != "application/json":
        raise Rejected(415, "send the request body as JSON (Content-Type: application/json)")


def check_length(declared: str | None) -> None:
    if declared is None:
        return
    if not declared.strip().isdigit():
        raise Rejected(400, f"Content-Length {declared!r} is not a number")
    if int(declared) > MAX_BODY:
        raise Rejected(413, too_large())


def too_large() -> str:
    return f"the request body is larger than {MAX_BODY // 1024} KiB"


def read_order(action: str, body: bytes) -> Order:
    """The control a request's action and JSON body ask for."""
    if action not in _SHAPES:
        raise Rejected(404, f"no control {action!r}; use one of {', '.join(ACTIONS)}")
    fields = _fields(body, *_SHAPES[action])
    if action == "note":
        return Order(Control("note", _note_target(fields["target"]), _note_text(fields["text"])))
    if action in ("retry", "skip"):
        why = fields.get("why", "")
        if len(why) > MAX_WHY:
            raise Rejected(413, f"the reason is {len(why):,} characters; keep it under {MAX_WHY}")
        control = Control(action, _task_id(fields["task"]), " ".join(why.split()))
        return Order(control, _status(fields["seen"]))
    return Order(Control(action))


#: The architect's actions (``POST /api/architect/{action}``): their fields.
REVISION_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "propose": (("task", "seen"), ("why",)),
    "apply": ((), ()),
    "discard": ((), ()),
}


class RevisionRequest(NamedTuple):
    """Propose a revision for ``task`` (shown as ``seen``), apply it, or discard it."""

    action: str
    task: str | None = None
    seen: str | None = None
    why: str = ""


def read_revision_request(action: str, body: bytes) -> RevisionRequest:
    if action not in REVISION_SHAPES:
        known = ", ".join(REVISION_SHAPES)
        raise Rejected(404, f"no architect action {action!r}; use one of {known}")
    fields = _fields(body, *REVISION_SHAPES[action])
    if action != "propose":
        return RevisionRequest(action)
    why = fields.get("why", "")
    if len(why) > MAX_WHY:
        raise Rejected(413, f"the reason is {len(why):,} characters; keep it under {MAX_WHY}")
    return RevisionRequest(action, _task_id(fields["task"]), _status(fields["seen"]), why)


def _fields(body: bytes, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, str]:
    try:
        data: Any = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise Rejected(400, f"the body is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise Rejected(400, "the body must be a JSON object")
    allowed = (*required, *optional)
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        expected = ", ".join(allowed) or "no fields"
        raise Rejected(400, f"unknown field {unknown[0]!r}; this control takes {expected}")
    for name in required:
        if name not in data:
            raise Rejected(400, f"the field {name!r} is missing")
    for name, value in data.items():
        if not isinstance(value, str):
            raise Rejected(400, f"the field {name!r} must be a string")
    return data


def _task_id(value: str) -> str:
    if not TASK_ID.fullmatch(value):
        raise Rejected(400, f"{value[:40]!r} is not a task ID like T-201")
    return value


def _status(value: str) -> str:
    if value not in STATUSES:
        raise Rejected(400, f"seen must be one of {', '.join(sorted(STATUSES))}")
    return value


def _note_target(value: str) -> str | None:
    return None if value == GLOBAL else _task_id(value)


def _note_text(value: str) -> str:
    if not value.strip():
        raise Rejected(400, "the note is empty; write what the worker should know")
    if len(value) > MAX_NOTE:
        raise Rejected(413, f"the note is {len(value):,} characters; the limit is {MAX_NOTE:,}")
    return value


def check_against(plan: Plan, order: Order) -> None:
    """Refuse a control on a task that is not in the plan, or whose status is no longer the
    one the page showed (someone, or a tick, changed it since)."""
    task_id = order.control.task
    if task_id is None:
        return
    task = plan.task(task_id)
    if task is None:
        raise Rejected(404, f"no task {task_id} in the plan")
    if order.seen is not None and task.status != order.seen:
        raise Rejected(
            409,
            f"{task_id} is {task.status} now, not {order.seen} as the page showed; "
            "nothing was changed — look at it again",
        )
