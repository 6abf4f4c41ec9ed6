"""Tai Sai 5.14, 5.4, 5.5 (issue 23, builds 6 and 7): a throw held for the Pit stays held
through tumbler reconnects and restarts until the Pit answers it, by name; events that
arrived outside a live exchange void and settle nothing."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Record, RoundResult
from daemon.round.recovery import restore
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import tumbler as tp
from tests.unit.round.parts import Row

ARM, DISARM = tp.Arm(0, True), tp.Arm(0, False)
AT = 1_764_000_000.0


def table() -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), "E",
                       clock=lambda: AT, new_round_id=lambda: f"r{next(ids)}")


class Journal:
    """The records a table wrote, to fold into a new table as a restart does."""

    def __init__(self) -> None:
        self.records: list[Row] = []

    def __call__(self, effects: list[Any]) -> list[Any]:
        self.records += [Row(e.kind, e.body, e.round_id, AT)
                         for e in effects if isinstance(e, Record)]
        self.records += [Row("result", results_payload(e.facts), e.round_id, AT)
                         for e in effects if isinstance(e, RoundResult)]
        return effects

    def restart(self) -> tuple[TaiSaiTable, list[Any]]:
        fresh = table()
        return fresh, self(restore(fresh, list(self.records)))


def press(t: TaiSaiTable, dice: tuple[int, int, int], counts: tuple[int, ...] = (1, 2, 3),
          armed: bool = True) -> list[Any]:
    """The dealer's button and what the tumbler reports of it."""
    out = t.activated(tp.Activated(1, armed))
    for n in counts:
        out += t.tumble(tp.Tumble(n))
    return out + t.settled(tp.Settled(dice, (0, 0, 0), (1, 1, 1), 97))


def obey(t: TaiSaiTable, effects: list[Any]) -> list[Any]:
    """A tumbler that obeys and confirms every Arm it is sent (the service reports each
    accepted command back to the table)."""
    out: list[Any] = []
    for e in effects:
        if isinstance(e, DeviceCommand) and e.device == "tumbler":
            out += t.command_answered("tumbler", e.message)
    return out


def results(effects: list[Any]) -> list[dict[str, Any]]:
    return [results_payload(e.facts) for e in effects if isinstance(e, RoundResult)]


def holds(effects: list[Any]) -> list[str]:
    return [str(e.body["hold_id"]) for e in effects
            if isinstance(e, Record) and e.kind == "throw_held"]


def held_round(j: Journal) -> tuple[TaiSaiTable, str]:
    """A round whose throw went to the Pit: a die the camera could not read."""
    t = table()
    j(t.open_betting())
    j(obey(t, j(t.close_betting())))
    out = j(press(t, (0, 3, 3)))
    assert results(out) == []
    [hold] = holds(out)
    return t, hold


def test_tai_sai_5_14_a_held_throw_is_not_armed_again_when_the_tumbler_reconnects() -> None:
    j = Journal()
    t, hold = held_round(j)
    assert t.device_ready("tumbler") == [DeviceCommand("tumbler", DISARM)]
    # Whatever the reconnected tumbler does now, the dealer's press is no throw of the
    # round: the Pit has not answered.
    out = j(obey(t, t.device_ready("tumbler")) + press(t, (2, 4, 6)))
    assert results(out) == [] and t.state == "tumbling"
    j(obey(t, j(t.throw_again("sup-3", hold))))
    [r] = results(j(press(t, (2, 4, 6))))
    assert (r["status"], r["dice"]) == ("valid", [2, 4, 6])


