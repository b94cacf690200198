"""From a webhook event to what memento should do about it, before the trust gate. Pure.

``route`` looks the event name up in a table of handlers; each handler reads only the
payload fields it needs and answers a ``Request``: run a tick, apply controls, draft a plan
(``/memento plan`` on an issue of a person's), or ignore the event (with a one-line reason
for the log and the job summary). Comment text is data: only
a first line ``/memento <command>`` is read as a command; anything else is a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from memento_gh.controls.model import Control
from memento_gh.errors import UserError
from memento_gh.formats.notes import GLOBAL
from memento_gh.github import render
from memento_gh.plan import values

#: Collaborator permissions (or role names) that may steer: the ones that can push.
TRUSTED_PERMISSIONS = frozenset({"admin", "maintain", "write"})
TRUSTED, UNTRUSTED, ASK = "trusted", "untrusted", "ask"
TICK, CONTROLS, IGNORE = "tick", "controls", "ignore"
#: ``/memento plan`` on an issue that is not memento's: draft a plan from its body.
PLAN = "plan"
#: A comment the workflow's relay job handed on (``repository_dispatch``): the run reads
#: the comment from GitHub and routes it as if it had been delivered (``relay.py``).
RELAYED = "relayed"
RELAY_EVENT = "memento-comment"
COMMAND_PREFIX = "/memento"
MODE_COMMANDS = ("pause", "resume", "stop")
COMMANDS = ("retry", "skip", *MODE_COMMANDS, "tick", "revise", "approve", "plan")
#: The architect's commands: not plan edits (``controls.apply``) but the run's own work.
#: ``approve`` is the architect's on a blocked task's issue; elsewhere (the dashboard, a
#: dispatch, the dashboard's box) it opens a review gate, a plan edit (github/pulls.py).
ARCHITECT_COMMANDS = ("revise", "approve")

# On a task's issue, `/memento skip T-203 why` names another task only when the first word
# has the usual PREFIX-NUMBER shape; otherwise it is the first word of the reason.
_NAMED_TASK = re.compile(r"[A-Za-z][A-Za-z0-9_.]*-[0-9][A-Za-z0-9_.-]*")


class Inputs(NamedTuple):
    """The action's inputs for workflow_dispatch."""

    command: str = ""  # tick | pause | resume | stop | retry | skip | note ("" = tick)
    task: str = ""
    text: str = ""


class Actor(NamedTuple):
    login: str
    association: str | None  # None: the event carries none for this person (issues: edited)
    is_bot: bool


class Request(NamedTuple):
    kind: str  # TICK | CONTROLS | PLAN | IGNORE
    controls: tuple[Control, ...] = ()
    tick_after: bool = False  # `/memento tick` or the "Run a tick now" box
    actor: Actor | None = None  # None: the workflow itself (schedule, dispatch), trusted
    comment_id: int | None = None  # to acknowledge with a reaction
    issue_number: int | None = None
    #: An edit of the dashboard that leaves boxes ticked. It carries no controls: who ticked
    #: which box is read from the issue's edit history, as every run does (``boxes.py``).
    rerender_dashboard: bool = False
    reason: str = ""  # what this is or why it is ignored, one line
    #: The comment asked for something memento cannot do (an unknown command, a retry
    #: without a task): nothing to apply; answer with a "confused" reaction.
    confused: bool = False


Handler = Callable[[Mapping[str, Any], Inputs], Request]
Parsed = tuple[tuple[Control, ...], bool]  # (controls, tick after)


def route(event_name: str, payload: Mapping[str, Any], inputs: Inputs) -> Request:
    """What the event asks for. UserError only for a workflow_dispatch whose inputs do not
    fit together (the person who started it reads the fix in the log)."""
    handler = _HANDLERS.get(event_name)
    if handler is None:
        return _ignore(f"memento does not act on {event_name or 'an unnamed'} events")
    return handler(payload, inputs)


def _ignore(reason: str) -> Request:
    return Request(IGNORE, reason=reason)


# -- schedule and workflow_dispatch ----------------------------------------------------------


