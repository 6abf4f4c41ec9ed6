"""The Baccarat Table of Play.

RWS Tiger Buffalo 3.11-3.12, RWS Insurance Plus 3.13-3.15 and MBS 3.15 print the same
table. It is encoded once here, as data, and tests check it cell by cell against a
literal transcription of each printed table.
"""

from __future__ import annotations

NATURALS = frozenset({8, 9})
PLAYER_DRAWS_ON = frozenset({0, 1, 2, 3, 4, 5})
# Banker's two-card total -> Player third-card values on which the Banker draws.
BANKER_DRAWS_WHEN_PLAYER_THIRD: dict[int, frozenset[int]] = {
    0: frozenset(range(10)),
    1: frozenset(range(10)),
    2: frozenset(range(10)),
    3: frozenset({0, 1, 2, 3, 4, 5, 6, 7, 9}),
    4: frozenset({2, 3, 4, 5, 6, 7}),
    5: frozenset({4, 5, 6, 7}),
    6: frozenset({6, 7}),
    7: frozenset(),
}
# RWS 3.11 / MBS 3.15: when the Player stands, the Banker draws on 0-5 and stands on 6-7.
BANKER_DRAWS_WHEN_PLAYER_STANDS = frozenset({0, 1, 2, 3, 4, 5})


def is_natural(player_total: int, banker_total: int) -> bool:
    return player_total in NATURALS or banker_total in NATURALS


def player_draws(player_total: int, banker_total: int) -> bool:
    return not is_natural(player_total, banker_total) and player_total in PLAYER_DRAWS_ON


def banker_draws(player_total: int, banker_total: int, player_third: int | None) -> bool:
    """Whether the Banker draws, given both two-card totals and the Player's third card value."""
    if is_natural(player_total, banker_total):
        return False
    if player_third is None:
        return banker_total in BANKER_DRAWS_WHEN_PLAYER_STANDS
    return player_third in BANKER_DRAWS_WHEN_PLAYER_THIRD.get(banker_total, frozenset())
