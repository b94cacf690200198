"""Spend as the plan keeps it: the engine's ledger of what the agent's runs cost.

Three values, each written by the engine alone, each a list of parts after its key:

    - spend_total: $0.0247, 3710 in, 185 out          (Meta: every run so far)
    - spend_day: 2026-12-01, $0.0247, 3710 in, 1 tick  (Meta: the UTC day's runs)
    - spend: $0.0247, 3710 in, 185 out                 (a task: its runs so far)

``$`` is USD, left out while no run reported a price (codex and gemini report tokens only);
``in`` and ``out`` are tokens, every input token the model read (cached or not) and every
token it wrote; ``ticks`` counts the day's ticks that ran a task. Sums are exact: the USD
is a decimal, never a float. Pure: no clock, no disk.
"""

# No `from __future__ import annotations` in this module: typing.NamedTuple compiles each
# annotation given as a string when it makes the class, a cost every start of `memento`.

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation, localcontext
from typing import NamedTuple

_PART = re.compile(r"(?P<count>\d+)\s+(?P<unit>in|out|ticks?)")
_USD = re.compile(r"\$(?P<usd>\d+(?:\.\d+)?)")
SHAPE = "write it as `$0.25, 1200 in, 300 out` ($ is USD; in and out are tokens)"


class Spend(NamedTuple):
    """USD (None: no run reported a price) and tokens in and out."""

    usd: Decimal | None = None
    tokens_in: int = 0
    tokens_out: int = 0

    def __add__(self, other: object) -> "Spend":
        if not isinstance(other, Spend):
            return NotImplemented
        usd = (
            None
            if self.usd is None and other.usd is None
            else ((self.usd or Decimal(0)) + (other.usd or Decimal(0)))
        )
        return Spend(usd, self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out)

    @property
    def empty(self) -> bool:
        return self.usd is None and not self.tokens_in and not self.tokens_out

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def render(self) -> str:
        parts = [] if self.usd is None else [f"${format_usd(self.usd)}"]
        return ", ".join([*parts, f"{self.tokens_in} in", f"{self.tokens_out} out"])

    def as_json(self) -> dict[str, object]:
        return {
            "usd": None if self.usd is None else float(self.usd),
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
        }


class DaySpend(NamedTuple):
    """One UTC day's spend and the ticks that ran a task on it."""

    day: date | None = None
    spend: Spend = Spend()
    ticks: int = 0

    def on(self, today: date) -> "DaySpend":
        """This day's counter as of ``today``: a new day starts at zero."""
        return self if self.day == today else DaySpend(today)

    def render(self) -> str:
        """``2026-12-01, $0.25, 1200 in, 300 out, 2 ticks``; a day of agents that report
        nothing is ``2026-12-01, 2 ticks``, short enough for the Meta's comment column."""
        day = self.day.isoformat() if self.day else ""
        spent = [] if self.spend.empty else [self.spend.render()]
        ticks = f"{self.ticks} tick{'' if self.ticks == 1 else 's'}"
        return ", ".join([day, *spent, ticks])


def format_usd(amount: Decimal) -> str:
    """At least two decimals, at most six, no trailing zeros beyond two: ``0.25``, ``0.0247``.
    Any finite amount (a plan may hold a large one): rounded with the digits it needs."""
    with localcontext() as context:
        context.prec = max(context.prec, amount.adjusted() + 8)
        text = f"{amount.quantize(Decimal('0.000001')):f}"
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents.rstrip('0').ljust(2, '0')}"


def parse_spend(raw: str) -> Spend:
    spend, extra = _parts(raw)
    if extra:
        raise ValueError(f"{extra[0]!r} is not part of a spend; {SHAPE}")
    return spend


#: A budget key's value for "no budget", and the day counter's before any run.
NONE = "none"


def parse_day(raw: str) -> DaySpend:
    if raw.strip().lower() == NONE:
        return DaySpend()
    first, _, rest = raw.strip().partition(",")
    try:
        day = date.fromisoformat(first.strip())
    except ValueError:
        raise ValueError(
            f"{first.strip()!r} is not a date; write the UTC day first: `2026-12-01, $0.25, "
            "1200 in, 300 out, 2 ticks`"
        ) from None
    spend, extra = _parts(rest)
    ticks = 0
    for part in extra:
        found = _PART.fullmatch(part)
        if found is None or not found["unit"].startswith("tick"):
            raise ValueError(f"{part!r} is not part of a day's spend; {SHAPE}, then `2 ticks`")
        ticks = int(found["count"])
    return DaySpend(day, spend, ticks)


def _parts(raw: str) -> tuple[Spend, list[str]]:
    """The spend the parts name, and the parts that are not USD, in or out."""
    usd: Decimal | None = None
    counts = {"in": 0, "out": 0}
    extra: list[str] = []
    for part in (piece.strip() for piece in raw.split(",")):
        if not part:
            continue
        money = _USD.fullmatch(part)
        count = _PART.fullmatch(part)
        if money is not None:
            try:
                usd = Decimal(money["usd"])
            except InvalidOperation:  # pragma: no cover (the pattern admits decimals only)
                raise ValueError(f"{part!r} is not an amount; {SHAPE}") from None
        elif count is not None and count["unit"] in counts:
            counts[count["unit"]] = int(count["count"])
        else:
            extra.append(part)
    return Spend(usd, counts["in"], counts["out"]), extra


def parse_usd(raw: str) -> Decimal | None:
    """A budget in USD: ``5``, ``5.00`` or ``$5``, more than zero; ``none`` for no budget."""
    if raw.strip().lower() == NONE:
        return None
    text = raw.strip().removeprefix("$")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise ValueError(
            f"{raw.strip()!r} is not an amount in USD; write e.g. 5.00, or none"
        ) from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"{raw.strip()!r} must be more than 0 USD; write e.g. 5.00")
    return amount


def parse_limit(raw: str) -> int | None:
    """A count budget (tokens, ticks): a whole number above zero, or ``none``."""
    if raw.strip().lower() == NONE:
        return None
    text = raw.strip().replace("_", "")
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(
            f"{raw.strip()!r} is not a whole number above 0; write e.g. 2000000, or none"
        )
    return int(text)


def of_cost(cost: Mapping[str, object] | None) -> Spend:
    """The spend of one agent run from its cost report (``cost_reports.parse_cost``)."""
    if not cost:
        return Spend()
    usd = cost.get("cost_usd")
    tokens_in, tokens_out = cost.get("input_tokens"), cost.get("output_tokens")
    price: Decimal | None = None
    if isinstance(usd, int | float) and not isinstance(usd, bool) and math.isfinite(usd):
        # The report is the agent's own output: a negative price must not hide spend.
        price = Decimal(str(max(float(usd), 0.0)))
    return Spend(
        price,
        tokens_in if isinstance(tokens_in, int) and tokens_in > 0 else 0,
        tokens_out if isinstance(tokens_out, int) and tokens_out > 0 else 0,
    )


def of_costs(costs: Iterable[Mapping[str, object] | None]) -> Spend:
    """The spend of several agent runs."""
    total = Spend()
    for cost in costs:
        total += of_cost(cost)
    return total
