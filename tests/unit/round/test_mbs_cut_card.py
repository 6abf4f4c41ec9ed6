"""MBS 3.22, 3.22.1: the cutting card, and the cutting card as the first card of a round."""

from __future__ import annotations

from typing import Any

from daemon.round.effects import Alert, Record
from firmware_protocols import shoe as sp
from tests.unit.round.tables import Table, kinds, results

TOP = ["9H", "KS", "TD", "2C", "8S", "3H", "KD", "4C"]  # two natural rounds


def first_card_events(effects: list[Any]) -> list[Record]:
    return [e for e in effects if isinstance(e, Record) and e.kind == "cut_card_first_card"]


def test_mbs_3_22_1_cut_card_as_the_first_card_of_a_round_is_published() -> None:
    t = Table("tiger-baccarat", "A", top=TOP)
    t.t.open_betting()
    t.t.close_betting()
    out = t.t.cut_card(sp.CutCard(0))
    [event] = first_card_events(out)
    assert event.body == {"draw_no": 0, "clause": "3.22.1"} and event.round_id == "r1"
    assert [(a.code, a.clause) for a in out if isinstance(a, Alert)] == [
        ("cut_card_first_card", "3.22.1")]
    for _ in range(4):
        t.draw()
    [result] = results(t.effects)
    assert result["status"] == "valid"  # the round is completed (3.22) ...
    assert "shoe_ended" in kinds(t.effects)  # ... and then the shoe ends


def test_mbs_3_22_a_cut_card_later_in_the_round_is_no_first_card() -> None:
    t = Table("tiger-baccarat", "A", top=TOP)
    t.t.open_betting()
    t.t.close_betting()
    t.draw()
    assert first_card_events(t.t.cut_card(sp.CutCard(1))) == []


def test_rws_has_no_cut_card_clause() -> None:
    t = Table("tiger-buffalo", "P", top=TOP)
    t.t.open_betting()
    t.t.close_betting()
    assert first_card_events(t.t.cut_card(sp.CutCard(0))) == []