def _schedule(payload: Mapping[str, Any], inputs: Inputs) -> Request:
    return Request(TICK, reason="scheduled run: one tick")


def _dispatch(payload: Mapping[str, Any], inputs: Inputs) -> Request:
    command = inputs.command.strip().lower() or "tick"
    handler = _DISPATCH_COMMANDS.get(command)
    if handler is None:
        choices = ", ".join(_DISPATCH_COMMANDS)
        raise UserError(
            f"unknown command {inputs.command!r}; the `command` input is one of {choices}"
        )
    task, text = inputs.task.strip(), inputs.text.strip()
    if task and not values.TASK_ID.fullmatch(task):
        raise UserError(f"the `task` input {task!r} is not a task ID like T-201")
    return handler(command, task, text)


def _dispatch_tick(command: str, task: str, text: str) -> Request:
    _refuse_extra(command, task=task, text=text)
    return Request(TICK, reason="workflow_dispatch: one tick")


def _dispatch_mode(command: str, task: str, text: str) -> Request:
    _refuse_extra(command, task=task, text=text)
    return _dispatched(Control(command))


def _dispatch_retry(command: str, task: str, text: str) -> Request:
    if not task:
        raise UserError("command retry needs the `task` input: the ID of the task to retry")
    # Text with a retry is what the worker should know this time: a note for the task.
    note = (Control("note", task, text),) if text else ()
    return _dispatched(*note, Control("retry", task))


def _dispatch_skip(command: str, task: str, text: str) -> Request:
    if not task:
        raise UserError("command skip needs the `task` input: the ID of the task to skip")
    return _dispatched(Control("skip", task, text))


def _dispatch_note(command: str, task: str, text: str) -> Request:
    if not text:
        raise UserError(
            "command note needs the `text` input: what the worker should know "
            "(and `task` for one task; leave it empty for a global note)"
        )
    return _dispatched(Control("note", task or None, text))


def _refuse_extra(command: str, *, task: str, text: str) -> None:
    """A dispatch input the command would silently drop is a mistake worth saying."""
    if task:
        raise UserError(
            f"command {command} applies to the whole plan; leave `task` empty "
            "(retry or skip act on one task)"
        )
    if text:
        raise UserError(
            f"command {command} takes no `text`; to tell the worker something, use command note"
        )


def _dispatched(*controls: Control) -> Request:
    what = ", ".join(_control_words(control) for control in controls)
    return Request(CONTROLS, controls=controls, reason=f"workflow_dispatch: {what}")


_DISPATCH_COMMANDS: Mapping[str, Callable[[str, str, str], Request]] = {
    "tick": _dispatch_tick,
    "pause": _dispatch_mode,
    "resume": _dispatch_mode,
    "stop": _dispatch_mode,
    "retry": _dispatch_retry,
    "skip": _dispatch_skip,
    "note": _dispatch_note,
    "approve": _dispatch_mode,  # the review gate: like a mode, it names no task
}


# -- issue_comment -------------------------------------------------------------------------


def _issue_comment(payload: Mapping[str, Any], inputs: Inputs) -> Request:
    action = _text(payload, "action")
    if action != "created":
        return _ignore(f"comment {action or 'event'}: only new comments are read")
    issue, comment = _mapping(payload, "issue"), _mapping(payload, "comment")
    if issue.get("pull_request"):
        return _ignore("a comment on a pull request")
    actor = actor_of(_mapping(comment, "user"), _text(comment, "author_association") or None)
    if actor.is_bot:
        return _ignore(f"a comment by the bot @{actor.login}")
    target = memento_target(issue)
    if target is None:
        if asks_for_plan(_text(comment, "body")):
            return _plan_request(comment, issue, actor)
        return _ignore(f"a comment on #{issue.get('number')}, which is not a memento issue")
    body = _text(comment, "body")
    if render.is_generated(body):
        return _ignore("a comment memento wrote")
    if not body.strip():
        return _ignore("an empty comment")
    return _comment_request(comment, issue, actor, target)


