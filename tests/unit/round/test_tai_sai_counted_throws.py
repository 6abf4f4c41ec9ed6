"""Tai Sai 3.7, 3.8, 5.5, 5.14 (issue 13): the controller counts the tumbles itself, per
activation, bound to the open round and to an arm the tumbler confirmed. Each case below
became a valid result when the controller trusted the tumbler's counters and the order of
its messages."""

from __future__ import annotations

from typing import Any

from daemon.games.dice_watch import DiceWatchSettings
from daemon.mqtt.wire import results_payload
from daemon.round.effects import Alert, DeviceCommand, Record, RoundResult
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import tumbler as tp
from tests.unit.round.parts import Row
from tests.unit.round.tai_sai_tables import ARM, settle, table, throw

FLAT = ((0, 0, 0), (1, 1, 1))


def armed_table(**kw: Any) -> tuple[TaiSaiTable, list[Any]]:
    t = table(**kw)
    out = t.open_betting() + t.close_betting() + t.command_answered("tumbler", ARM)
    return t, out


def results(effects: list[Any]) -> list[dict[str, Any]]:
    return [results_payload(e.facts) for e in effects if isinstance(e, RoundResult)]


def pit_alerts(effects: list[Any]) -> list[str]:
    return [a.detail for a in effects if isinstance(a, Alert) and a.clause == "5.14"]


def test_tai_sai_5_5_1_one_tumble_message_with_count_3_is_one_tumble() -> None:
    """Never three tumbles, so never a result; and since the tumbler numbered tumbles the
    controller did not see, not a 5.5.1 void either: the Pit's (issue 23)."""
    t, _ = armed_table()
    throw(t, 3)
    out = settle(t)
    assert results(out) == [] and "counted 3 tumble(s), the controller 1" in pit_alerts(out)[0]


def test_tai_sai_5_5_1_one_tumble_message_with_count_255_is_one_tumble() -> None:
    t, _ = armed_table()
    throw(t, 255)
    out = settle(t)
    assert results(out) == [] and "the controller 1" in pit_alerts(out)[0]


def test_tai_sai_3_7_three_tumbles_with_no_activation_are_not_a_result() -> None:
    t, _ = armed_table()
    for n in (1, 2, 3):
        t.tumble(tp.Tumble(n))
    out = settle(t)
    assert results(out) == [] and pit_alerts(out)
    assert t.state == "tumbling"


def test_tai_sai_3_8_a_flat_flag_of_2_is_not_flat() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 3)
    [r] = results(settle(t, flat=(1, 2, 1)))
    assert r["void_reason"]["clause"] == "5.5.2"


def test_tai_sai_5_14_a_dice_confidence_of_0_is_not_a_result() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 3)
    out = settle(t, confidence=0)
    assert results(out) == [] and "0% confidence" in pit_alerts(out)[0]


def test_tai_sai_5_14_the_confidence_floor_is_the_tables() -> None:
    t, _ = armed_table(confidence_floor=60)
    throw(t, 1, 2, 3)
    assert results(settle(t, confidence=60))[0]["status"] == "valid"


def test_tai_sai_5_5_3_activated_while_idle_tumbling_in_betting_settled_after() -> None:
    """Tumbles during betting with no activation of this round (the one seen was while
    idle) prove no early activation: no 5.5.3 void (issue 23). The dice that then settle
    with no activation are the Pit's."""
    t = table()
    idle = t.activated(tp.Activated(1, False))
    assert "not a result" in pit_alerts(idle)[0]
    t.open_betting()
    for n in (1, 2, 3):
        t.tumble(tp.Tumble(n))
    t.close_betting()
    t.command_answered("tumbler", ARM)
    out = settle(t)
    assert results(out) == [] and "no activation" in pit_alerts(out)[0]


def test_tai_sai_5_5_1_two_tumbles_and_an_unreadable_die_void_first() -> None:
    t, _ = armed_table()
    throw(t, 1, 2)
    [r] = results(settle(t, dice=(0, 3, 3)))
    assert r["void_reason"]["clause"] == "5.5.1"


