"""Playing cards as the shoe reports them: rank + suit codes such as ``TD`` or ``KS``."""

from __future__ import annotations

from dataclasses import dataclass

from daemon.games.errors import CardCodeError

RANKS = "A23456789TJQK"
SUITS = "SHDC"

# RWS 3.2 / MBS 3.3: Ace 1, two to nine face value, ten and pictures 0. RWS 3.2.2 gives
# the ten its face value 10; every total is taken modulo 10 (RWS 1.23, MBS 3.4.2), so 10
# and 0 give the same Point Total and the same Table of Play column. We store 0 so a
# card's value is also its Table of Play column.
POINT_VALUE: dict[str, int] = {
    "A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
    "T": 0, "J": 0, "Q": 0, "K": 0,
}

# Ranks that share one point value. Only value 0 has more than one rank; pair bets
# need the rank, everything else only the value.
RANKS_OF_VALUE: dict[int, str] = {v: "".join(r for r in RANKS if POINT_VALUE[r] == v)
                                  for v in range(10)}


@dataclass(frozen=True, slots=True)
class Card:
    rank: str
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS or len(self.rank) != 1:
            raise CardCodeError(f"card rank {self.rank!r} is not one of {' '.join(RANKS)}")
        if self.suit not in SUITS or len(self.suit) != 1:
            raise CardCodeError(f"card suit {self.suit!r} is not one of {' '.join(SUITS)}")

    @property
    def code(self) -> str:
        return self.rank + self.suit

    @property
    def value(self) -> int:
        return POINT_VALUE[self.rank]

    def __str__(self) -> str:
        return self.code


def parse_card(code: str) -> Card:
    """Parse ``"TD"``; raises CardCodeError naming what is wrong."""
    if not isinstance(code, str):
        raise CardCodeError(f"card code must be a string, got {type(code).__name__}")
    if len(code) != 2:
        raise CardCodeError(f"card code {code!r} must be two characters: rank then suit")
    return Card(code[0].upper(), code[1].upper())


def parse_cards(codes: list[str] | tuple[str, ...]) -> tuple[Card, ...]:
    return tuple(parse_card(c) for c in codes)


def point_total(values: tuple[int, ...] | list[int]) -> int:
    """RWS 1.23 / MBS 3.4: the right digit of the summed point values."""
    return sum(values) % 10
