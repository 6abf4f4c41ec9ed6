"""The Tai Sai table: arming after "No more Bets", valid throws, voids by clause."""

from __future__ import annotations

import itertools
import json
from importlib.resources import files
from typing import Any

import jsonschema
import pytest

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, RoundResult
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import tumbler as tp
from tests.keys import sealed

SCHEMA = json.loads((files("daemon.mqtt") / "schemas" / "result.schema.json").read_text())


def table(layout: str = "E") -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), layout,
                       clock=lambda: 1_764_000_000.0, new_round_id=lambda: f"r{next(ids)}")


def throw(t: TaiSaiTable, dice: tuple[int, int, int], tumbles: int = 3,
          tilt: tuple[int, int, int] = (0, 0, 0), armed: bool = True) -> list[Any]:
    """A throw as a tumbler makes it: the arm confirmed (if armed), the activation, one
    Tumble message per tumble, the dice at rest."""
    out = t.command_answered("tumbler", tp.Arm(0, True)) if armed else []
    out += t.activated(tp.Activated(1, armed))
    for n in range(1, tumbles + 1):
        out += t.tumble(tp.Tumble(n))
    flat = tuple(int(x <= tp.FLAT_TILT_LIMIT_DECIDEG) for x in tilt)
    return out + t.settled(tp.Settled(dice, tilt, flat, 97))


def result(effects: list[Any]) -> dict[str, Any]:
    [r] = [results_payload(e.facts) for e in effects if isinstance(e, RoundResult)]
    jsonschema.validate(sealed({**r, "seq": 1, "round_id": "r1"}), SCHEMA)
    return r


def test_tai_sai_3_7_a_valid_round() -> None:
    t = table()
    assert DeviceCommand("tumbler", tp.Arm(0, False)) in t.open_betting()
    assert DeviceCommand("tumbler", tp.Arm(0, True)) in t.close_betting()
    r = result(throw(t, (3, 4, 5)))
    assert (r["status"], r["dice"], r["total"], r["tumbles"]) == ("valid", [3, 4, 5], 12, 3)
    wins = {b["bet"] for b in r["bets"] if b["result"] == "win"}
    assert {"big", "total_12", "three_single_3_4_5", "four_number_6543"} <= wins
    assert t.state == "idle"


@pytest.mark.parametrize(("kw", "clause"), [
    pytest.param({"tumbles": 2}, "5.5.1", id="tai_sai_5_5_1_two_tumbles"),
    pytest.param({"tilt": (0, 120, 0)}, "5.5.2", id="tai_sai_5_5_2_die_not_flat"),
])
def test_invalid_throws_void(kw: dict[str, Any], clause: str) -> None:
    t = table()
    t.open_betting()
    t.close_betting()
    r = result(throw(t, (1, 2, 3), **kw))
    assert r["status"] == "void" and r["void_reason"]["clause"] == clause
    assert {b["result"] for b in r["bets"]} == {"push"}


def test_tai_sai_5_5_3_activated_before_no_more_bets_voids() -> None:
    t = table()
    t.open_betting()
    effects = throw(t, (6, 6, 6), armed=False)
    r = result(effects)
    assert r["void_reason"]["clause"] == "5.5.3"


def test_tai_sai_5_5_3_does_not_apply_to_a_disarmed_activation_after_no_more_bets() -> None:
    # The tumbler missed its Arm (or rebooted): activated after "No more Bets", so not
    # 5.5.3; but a throw not bound to a confirmed arm is never a result: the Pit's (5.14).
    t = table()
    t.open_betting()
    t.close_betting()
    effects = throw(t, (2, 3, 4), armed=False)
    assert {(a.code, a.clause) for a in effects if isinstance(a, Alert)} == {
        ("unresolved_irregularity", "5.14")}
    assert not [e for e in effects if isinstance(e, RoundResult)]
    assert t.state == "tumbling"


def test_tai_sai_5_14_an_activation_with_no_round_open_is_reported_and_voids_nothing() -> None:
    t = table()
    effects = throw(t, (5, 5, 5))
    assert [(a.code, a.clause) for a in effects if isinstance(a, Alert)] == [
        ("unresolved_irregularity", "5.14")]
    assert not [e for e in effects if isinstance(e, RoundResult)]
    assert t.state == "idle"


def test_tai_sai_5_14_unreadable_dice_wait_for_the_pit() -> None:
    t = table()
    t.open_betting()
    t.close_betting()
    effects = throw(t, (0, 3, 3))
    assert [a.clause for a in effects if isinstance(a, Alert)] == ["5.14"]
    assert t.state == "tumbling"
    assert result(t.void_round("camera failure", "sup-3"))["void_reason"]["clause"] == "5.14"


def test_commands_in_the_wrong_state() -> None:
    t = table()
    with pytest.raises(CommandRefusedError, match="betting is not open"):
        t.close_betting()
    with pytest.raises(CommandRefusedError, match="without a shoe"):
        t.end_shoe("sup")


@pytest.mark.parametrize("value", [7, 255])
def test_tai_sai_5_14_a_die_out_of_range_goes_to_the_pit(value: int) -> None:
    """A face no die has is a read the controller cannot trust: the Pit's (5.14), like an
    unread die; it never raises out of the handler."""
    t = TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), "E",
                    clock=lambda: 1_764_000_000.0, new_round_id=lambda: "r1")
    t.open_betting()
    t.close_betting()
    t.command_answered("tumbler", tp.Arm(0, True))
    t.activated(tp.Activated(1, True))
    for n in (1, 2, 3):
        t.tumble(tp.Tumble(n))
    out = t.settled(tp.Settled((value, 2, 3), (0, 0, 0), (1, 1, 1), 97))
    assert [e for e in out if isinstance(e, RoundResult)] == []
    assert [a.clause for a in out if isinstance(a, Alert)] == ["5.14"]
    assert t.state == "tumbling"
