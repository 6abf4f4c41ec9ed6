"""Small helpers shared by the rules tests."""

from __future__ import annotations

from daemon.games import get_game
from daemon.games.cards import parse_cards
from daemon.games.outcome import BetResult
from daemon.games.settle import settle_cards

# One card per point value, for building deals from totals.
CARD_OF_VALUE = {0: "KC", 1: "AC", 2: "2C", 3: "3C", 4: "4C", 5: "5C", 6: "6C", 7: "7C",
                 8: "8C", 9: "9C"}


def settle(game: str, layout: str, cards: str, *, squeeze_waiver: bool = False,
           insurance_offered: bool = True) -> dict[str, BetResult]:
    """Settle a deal given as 'P1 B1 P2 B2 [third cards]'; bets keyed by name (and window)."""
    results = settle_cards(get_game(game), layout, parse_cards(cards.split()),
                           squeeze_waiver=squeeze_waiver, insurance_offered=insurance_offered)
    return {(r.bet if r.window is None else f"{r.bet}@{r.window}"): r for r in results}


def outcome(r: BetResult) -> str:
    """'win 12:1', 'lose' or 'push'."""
    return f"win {r.pays}" if r.pays else r.result.value
