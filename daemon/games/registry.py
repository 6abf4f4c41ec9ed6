"""The four approved games by their public id."""

from __future__ import annotations

from typing import Any

from daemon.games import (
    tai_sai_open_cover,
    tiger_baccarat,
    tiger_buffalo,
    tiger_buffalo_insurance_plus,
)
from daemon.games.errors import UnknownGameError
from daemon.games.model import GameRules

GAMES: dict[str, GameRules[Any]] = {
    g.id: g
    for g in (
        tiger_buffalo.GAME,
        tiger_buffalo_insurance_plus.GAME,
        tiger_baccarat.GAME,
        tai_sai_open_cover.GAME,
    )
}

# The game ``tabled simulate`` plays unless told.
SIMULATED = tiger_buffalo.GAME.id


def get_game(game_id: str) -> GameRules[Any]:
    try:
        return GAMES[game_id]
    except KeyError:
        raise UnknownGameError(
            f"unknown game {game_id!r}; the approved games are {', '.join(GAMES)}"
        ) from None
