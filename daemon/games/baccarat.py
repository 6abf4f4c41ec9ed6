"""A baccarat deal: deal order, totals, naturals, winner, and the card needed next.

RWS 3.10 / MBS 3.13: the first and third cards are the Player Hand, the second and
fourth the Banker Hand. Further cards follow the Table of Play (table_of_play.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from daemon.games import table_of_play
from daemon.games.cards import Card, point_total
from daemon.games.errors import DealError

PLAYER = "player"
BANKER = "banker"
TIE = "tie"


class NextCard(StrEnum):
    """The card the dealer must draw next; the daemon prompts for it."""

    PLAYER_1 = "player_card_1"
    BANKER_1 = "banker_card_1"
    PLAYER_2 = "player_card_2"
    BANKER_2 = "banker_card_2"
    PLAYER_THIRD = "player_third_card"
    BANKER_THIRD = "banker_third_card"
    NONE = "none"

    @property
    def hand(self) -> str | None:
        return None if self is NextCard.NONE else self.value.split("_")[0]


_INITIAL = (NextCard.PLAYER_1, NextCard.BANKER_1, NextCard.PLAYER_2, NextCard.BANKER_2)


@dataclass(frozen=True, slots=True)
class DealtCard:
    card: Card
    hand: str  # "player" | "banker"
    position: int  # 1..3 within the hand

    def as_dict(self) -> dict[str, str | int]:
        return {"card": self.card.code, "hand": self.hand, "position": self.position}


def same_rank_pair(a: Card, b: Card) -> bool:
    """RWS 1.21/1.33 ("10, 10 or K, K") and MBS 1.1.14 as decided in docs/games.md: same rank."""
    return a.rank == b.rank


def same_value_pairs(player_rank: str, banker_rank: str) -> bool:
    """RWS 1.33 Twin (decision D2): two pairs of the same value as RWS 3.2 defines it.

    A picture card is worth 0 (3.2.3) and a ten its face value 10 (3.2.2), so J-J, Q-Q and
    K-K pairs are of one value, and a pair of tens only matches tens.
    """
    return player_rank == banker_rank or (player_rank in "JQK" and banker_rank in "JQK")


@dataclass(frozen=True, slots=True)
class Coup:
    """The facts of a finished deal that settlement depends on.

    Built from cards by ``coup_of`` for live rounds, and from point values by the par
    sheet; both go through ``Coup.from_points`` so totals are computed in one place.
    """

    player_total: int
    banker_total: int
    player_cards: int
    banker_cards: int
    player_initial: int  # two-card totals, for Insurance Plus windows
    banker_initial: int
    player_pair: bool
    banker_pair: bool
    twin_pair: bool  # both hands paired, and with the same rank (MBS 1.1.14.3)
    twin_value: bool  # both hands paired, the pairs of the same RWS 3.2 value (RWS 1.33)

    @classmethod
    def from_points(cls, player: Sequence[int], banker: Sequence[int],
                    player_pair: bool, banker_pair: bool, twin_pair: bool,
                    twin_value: bool) -> Coup:
        return cls(
            player_total=point_total(list(player)),
            banker_total=point_total(list(banker)),
            player_cards=len(player),
            banker_cards=len(banker),
            player_initial=point_total(list(player[:2])),
            banker_initial=point_total(list(banker[:2])),
            player_pair=player_pair,
            banker_pair=banker_pair,
            twin_pair=twin_pair,
            twin_value=twin_value,
        )

    @property
    def winner(self) -> str:
        if self.player_total > self.banker_total:
            return PLAYER
        if self.banker_total > self.player_total:
            return BANKER
        return TIE

    @property
    def natural(self) -> bool:
        return table_of_play.is_natural(self.player_initial, self.banker_initial)

    @property
    def total_cards(self) -> int:
        return self.player_cards + self.banker_cards


@dataclass(frozen=True, slots=True)
class Deal:
    """Cards in the order they left the shoe, placed by the Table of Play."""

    cards: tuple[DealtCard, ...]
    next_card: NextCard

    @property
    def player(self) -> tuple[Card, ...]:
        return tuple(d.card for d in self.cards if d.hand == PLAYER)

    @property
    def banker(self) -> tuple[Card, ...]:
        return tuple(d.card for d in self.cards if d.hand == BANKER)

    @property
    def complete(self) -> bool:
        return self.next_card is NextCard.NONE

    def totals(self) -> tuple[int, int]:
        return (point_total([c.value for c in self.player]),
                point_total([c.value for c in self.banker]))


def _next_after_initial(player: Sequence[Card], banker: Sequence[Card]) -> NextCard:
    pt = point_total([c.value for c in player[:2]])
    bt = point_total([c.value for c in banker[:2]])
    if len(player) == 2 and len(banker) == 2:
        if table_of_play.player_draws(pt, bt):
            return NextCard.PLAYER_THIRD
        return NextCard.BANKER_THIRD if table_of_play.banker_draws(pt, bt, None) else NextCard.NONE
    if len(player) == 3 and len(banker) == 2:
        drew = table_of_play.banker_draws(pt, bt, player[2].value)
        return NextCard.BANKER_THIRD if drew else NextCard.NONE
    return NextCard.NONE


def deal(cards: Sequence[Card]) -> Deal:
    """Place cards in deal order; raises DealError if the Table of Play needs fewer cards."""
    placed: list[DealtCard] = []
    player: list[Card] = []
    banker: list[Card] = []
    for index, card in enumerate(cards):
        needed = _INITIAL[index] if index < 4 else _next_after_initial(player, banker)
        if needed is NextCard.NONE:
            raise DealError(
                f"card {index + 1} ({card.code}) is not required by the Table of Play: "
                f"the deal was complete after {index} cards"
            )
        hand = player if needed.hand == PLAYER else banker
        hand.append(card)
        placed.append(DealtCard(card, str(needed.hand), len(hand)))
    nxt = _INITIAL[len(placed)] if len(placed) < 4 else _next_after_initial(player, banker)
    return Deal(tuple(placed), nxt)


def coup_of(cards: Sequence[Card]) -> Coup:
    """The facts of a complete deal; raises DealError if cards are missing or in excess."""
    d = deal(cards)
    if not d.complete:
        raise DealError(f"the deal is incomplete: the Table of Play needs the {d.next_card.value}")
    p, b = d.player, d.banker
    player_pair = same_rank_pair(p[0], p[1])
    banker_pair = same_rank_pair(b[0], b[1])
    both = player_pair and banker_pair
    return Coup.from_points(
        [c.value for c in p], [c.value for c in b], player_pair, banker_pair,
        both and p[0].rank == b[0].rank, both and same_value_pairs(p[0].rank, b[0].rank),
    )