def test_tai_sai_5_4_a_held_throw_stays_held_through_a_restart() -> None:
    j = Journal()
    _, hold = held_round(j)
    fresh, out = j.restart()
    assert results(out) == []
    assert not [a for a in out if isinstance(a, Alert) and "settling" in a.detail]
    assert [a for a in out if isinstance(a, Alert) and hold in a.detail]
    assert DeviceCommand("tumbler", ARM) not in out
    assert fresh.device_ready("tumbler") == [DeviceCommand("tumbler", DISARM)]
    out = j(obey(fresh, fresh.device_ready("tumbler")) + press(fresh, (5, 5, 6)))
    assert results(out) == []
    # A second restart, still held; the Pit's answer names the hold.
    again, _ = j.restart()
    assert again.hold == hold
    j(obey(again, j(again.throw_again("sup-3", hold))))
    [r] = results(j(press(again, (1, 1, 2))))
    assert (r["status"], r["dice"]) == ("valid", [1, 1, 2])


@pytest.mark.parametrize("value", [7, 255])
def test_tai_sai_5_14_d19_throw_again_is_offered_after_a_die_out_of_range(value: int) -> None:
    t = table()
    t.open_betting()
    obey(t, t.close_betting())
    t.activated(tp.Activated(1, True))
    for n in (1, 2, 3):
        t.tumble(tp.Tumble(n))
    out = t.device_fault(tp.Settled((value, 2, 3), (0, 0, 0), (1, 1, 1), 97),
                         f"die 1 = {value} is outside 1..6")
    assert holds(out) and DeviceCommand("tumbler", ARM) not in out
    assert DeviceCommand("tumbler", ARM) in obey_and_keep(t, t.throw_again("sup-3"))
    [r] = results(press(t, (4, 4, 1)))
    assert (r["status"], r["dice"]) == ("valid", [4, 4, 1])


def obey_and_keep(t: TaiSaiTable, effects: list[Any]) -> list[Any]:
    obey(t, effects)
    return effects


@pytest.mark.parametrize("counts", [(3,), (1, 3), (255,)], ids=["lost_1_and_2", "lost_2",
                                                                "count_255"])
def test_tai_sai_5_5_1_a_count_the_controller_partly_missed_goes_to_the_pit(
        counts: tuple[int, ...]) -> None:
    """The tumbler numbers its tumbles: a number above the controller's own count says
    Tumble messages were lost, so whether 5.5.1 applies is not known: the Pit's (5.14)."""
    t = table()
    t.open_betting()
    obey(t, t.close_betting())
    out = press(t, (2, 2, 3), counts)
    assert results(out) == [] and holds(out)
    assert [a.clause for a in out if isinstance(a, Alert)] == ["5.14"]


def test_tai_sai_5_5_1_a_count_the_controller_saw_whole_still_voids() -> None:
    t = table()
    t.open_betting()
    obey(t, t.close_betting())
    [r] = results(press(t, (2, 2, 3), (1, 2)))
    assert r["void_reason"]["clause"] == "5.5.1"


def test_tai_sai_5_5_2_voids_even_when_the_count_was_partly_missed() -> None:
    t = table()
    t.open_betting()
    obey(t, t.close_betting())
    t.activated(tp.Activated(1, True))
    t.tumble(tp.Tumble(3))
    [r] = results(t.settled(tp.Settled((2, 2, 3), (0, 300, 0), (1, 0, 1), 97)))
    assert r["void_reason"]["clause"] == "5.5.2"


def played(t: TaiSaiTable, dice: tuple[int, int, int]) -> dict[str, Any]:
    t.open_betting()
    obey(t, t.close_betting())
    [r] = results(press(t, dice))
    return r


def test_tai_sai_5_5_3_an_earlier_rounds_events_resent_during_betting_void_nothing() -> None:
    """After a one-way outage the tumbler re-sends round 1's activation (armed: it was, in
    round 1), tumbles and dice while round 2's bets are open."""
    t = table()
    assert played(t, (3, 3, 5))["status"] == "valid"
    t.open_betting()
    out = press(t, (3, 3, 5))
    assert results(out) == [] and t.state == "betting_open"
    assert [a for a in out if isinstance(a, Alert)]
    obey(t, t.close_betting())
    [r] = results(press(t, (1, 2, 4)))
    assert (r["status"], r["dice"]) == ("valid", [1, 2, 4])


