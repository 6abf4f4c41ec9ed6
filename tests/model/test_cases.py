"""The model's findings on today's core (issue 23), each played minimally and named by
its clause. Each failed on the core before issue 23's fixes."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from daemon.games import get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import CommandRefusedError, Effect
from daemon.round.recovery import restore
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.model.physical import DECK_SET, DECKS, PhysicalShoe
from tests.unit.round.parts import Row, journal


class Table:
    """The pure core with a shoe whose first cards are ``top``, journalled as it goes."""

    def __init__(self, top: list[str], game: str = "tiger-buffalo") -> None:
        self.game = game
        self.ids = itertools.count(1)
        shoe = PhysicalShoe.shuffled(7, random.Random(7))
        for i, c in enumerate(top):
            j = shoe.order.index(c, i)
            shoe.order[i], shoe.order[j] = shoe.order[j], shoe.order[i]
        self.shoe, self.journal = shoe, list[Row]()
        self.published: list[dict[str, Any]] = []  # the results, as published
        self.core = self.new_table()
        self.run(self.core.shuffle_complete(shoe.complete_message()))
        self.run(self.core.shoe_loaded(sp.ShoeLoaded(len(shoe.order), DECK_SET)))

    def new_table(self) -> BaccaratTable:
        return BaccaratTable("t", get_game(self.game), "A", DECKS, clock=lambda: 1.0e9,
                             new_round_id=lambda: f"r{next(self.ids)}")

    def run(self, effects: list[Effect]) -> list[Effect]:
        rows = journal(effects, 1.0e9)
        self.journal += rows
        self.published += [r.published for r in rows if r.published is not None]
        return effects

    def cmd(self, name: str, **args: str) -> list[Effect]:
        return self.run(self.core.commands("pit", args)[name]())

    def draw(self, n: int, card: str | None = None, confidence: int = 99,
             double: bool = False, draw_no: int | None = None) -> list[Effect]:
        msg = sp.CardDrawn(n if draw_no is None else draw_no, card or self.shoe.card(n),
                           confidence, DECK_SET, double, False)
        if draw_no is not None and not 1 <= draw_no <= sp.MAX_DRAW_NO:
            return self.run(self.core.device_fault(msg, "draw_no out of range"))
        return self.run(self.core.card_drawn(msg))

    def deal_round(self) -> None:
        self.cmd("open_betting")
        self.cmd("close_betting")

    def restart(self) -> list[Effect]:
        self.core = self.new_table()
        return self.run(restore(self.core, list(self.journal)))

    def last(self, kind: str) -> dict[str, Any]:
        return next(r.body for r in reversed(self.journal) if r.kind == kind)

    def results(self) -> list[dict[str, Any]]:
        """The results as published (the journal keeps the table's record of each)."""
        return self.published

    def hold_args(self) -> dict[str, str]:
        held = next(r for r in reversed(self.journal) if r.kind == "result_held")
        args = {"round_id": str(held.round_id)}
        if "hold_id" in held.body:
            args["hold"] = str(held.body["hold_id"])
        return args


NATURAL = ["9S", "2H", "KS", "KD"]  # Player 9 (natural), Banker 2: four cards


def test_rws_5_6_a_result_contradicted_by_a_late_read_holds_the_next_round() -> None:
    t = Table(NATURAL)
    t.deal_round()
    for n in (1, 2, 3):
        t.draw(n)
    t.draw(4, "7D")  # read wrong: published at once, as RWS 5.6 allows until ...
    assert t.results()[-1]["status"] == "valid"
    t.draw(4)  # ... the shoe re-sends draw 4 as it is, KD, before the next round
    with pytest.raises(CommandRefusedError):
        t.cmd("open_betting")


def test_rws_5_8_a_forced_card_reconstructed_into_the_held_deal_is_not_carried() -> None:
    t = Table(NATURAL)
    t.deal_round()
    t.draw(1)
    t.draw(2)
    t.draw(3, "??", 0)  # held for the Pit
    t.draw(4)  # forced past the locked gate; the dealer put it on the deal
    t.cmd("reconstruct_deal", cards=" ".join(NATURAL), **t.hold_args())
    assert t.last("deal_reconstructed")["draws"] == [1, 2, 3, 4]
    assert t.core.carried == []


def test_rws_5_16_a_voided_round_closes_its_draws() -> None:
    t = Table([*NATURAL, *NATURAL])
    t.deal_round()
    for n in (1, 2, 3):
        t.draw(n)
    t.draw(4, draw_no=0)
    t.cmd("void_round", reason="the Pit voids it", round_id="r1")
    t.deal_round()
    for n in (5, 6, 7, 8):
        t.draw(n)
    assert not any(r.kind == "result_held" and r.round_id == "r2" for r in t.journal)
    assert t.results()[-1]["status"] == "valid"
    assert [c["card"] for c in t.results()[-1]["cards"]] == NATURAL


def test_d18_a_lost_last_read_of_a_voided_round_is_placed_by_the_pit() -> None:
    """Protocol v2 cannot tell whose a draw that was never read is once its round is
    voided: the next deal meets it as a gap and is held; the Pit's '--' gives it to the
    voided round, and the next round is published with its own cards, not voided."""
    t = Table([*NATURAL, *NATURAL])
    t.deal_round()
    for n in (1, 2, 3):
        t.draw(n)
    t.cmd("void_round", reason="the Pit voids it", round_id="r1")  # draw 4 never read
    t.deal_round()
    t.draw(5)
    held = t.last("result_held")
    assert held["reads"][0] == [4, None]
    t.cmd("reconstruct_deal", round_id="r2", hold=held["hold_id"],
          cards=f"-- {NATURAL[0]}")
    for n in (6, 7, 8):
        t.draw(n)
    assert t.results()[-1]["status"] == "valid"
    assert [c["card"] for c in t.results()[-1]["cards"]] == NATURAL


@pytest.mark.parametrize("drawn", [0, 2])
def test_rws_5_8_a_reconstruction_with_nothing_held_is_refused(drawn: int) -> None:
    t = Table(NATURAL)
    t.deal_round()
    for n in range(1, drawn + 1):
        t.draw(n)
    with pytest.raises(CommandRefusedError):
        t.cmd("reconstruct_deal", cards=" ".join(NATURAL), round_id="r1")


def test_rws_5_8_a_second_answer_to_a_redelivered_hold_is_refused() -> None:
    t = Table(NATURAL)
    t.deal_round()
    t.draw(1)
    t.draw(2)
    t.draw(3, "??", 0)
    args = t.hold_args()  # result_held is delivered at least once: the Pit answers each
    t.cmd("reconstruct_deal", cards=" ".join(NATURAL[:3]), **args)
    with pytest.raises(CommandRefusedError):
        t.cmd("reconstruct_deal", cards=" ".join(NATURAL[:3]), **args)


# Player 2S 3C (5) draws; Banker 4H 2D (6) draws on a Player third card of 6 (6S), but
# stands on a 2 (2C): read as 2C, 6S the deal ends a card early.
SWAPPED = ["2S", "4H", "3C", "2D", "6S", "2C"]


def test_rws_5_11_the_pit_sets_the_order_of_a_double_draw_that_changes_the_deal() -> None:
    t = Table([*SWAPPED, *NATURAL])
    t.deal_round()
    for n in (1, 2, 3, 4):
        t.draw(n)
    t.draw(5, "2C", double=True)
    t.draw(6, "6S", double=True)
    t.cmd("confirm_order", swap="5,6", **t.hold_args())
    assert [c["card"] for c in t.results()[-1]["cards"]] == SWAPPED
    t.deal_round()
    for n in (7, 8, 9, 10):
        t.draw(n)
    assert [c["card"] for c in t.results()[-1]["cards"]] == NATURAL


def test_rws_5_4_1_a_restart_holds_when_an_untrusted_card_settles_a_bet() -> None:
    t = Table(["3S", "2H", "3D", "KD"])
    t.deal_round()
    t.draw(1)
    t.draw(2)
    t.draw(3, "3D", 40)  # below the floor: Player Pair is settled by it, on the table
    t.restart()
    assert t.results() == []
    assert t.core.round is not None and t.core.round.held is not None


def test_rws_5_11_an_order_the_pit_confirmed_passes_the_shoe_order_check() -> None:
    t = Table(NATURAL)
    t.deal_round()
    t.draw(1)
    t.draw(2)
    t.draw(3, "KD", double=True)  # read in the wrong order; the deal is the same
    t.draw(4, "KS", double=True)
    t.cmd("confirm_order", swap="3,4", **t.hold_args())
    assert [c["card"] for c in t.results()[-1]["cards"]] == NATURAL
    t.cmd("end_shoe")
    for chunk in t.shoe.reveal():
        t.run(t.core.order_chunk(chunk))
    assert t.journal[-1].kind == "shuffle_verified"


def test_the_cases_play_on_a_certified_shoe() -> None:
    """The helper's stacked shoe is a certified one (so the cases test the core)."""
    t = Table(NATURAL)
    assert t.core.shoe is not None and t.shoe.order[:4] == NATURAL
    assert fp.inventory_of(t.shoe.order) == (DECKS,) * 52
