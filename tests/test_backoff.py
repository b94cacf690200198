"""The one backoff: its window doubles from the base up to the cap, and the jittered wait
stays inside the part of the window it was asked for."""

from __future__ import annotations

import pytest

from memento_gh import backoff


@pytest.mark.parametrize(
    ("attempt", "base", "cap", "expected"),
    [
        (1, 1.0, 20.0, 1.0),
        (2, 1.0, 20.0, 2.0),
        (5, 1.0, 20.0, 16.0),
        (6, 1.0, 20.0, 20.0),
        (0, 0.5, 20.0, 0.5),  # an attempt before the first waits like the first
        (10_000, 0.1, 2.0, 2.0),  # no overflow for a very long run of refusals
        (3, 2.0, float("inf"), 8.0),
    ],
)
def test_the_window_doubles_from_the_base_up_to_the_cap(
    attempt: int, base: float, cap: float, expected: float
) -> None:
    assert backoff.window(attempt, base=base, cap=cap) == expected


@pytest.mark.parametrize(("floor", "low"), [(0.5, 4.0), (0.0, 0.0)])
def test_a_jittered_wait_stays_in_the_asked_part_of_the_window(floor: float, low: float) -> None:
    def lowest(a: float, b: float) -> float:
        return a

    def highest(a: float, b: float) -> float:
        return b

    assert backoff.jittered(4, base=1.0, cap=20.0, floor=floor, draw=lowest) == low
    assert backoff.jittered(4, base=1.0, cap=20.0, floor=floor, draw=highest) == 8.0
    waits = {backoff.jittered(4, base=1.0, cap=20.0, floor=floor) for _ in range(50)}
    assert all(low <= wait <= 8.0 for wait in waits)
    assert len(waits) > 1  # drawn, not fixed: workers refused together part
