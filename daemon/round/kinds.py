"""The kinds of table, by ``GameRules.kind``: everything that differs between a card table
and a dice table outside the rules themselves, in one place.

A game (``daemon/games/``) says which kind of table plays it; its kind says which round
core runs the table, which devices it needs, which config keys and scenario fields apply,
how a settled outcome is written on the command line, and which view the display shows.
The service, the config checker, the command line, the simulators (``hil/``) and the
display ask here instead of testing a game's id or kind themselves, so a new game of an
existing kind touches ``daemon/games/`` only (docs/architecture.md, "To add a game").

Pure data and constructors: no I/O, like the rest of the round core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from daemon.games import GAMES
from daemon.games.cards import parse_cards
from daemon.games.dice_watch import DiceWatchSettings
from daemon.games.errors import UnknownGameError
from daemon.games.model import GameRules
from daemon.games.outcome import BetResult
from daemon.games.settle import settle_cards, settle_throw
from daemon.games.tai_sai import Throw

if TYPE_CHECKING:
    from daemon.round.lifecycle import RoundLifecycle


@dataclass(frozen=True)
class TableSpec:
    """What a table is built from: the config's settings as the round core takes them,
    and the service's clock and round ids (the core owns neither)."""

    table_id: str
    game: GameRules[Any]
    layout: str
    decks: int | None
    clock: Callable[[], float]
    new_round_id: Callable[[], str]
    card_confidence_floor: int
    insurance_offered: bool
    dice_confidence_floor: int
    dice_watch: DiceWatchSettings


@dataclass(frozen=True)
class TableKind:
    name: str  # GameRules.kind
    played_with: str  # "cards" | "dice", as messages say it ("x is played with dice")
    # The devices a table of this kind needs, every one (config: devices.<name>).
    devices: tuple[str, ...]
    # Config keys only a table of this kind takes ("table.<key>", or a whole "[section]").
    options: tuple[str, ...]
    # The display's view of the table's results: "roads" (baccarat roads and the shoe) or
    # "dice" (the dice statistics).
    view: str
    new_table: Callable[[TableSpec], RoundLifecycle]
    # ``tabled rules settle``: the outcome as written on the command line, settled.
    settle: Callable[[GameRules[Any], str, Sequence[str]], list[BetResult]]

    @property
    def dice(self) -> bool:
        """Rounds are thrown (a scenario round gives dice, tumbles, flat), not dealt."""
        return self.played_with == "dice"

    def takes(self, option: str) -> bool:
        """Whether a config key that only some kinds take applies to this kind."""
        return option in self.options or option not in OPTIONS


# The round core's classes are imported when a table is built, not with this module: the
# config checker, the command line and the display read the kinds without loading it.
def _baccarat_table(s: TableSpec) -> RoundLifecycle:
    from daemon.round.baccarat import BaccaratTable  # noqa: PLC0415

    assert s.decks is not None  # the config requires them of a game played with cards
    return BaccaratTable(s.table_id, s.game, s.layout, s.decks, clock=s.clock,
                         new_round_id=s.new_round_id, confidence_floor=s.card_confidence_floor,
                         insurance_offered=s.insurance_offered)


def _dice_table(s: TableSpec) -> RoundLifecycle:
    from daemon.round.tai_sai import TaiSaiTable  # noqa: PLC0415

    return TaiSaiTable(s.table_id, s.game, s.layout, clock=s.clock,
                       new_round_id=s.new_round_id, confidence_floor=s.dice_confidence_floor,
                       dice_watch=s.dice_watch)


def _settle_cards(game: GameRules[Any], layout: str, words: Sequence[str]) -> list[BetResult]:
    return settle_cards(game, layout, parse_cards(list(words)))


def _settle_dice(game: GameRules[Any], layout: str, words: Sequence[str]) -> list[BetResult]:
    return settle_throw(game, layout, Throw.of([int(w) for w in words]))


KINDS: dict[str, TableKind] = {k.name: k for k in (
    TableKind("baccarat", "cards", ("shoe", "shuffler"), (), "roads", _baccarat_table,
              _settle_cards),
    TableKind("dice", "dice", ("tumbler",), ("table.dice_confidence_floor", "dice_watch"),
              "dice", _dice_table, _settle_dice),
)}
OPTIONS = frozenset(o for k in KINDS.values() for o in k.options)


def table_kind(game: GameRules[Any]) -> TableKind:
    try:
        return KINDS[game.kind]
    except KeyError:
        raise UnknownGameError(f"game {game.id!r} is played at a table of kind {game.kind!r}, "
                               f"which tabled does not have (one of {', '.join(KINDS)})"
                               ) from None


def display_view(game_id: str | None) -> str:
    """The view the display shows for a table that names this game. A game the display
    does not know (a newer table's, or none yet) gets the card table's view."""
    game = GAMES.get(game_id or "")
    return (KINDS["baccarat"] if game is None else table_kind(game)).view