def _comment_request(
    comment: Mapping[str, Any], issue: Mapping[str, Any], actor: Actor, target: str
) -> Request:
    task = None if target == GLOBAL else target
    source = comment_source(_text(comment, "html_url"), actor.login, actor.association or "NONE")
    base = Request(
        CONTROLS,
        actor=actor,
        comment_id=_int(comment, "id"),
        issue_number=_int(issue, "number"),
    )
    where = f"comment {comment.get('id')} on #{issue.get('number')} by @{actor.login}"
    try:
        controls, tick_after = parse_comment(_text(comment, "body"), task=task, source=source)
    except UserError as error:
        return base._replace(confused=True, reason=f"{where}: {error}")
    what = ", ".join(_control_words(control) for control in controls)
    if tick_after:
        what = f"{what}, then a tick" if what else "a tick"
    return base._replace(controls=controls, tick_after=tick_after, reason=f"{where}: {what}")


def asks_for_plan(body: str) -> bool:
    """A first line ``/memento plan`` (the words alone: the issue's body is the spec)."""
    first = body.strip().split("\n", 1)[0].split()
    return [word.lower() for word in first] == [COMMAND_PREFIX, "plan"]


def _plan_request(comment: Mapping[str, Any], issue: Mapping[str, Any], actor: Actor) -> Request:
    number = _int(issue, "number")
    return Request(
        PLAN,
        actor=actor,
        comment_id=_int(comment, "id"),
        issue_number=number,
        reason=f"comment {comment.get('id')} on #{number} by @{actor.login}: draft a plan",
    )


def comment_source(url: str, login: str, association: str) -> str:
    """The note's ``source``: the same comment delivered twice gives the same text, which
    is how ``notes.has_source`` knows it was applied already."""
    return f"{url} by @{login} ({association})"


def memento_target(issue: Mapping[str, Any]) -> str | None:
    """The task a memento issue is about, ``global`` for the dashboard and the circuit
    breaker's issue, or None when it is not a memento issue.

    A memento issue carries both the hidden marker and the ``memento`` label: anyone can
    write a marker into an issue they open, but only people with triage access can label
    it, so a stranger's issue cannot turn a maintainer's reply into a note for a task.
    """
    if render.LABEL not in _label_names(issue):
        return None
    found = render.read_marker(_text(issue, "body"))
    if found is None:
        return None
    kind, value = found
    return value if kind == render.TASK_KIND and value else GLOBAL


def parse_comment(body: str, *, task: str | None, source: str) -> Parsed:
    """(controls, tick after) from a comment on the issue of ``task`` (None: a global one).

    A first line ``/memento <command> [args]`` is a command (retry, skip, pause, resume,
    stop, tick); the lines after it become a note. Any other comment is a note, the whole
    body, recorded with ``source``. UserError for a command memento does not know or that
    lacks its task.
    """
    text = body.strip()
    if not text or render.is_generated(text):
        return (), False
    first, *later = text.splitlines()
    rest = "\n".join(later)
    words = first.split(None, 2)
    if words[0].lower() != COMMAND_PREFIX:
        return (Control("note", task, text, source),), False
    if len(words) == 1:
        raise UserError(f"`{COMMAND_PREFIX}` needs a command: one of {', '.join(COMMANDS)}")
    command, arguments = words[1].lower(), words[2] if len(words) > 2 else ""
    reader = _COMMENT_COMMANDS.get(command)
    if reader is None:
        raise UserError(
            f"unknown command `{COMMAND_PREFIX} {words[1]}`; use one of {', '.join(COMMANDS)}"
        )
    commanded, tick_after = reader(command, arguments.strip(), task)
    note_target = next((control.task for control in commanded if control.task), task)
    note = (Control("note", note_target, rest.strip()),) if rest.strip() else ()
    # The note first: a retried task's next run should already read it. Every control
    # carries the comment's source, so that none is applied twice.
    controls = tuple(control._replace(source=source) for control in (*note, *commanded))
    return controls, tick_after


