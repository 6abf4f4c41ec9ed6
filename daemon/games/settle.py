"""Settlement of a finished round: every offered bet's result and pays.

The same functions settle live rounds and weight the par sheets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daemon.games import insurance_plus
from daemon.games.baccarat import Coup, coup_of
from daemon.games.cards import Card
from daemon.games.errors import RulesError
from daemon.games.model import GameRules
from daemon.games.outcome import BetResult, settle_rule
from daemon.games.tai_sai import Throw


def settle_coup(game: GameRules[Any], layout: str, coup: Coup, *,
                squeeze_waiver: bool = False, insurance_offered: bool = True,
                late_windows: frozenset[str] = frozenset()) -> list[BetResult]:
    """Every bet the layout offers, then each insurance offer the deal passed through.

    ``squeeze_waiver``: Insurance Plus 3.14, no offers after the Player's third card.
    ``insurance_offered``: False at a private table that declined insurance (4.2.2).
    ``late_windows``: windows the Pit offered late under 5.13.1 (payout capped).
    """
    if game.kind != "baccarat":
        raise RulesError(f"game {game.id!r} is not baccarat")
    results = [settle_rule(rule, coup) for rule in game.offered(layout)]
    if game.has_insurance and insurance_offered:
        results += [insurance_plus.settle_offer(o, coup, late=o.window in late_windows)
                    for o in insurance_plus.offers_for_coup(coup, squeeze_waiver=squeeze_waiver)]
    return results


def settle_cards(game: GameRules[Any], layout: str, cards: Sequence[Card], *,
                 squeeze_waiver: bool = False, insurance_offered: bool = True,
                 late_windows: frozenset[str] = frozenset()) -> list[BetResult]:
    return settle_coup(game, layout, coup_of(cards), squeeze_waiver=squeeze_waiver,
                       insurance_offered=insurance_offered, late_windows=late_windows)


def settle_throw(game: GameRules[Any], layout: str, throw: Throw) -> list[BetResult]:
    if game.kind != "dice":
        raise RulesError(f"game {game.id!r} is not a dice game")
    return [settle_rule(rule, throw) for rule in game.offered(layout)]
