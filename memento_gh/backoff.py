"""How long to wait before trying again: the one exponential backoff behind every retry loop
in memento (a refused push, a busy API, an idle worker of a pool). Pure but for the random
draw, which the caller may pass in."""

from __future__ import annotations

import random
from collections.abc import Callable

#: Doublings beyond this change nothing but could overflow a float.
MAX_DOUBLINGS = 64


def window(attempt: int, *, base: float, cap: float) -> float:
    """The longest wait after failed attempt ``attempt`` (1, 2, ...): ``base``, doubled for
    each attempt after the first, at most ``cap``."""
    doublings = min(max(attempt - 1, 0), MAX_DOUBLINGS)
    return min(cap, base * 2.0**doublings)


def jittered(
    attempt: int,
    *,
    base: float,
    cap: float,
    floor: float = 0.5,
    draw: Callable[[float, float], float] = random.uniform,
) -> float:
    """A wait drawn between ``floor`` times the window and the whole window. The default,
    the upper half, parts workers that were refused together and keeps any from retrying at
    once; ``floor=0`` spreads the waits over the whole window, from nearly nothing."""
    ceiling = window(attempt, base=base, cap=cap)
    return ceiling * floor + draw(0.0, ceiling * (1.0 - floor))
