"""Every body memento writes to GitHub, cut to fit. GitHub refuses an issue, comment or
pull-request body over 65,536 characters (422 "Body is too long"); one report says it counts
bytes, so the cut counts UTF-8 bytes, the safe side. A cut body ends on a whole line, closes
the code fence and the ``<details>`` it was in, and points to where the whole text is (the
run's page, whose job log and logs artifact hold it). Pure.
"""

from __future__ import annotations

import re

#: GitHub's limit on a body, in characters; counted here in bytes.
LIMIT = 65536
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def fit(body: str, where: str | None, limit: int = LIMIT) -> str:
    """``body`` as it is when it fits in ``limit`` bytes; else its beginning, closed, with a
    line saying it was cut and where the whole text is (``where``: the run's URL)."""
    if len(body.encode("utf-8")) <= limit:
        return body
    pointer = f": the whole text is in [the run's logs]({where})" if where else ""
    note = f"\n\n… cut to fit GitHub's limit of {LIMIT:,} characters{pointer}.\n"
    room = max(limit - len(note.encode("utf-8")) - 64, 0)  # 64: what the closing lines take
    kept = body.encode("utf-8")[:room].decode("utf-8", "ignore")
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]  # a whole line: no half link or half entity
    return kept + _closing(kept) + note


def _closing(text: str) -> str:
    """What closes the code fence and the ``<details>`` blocks ``text`` leaves open."""
    fence: str | None = None
    details = 0
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence is None and found:
            fence = found.group(1)
        elif fence is not None and found and found.group(1).startswith(fence[0] * len(fence)):
            fence = None
        elif fence is None:
            details += line.count("<details>") - line.count("</details>")
    closing = f"\n{fence}" if fence else ""
    return closing + "\n\n</details>" * max(details, 0)
