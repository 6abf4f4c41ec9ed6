"""Odds as the documents print them ("12 to 1", "0.95 to 1", "1 to 2")."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Odds:
    """``win`` to ``stake``: a winning unit bet is paid win/stake and keeps its stake."""

    win: str
    stake: str

    @property
    def ratio(self) -> Fraction:
        return Fraction(self.win) / Fraction(self.stake)

    def __str__(self) -> str:
        return f"{self.win}:{self.stake}"


def odds(text: str) -> Odds:
    """Parse "12 to 1" or "12:1"."""
    sep = " to " if " to " in text else ":"
    win, stake = (part.strip() for part in text.split(sep))
    Fraction(win), Fraction(stake)  # fail early on a typo in the data
    return Odds(win, stake)