def test_tai_sai_5_5_2_a_tilted_die_and_an_unreadable_die_void_first() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 3)
    [r] = results(settle(t, dice=(0, 3, 3), flat=(1, 0, 1)))
    assert r["void_reason"]["clause"] == "5.5.2"


def test_tai_sai_5_14_an_arm_the_tumbler_never_confirmed_is_not_a_result() -> None:
    t = table()
    t.open_betting()
    t.close_betting()  # the Arm was sent, but no command_result came back
    throw(t, 1, 2, 3)
    out = settle(t)
    assert results(out) == [] and "arm" in pit_alerts(out)[0]


def test_tai_sai_5_14_a_late_arm_confirmation_still_binds_the_throw() -> None:
    # The command_result and the activation can be read in either order.
    t = table()
    t.open_betting()
    t.close_betting()
    t.activated(tp.Activated(1, True))
    t.command_answered("tumbler", ARM)
    for n in (1, 2, 3):
        t.tumble(tp.Tumble(n))
    assert results(settle(t))[0]["status"] == "valid"


def test_tai_sai_5_14_the_tumblers_count_disagreeing_goes_to_the_pit() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 5)
    out = settle(t)
    assert results(out) == [] and "counted 5" in pit_alerts(out)[0]


def test_tai_sai_3_7_a_second_settle_without_an_activation_is_not_a_result() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 3)
    assert pit_alerts(settle(t, dice=(0, 1, 1)))  # unreadable: the Pit's
    out = settle(t, dice=(6, 6, 6))  # the same activation settling again
    assert results(out) == [] and "while the throw is held" in pit_alerts(out)[0]


def test_tai_sai_5_14_throw_again_rearms_and_the_new_throw_is_the_result() -> None:
    t, _ = armed_table()
    throw(t, 1, 2, 3)
    assert pit_alerts(settle(t, dice=(0, 1, 1)))
    again = t.throw_again("sup-3")
    assert DeviceCommand("tumbler", ARM) in again
    assert [e.kind for e in again if isinstance(e, Record)] == ["throw_again"]
    # Without the new arm confirmed, a press is the Pit's again.
    throw(t, 1, 2, 3)
    assert results(settle(t)) == []
    t.throw_again("sup-3")
    t.command_answered("tumbler", ARM)
    throw(t, 1, 2, 3)
    [r] = results(settle(t, dice=(1, 2, 3)))
    assert (r["status"], r["dice"], r["tumbles"]) == ("valid", [1, 2, 3], 3)


def test_tai_sai_5_4_1_a_restart_folds_the_same_counts() -> None:
    """Replayed from the journal, the records give the same decision (the fold)."""
    t, out = armed_table()
    out += throw(t, 1, 2, 5)
    out += settle(t)
    fresh = table()
    for e in out:
        if isinstance(e, Record):
            fresh.replay([Row(e.kind, e.body, e.round_id, 1_764_000_000.0)])
    assert fresh.throw == t.throw and fresh.hold == t.hold is not None
    again = fresh.technical_interruption()
    assert results(again) == [] and t.hold in pit_alerts(again)[0]


def test_dice_watch_alerts_when_a_die_is_loaded() -> None:
    """Beyond the documents: a die that shows 6 every other throw trips the watch."""
    t = table(dice_watch=DiceWatchSettings(window=300))
    alerts: list[Alert] = []
    for i in range(300):
        t.open_betting()
        t.close_betting()
        t.command_answered("tumbler", ARM)
        throw(t, 1, 2, 3)
        first = 6 if i % 2 else (i // 2) % 5 + 1
        out = settle(t, dice=(first, i % 6 + 1, (i // 6) % 6 + 1))
        assert results(out)[0]["status"] == "valid"
        alerts += [a for a in out if isinstance(a, Alert) and a.code == "dice_watch"]
    assert alerts and "die_1_faces" in " ".join(a.detail for a in alerts)
