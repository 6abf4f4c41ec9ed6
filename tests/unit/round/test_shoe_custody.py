"""Shoe custody (daemon/round/shoe_custody.py): what its records fold to."""

from __future__ import annotations

from daemon.round.shoe import UNKNOWN
from tests.unit.round.parts import baccarat, dealing, fold, with_shoe


def test_a_shoe_is_loaded_only_from_a_certified_shuffle() -> None:
    t = baccarat()
    fold(t, "shoe_loaded", {"shoe_id": "s", "shuffle_id": 1, "cards": 416,
                            "deck_set": 1})
    assert t.shoe is None and t.shoe_id is None
    with_shoe(t)
    assert t.shoe is not None and t.shoe_id == "bac-07-shoe-77"
    assert t.certificate is None  # taken by the shoe: a second load needs a new shuffle


def test_an_ended_shoe_waits_for_its_order_until_it_is_verified() -> None:
    t = with_shoe(baccarat())
    fold(t, "cut_card", {"draw_no": 60})
    assert t.shoe_ending
    fold(t, "shoe_ended", {"shoe_id": t.shoe_id, "why": "the cut card came out"})
    assert t.shoe is None and not t.shoe_ending and list(t.awaiting_order) == [77]
    fold(t, "shuffle_verification_failed", {"shuffle_id": 77, "findings": 1})
    assert t.awaiting_order == {}


def test_two_reads_of_one_draw_that_disagree_leave_it_unknown() -> None:
    t = dealing(with_shoe(baccarat()))
    fold(t, "card_drawn", {"draw_no": 1, "card": "9S", "confidence": 99}, "r1")
    fold(t, "card_drawn", {"draw_no": 1, "card": "9S", "confidence": 99}, "r1")
    assert t.shoe is not None and t.shoe.read(1) == "9S"
    fold(t, "card_drawn", {"draw_no": 1, "card": "KD", "confidence": 99}, "r1")
    assert t.shoe.read(1) == UNKNOWN


def test_a_void_closes_the_pair_carried_and_leaves_cards_carried_while_held_unknown(
        ) -> None:
    t = dealing(with_shoe(baccarat()))
    fold(t, "card_drawn", {"draw_no": 1, "card": "??", "confidence": 0}, "r1")
    fold(t, "result_held", {"hold_id": "r1:1", "reason": "reads", "reads": [[1, None]]},
         "r1")
    fold(t, "card_drawn", {"draw_no": 2, "card": "4C", "confidence": 99,
                           "double_draw": True}, "r1")
    fold(t, "card_carried", {"card": "4C", "draw_no": 2, "position_in_next_deal": 1},
         "r1")
    fold(t, "card_drawn", {"draw_no": 3, "card": "5C", "confidence": 99,
                           "double_draw": True}, "r1")
    fold(t, "card_carried", {"card": "5C", "draw_no": 3, "position_in_next_deal": 2,
                             "pair_of": 2}, "r1")
    assert t.held_carried == {2, 3} and t.pairs == {3}
    fold(t, "result", {"status": "void"}, "r1")
    assert [(c, n) for c, n in t.carried] == [(None, 2)]
    assert t.pairs == set() and t.held_carried == set() and t.void_gap == 4
    assert t.shoe is not None and t.shoe.read(3) == UNKNOWN  # the pair's order: unknown
    fold(t, "betting_opened", {}, "r2")
    fold(t, "betting_closed", {}, "r2")
    assert t.void_gap is None  # the next deal takes cards: what comes now is its own
