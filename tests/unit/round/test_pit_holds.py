"""The Pit's holds (daemon/round/pit_holds.py): what their records fold to, and hold ids."""

from __future__ import annotations

import pytest

from daemon.round.effects import CommandRefusedError, Record
from tests.unit.round.parts import baccarat, dealing, fold, with_shoe


def test_each_hold_has_its_own_id_and_a_re_announced_hold_keeps_it() -> None:
    t = dealing(with_shoe(baccarat()))
    body = {"hold_id": "r1:1", "reason": "reads", "reads": [[1, None]]}
    fold(t, "result_held", body, "r1")
    fold(t, "result_held", body, "r1")  # announced again after a restart
    assert t.round is not None and (t.round.hold_id, t.round.holds) == ("r1:1", 1)
    assert t.hold_of("r1:1") == ("r1", 1) and t.hold_id("r1", 2) == "r1:2"


def test_a_journal_from_before_hold_ids_numbers_each_hold() -> None:
    t = dealing(with_shoe(baccarat()))
    fold(t, "result_held", {"reason": "reads", "reads": [[1, None]]}, "r1")
    fold(t, "result_held", {"reason": "reads", "reads": [[1, None]]}, "r1")
    assert t.round is not None and (t.round.hold_id, t.round.holds) == ("r1:2", 2)


def test_a_late_read_of_a_held_draw_is_one_more_fact_for_the_reconstruction() -> None:
    t = dealing(with_shoe(baccarat()))
    fold(t, "card_drawn", {"draw_no": 1, "card": "??", "confidence": 0}, "r1")
    fold(t, "result_held", {"hold_id": "r1:1", "reason": "reads",
                            "reads": [[1, None], [2, "KD"]]}, "r1")
    fold(t, "card_drawn", {"draw_no": 1, "card": "9S", "confidence": 99}, "r1")
    assert t.round is not None and t.round.reads == [(1, "9S"), (2, "KD")]
    fold(t, "card_drawn", {"draw_no": 2, "card": "QH", "confidence": 99}, "r1")
    assert t.round.reads == [(1, "9S"), (2, None)]  # two reads disagree: the Pit's


def test_an_answer_to_a_hold_already_answered_is_refused() -> None:
    t = dealing(with_shoe(baccarat()))
    fold(t, "card", {"card": "9S", "draw_no": 1, "hand": "player", "position": 1}, "r1")
    held = t.hold_round("pit", "the last read never came")
    assert [e.body["hold_id"] for e in held if isinstance(e, Record)] == ["r1:1"]
    with pytest.raises(CommandRefusedError, match="not the open hold"):
        t.reconstruct_deal("pit", ["9S"], hold="r1:7")
    t.void_round("wrong", "pit")
    with pytest.raises(CommandRefusedError):
        t.answering("r1:1", required=True)


def test_a_disputed_result_waits_for_the_pit_until_its_correction() -> None:
    t = with_shoe(baccarat())
    fold(t, "result_disputed", {"round_id": "r1", "draw_no": 1, "first": "9S",
                                "again": "KD"}, "r1")
    with pytest.raises(CommandRefusedError, match="waits for the Pit"):
        t.open_betting()
    fold(t, "result", {"type": "correction", "corrects": "r2"}, "r2/correction")
    assert t.disputed is not None
    fold(t, "result", {"type": "correction", "corrects": "r1"}, "r1/correction")
    assert t.disputed is None
