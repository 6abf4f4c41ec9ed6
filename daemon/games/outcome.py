"""What settlement says about one bet, and the data that drives it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Generic, TypeVar

from daemon.games.odds import Odds


class Result(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"


@dataclass(frozen=True, slots=True)
class PayLine:
    """One row of a pay table. ``keys`` are the predicate's line keys that this row pays."""

    keys: tuple[str, ...]
    label: str
    odds: Odds


Outcome = TypeVar("Outcome")
# A predicate says win/lose/push and, for a win, which line key of the pay table applies.
Verdict = tuple[Result, str | None]


@dataclass(frozen=True)
class BetRule(Generic[Outcome]):
    """A bet as a rule document defines it: its pay table rows and where it is offered."""

    bet: str
    clause: str
    pay_lines: tuple[PayLine, ...]
    layouts: frozenset[str]
    predicate: Callable[[Outcome], Verdict] = field(compare=False, repr=False)

    def pay_line(self, key: str) -> PayLine:
        for line in self.pay_lines:
            if key in line.keys:
                return line
        raise LookupError(f"{self.bet}: no pay line for {key!r}")  # a defect in the data


@dataclass(frozen=True, slots=True)
class BetResult:
    bet: str
    result: Result
    pays: Odds | None  # the odds paid on a win; None on lose and push
    line: str | None  # the pay table row label for a win
    clause: str
    window: str | None = None  # Insurance Plus: the decision point the offer belongs to
    # IP 5.13.1: an offer the Pit made late; the total paid is at most the Original Bet.
    payout_cap: str | None = None

    @property
    def net(self) -> Fraction:
        """Net return on a unit stake."""
        if self.result is Result.WIN:
            assert self.pays is not None
            return self.pays.ratio
        return Fraction(-1) if self.result is Result.LOSE else Fraction(0)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "bet": self.bet,
            "result": self.result.value,
            "pays": str(self.pays) if self.pays else None,
            "line": self.line,
            "clause": self.clause,
        }
        if self.window is not None:
            d["window"] = self.window
        if self.payout_cap is not None:
            d["payout_cap"] = {"limit": "original_bet", "clause": self.payout_cap}
        return d


def settle_rule(rule: BetRule[Outcome], outcome: Outcome) -> BetResult:
    result, key = rule.predicate(outcome)
    if result is Result.WIN:
        assert key is not None
        line = rule.pay_line(key)
        return BetResult(rule.bet, result, line.odds, line.label, rule.clause)
    return BetResult(rule.bet, result, None, None, rule.clause)
