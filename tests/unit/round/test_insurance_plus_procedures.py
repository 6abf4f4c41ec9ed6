"""Insurance Plus procedures around the pay table: the squeeze waiver (3.14) and the
private table without Insurance (4.2.2)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from daemon.games import get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, CommandRefusedError, Record
from firmware_protocols import shoe as sp
from tests.unit.round.parts import Row
from tests.unit.round.tables import DECKS, Table, kinds, results

IP = "tiger-buffalo-insurance-plus"
# The deal: Player 2+K = 2 draws a 6 (8); Banker 3+3 = 6 draws on a 6, a 3 (9).
SQUEEZED = ["2S", "3H", "KC", "3D", "6S", "3C"]


def alerts(effects: list[Any]) -> list[str]:
    return [a.clause for a in effects if isinstance(a, Alert)]


def dealt(t: Table, n: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        out += t.draw()
    return out


def test_rws_ip_3_14_the_squeeze_waives_insurance_after_the_player_third_card() -> None:
    t = Table(IP, "A", top=SQUEEZED)
    t.t.open_betting()
    t.t.close_betting()
    dealt(t, 4)
    assert kinds(t.t.declare_squeeze("sup-2", "r1")) == ["squeeze_declared"]
    out = dealt(t, 1)  # the Player's third card: no window opens
    assert "insurance_offered" not in kinds(out) and t.t.insurance_window is None
    out = dealt(t, 1)  # the Banker's card: no 5.13.2 to return waived bets
    assert not [c for c in alerts(out) if c.startswith("5.13")]
    [result] = results(out)
    assert not [b for b in result["bets"] if b.get("window") == "player_third_card"]


def test_rws_ip_3_14_declared_with_the_window_open_closes_it() -> None:
    t = Table(IP, "A", top=SQUEEZED)
    t.t.open_betting()
    t.t.close_betting()
    dealt(t, 5)
    assert t.t.insurance_window == "player_third_card"
    out = t.t.declare_squeeze("sup-2")
    assert kinds(out) == ["squeeze_declared", "insurance_closed", "next_card"]
    [result] = results(dealt(t, 1))
    assert not [b for b in result["bets"] if b.get("window") == "player_third_card"]


def test_rws_ip_3_14_too_late_once_the_banker_third_card_is_out_and_once_only() -> None:
    t = Table(IP, "A", top=SQUEEZED)
    with pytest.raises(CommandRefusedError, match="being dealt"):
        t.t.declare_squeeze("sup-2")
    t.t.open_betting()
    t.t.close_betting()
    dealt(t, 4)
    with pytest.raises(CommandRefusedError, match="not the round in play"):
        t.t.declare_squeeze("sup-2", "r0")
    t.t.declare_squeeze("sup-2")
    with pytest.raises(CommandRefusedError, match="already declared"):
        t.t.declare_squeeze("sup-2")


def test_rws_ip_3_14_the_waiver_lasts_one_round_and_survives_a_restart() -> None:
    t = Table(IP, "A", top=SQUEEZED)
    log = list(t.effects) + t.t.open_betting() + t.t.close_betting()
    log += dealt(t, 4) + t.t.declare_squeeze("sup-2")
    fresh = fresh_table()
    fresh.replay(Row(e.kind, e.body, e.round_id, 1.0) for e in log if isinstance(e, Record))
    assert fresh.squeeze_waiver and fresh.state == "dealing"
    out = fresh.card_drawn(sp.CardDrawn(5, "6S", 99, 0xC0FFEE, False, False))
    assert "insurance_offered" not in kinds(out)  # still waived after the restart
    [result] = results(fresh.card_drawn(sp.CardDrawn(6, "3C", 99, 0xC0FFEE, False, False)))
    assert not [b for b in result["bets"] if b.get("window") == "player_third_card"]
    fresh.open_betting()
    assert not fresh.squeeze_waiver  # one round only


def fresh_table(**kw: Any) -> BaccaratTable:
    ids = itertools.count(1)
    return BaccaratTable("bac-07", get_game(IP), "A", DECKS, clock=lambda: 1.0,
                         new_round_id=lambda: f"r{next(ids)}", **kw)


def test_rws_ip_4_2_2_a_private_table_offers_no_insurance_and_5_13_2_does_not_apply() -> None:
    t = Table(IP, "A", top=SQUEEZED)
    t.t = fresh_table(insurance_offered=False)  # the same certified shoe, folded
    t.t.replay(Row(e.kind, e.body, e.round_id, 1.0) for e in t.effects
               if isinstance(e, Record))
    t.t.open_betting()
    t.t.close_betting()
    out = dealt(t, 6)
    assert "insurance_offered" not in kinds(out)
    assert not [c for c in alerts(out) if c.startswith("5.13")]
    [result] = results(out)
    assert result["status"] == "valid"
    assert not [b for b in result["bets"] if "insurance" in b["bet"]]
    with pytest.raises(CommandRefusedError, match=r"4\.2\.2"):
        t.t.declare_squeeze("sup-2")
