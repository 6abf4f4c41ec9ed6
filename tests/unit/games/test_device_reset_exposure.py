"""D16 re-read (issue 23): betting reopened under MBS 5.9 while a card exposed before the
reset stays in the deal (5.2, 5.7.1). The figures the decision quotes are an exact
enumeration here: every deal of an 8-deck shoe with one card of it known."""

from __future__ import annotations

import os
from fractions import Fraction
from itertools import product

import pytest

from daemon.games import get_game, table_of_play
from daemon.games.baccarat import Coup, same_value_pairs
from daemon.games.cards import POINT_VALUE, RANKS, RANKS_OF_VALUE
from daemon.games.decisions import DEVICE_RESET
from daemon.games.settle import settle_coup

MBS = get_game("tiger-baccarat")
DECKS = 8


def _third_cards(pt: int, bt: int, rem: list[int]) -> list[tuple[int | None, int | None, int]]:
    """(Player third, Banker third, ways) by the Table of Play, from what the shoe holds."""
    n = sum(rem)
    if table_of_play.player_draws(pt, bt):
        out: list[tuple[int | None, int | None, int]] = []
        for p3 in (v for v in range(10) if rem[v]):
            if table_of_play.banker_draws(pt, bt, p3):
                out += [(p3, b3, rem[p3] * (rem[b3] - (b3 == p3))) for b3 in range(10)
                        if rem[b3] - (b3 == p3)]
            else:
                out.append((p3, None, rem[p3] * (n - 1)))
        return out
    if table_of_play.banker_draws(pt, bt, None):
        return [(None, b3, rem[b3] * (n - 1)) for b3 in range(10) if rem[b3]]
    return [(None, None, n * (n - 1))]


def edges_knowing(place: int, rank: str) -> dict[str, Fraction]:
    """Each offered wager's house edge (layout A) when card ``place`` (0-3: P1 B1 P2 B2)
    of the deal is known to be ``rank``."""
    ev: dict[str, Fraction] = {}
    total = 0
    for others in product(RANKS, repeat=3):
        ranks = list(others)
        ranks.insert(place, rank)
        left = {r: 4 * DECKS - (r == rank) for r in RANKS}
        ways = 1
        for i, r in enumerate(ranks):
            if i != place:
                ways *= left[r]
                left[r] -= 1
        rem = [sum(left[r] for r in RANKS_OF_VALUE[v]) for v in range(10)]
        v = [POINT_VALUE[r] for r in ranks]
        pp, bp = ranks[0] == ranks[2], ranks[1] == ranks[3]
        flags = (pp, bp, pp and bp and ranks[0] == ranks[1],
                 pp and bp and same_value_pairs(ranks[0], ranks[1]))
        for p3, b3, w in _third_cards((v[0] + v[2]) % 10, (v[1] + v[3]) % 10, rem):
            coup = Coup.from_points([v[0], v[2], *([] if p3 is None else [p3])],
                                    [v[1], v[3], *([] if b3 is None else [b3])], *flags)
            for bet in settle_coup(MBS, "A", coup):
                ev[bet.bet] = ev.get(bet.bet, Fraction(0)) + bet.net * ways * w
            total += ways * w
    return {bet: -e / total for bet, e in ev.items()}


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:.2f}%"


@pytest.mark.parametrize(("place", "rank", "bet"), [(1, "6", "small_tiger"),
                                                    (0, "9", "player")])
def test_mbs_5_9_a_card_exposed_before_the_reset_gives_reopened_wagers_the_edge(
        place: int, rank: str, bet: str) -> None:
    edge = edges_knowing(place, rank)[bet]
    assert edge < 0
    assert _pct(-edge) in DEVICE_RESET.reason


@pytest.mark.soak
@pytest.mark.skipif(not os.environ.get("TABLED_SOAK"), reason="TABLED_SOAK=1: all 52 cases")
def test_mbs_5_9_one_exposed_card_favours_some_wager_in_50_of_52_cases() -> None:
    favoured = sum(1 for place in range(4) for rank in RANKS
                   if min(edges_knowing(place, rank).values()) < 0)
    assert favoured == 50
    assert "50 of the 52 cases" in DEVICE_RESET.reason
