"""Who ticked each box of the dashboard, read from the issue's edit history. Pure.

Any run may find a box ticked: the run of the edit that ticked it may have been dropped (the
workflow's concurrency group keeps one waiting run and cancels the one before it), or the
edit may have come while another run worked. The sender of the run's own event says nothing
about those boxes, so a box is never applied on an event's word: GitHub keeps every revision
of an issue's body with the person who made it (GraphQL ``userContentEdits``), and a box
counts as ticked by the editor of the revision that ticked it.

Where the history cannot say (a revision deleted from it, or one older than the revisions
memento read), every person who may have ticked the box is among its ``tickers``, and
``None`` stands for someone unknown: a box is applied only when all of them may steer.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from memento_gh.github.events import Actor
from memento_gh.github.render import Box, ticked_boxes

#: The edit ID of a body nobody has edited since the issue was made.
CREATED = "created"
#: The edit ID of a body no listed revision explains (it changed as memento read it).
UNEXPLAINED = "unexplained"


class Revision(NamedTuple):
    """One revision of the body, as the edit that made it left it."""

    edit: str  # the edit's ID (GitHub's node ID)
    editor: Actor | None  # None: unknown (a deleted account)
    body: str | None  # None: the revision was deleted from the history


class History(NamedTuple):
    """An issue's body now and the revisions that led to it."""

    body: str
    author: Actor | None  # who made the issue (and so its body as created)
    revisions: tuple[Revision, ...]  # oldest first; empty when nobody ever edited it
    complete: bool  # the revisions reach back to the body as created


class Tick(NamedTuple):
    """A box ticked in the body now, and who may have ticked it."""

    box: Box
    tickers: frozenset[Actor | None]  # None: someone memento cannot name
    edit: str  # the edit that ticked it (the last one that may have)


def ticks(history: History) -> list[Tick]:
    """Each box ticked in the body now, in body order, with who ticked it."""
    revisions = list(_known_revisions(history))
    ticked: dict[Box, Tick] = {}
    # Editors of revisions whose text is unknown, since the last revision memento read:
    # any of them may have ticked or unticked any box.
    unread: frozenset[Actor | None] = frozenset() if history.complete else frozenset({None})
    for revision in revisions:
        if revision.body is None:
            unread |= {revision.editor}
            continue
        now: dict[Box, Tick] = {}
        for box in ticked_boxes(revision.body):
            before = ticked.get(box)
            if before is not None and not unread:
                now[box] = before  # still ticked, by whoever ticked it
            elif before is not None:
                tickers = before.tickers | unread | {revision.editor}
                now[box] = Tick(box, tickers, revision.edit)
            else:
                now[box] = Tick(box, unread | {revision.editor}, revision.edit)
        ticked, unread = now, frozenset()
    return [ticked[box] for box in ticked_boxes(history.body)]


def _known_revisions(history: History) -> Sequence[Revision]:
    """The revisions, ending with one that is the body now.

    The newest revision is the body now, even when it was deleted from the history; should
    the body now tick other boxes than the newest revision (it changed while memento read
    it), a last revision by someone unknown explains the difference.
    """
    if not history.revisions:
        return [Revision(CREATED, history.author, history.body)]
    *older, newest = history.revisions
    if newest.body is None:
        newest = newest._replace(body=history.body)
    revisions = [*older, newest]
    if set(ticked_boxes(newest.body)) != set(ticked_boxes(history.body)):
        revisions.append(Revision(UNEXPLAINED, None, history.body))
    return revisions


def source(dashboard_url: str, tick: Tick) -> str:
    """The ``Memento-Source`` of a decision on a box: the same tick, found again by a later
    run (its dashboard edit failed, or another worker decided it first), gives the same
    text up to `` by``, which is how ``decided`` knows it."""
    who = ", ".join(sorted(_name(ticker) for ticker in tick.tickers))
    return f"{_key(dashboard_url, tick)} by {who}"


def decided(seen: Collection[str], dashboard_url: str, tick: Tick) -> bool:
    """Whether a run already applied or refused this tick (``seen``: the branch's
    ``Memento-Source`` trailers)."""
    key = _key(dashboard_url, tick) + " "
    return any(found.startswith(key) for found in seen)


def _key(dashboard_url: str, tick: Tick) -> str:
    return f"{dashboard_url} box {tick.box.kind}={tick.box.value} edit {tick.edit}"


def _name(ticker: Actor | None) -> str:
    return "someone unknown" if ticker is None else f"@{ticker.login}"


def describe(box: Box) -> str:
    """The box in words, for the run's report: ``the Retry T-201 box``."""
    control = box.control
    if control is None:
        return "the Run a tick now box"
    target = f" {control.task}" if control.task else ""
    return f"the {control.action.capitalize()}{target} box"


def refusal(tick: Tick, strangers: Sequence[Actor | None]) -> str:
    """Why a box was refused: who ticked it, who may not steer memento."""
    named = " or ".join(
        "someone GitHub's edit history does not name" if who is None else f"@{who.login}"
        for who in sorted(strangers, key=lambda who: who.login if who else "")
    )
    what = describe(tick.box)
    return f"{what} of the dashboard was ticked by {named}, who may not steer memento"
