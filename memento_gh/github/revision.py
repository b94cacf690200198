"""The architect's proposal as a comment on a blocked task's issue, and read back from it
when someone approves it. Pure.

The comment shows the diff and says how to approve; the proposed plan itself rides along in
a marker (compressed, base64), so the run that applies an approval needs nothing but the
comment, and applies exactly what people saw."""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Sequence

from memento_gh.github.render import BODY_LIMIT, GENERATED_KIND, escape, marker

REVISION_KIND = "revision"
APPROVE = "/memento approve"
_PAYLOAD = re.compile(r"<!--[ \t]*memento:revision=(?P<value>[A-Za-z0-9_-]+)[ \t]*-->")


def proposal_comment(task: str, diff: str, plan: str, warnings: Sequence[str] = ()) -> str:
    """The comment that proposes ``plan`` for ``task``, with the ``warnings`` a person
    should read before approving it; ValueError when it would not fit."""
    packed = base64.urlsafe_b64encode(zlib.compress(plan.encode("utf-8"), 9)).decode()
    fence = "`" * max(3, _longest_backticks(diff) + 1)
    body = "\n".join(
        [
            marker(GENERATED_KIND),
            marker(REVISION_KIND, packed.rstrip("=")),
            f"**The architect proposes a revision of the plan for {task}.**",
            "",
            f"{fence}diff",
            diff.rstrip("\n"),
            fence,
            "",
            *_warnings_block(warnings),
            f"Reply `{APPROVE}` to apply it (people with write access only). memento checks it "
            "again against the plan as it is then; nothing changes until someone approves.",
        ]
    )
    if len(body) > BODY_LIMIT:
        raise ValueError(
            f"the proposal for {task} is too large for a comment ({len(body):,} characters); "
            "run `memento plan revise` locally"
        )
    return body


def _warnings_block(warnings: Sequence[str]) -> list[str]:
    """What the proposal brings in that a person must weigh: a quoted alert, each warning
    escaped (the architect wrote the plan they quote)."""
    if not warnings:
        return []
    return [
        "> [!WARNING]",
        "> Read this before you approve (memento applies a proposal only when a person does):",
        *(f"> - {escape(warning, 400)}" for warning in warnings),
        "",
    ]


def read_proposal(body: str) -> str | None:
    """The plan a proposal comment carries, or None when it carries none (or a broken one)."""
    found = _PAYLOAD.search(body)
    if found is None:
        return None
    value = found.group("value")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return zlib.decompress(raw).decode("utf-8")
    except (ValueError, zlib.error):
        return None


def latest_proposal(bodies: Sequence[str]) -> str | None:
    """The plan of the newest proposal among ``bodies`` (oldest first)."""
    for body in reversed(bodies):
        plan = read_proposal(body)
        if plan is not None:
            return plan
    return None


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
