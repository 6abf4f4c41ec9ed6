"""The rules engine: pure, synchronous, no I/O.

Upstream consumers may import it as a library. Everything a round result says about
bets and pays comes from here, and every number here comes from a clause of the
approved rule documents in ``shared/rules``.
"""

from daemon.games.errors import RulesError
from daemon.games.registry import GAMES, get_game

__all__ = ["GAMES", "RulesError", "get_game"]
