"""Who ticked each dashboard box, from the issue's edit history: given these revisions, these
tickers. Pure: revisions in, ticks out."""

from __future__ import annotations

import pytest

from memento_gh.github import render
from memento_gh.github.boxes import (
    CREATED,
    UNEXPLAINED,
    History,
    Revision,
    Tick,
    decided,
    describe,
    source,
    ticks,
)
from memento_gh.github.events import Actor
from memento_gh.github.render import TICK_BOX, Box

BOT = Actor("github-actions[bot]", None, is_bot=True)
ALICE = Actor("alice", None, is_bot=False)
MALLORY = Actor("mallory", None, is_bot=False)
PAUSE = Box("control", "pause")
RETRY = Box("retry", "T-201")
BOXES = (PAUSE, TICK_BOX, RETRY)
URL = "https://github.com/o/r/issues/3"


def body(*ticked: Box) -> str:
    """A dashboard's controls with ``ticked`` ticked."""
    lines = [render.marker("dashboard"), "### Controls", ""]
    for box in BOXES:
        mark = "x" if box in ticked else " "
        lines.append(f"- [{mark}] {render.marker(box.kind, box.value)} {box.kind} {box.value}")
    return "\n".join(lines) + "\n"


def history(*revisions: Revision, complete: bool = True, now: str | None = None) -> History:
    """The history of an issue whose last revision is the body now (unless ``now``)."""
    last = next((r.body for r in reversed(revisions) if r.body is not None), body())
    return History(now if now is not None else last, BOT, tuple(revisions), complete)


def made(*ticked: Box) -> Revision:
    return Revision("E0", BOT, body(*ticked))


def edit(name: str, editor: Actor | None, *ticked: Box) -> Revision:
    return Revision(name, editor, body(*ticked))


def deleted(name: str, editor: Actor | None) -> Revision:
    return Revision(name, editor, None)


CASES = [
    pytest.param(history(), [], id="nothing ticked"),
    pytest.param(
        History(body(PAUSE), ALICE, (), complete=True),
        [Tick(PAUSE, frozenset({ALICE}), CREATED)],
        id="never edited: the author ticked it",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE)),
        [Tick(PAUSE, frozenset({ALICE}), "E1")],
        id="one edit",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE), edit("E2", MALLORY, PAUSE, RETRY)),
        [Tick(PAUSE, frozenset({ALICE}), "E1"), Tick(RETRY, frozenset({MALLORY}), "E2")],
        id="a later edit keeps the earlier tick its ticker's",
    ),
    pytest.param(
        history(made(), edit("E1", MALLORY, PAUSE), edit("E2", ALICE, PAUSE, TICK_BOX)),
        [Tick(PAUSE, frozenset({MALLORY}), "E1"), Tick(TICK_BOX, frozenset({ALICE}), "E2")],
        id="a trusted edit on top never adopts a stranger's tick",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE), edit("E2", MALLORY), edit("E3", MALLORY, PAUSE)),
        [Tick(PAUSE, frozenset({MALLORY}), "E3")],
        id="unticked and ticked again: the last ticker",
    ),
    pytest.param(
        history(made(), deleted("E1", MALLORY), edit("E2", ALICE, PAUSE)),
        [Tick(PAUSE, frozenset({MALLORY, ALICE}), "E2")],
        id="a deleted revision before the tick: either may have ticked it",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE), deleted("E2", MALLORY), edit("E3", ALICE, PAUSE)),
        [Tick(PAUSE, frozenset({ALICE, MALLORY}), "E3")],
        id="a deleted revision while ticked: it may have unticked and ticked it again",
    ),
    pytest.param(
        history(made(), deleted("E1", MALLORY), now=body(PAUSE)),
        [Tick(PAUSE, frozenset({MALLORY}), "E1")],
        id="the newest revision deleted: it is the body now",
    ),
    pytest.param(
        history(edit("E7", ALICE, PAUSE), complete=False),
        [Tick(PAUSE, frozenset({None, ALICE}), "E7")],
        id="ticked before the revisions read: someone unknown",
    ),
    pytest.param(
        history(edit("E7", ALICE), edit("E8", ALICE, PAUSE), complete=False),
        [Tick(PAUSE, frozenset({ALICE}), "E8")],
        id="ticked within the revisions read",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE), now=body(PAUSE, RETRY)),
        [Tick(PAUSE, frozenset({ALICE}), "E1"), Tick(RETRY, frozenset({None}), UNEXPLAINED)],
        id="ticked in the body now by no revision listed",
    ),
    pytest.param(
        history(made(), edit("E1", None, RETRY)),
        [Tick(RETRY, frozenset({None}), "E1")],
        id="a deleted account",
    ),
    pytest.param(
        history(made(), edit("E1", ALICE, PAUSE), edit("E2", BOT)),
        [],
        id="unticked by memento's rewrite",
    ),
]


@pytest.mark.parametrize(("found", "expected"), CASES)
def test_who_ticked_each_box(found: History, expected: list[Tick]) -> None:
    assert ticks(found) == expected


def test_the_ticks_come_in_body_order() -> None:
    found = history(made(), edit("E1", ALICE, RETRY), edit("E2", ALICE, RETRY, PAUSE))
    assert [tick.box for tick in ticks(found)] == [PAUSE, RETRY]


def test_a_box_in_a_code_block_or_unknown_to_memento_is_no_tick() -> None:
    text = body() + "```\n- [x] <!-- memento:control=pause -->\n```\n"
    text += "- [x] <!-- memento:control=explode -->\n- [x] <!-- memento:retry=../x -->\n"
    assert ticks(history(made(), Revision("E1", MALLORY, text))) == []


def test_a_decision_is_known_again_by_its_source() -> None:
    tick = Tick(RETRY, frozenset({ALICE}), "E1")
    recorded = source(URL, tick)

    assert recorded == f"{URL} box retry=T-201 edit E1 by @alice"
    assert decided({recorded}, URL, tick)
    assert decided({recorded}, URL, tick._replace(tickers=frozenset({ALICE, MALLORY})))
    assert not decided({recorded}, URL, tick._replace(edit="E10"))  # ticked again later
    assert not decided({recorded}, URL, tick._replace(box=PAUSE))
    assert not decided({recorded}, URL + "0", tick)
    assert not decided(set(), URL, tick)


def test_someone_unknown_is_named_so_in_the_source() -> None:
    tick = Tick(PAUSE, frozenset({None, MALLORY}), "E2")
    assert source(URL, tick).endswith(" by @mallory, someone unknown")


@pytest.mark.parametrize(
    ("box", "words"),
    [
        (PAUSE, "the Pause box"),
        (TICK_BOX, "the Run a tick now box"),
        (RETRY, "the Retry T-201 box"),
        (Box("skip", "T-9"), "the Skip T-9 box"),
    ],
)
def test_a_box_in_words(box: Box, words: str) -> None:
    assert describe(box) == words
