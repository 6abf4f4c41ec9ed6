"""A game declared only in daemon/games/ (registered in GAMES) is offered by the config,
the command line, the scenario loader, the result builder and the display without a change
to any of them (issue 27: adding a game touched 11 files). Two fixture games, one of each
table kind, with facts of their own where the real games' would hide a lookup by id."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from daemon.cli.main import main
from daemon.config import ConfigError, parse_config
from daemon.games import GAMES, tai_sai_open_cover, tiger_baccarat
from daemon.games.dice_watch import DiceWatchSettings
from daemon.mqtt.wire import result
from daemon.results import RoundContext, void_result
from daemon.round.kinds import TableSpec, display_view, table_kind
from hil.scenario import ScenarioError, parse_scenario
from tests.keys import commands, signing

CARDS = dataclasses.replace(tiger_baccarat.GAME, id="fixture-cards", sim_layout="E",
                            void_returns_clause="9.9")
DICE = dataclasses.replace(tai_sai_open_cover.GAME, id="fixture-dice", sim_layout="C")


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for game in (CARDS, DICE):
        monkeypatch.setitem(GAMES, game.id, game)
    yield


def config(table: dict[str, Any], devices: dict[str, Any]) -> dict[str, Any]:
    return {"table": {"id": "fx-1", **table}, "devices": devices,
            "broker": {"url": "mqtt://127.0.0.1:1883"}, "journal": {"path": "/tmp/j.db"},
            "signing": signing(), "commands": commands()}


SHOE: dict[str, Any] = {"shoe": "serial:///dev/tabled/shoe?baud=115200",
        "shuffler": "usb://1d50:6178?serial=SF0001",
        "serials": {"shoe": "SH0001", "shuffler": "SF0001"}}
TUMBLER: dict[str, Any] = {"tumbler": "serial:///dev/tabled/tumbler?baud=115200",
           "serials": {"tumbler": "TU0001"}}


def test_the_config_takes_each_new_game_with_its_kinds_devices_and_keys() -> None:
    cfg = parse_config(config({"game": "fixture-cards", "layout": "E", "decks": 6}, SHOE))
    assert (cfg.game, cfg.decks, set(cfg.devices)) == ("fixture-cards", 6, {"shoe",
                                                                              "shuffler"})
    dice = parse_config(config({"game": "fixture-dice", "layout": "C",
                                "dice_confidence_floor": 95}, TUMBLER))
    assert dice.rules.dice_confidence_floor == 95
    with pytest.raises(ConfigError) as err:
        parse_config(config({"game": "fixture-dice", "layout": "C", "decks": 8}, SHOE))
    assert err.value.problems == [
        "table.decks: fixture-dice is played with dice; remove this key",
        "devices.tumbler: missing; fixture-dice needs tumbler",
        "devices.shoe: fixture-dice does not use a shoe",
        "devices.shuffler: fixture-dice does not use a shuffler"]


def test_the_command_line_offers_and_settles_each_new_game(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # each option's help on one line
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    helps = capsys.readouterr().out
    assert "tiger-baccarat, tai-sai-open-cover, fixture-cards or fixture-dice" in helps
    assert "E for fixture-cards, C for fixture-dice)" in helps
    assert main(["rules", "settle", "--game", "fixture-dice", "--layout", "C", "6", "6",
                 "6"]) == 0
    assert "triple_6" in {r["bet"] for r in json.loads(capsys.readouterr().out)
                          if r["result"] == "win"}
    # simulate: the game's layout and a shoe by default, refused decks for dice; each
    # stops at the next check (--rounds 0), before anything starts
    assert main(["simulate", "--game", "fixture-cards", "--rounds", "0"]) == 2
    assert "--rounds 0" in capsys.readouterr().err
    assert main(["simulate", "--game", "fixture-dice", "--decks", "8"]) == 2
    assert "--decks: fixture-dice is played with dice" in capsys.readouterr().err


def test_the_scenario_loader_reads_each_new_game_by_its_kind() -> None:
    dice = parse_scenario({"table": {"game": "fixture-dice", "layout": "C"},
                           "rounds": [{"dice": [3, 3, 5]}], "dice_watch": {"window": 200}})
    assert dice.dice and dice.rounds[0].dice == (3, 3, 5) and dice.decks is None
    cards = parse_scenario({"table": {"game": "fixture-cards", "layout": "E", "decks": 6},
                            "rounds": [{"cards": ["9H", "KS", "TD", "2C"]}]})
    assert not cards.dice and cards.decks == 6
    with pytest.raises(ScenarioError, match="only for a game played with dice"):
        parse_scenario({"table": {"game": "fixture-cards", "layout": "E", "decks": 6},
                        "rounds": [{"cards": ["9H"]}], "tumbler": {"loaded": {}}})


def test_a_void_round_of_a_new_game_returns_bets_under_its_own_clause() -> None:
    ctx = RoundContext("fx-1", CARDS, "E", None, None, 1_764_000_000.0, None)
    payload = result.payload(void_result(ctx, CARDS.irregularity("not_shuffled"),
                                         1_764_000_001.0))
    assert {b["clause"] for b in payload["bets"]} == {"9.9"}


def test_the_service_builds_and_the_display_shows_each_new_game_by_its_kind() -> None:
    table = table_kind(DICE).new_table(TableSpec(
        "fx-1", DICE, "C", None, lambda: 0.0, lambda: "r-1", 80, True, 90,
        DiceWatchSettings()))
    assert type(table).__name__ == "TaiSaiTable" and table.game is DICE
    assert display_view("fixture-dice") == "dice" and display_view("fixture-cards") == "roads"