def test_tai_sai_5_5_3_tumbles_and_a_settle_with_no_activation_this_round_void_nothing() -> None:
    t = table()
    assert played(t, (6, 5, 4))["status"] == "valid"
    t.open_betting()
    out: list[Any] = []
    for n in (1, 2, 3):
        out += t.tumble(tp.Tumble(n))
    out += t.settled(tp.Settled((6, 5, 4), (0, 0, 0), (1, 1, 1), 97))
    assert results(out) == []
    obey(t, t.close_betting())
    [r] = results(press(t, (2, 3, 3)))
    assert (r["status"], r["dice"]) == ("valid", [2, 3, 3])


def test_tai_sai_5_5_3_a_disarmed_press_during_betting_still_voids() -> None:
    t = table()
    t.open_betting()
    [r] = results(press(t, (1, 1, 1), armed=False))
    assert r["void_reason"]["clause"] == "5.5.3"


def test_tai_sai_5_14_a_press_while_the_throw_is_held_is_no_throw() -> None:
    t, hold = held_round(Journal())
    out = press(t, (6, 6, 6), armed=False)
    assert results(out) == [] and t.hold == hold
    assert any(hold in a.detail for a in out if isinstance(a, Alert))


def test_tai_sai_5_14_a_second_answer_to_the_same_hold_is_refused() -> None:
    j = Journal()
    t, hold = held_round(j)
    cmds = t.commands("sup-3", {"hold": hold})
    j(obey(t, j(cmds["throw_again"]())))
    with pytest.raises(CommandRefusedError, match="already answered"):
        t.commands("sup-3", {"hold": hold})["throw_again"]()
    with pytest.raises(CommandRefusedError, match="already answered"):
        t.commands("sup-3", {"hold": hold, "reason": "x"})["void_round"]()
    # The same after a restart: the answer is folded from the journal.
    fresh, _ = j.restart()
    with pytest.raises(CommandRefusedError, match="already answered"):
        fresh.commands("sup-3", {"hold": hold})["throw_again"]()


def test_tai_sai_5_14_an_answer_to_a_hold_of_a_voided_round_is_refused() -> None:
    t, hold = held_round(Journal())
    [r] = results(t.commands("sup-3", {"hold": hold, "reason": "die unreadable"})[
        "void_round"]())
    assert r["status"] == "void"
    t.open_betting()
    obey(t, t.close_betting())
    for name in ("void_round", "throw_again"):
        with pytest.raises(CommandRefusedError, match="already answered"):
            t.commands("sup-3", {"hold": hold, "reason": "again"})[name]()
    assert t.state == "tumbling"


def test_tai_sai_5_14_an_answer_naming_another_hold_is_refused() -> None:
    t, hold = held_round(Journal())
    with pytest.raises(CommandRefusedError, match="not open"):
        t.commands("sup-3", {"hold": "r9/hold-1"})["throw_again"]()
    assert t.hold == hold


def test_tai_sai_5_14_throw_again_with_nothing_held_is_refused() -> None:
    t = table()
    t.open_betting()
    obey(t, t.close_betting())
    with pytest.raises(CommandRefusedError, match="waiting for the Pit"):
        t.throw_again("sup-3")


def test_tai_sai_5_4_1_a_restart_does_not_say_settling_for_a_throw_held_for_its_read() -> None:
    """Readable dice under the confidence floor: at rest, but held; the restart says so."""
    j = Journal()
    t = table()
    j(t.open_betting())
    j(obey(t, j(t.close_betting())))
    j(t.activated(tp.Activated(1, True)))
    for n in (1, 2, 3):
        j(t.tumble(tp.Tumble(n)))
    j(t.settled(tp.Settled((2, 2, 2), (0, 0, 0), (1, 1, 1), 40)))
    _, out = j.restart()
    assert results(out) == []
    details = [a.detail for a in out if isinstance(a, Alert)]
    assert details and not [d for d in details if "settling" in d]