CommentCommand = Callable[[str, str, str | None], Parsed]


def _comment_mode(command: str, arguments: str, task: str | None) -> Parsed:
    return (Control(command, None, arguments),), False


def _comment_tick(command: str, arguments: str, task: str | None) -> Parsed:
    return (), True


def _comment_retry(command: str, arguments: str, task: str | None) -> Parsed:
    words = arguments.split()
    if len(words) > 1:
        raise UserError(f"`{COMMAND_PREFIX} retry` takes at most one task ID, like T-201")
    named = words[0] if words else task
    return (Control("retry", _require_task("retry", named)),), False


def _comment_skip(command: str, arguments: str, task: str | None) -> Parsed:
    first, *why = arguments.split(None, 1) or [""]
    if task is None or _NAMED_TASK.fullmatch(first):
        return (Control("skip", _require_task("skip", first or None), "".join(why)),), False
    return (Control("skip", task, arguments),), False


def _comment_architect(command: str, arguments: str, task: str | None) -> Parsed:
    """``/memento revise [why]`` (the architect proposes a revision of the issue's task) and
    ``/memento approve`` (the latest proposal on the issue lands)."""
    if task is None:
        raise UserError(f"`{COMMAND_PREFIX} {command}` works on a blocked task's issue only")
    if command == "approve" and arguments:
        raise UserError(f"`{COMMAND_PREFIX} approve` takes nothing after it")
    return (Control(command, task, arguments),), False


def _comment_approve(command: str, arguments: str, task: str | None) -> Parsed:
    """``/memento approve`` on a blocked task's issue lands the architect's proposal there;
    on any other memento issue it opens the review gate that holds the plan."""
    if task is not None:
        return _comment_architect(command, arguments, task)
    if arguments:
        raise UserError(f"`{COMMAND_PREFIX} approve` takes nothing after it")
    return (Control("approve"),), False


def _comment_plan(command: str, arguments: str, task: str | None) -> Parsed:
    raise UserError(
        f"`{COMMAND_PREFIX} plan` drafts a plan from the body of an issue of yours: comment it "
        "there, not on one of memento's issues"
    )


def _comment_learn(command: str, arguments: str, task: str | None) -> Parsed:
    """``/memento learn decision|preference TOPIC: TEXT``; the kind and the colon are
    checked here, the rest by the memory file when the lesson is recorded."""
    kind, _, rest = arguments.strip().partition(" ")
    key, colon, text = rest.partition(":")
    if kind not in ("decision", "preference") or not colon or not key.strip() or not text.strip():
        raise UserError(
            f"write `{COMMAND_PREFIX} learn decision <topic>: <what was decided>` or "
            f"`{COMMAND_PREFIX} learn preference <category>: <what is preferred>`"
        )
    return (Control("learn", task, arguments.strip()),), False


def _require_task(command: str, task: str | None) -> str:
    if not task:
        raise UserError(
            f"this issue is not about one task; name it: `{COMMAND_PREFIX} {command} T-201`"
        )
    if not values.TASK_ID.fullmatch(task):
        raise UserError(f"{task!r} is not a task ID like T-201")
    return task


_COMMENT_COMMANDS: Mapping[str, CommentCommand] = {
    "retry": _comment_retry,
    "skip": _comment_skip,
    "pause": _comment_mode,
    "resume": _comment_mode,
    "stop": _comment_mode,
    "tick": _comment_tick,
    "learn": _comment_learn,
    "revise": _comment_architect,
    "approve": _comment_approve,
    "plan": _comment_plan,
}


# -- issues (the dashboard's checkboxes) -----------------------------------------------------


def _issues(payload: Mapping[str, Any], inputs: Inputs) -> Request:
    action = _text(payload, "action")
    if action != "edited":
        return _ignore(f"issue {action or 'event'}: only edits of the dashboard are read")
    issue = _mapping(payload, "issue")
    if not _is_dashboard(issue):
        return _ignore(f"an edit of #{issue.get('number')}, which is not the dashboard")
    # An issues event says nothing of the editor's association: the gate asks GitHub.
    actor = actor_of(_mapping(payload, "sender"), None)
    if actor.is_bot:
        return _ignore(f"an edit of the dashboard by the bot @{actor.login}")
    return _dashboard_edit(issue, actor)


