"""The property issue 11 asks for: over random shoes with random reader and link faults,
a result published ``valid`` always holds exactly the cards that physically left the
shoe for that round, in their positions; anything else is held (until the Pit acts) or
void. The dealer here is physical: it deals by the Table of Play from the real shoe order
while the gate is open; the shoe reports each draw with the faults drawn by hypothesis;
the Pit, when a result is held or the table waits for a card already on the table,
reconstructs the deal from the cards it sees (or confirms the order of a double draw)."""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.games import get_game
from daemon.games.baccarat import deal
from daemon.games.cards import parse_card
from daemon.mqtt.wire import results_payload
from daemon.results import CorrectionFacts
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import CommandRefusedError, DeviceCommand, Effect, RoundResult
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp

DECKS = 8
SET = 0xC0FFEE
FAULTS = ("none", "none", "none", "repeat", "repeat_other", "lost", "unreadable", "low",
          "double", "out_of_range")


def physical_deal(cards: list[str], start: int) -> list[str]:
    """The cards a dealer following the Table of Play takes from ``start``."""
    n = start
    hand: list[str] = []
    while True:
        hand.append(cards[n])
        n += 1
        if deal([parse_card(c) for c in hand]).complete:
            return hand


class Rig:
    def __init__(self, game: str, seed: int, faults: list[str]) -> None:
        ids = itertools.count(1)
        self.t = BaccaratTable("t", get_game(game), "A", DECKS, clock=lambda: 1.0e9,
                               new_round_id=lambda: f"r{next(ids)}")
        cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        random.Random(seed).shuffle(cards)
        self.cards, self.faults = cards, iter(faults)
        self.drawn = 0  # cards that physically left the shoe
        self.gate_open = False
        self.results: list[dict[str, Any]] = []
        self.held_for: list[str] = []
        self.corrected: set[str] = set()
        self.run(self.t.shuffle_complete(fp.ShuffleComplete(
            1, DECKS, fp.inventory_of(cards), 0, True, fp.commitment(1, bytes(16), cards))))
        self.run(self.t.shoe_loaded(sp.ShoeLoaded(len(cards), SET)))

    def run(self, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, DeviceCommand) and isinstance(e.message, sp.LockGate):
                self.gate_open = not e.message.locked
            elif isinstance(e, RoundResult) and isinstance(e.facts, CorrectionFacts):
                self.corrected.add(e.facts.corrects)
            elif isinstance(e, RoundResult):
                self.results.append({**results_payload(e.facts), "round_id": e.round_id})

    def report(self, n: int, card: str, fault: str) -> None:
        """The shoe's message(s) for draw ``n``, through ``fault``."""
        t = self.t
        msg = sp.CardDrawn(n, card, 99, SET, False, False)
        if fault == "lost":
            return
        if fault == "unreadable":
            msg = sp.CardDrawn(n, "??", 0, SET, False, False)
        elif fault == "low":
            msg = sp.CardDrawn(n, card, 5, SET, False, False)
        elif fault == "double":
            msg = sp.CardDrawn(n, card, 99, SET, True, False)
        elif fault == "out_of_range":
            self.run(t.device_fault(sp.CardDrawn(n, card, 200, SET, False, False),
                                    "confidence 200"))
            return
        self.run(t.card_drawn(msg))
        if fault == "repeat":
            self.run(t.card_drawn(msg))
        elif fault == "repeat_other":
            other = next(c for c in fp.INVENTORY_ORDER if c != card)
            self.run(t.card_drawn(sp.CardDrawn(n, other, 99, SET, False, False)))

    def play_round(self) -> list[str]:
        """One round; returns the cards that physically left the shoe for it."""
        t = self.t
        if t.disputed is not None:  # D23: the Pit, who sees the table, answers first
            d = t.disputed
            if d["first"] == self.cards[d["draw_no"] - 1]:
                self.run(t.confirm_result("pit", d["round_id"]))
            else:
                self.run(t.void_settled_round("pit", d["round_id"], "read wrongly"))
        self.run(t.open_betting())
        self.run(t.close_betting())
        self.start = self.drawn
        physical = physical_deal(self.cards, self.start)
        for _ in range(40):
            if t.round is None:
                break
            if self.gate_open and self.drawn - self.start < len(physical):
                self.drawn += 1
                self.report(self.drawn, self.cards[self.drawn - 1],
                            next(self.faults, "none"))
            elif t.insurance_window is not None and t.round.held is None:
                self.run(t.close_insurance("dealer"))  # insurance offered, then closed
            else:
                self.pit(physical[:self.drawn - self.start])
        assert t.round is None, "the round never ended"
        return physical

    def pit(self, on_table: list[str]) -> None:
        """The Pit looks at the cards on the table and acts: the order of a double
        draw as read (the reader's order is the physical one here), or the deal
        reconstructed from the cards it sees; a void if the controller refuses."""
        t = self.t
        assert t.round is not None
        try:
            if t.round.held == "simultaneous_draw":
                self.run(t.confirm_order("pit"))
            else:
                self.held_for.append(t.round.held or "waiting")
                if t.round.held is None:  # a card on the table the table never heard of
                    self.run(t.hold_round("pit", "a card on the table was not read"))
                self.run(t.reconstruct_deal("pit", on_table))
        except CommandRefusedError:
            self.run(t.void_round("cannot reconstruct", "pit"))


@settings(max_examples=150)
@given(seed=st.integers(0, 10_000),
       faults=st.lists(st.sampled_from(FAULTS), min_size=0, max_size=60),
       game=st.sampled_from(["tiger-buffalo", "tiger-baccarat",
                             "tiger-buffalo-insurance-plus"]))
def test_a_valid_result_holds_exactly_the_cards_that_left_the_shoe(
        seed: int, faults: list[str], game: str) -> None:
    rig = Rig(game, seed, faults)
    played = []
    for _ in range(8):
        before = len(rig.results)
        physical = rig.play_round()
        [result] = rig.results[before:]
        played.append((result, physical))
    rig.play_round()  # the next round commences: the last result is final (D23)
    for result, physical in played:
        if result["round_id"] in rig.corrected:
            continue  # the Pit corrected it before the next round commenced (D23)
        if result["status"] == "valid":
            want = [p.as_dict() for p in deal([parse_card(c) for c in physical]).cards]
            keys = ("card", "hand", "position")
            assert [{k: c[k] for k in keys} for c in result["cards"]] == \
                [{k: w[k] for k in keys} for w in want]
        else:
            assert result["status"] == "void"
