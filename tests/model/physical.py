"""The physical table: what really happened, kept apart from anything the core was told.

The shoe holds a certified order; every card that leaves it has a true draw number (its
place in that order). A round's deal is the true draw numbers the dealer put on the
table, in order. Cards that left the shoe while no deal took them wait beside the shoe
and are the next deal's first cards, in order (RWS 5.8). The dealer follows the Table of
Play on the true cards: ``daemon.games.baccarat.deal``, the pure rules engine, is the
only part of the daemon used to say what is true.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from daemon.games.baccarat import DealtCard, deal
from daemon.games.cards import parse_card
from daemon.games.errors import DealError
from firmware_protocols import shuffler as fp

DECKS = 8
DECK_SET = 0xC0FFEE


def placed(codes: list[str]) -> list[DealtCard]:
    """The true cards as the Table of Play places them (hand and position)."""
    return list(deal([parse_card(c) for c in codes]).cards)


def wants_more(codes: list[str]) -> bool:
    """Whether the Table of Play wants another card after these."""
    return not deal([parse_card(c) for c in codes]).complete


def takes(codes: list[str]) -> bool:
    """Whether the Table of Play takes all of these cards, in this order."""
    try:
        deal([parse_card(c) for c in codes])
    except DealError:
        return False
    return True


@dataclass
class PhysicalShoe:
    """A certified shuffle loaded into the shoe; ``taken`` cards have left it."""

    shuffle_id: int
    order: list[str]
    nonce: bytes
    taken: int = 0

    @classmethod
    def shuffled(cls, shuffle_id: int, rng: random.Random) -> PhysicalShoe:
        order = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        rng.shuffle(order)
        return cls(shuffle_id, order, rng.randbytes(16))

    def complete_message(self) -> fp.ShuffleComplete:
        return fp.ShuffleComplete(self.shuffle_id, DECKS, fp.inventory_of(self.order), 0,
                                  True, fp.commitment(self.shuffle_id, self.nonce, self.order))

    def reveal(self) -> list[fp.OrderChunk]:
        """The shuffler's answer to request_order: the order, 100 cards a chunk."""
        return [fp.OrderChunk(self.shuffle_id, i, len(self.order), self.nonce,
                              tuple(self.order[i:i + 100]))
                for i in range(0, len(self.order), 100)]

    def take(self) -> int:
        """One card leaves the shoe: its true draw number."""
        self.taken += 1
        return self.taken

    def card(self, draw_no: int) -> str:
        return self.order[draw_no - 1]

    @property
    def remaining(self) -> int:
        return len(self.order) - self.taken


@dataclass
class PhysicalRound:
    """One round as it happened at the table."""

    round_id: str
    draws: list[int] = field(default_factory=list)  # true draw numbers, in deal order
    faults: list[str] = field(default_factory=list)  # what went wrong while it was played
    dealing: bool = False  # "No more bets" was called

    @property
    def clean(self) -> bool:
        return not self.faults


@dataclass
class PhysicalTable:
    shoe: PhysicalShoe | None = None
    round: PhysicalRound | None = None
    carried: list[int] = field(default_factory=list)  # RWS 5.8: the next deal's first cards
    heard: set[tuple[int, int]] = field(default_factory=set)  # (shuffle, draw) the core heard of

    def codes(self, draws: list[int]) -> list[str]:
        assert self.shoe is not None
        return [self.shoe.card(n) for n in draws]

    def deal_codes(self) -> list[str]:
        return self.codes(self.round.draws) if self.round is not None else []

    def needs_card(self) -> bool:
        """The round is being dealt and the Table of Play wants another true card."""
        return self.round is not None and self.round.dealing and wants_more(self.deal_codes())

    def close_betting(self) -> None:
        """"No more bets": cards waiting beside the shoe are dealt first (RWS 5.8)."""
        assert self.round is not None
        self.round.dealing = True
        while self.carried and wants_more(self.deal_codes()):
            self.round.draws.append(self.carried.pop(0))

    def heard_in_deal(self) -> int:
        """How many cards of the deal the core was told of, in any form."""
        if self.round is None or self.shoe is None:
            return 0
        sid = self.shoe.shuffle_id
        return sum((sid, n) in self.heard for n in self.round.draws)
