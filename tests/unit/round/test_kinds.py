"""The table kinds (daemon/round/kinds.py): every game has one, and a table of each game
is built through it, with the round core and the settings its kind uses."""

from __future__ import annotations

import itertools

import pytest

from daemon.games import GAMES, get_game
from daemon.games.dice_watch import DiceWatchSettings
from daemon.games.errors import RulesError
from daemon.round.kinds import KINDS, OPTIONS, TableSpec, display_view, table_kind


def spec(game_id: str, decks: int | None) -> TableSpec:
    ids = itertools.count(1)
    game = get_game(game_id)
    return TableSpec("t-1", game, game.simulated_layout(), decks, lambda: 1_764_000_000.0,
                     lambda: f"r-{next(ids)}", 77, False, 66, DiceWatchSettings(window=500))


@pytest.mark.parametrize("game_id", list(GAMES))
def test_every_game_is_played_at_a_table_of_a_known_kind(game_id: str) -> None:
    game = get_game(game_id)
    kind = table_kind(game)
    assert kind is KINDS[game.kind]
    # A game with a deck range is dealt from a shoe; one without is thrown.
    assert kind.dice is (game.decks is None)


def test_a_card_table_is_built_with_its_decks_floor_and_insurance() -> None:
    table = table_kind(get_game("tiger-buffalo-insurance-plus")).new_table(
        spec("tiger-buffalo-insurance-plus", 6))
    assert type(table).__name__ == "BaccaratTable"
    assert (table.decks, table.confidence_floor, table.insurance_offered) == (6, 77, False)  # type: ignore[attr-defined]
    assert table.round is None and table.state == "idle"


def test_a_dice_table_is_built_with_its_floor_and_watch() -> None:
    table = table_kind(get_game("tai-sai-open-cover")).new_table(spec("tai-sai-open-cover",
                                                                      None))
    assert type(table).__name__ == "TaiSaiTable"
    assert table.confidence_floor == 66  # type: ignore[attr-defined]
    assert table.watch.settings.window == 500  # type: ignore[attr-defined]


def test_dice_only_options_are_refused_at_a_card_table() -> None:
    cards, dice = KINDS["baccarat"], KINDS["dice"]
    assert {"table.dice_confidence_floor", "dice_watch"} == OPTIONS
    assert not cards.takes("dice_watch") and dice.takes("dice_watch")
    assert cards.takes("table.card_confidence_floor") and dice.takes("table.layout")


def test_rules_settle_reads_the_outcome_as_its_kind_writes_it() -> None:
    dice = get_game("tai-sai-open-cover")
    thrown = table_kind(dice).settle(dice, "E", ["6", "6", "6"])
    assert {r.bet for r in thrown if r.result.value == "win"} == {"single_6", "any_triple",
                                                                  "triple_6"}
    cards = get_game("tiger-baccarat")
    dealt = table_kind(cards).settle(cards, "A", ["9H", "KS", "TD", "2C"])
    assert [r.result.value for r in dealt if r.bet == "player"] == ["win"]
    with pytest.raises(RulesError):
        table_kind(cards).settle(cards, "A", ["6", "6", "6"])


def test_the_display_shows_dice_for_a_dice_game_and_the_card_view_otherwise() -> None:
    assert display_view("tai-sai-open-cover") == "dice"
    assert display_view("tiger-baccarat") == "roads"
    assert display_view("a-game-of-a-newer-table") == "roads"
    assert display_view(None) == "roads"