def _is_dashboard(issue: Mapping[str, Any]) -> bool:
    marked = render.read_marker(_text(issue, "body")) == (render.DASHBOARD_KIND, None)
    return marked and render.LABEL in _label_names(issue)


def _dashboard_edit(issue: Mapping[str, Any], actor: Actor) -> Request:
    # The sender made the latest edit, not necessarily the one that ticked a box: a box
    # ticked by an earlier edit stays ticked until a run decides it, and that edit's own
    # run may have been dropped by the concurrency group. So the run reads who ticked
    # each box from the issue's history; the event only says that there are some.
    controls, tick_now = render.ticked_controls(_text(issue, "body"))
    if not controls and not tick_now:
        return _ignore("an edit of the dashboard with no box ticked")
    what = ", ".join(_control_words(control) for control in controls)
    if tick_now:
        what = f"{what}, then a tick" if what else "a tick"
    return Request(
        CONTROLS,
        actor=actor,
        issue_number=_int(issue, "number"),
        rerender_dashboard=True,
        reason=f"dashboard #{issue.get('number')} edited by @{actor.login}, boxes ticked: {what}",
    )


# -- people --------------------------------------------------------------------------------


def actor_of(user: Mapping[str, Any], association: str | None) -> Actor:
    login = _text(user, "login")
    is_bot = user.get("type") == "Bot" or login.endswith("[bot]")
    return Actor(login, association.upper() if association else None, is_bot)


def trust(actor: Actor) -> str:
    """UNTRUSTED for a bot; else ASK: the person's permission on the repository decides
    (``permission_trusts``). Their association never does: ``COLLABORATOR`` includes
    read-only collaborators, ``MEMBER`` any member of the organisation, and a member whose
    membership is private (GitHub's default) arrives as ``CONTRIBUTOR`` or ``NONE``."""
    return UNTRUSTED if actor.is_bot else ASK


def permission_trusts(permission: str) -> bool:
    """Whether a collaborator permission (``admin``, ``maintain``, ``write``, ``triage``,
    ``read``, ``none``) may steer memento: only those that can push."""
    return permission.strip().lower() in TRUSTED_PERMISSIONS


# -- reading payloads ------------------------------------------------------------------------


def _mapping(payload: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = payload.get(key)
    return found if isinstance(found, Mapping) else {}


def _text(payload: Mapping[str, Any], key: str) -> str:
    found = payload.get(key)
    return found if isinstance(found, str) else ""


def _label_names(issue: Mapping[str, Any]) -> set[str]:
    labels = issue.get("labels")
    if not isinstance(labels, list):
        return set()
    return {_text(label, "name") for label in labels if isinstance(label, Mapping)}


def _int(payload: Mapping[str, Any], key: str) -> int | None:
    found = payload.get(key)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def _control_words(control: Control) -> str:
    target = (
        f" {control.task}" if control.task else (" (global)" if control.action == "note" else "")
    )
    return f"{control.action}{target}"


def _repository_dispatch(payload: Mapping[str, Any], inputs: Inputs) -> Request:
    """The relay job's hand-over of a comment: only its id, read again from GitHub."""
    kind = _text(payload, "action")
    if kind != RELAY_EVENT:
        return _ignore(f"a repository_dispatch of type {kind or '(none)'}, not {RELAY_EVENT}")
    comment = _int(_mapping(payload, "client_payload"), "comment")
    if comment is None:
        return _ignore("a relayed comment without its id")
    return Request(RELAYED, comment_id=comment, reason=f"comment {comment}, relayed")


_HANDLERS: Mapping[str, Handler] = {
    "repository_dispatch": _repository_dispatch,
    "schedule": _schedule,
    "workflow_dispatch": _dispatch,
    "issue_comment": _issue_comment,
    "issues": _issues,
}
