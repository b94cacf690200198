"""Comments by people whose association does not start the memento job, served without
letting strangers near its queue.

GitHub keeps one waiting run per concurrency group and cancels the one waiting before it,
so a run started for anybody's comment could push a run that matters out of the queue. The
workflow's ``if:`` therefore starts the memento job only for OWNER, MEMBER and COLLABORATOR.
But an organisation member whose membership is private (GitHub's default) arrives as
``CONTRIBUTOR`` or ``NONE``, and may well have write permission. Their comment starts the
*relay* job instead, in a concurrency group of the comment's own, where it delays nobody:

- ``relay`` (the relay job): ask GitHub for the author's permission; admin, maintain or
  write hands the comment's id to the memento job as a ``repository_dispatch`` event (which
  starts a run even from the workflow's token); anybody else's changes nothing.
- ``unpack`` (the memento job, on that event): read the comment and its issue back from
  GitHub and route them as a delivered comment. The event carries the id alone: whatever
  a person with write access puts in a dispatch of their own, the comment's author is
  still asked for, and its text is still read from GitHub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memento_gh.github import events
from memento_gh.github.reporting import Report

if TYPE_CHECKING:
    from memento_gh.github.sync import GitHub


def relay(
    request: events.Request, github: GitHub, trusts: Callable[[events.Actor], bool]
) -> Report:
    """The relay job: hand a trusted author's comment on to the memento job."""
    if request.kind == events.IGNORE:
        return Report("ignored", (request.reason,))
    if request.actor is None or request.comment_id is None:
        return Report("ignored", ("The relay job hands on comments only.",))
    who = f"@{request.actor.login}"
    if not trusts(request.actor):
        return Report("untrusted", (f"{who} may not steer memento",))
    github.dispatch(events.RELAY_EVENT, {"comment": request.comment_id})
    line = (
        f"{who} may steer memento (their permission says so, whatever their association "
        f"shows): comment {request.comment_id} is handed on to the memento job."
    )
    return Report("relayed", (line,))


def unpack(request: events.Request, github: GitHub, inputs: events.Inputs) -> events.Request:
    """A relayed comment, read back from GitHub and routed as the event GitHub delivered."""
    assert request.comment_id is not None
    comment, issue = github.relayed_comment(request.comment_id)
    payload = {"action": "created", "comment": comment, "issue": issue}
    return events.route("issue_comment", payload, inputs)
