"""Throws held for the Pit (daemon/round/throw_holds.py): their records and hold ids."""

from __future__ import annotations

import pytest

from daemon.round.effects import CommandRefusedError, Record
from tests.unit.round.parts import fold, tai_sai


def test_a_held_throw_is_answered_once_and_its_hold_id_names_its_round() -> None:
    t = tai_sai()
    t.open_betting()
    t.close_betting()
    held = t._hold("the dice could not be read")
    assert [e.body["hold_id"] for e in held if isinstance(e, Record)] == ["r1/hold-1"]
    assert t.hold == "r1/hold-1" and t.hold_of("r1/hold-1") == ("r1", 1)
    assert t.hold_of("r1:1") is None  # the baccarat form is not a Tai Sai hold id
    t.throw_again("pit", "r1/hold-1")
    assert t.hold is None and t.throw is None and t.arms == 0
    with pytest.raises(CommandRefusedError, match="already answered"):
        t.throw_again("pit", "r1/hold-1")
    with pytest.raises(CommandRefusedError, match="is not open"):
        t.void_round("x", "pit", hold="r1/hold-9")


def test_a_round_over_closes_its_hold_and_a_new_round_numbers_from_one() -> None:
    t = tai_sai()
    fold(t, "betting_opened", {}, "r1")
    fold(t, "betting_closed", {}, "r1")
    fold(t, "throw_held", {"hold_id": "r1/hold-1", "clause": "5.14", "why": "x"}, "r1")
    assert (t.hold, t.holds) == ("r1/hold-1", 1)
    fold(t, "result", {"status": "void"}, "r1")
    assert t.hold is None
    with pytest.raises(CommandRefusedError, match="already answered"):
        t.void_round("x", "pit", hold="r1/hold-1")
    fold(t, "betting_opened", {}, "r2")
    assert t.holds == 0
