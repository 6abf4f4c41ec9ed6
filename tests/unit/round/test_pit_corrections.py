"""Pit corrections of settled rounds: Tai Sai 5.6 ("all affected Rounds of play shall be
Voided") reaches back past the round in play; the baccarat documents say earlier
outcomes stand (RWS 5.6, MBS 5.1.2), so there is nothing to correct there."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from daemon.mqtt.wire import results_payload
from daemon.round.effects import Alert, CommandRefusedError, RoundResult
from daemon.round.recovery import restore
from daemon.round.tai_sai import TaiSaiTable
from daemon.store.journal import Journal
from tests.keys import sealed
from tests.unit.round.tables import Table
from tests.unit.round.tai_sai_tables import ARM, settle, table, throw

SCHEMA = json.loads((files("daemon.mqtt") / "schemas" / "correction.schema.json").read_text())


def play(t: TaiSaiTable, dice: tuple[int, int, int]) -> list[Any]:
    out: list[Any] = t.open_betting() + t.close_betting() + t.command_answered("tumbler", ARM)
    return out + throw(t, 1, 2, 3) + settle(t, dice=dice)


def test_tai_sai_5_6_damaged_dice_void_an_already_published_round() -> None:
    t = table()
    play(t, (1, 2, 3))
    play(t, (4, 5, 6))
    out = t.void_settled_round("sup-3", "r1", "die 2 chipped since round 1")
    [corr] = [e for e in out if isinstance(e, RoundResult)]
    assert corr.round_id == "r1/correction"
    p = results_payload(corr.facts)
    assert (p["type"], p["corrects"], p["status"]) == ("correction", "r1", "void")
    assert (p["void_reason"]["code"], p["void_reason"]["clause"]) == ("damaged_dice", "5.6")
    assert {b["result"] for b in p["bets"]} == {"push"} and p["by"] == "sup-3"
    jsonschema.validate(sealed({**p, "round_id": corr.round_id, "seq": 3}), SCHEMA)
    assert [(a.code, a.round_id) for a in out if isinstance(a, Alert)] == [
        ("damaged_dice", "r1")]
    assert t.state == "idle"  # the table's own state is untouched


def test_tai_sai_5_6_a_round_is_corrected_once_and_only_if_valid_and_known() -> None:
    t = table()
    play(t, (1, 2, 3))
    t.void_settled_round("sup-3", "r1", "damaged")
    with pytest.raises(CommandRefusedError, match="already void"):
        t.void_settled_round("sup-3", "r1", "damaged")
    with pytest.raises(CommandRefusedError, match="no published result"):
        t.void_settled_round("sup-3", "r9", "damaged")
    with pytest.raises(CommandRefusedError, match="only under damaged_dice"):
        t.void_settled_round("sup-3", "r1", "damaged", "unresolved_irregularity")
    t.open_betting()
    with pytest.raises(CommandRefusedError, match="in play: use void_round"):
        t.void_settled_round("sup-3", "r2", "damaged")


def test_tai_sai_5_6_a_void_round_needs_no_correction() -> None:
    t = table()
    t.open_betting()
    t.close_betting()
    t.void_round("camera", "sup-3")
    with pytest.raises(CommandRefusedError, match="already void"):
        t.void_settled_round("sup-3", "r1", "damaged")


@pytest.mark.parametrize(("game", "clause"), [("tiger-buffalo", "P"),
                                              ("tiger-baccarat", "A")])
def test_rws_5_6_and_mbs_5_1_2_earlier_outcomes_stand(game: str, clause: str) -> None:
    t = Table(game, clause, top=["9H", "KS", "TD", "2C"])
    t.t.open_betting()
    t.t.close_betting()
    for _ in range(4):
        t.draw()
    with pytest.raises(CommandRefusedError, match="earlier outcomes stand"):
        t.t.void_settled_round("sup-3", "r1", "noticed later")


def test_tai_sai_5_6_the_correction_is_journalled_with_its_own_seq_and_survives_a_restart(
        tmp_path: Path) -> None:
    from tests.unit.round.journalling import journal_effects  # noqa: PLC0415

    j = Journal(tmp_path / "j.db")
    t = table()
    journal_effects(j, play(t, (1, 2, 3)))
    journal_effects(j, t.void_settled_round("sup-3", "r1", "damaged"))
    assert j.result_seqs() == [(1, "r1"), (2, "r1/correction")]
    [orig] = [r for r in j.records("r1") if r.kind == "result"]
    assert orig.body["valid"] is True  # the original stays, as the journal records it
    j.close()
    j = Journal(tmp_path / "j.db")
    fresh = table()
    restore(fresh, j.records())
    with pytest.raises(CommandRefusedError, match="already void"):
        fresh.void_settled_round("sup-3", "r1", "damaged")
