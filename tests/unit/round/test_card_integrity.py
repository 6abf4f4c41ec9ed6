"""Issue 11: no result is published on a guess. Each card is idempotent and gap-free: an
exact repeat of a draw is journalled and ignored; a conflicting repeat, a skipped draw
number, an unreadable card or a read below the confidence floor holds the result until
the Pit reconstructs the deal (reconstruct_deal) or voids it; while a result is held,
further draws are carried to the next round (RWS 5.8, IP 5.7)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from daemon.games import get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Effect, Record
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.unit.round.tables import DECKS, NONCE, results, shuffled

SET = 0xC0FFEE
# A physical 9-9 tie: P 9S AS 9C (9), B 2H KD 7C (9).
TIE = ["9S", "2H", "AS", "KD", "9C", "7C"]


class Deal:
    """A table whose shoe holds ``top`` first; cards are sent as the shoe reports them."""

    def __init__(self, top: list[str], game: str = "tiger-buffalo", layout: str = "A",
                 **table: Any) -> None:
        ids = itertools.count(1)
        self.t = BaccaratTable("bac-07", get_game(game), layout, DECKS,
                               clock=lambda: 1_764_000_000.0,
                               new_round_id=lambda: f"r{next(ids)}", **table)
        cards = shuffled()
        for i, c in enumerate(top):
            j = cards.index(c, i)
            cards[i], cards[j] = cards[j], cards[i]
        self.cards = cards
        self.effects: list[Effect] = []
        self.run(self.t.shuffle_complete(fp.ShuffleComplete(
            77, DECKS, fp.inventory_of(cards), 0, True, fp.commitment(77, NONCE, cards))))
        self.run(self.t.shoe_loaded(sp.ShoeLoaded(len(cards), SET)))

    def run(self, effects: list[Effect]) -> list[Effect]:
        self.effects += effects
        return effects

    def start(self) -> None:
        self.run(self.t.open_betting())
        self.run(self.t.close_betting())

    def send(self, draw_no: int, card: str | None = None, confidence: int = 99,
             double: bool = False) -> list[Effect]:
        return self.run(self.t.card_drawn(sp.CardDrawn(
            draw_no, card or self.cards[draw_no - 1], confidence, SET, double, False)))

    def kinds(self) -> list[str]:
        return [e.kind for e in self.effects if isinstance(e, Record)]


def dealt(result: dict[str, Any]) -> list[str]:
    return [c["card"] for c in result["cards"]]


def test_rws_5_8_a_draw_delivered_twice_is_dealt_once() -> None:
    d = Deal(["2S", "3H", "3S", "3D", "KC", "4H"])
    d.start()
    for n in (1, 2, 3):
        d.send(n)
    again = d.send(3)  # the link handed draw 3 back; the shoe sent it again
    assert [e.kind for e in again if isinstance(e, Record)] == ["draw_repeated"]
    assert not [e for e in again if isinstance(e, Alert)]
    d.send(4)
    d.send(5)
    [result] = results(d.effects)
    # P 2S 3S KC (5), B 3H 3D (6): five cards; 4H is still in the shoe.
    assert result["status"] == "valid" and result["winner"] == "banker"
    assert dealt(result) == d.cards[:5]
    assert "card_carried" not in d.kinds() and d.t.carried == []


def test_rws_5_18_a_lost_read_holds_the_result_and_the_pit_reconstructs_the_tie() -> None:
    d = Deal(TIE)
    d.start()
    d.send(1)
    d.send(2)
    held = d.send(4)  # draw 3 (AS) left the shoe; its read was lost
    assert results(held) == []
    assert "result_held" in [e.kind for e in held if isinstance(e, Record)]
    assert DeviceCommand("shoe", sp.LockGate(0, True)) in held
    assert [a.clause for a in held if isinstance(a, Alert)] == ["5.18"]
    with pytest.raises(CommandRefusedError, match="draw 4 was read as KD"):
        d.t.reconstruct_deal("pit 3", ["9S", "2H", "AS", "QD"])
    out = d.run(d.t.reconstruct_deal("pit 3", ["9S", "2H", "AS", "KD"]))
    assert Record("next_card", {"needed": "player_third_card"}, "r1") in out
    assert DeviceCommand("shoe", sp.LockGate(0, False)) in out
    d.send(5)
    d.send(6)
    [result] = results(d.effects)
    assert result["status"] == "valid" and result["winner"] == "tie"
    assert dealt(result) == TIE
    bets = {b["bet"]: b["result"] for b in result["bets"]}
    assert bets["player"] == "push" and bets["tie"] == "win"


def test_rws_5_18_a_lost_read_at_the_last_card_is_never_settled_as_read() -> None:
    d = Deal(TIE)
    d.start()
    for n in (1, 2, 3, 4, 5):
        d.send(n)
    d.send(7)  # draw 6 (7C) lost; draw 7 is a card of the next round, out of order
    assert results(d.effects) == []
    assert "result_held" in d.kinds()


@pytest.mark.parametrize("code", ["??", "ZZ"])
def test_rws_5_5_1_an_unreadable_card_holds_instead_of_voiding(code: str) -> None:
    d = Deal(TIE)
    d.start()
    d.send(1)
    out = d.send(2, code)
    assert results(out) == [], "an unreadable card is not a card of another set (5.5.1)"
    assert "result_held" in [e.kind for e in out if isinstance(e, Record)]
    # (a code no card has is also out of the field's range: an alert with the raw frame)
    assert [a.clause for a in out if isinstance(a, Alert)
            and a.code != "device_value_out_of_range"] == ["5.18"]
    d.run(d.t.reconstruct_deal("pit 3", ["9S", "2H"]))
    for n in (3, 4, 5, 6):
        d.send(n)
    [result] = results(d.effects)
    assert dealt(result) == TIE and result["winner"] == "tie"


def test_rws_5_18_a_card_read_at_0_percent_is_not_dealt_silently() -> None:
    d = Deal(TIE)  # the default floor
    d.start()
    d.send(1)
    out = d.send(2, confidence=0)
    assert "card" not in [e.kind for e in out if isinstance(e, Record)]
    assert "result_held" in [e.kind for e in out if isinstance(e, Record)]
    assert "0% confidence" in next(a.detail for a in out if isinstance(a, Alert))


def test_rws_5_18_a_read_below_the_configured_confidence_floor_holds() -> None:
    d = Deal(TIE, confidence_floor=90)
    d.start()
    d.send(1)
    out = d.send(2, confidence=89)
    assert results(out) == [] and "result_held" in [e.kind for e in out if isinstance(e, Record)]
    ok = Deal(TIE, confidence_floor=80)
    ok.start()
    assert "result_held" not in [e.kind for e in ok.send(1, confidence=80)
                                 if isinstance(e, Record)]


def test_rws_5_18_a_repeat_with_a_different_card_holds() -> None:
    d = Deal(TIE)
    d.start()
    d.send(1)
    d.send(2)
    out = d.send(2, "3C")
    assert results(out) == [] and "result_held" in [e.kind for e in out if isinstance(e, Record)]
    # The Pit may instead void the round.
    [void] = results(d.run(d.t.void_round("cards unclear", "pit 3")))
    assert void["status"] == "void"


def test_rws_5_8_a_card_drawn_while_a_result_is_held_is_carried() -> None:
    # P 9S AS, B 2H KD ... a double draw at draw 2: the deal completes, the result waits (D17)
    d = Deal(["9S", "2H", "KS", "KD", "4C"])
    d.start()
    d.send(1)
    d.send(2, double=True)
    d.send(3)
    d.send(4)
    assert "result_held" in d.kinds() and results(d.effects) == []
    out = d.send(5)  # a card drawn while the result is held
    assert "card_carried" in [e.kind for e in out if isinstance(e, Record)]
    d.run(d.t.confirm_order("pit 3"))
    d.run(d.t.open_betting())
    closed = d.run(d.t.close_betting())
    assert [e.body["card"] for e in closed if isinstance(e, Record) and e.kind == "card"] == \
        ["4C"]


def test_reconstruction_is_checked_against_the_table_of_play_and_the_shoe() -> None:
    d = Deal(TIE)
    d.start()
    d.send(1)
    d.send(2)
    d.send(4)
    with pytest.raises(CommandRefusedError, match="Table of Play"):
        d.t.reconstruct_deal("pit 3", ["9S", "2H", "AS", "KD", "9C", "7C", "5H"])
    with pytest.raises(CommandRefusedError, match="not a card"):
        d.t.reconstruct_deal("pit 3", ["9S", "2H", "XX", "KD"])
    with pytest.raises(CommandRefusedError, match="order"):
        d.t.reconstruct_deal("pit 3", ["2H", "9S", "AS", "KD"])
    assert d.t.state == "dealing" and results(d.effects) == []


def test_rws_ip_5_13_2_a_card_past_an_open_window_is_reconstructed_and_closes_it() -> None:
    # P 3S 3C (6), B 2H AD (3): the four-card window opens; the Banker's third card (5S)
    # is drawn past it and its read is lost: the deal waits; the Pit reconstructs it.
    d = Deal(["3S", "2H", "3C", "AD", "5S"], game="tiger-buffalo-insurance-plus")
    d.start()
    for n in (1, 2, 3, 4):
        d.send(n)
    assert d.t.insurance_window == "four_cards" and results(d.effects) == []
    # Nothing is held until the Pit, who sees the 5S on the table, holds the deal.
    with pytest.raises(CommandRefusedError, match="nothing is held"):
        d.t.reconstruct_deal("pit 3", ["3S", "2H", "3C", "AD", "5S"])
    d.run(d.t.hold_round("pit 3", "the 5S on the table was never read"))
    out = d.run(d.t.reconstruct_deal("pit 3", ["3S", "2H", "3C", "AD", "5S"]))
    # The deal is complete with that card: an outcome is established (D15).
    assert [(a.code, a.clause) for a in out if isinstance(a, Alert)] == [
        ("insurance_not_offered_after_outcome", "5.13.2")]
    assert d.t.insurance_window is None
    [result] = results(out)
    assert result["status"] == "valid" and dealt(result) == ["3S", "2H", "3C", "AD", "5S"]
