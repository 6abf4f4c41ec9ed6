"""Issue 23: the baccarat core against a hostile table. Each case was seen to publish a
wrong ``valid`` result, put one card in two rounds, cost a fault-free round, or take a
Pit command that answered nothing; each test here failed on the code before the fix."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from daemon.games import get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, CommandRefusedError, Effect, Record
from daemon.round.recovery import restore
from firmware_protocols import shoe as sp
from tests.unit.round.parts import journal
from tests.unit.round.tables import Table, kinds, results


def held(effects: list[Any]) -> dict[str, Any]:
    return next(e.body for e in reversed(effects)
                if isinstance(e, Record) and e.kind == "result_held")


def dealt(result: dict[str, Any]) -> list[str]:
    return [c["card"] for c in result["cards"]]


def restarted(t: Table) -> tuple[BaccaratTable, list[Effect]]:
    """A fresh table after a restart: everything ``t`` journalled folded into it, and
    what the fold made it do."""
    ids = itertools.count(100)
    again = BaccaratTable("bac-07", get_game("tiger-buffalo"), "P", 8,
                          clock=lambda: 1_764_000_000.0, new_round_id=lambda: f"r{next(ids)}")
    return again, restore(again, journal(t.effects, 1.0e9))


def play(t: Table) -> None:
    t.effects += t.t.open_betting()
    t.effects += t.t.close_betting()


def test_rws_5_6_d23_a_wrong_read_of_the_last_card_holds_the_next_round() -> None:
    # 9S 2H AS KD: the last card read as 7D, published at once; the shoe then sends draw 4
    # again with the true card. The result may be wrong: the next round waits for the Pit.
    t = Table(top=["9S", "2H", "AS", "KD"])
    play(t)
    for _ in range(3):
        t.draw()
    [wrong] = results(t.draw(card="7D"))
    assert wrong["status"] == "valid" and dealt(wrong) == ["9S", "2H", "AS", "7D"]
    out = t.t.card_drawn(sp.CardDrawn(4, "KD", 99, 0xC0FFEE, False, False))
    assert kinds(out) == ["card_drawn", "result_disputed"]
    with pytest.raises(CommandRefusedError, match="round r1 waits for the Pit: draw 4"):
        t.t.open_betting()
    with pytest.raises(CommandRefusedError, match="not the disputed round"):
        t.t.confirm_result("pit", "r0")
    [correction] = results(t.t.void_settled_round("pit", "r1", "draw 4 was KD"))
    assert correction["type"] == "correction" and correction["corrects"] == "r1"
    t.t.open_betting()  # the next round commences: from here on results stand (RWS 5.6)


def test_d23_the_pit_may_confirm_a_disputed_result_and_a_later_round_is_out_of_reach() -> None:
    t = Table(top=["9S", "2H", "AS", "7D"])
    play(t)
    for _ in range(4):
        t.draw()
    t.t.card_drawn(sp.CardDrawn(4, "KD", 99, 0xC0FFEE, False, False))  # a stray re-read
    assert t.t.disputed is not None
    assert kinds(t.t.confirm_result("pit", "r1")) == ["result_confirmed"]
    with pytest.raises(CommandRefusedError, match="no published result waits"):
        t.t.confirm_result("pit", "r1")
    t.t.open_betting()
    with pytest.raises(CommandRefusedError, match="no clause of tiger-buffalo voids"):
        t.t.void_settled_round("pit", "r1", "too late: the next round has commenced")


def test_rws_5_8_a_carried_card_reconstructed_into_the_held_deal_is_in_no_other_round(
        ) -> None:
    # Draw 3 unreadable: held. Draw 4 forced past the locked gate: carried. The Pit puts it
    # in the held deal: it is draw 4 there, and the next deal starts with draw 5.
    t = Table(top=["2S", "3H", "4S", "2D", "KC", "QC", "JD", "9H", "8S"])
    play(t)
    t.draw()
    t.draw()
    t.draw(card="??")
    assert t.t.round is not None and t.t.round.held == "reads"
    hold = held(t.effects)["hold_id"]
    t.draw()  # 2D, past the locked gate
    assert [n for _, n in t.t.carried] == [4]
    out = t.t.reconstruct_deal("pit", ["2S", "3H", "4S", "2D", "KC"], hold=hold)
    rec = next(e for e in out if isinstance(e, Record) and e.kind == "deal_reconstructed")
    assert rec.body["draws"] == [1, 2, 3, 4, 5] and t.t.carried == []
    t.draws = 5  # the dealer drew KC as draw 5 once the gate opened
    [first] = results(t.effects + out)
    assert dealt(first) == ["2S", "3H", "4S", "2D", "KC"]
    play(t)
    for _ in range(4):
        t.draw()
    second = results(t.effects)[-1]
    assert second["status"] == "valid" and dealt(second) == ["QC", "JD", "9H", "8S"]


def test_d19_a_draw_number_no_draw_has_belongs_to_the_round_it_left_the_shoe_in() -> None:
    # Draw 3 reported with draw number 0; the Pit voids the round. The next round, with no
    # fault of its own, is neither held nor given the voided round's card.
    t = Table(top=["2S", "3H", "4S", "9D", "KC", "QC", "JD"])
    play(t)
    t.draw()
    t.draw()
    t.draws += 1
    t.effects += t.t.device_fault(sp.CardDrawn(0, "4S", 99, 0xC0FFEE, False, False),
                                  "draw_no 0")
    assert t.t.round is not None and t.t.round.held == "reads"
    [void] = results(t.t.void_round("the card cannot be read", "pit"))
    assert void["status"] == "void"
    play(t)
    out = []
    for _ in range(4):
        out += t.draw()
    [result] = results(out)
    assert result["status"] == "valid" and dealt(result) == ["9D", "KC", "QC", "JD"]


def test_d18_a_reconstruction_answers_a_hold_once_and_nothing_else() -> None:
    t = Table(top=["2S", "3H", "4S", "5D", "KC"])
    play(t)
    with pytest.raises(CommandRefusedError, match="nothing is held"):
        t.t.reconstruct_deal("pit", ["2S", "3H", "4S", "5D"])  # invented: nothing drawn
    t.draw()
    t.draw(card="??")
    hold = held(t.effects)["hold_id"]
    with pytest.raises(CommandRefusedError, match="not the open hold"):
        t.t.reconstruct_deal("pit", ["2S", "3H"], hold="r1:9")
    t.t.reconstruct_deal("pit", ["2S", "3H"], hold=hold)
    # The same answer again (a redelivered result_held, answered twice): refused.
    with pytest.raises(CommandRefusedError, match=f"hold {hold} was already answered"):
        t.t.reconstruct_deal("pit", ["2S", "3H", "4S"], hold=hold)
    with pytest.raises(CommandRefusedError, match="already answered"):
        t.t.commands("pit", {"hold": hold, "reason": "stale"})["void_round"]()
    assert t.t.round is not None and len(t.t.round.cards) == 2


def test_d18_a_late_trustworthy_read_is_checked() -> None:
    # Draw 3 lost, draw 4 read: held. Draw 3 then arrives late as AS at 99%: a
    # reconstruction with 8S at draw 3 contradicts it.
    t = Table(top=["2S", "3H", "AS", "5D", "KC"])
    play(t)
    t.draw()
    t.draw()
    t.draws += 1  # draw 3's read is lost on the line
    t.draw()
    hold = held(t.effects)["hold_id"]
    t.effects += t.t.card_drawn(sp.CardDrawn(3, "AS", 99, 0xC0FFEE, False, False))
    with pytest.raises(CommandRefusedError, match="draw 3 was read as AS"):
        t.t.reconstruct_deal("pit", ["2S", "3H", "8S", "5D"], hold=hold)
    t.t.reconstruct_deal("pit", ["2S", "3H", "AS", "5D"], hold=hold)


def test_rws_5_4_1_a_restart_holds_when_an_unread_card_may_have_settled_a_bet() -> None:
    # 3S 2H, then 3D unreadable: on the table Player Pair has won (5.4.1), so a restart
    # while the round is held must not void it from the trusted cards alone (5.4.2).
    t = Table(top=["3S", "2H", "3D", "9C", "KC"])
    play(t)
    t.draw()
    t.draw()
    t.draw(card="??")
    again, out = restarted(t)
    assert results(out) == [] and again.round is not None and again.round.held == "reads"
    assert any(isinstance(a, Alert) and "waits for the Pit" in a.detail for a in out)
    hold = held(out)["hold_id"]
    again.reconstruct_deal("pit", ["3S", "2H", "3D"], hold=hold)
    assert again.state == "dealing"  # an outcome is established: play continues (5.4.1)


def test_rws_5_4_2_after_such_a_restart_a_reconstruction_with_no_outcome_voids() -> None:
    # 3S, then draw 2 unreadable: no bet can be settled by two cards of different hands,
    # so the Pit's reconstruction establishes no outcome, and the round is void.
    t = Table(top=["3S", "2H", "4D", "9C", "KC"])
    play(t)
    t.draw()
    t.draw(card="??")
    again, out = restarted(t)
    [void] = results(again.reconstruct_deal("pit", ["3S", "2H"],
                                            hold=held(out)["hold_id"]))
    assert void["status"] == "void" and void["void_reason"]["clause"] == "5.4.2"


def test_rws_5_11_the_pit_takes_the_carried_other_card_of_a_pair_into_the_deal() -> None:
    # P 2S AH, B 3S 2D: Player 3 draws. 4C and 9D leave together, read as 4C (draw 5,
    # flagged) then 9D (draw 6). As read, P 2S AH 4C = 7; Banker 5 draws on 4: needs one
    # more, 9D completes it: held for the order. In the Pit's order (5,6 exchanged) 9D is
    # the Player's and 4C the Banker's.
    t = Table("tiger-baccarat", "A", top=["2S", "AH", "3S", "2D", "4C", "9D", "KH"])
    play(t)
    for n in range(1, 7):
        t.draw(double_draw=n in (5, 6))
    hold = held(t.effects)["hold_id"]
    [result] = results(t.t.confirm_order("pit", "5,6", hold=hold))
    assert dealt(result) == ["2S", "AH", "3S", "2D", "9D", "4C"]
    assert t.t.carried == []


def test_void_closes_a_double_draws_carried_pair() -> None:
    # The pair's second card read after the deal was complete as read is this round's
    # card: voiding the round closes it, and no later round is published with it.
    t = Table(top=["2S", "3H", "3S", "3D", "KC", "QC", "JD", "9H", "8S"])
    play(t)
    for n in range(1, 6):
        t.draw(double_draw=n == 5)
    assert t.t.round is not None and t.t.round.held == "simultaneous_draw"
    t.draw(double_draw=True)  # QC, the pair's other card, read after the hold
    assert [n for _, n in t.t.carried] == [6]
    t.t.void_round("order unknown", "pit")
    assert t.t.carried == []
    play(t)
    out = []
    for _ in range(3):
        out += t.draw()
    assert all("QC" not in dealt(r) for r in results(out))


def test_d24_one_copy_too_many_is_the_pits_not_a_void() -> None:
    # Eight 4S read in two rounds (misreads among them, as far as the table knows); the
    # ninth is an excess card (5.5.2) or a misread: the round is held, never voided on it.
    t = Table()
    for _ in range(2):
        play(t)
        for _ in range(4):
            t.draw(card="4S")  # Player 8, Banker 8: a natural each time
    play(t)
    out = t.draw(card="4S")
    assert results(out) == [] and t.t.round is not None and t.t.round.held == "reads"
    assert any(isinstance(a, Alert) and "would be seen 9 times" in a.detail for a in out)
    # The Pit, who sees the card, may confirm it (an earlier read was wrong) or void.
    hold = held(out)["hold_id"]
    t.t.reconstruct_deal("pit", ["4S"], hold=hold)
    assert t.t.round.held is None


def test_rws_5_11_a_double_draw_read_in_the_wrong_order_binds_as_a_pair() -> None:
    # Draws 3 and 4 left together and were read swapped; draw 5 is unreadable, so the
    # Pit reconstructs: its order of the pair is the true one, not the reader's.
    t = Table(top=["2S", "3H", "4S", "2D", "KC"])
    play(t)
    t.draw()
    t.draw()
    t.draw(card="2D", double_draw=True)
    t.draw(card="4S", double_draw=True)
    t.draw(card="??")
    hold = held(t.effects)["hold_id"]
    [result] = results(t.t.reconstruct_deal("pit", ["2S", "3H", "4S", "2D", "KC"],
                                            hold=hold))
    assert dealt(result) == ["2S", "3H", "4S", "2D", "KC"]


def test_d18_a_read_that_comes_after_a_void_is_the_pits_to_place() -> None:
    # The last card's read is lost; the Pit voids the round; the read then arrives. It may
    # be the voided deal's card or one forced past the gate: the next deal is held, and
    # the Pit's '--' says it was the voided deal's. Before, it was the next deal's first.
    t = Table(top=["2S", "3H", "4S", "2D", "KC", "9D", "KH", "QC", "JD"])
    play(t)
    for _ in range(4):
        t.draw()
    t.draws += 1  # KC: its read is lost
    t.t.void_round("the table waits for a card already dealt", "pit")
    t.effects += t.t.card_drawn(sp.CardDrawn(5, "KC", 99, 0xC0FFEE, False, False))
    assert t.t.carried == [(None, 5)]
    play(t)
    hold = held(t.effects)["hold_id"]
    t.effects += t.t.reconstruct_deal("pit", ["--"], hold=hold)
    out = []
    for _ in range(4):
        out += t.draw()
    [result] = results(out)
    assert dealt(result) == ["9D", "KH", "QC", "JD"]
