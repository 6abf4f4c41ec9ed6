"""Which offered bets are already decided by a partial deal (RWS 5.4, MBS 5.17, Tai Sai 5.4).

A bet is decided when every way the deal can still go on under the Table of Play gives
it the same result (decision D6). This is what "an outcome has been established" means
after a technical interruption.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from daemon.games import table_of_play
from daemon.games.baccarat import Coup, deal, same_value_pairs
from daemon.games.cards import POINT_VALUE, RANKS, Card
from daemon.games.errors import RulesError
from daemon.games.model import GameRules
from daemon.games.outcome import Result
from daemon.games.tai_sai import Throw


def _completions(ranks: list[str]) -> Iterator[Coup]:
    """Every finished coup reachable from the ranks dealt so far (in deal order)."""
    if len(ranks) < 4:
        for r in RANKS:
            yield from _completions([*ranks, r])
        return
    p = [POINT_VALUE[r] for r in ranks[0:4:2]]
    b = [POINT_VALUE[r] for r in ranks[1:4:2]]
    pp, bp = ranks[0] == ranks[2], ranks[1] == ranks[3]
    twin = pp and bp and ranks[0] == ranks[1]
    twin_value = pp and bp and same_value_pairs(ranks[0], ranks[1])
    later = [POINT_VALUE[r] for r in ranks[4:]]
    pt, bt = sum(p) % 10, sum(b) % 10
    for p3, b3 in _draws(pt, bt, later):
        player = p + ([p3] if p3 is not None else [])
        banker = b + ([b3] if b3 is not None else [])
        yield Coup.from_points(player, banker, pp, bp, twin, twin_value)


def _draws(pt: int, bt: int, later: list[int]) -> Iterator[tuple[int | None, int | None]]:
    values = range(10)
    if table_of_play.player_draws(pt, bt):
        for p3 in ([later[0]] if later else values):
            if table_of_play.banker_draws(pt, bt, p3):
                for b3 in ([later[1]] if len(later) > 1 else values):
                    yield p3, b3
            else:
                yield p3, None
    elif table_of_play.banker_draws(pt, bt, None):
        for b3 in ([later[0]] if later else values):
            yield None, b3
    else:
        yield None, None


def decided_bets(game: GameRules[Any], layout: str, cards: Sequence[Card]) -> dict[str, Result]:
    """Offered baccarat bets whose result no further card can change."""
    deal(cards)  # raises DealError for more cards than the Table of Play allows
    rules = game.offered(layout)
    seen: dict[str, set[Result]] = {r.bet: set() for r in rules}
    open_bets = {r.bet for r in rules}
    for coup in _completions([c.rank for c in cards]):
        for rule in rules:
            if rule.bet in open_bets:
                s = seen[rule.bet]
                s.add(rule.predicate(coup)[0])
                if len(s) > 1:
                    open_bets.discard(rule.bet)
        if not open_bets:
            return {}
    return {bet: next(iter(seen[bet])) for bet in sorted(open_bets)}


def decided_dice_bets(game: GameRules[Any], layout: str, throw: Throw | None
                      ) -> dict[str, Result]:
    """Before the dice rest nothing is decided; once they rest every bet is."""
    if game.kind != "dice":
        raise RulesError(f"game {game.id!r} is not a dice game")
    if throw is None:
        game.check_layout(layout)
        return {}
    return {r.bet: r.predicate(throw)[0] for r in game.offered(layout)}


def outcome_established(decided: dict[str, Result]) -> bool:
    return bool(decided)
