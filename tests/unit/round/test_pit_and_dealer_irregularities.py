"""Irregularities the pit sees and names (D14), insurance not offered (D15) and the reset
of the dealing device (D16): the clauses the controller cannot see by itself."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from daemon.games import GAMES, get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Record
from daemon.round.lifecycle import BETTING
from daemon.round.recovery import restore
from daemon.security.commands import CommandError, check_irregularity, parse_command
from daemon.store.journal import Journal
from firmware_protocols import shoe as sp
from tests.unit.round.journalling import journal_effects
from tests.unit.round.parts import Row
from tests.unit.round.tables import DECKS, Table, kinds, results


def alerts(effects: list[Any]) -> list[tuple[str, str]]:
    return [(a.code, a.clause) for a in effects if isinstance(a, Alert)]


# -- D14: the pit names the clause it saw ------------------------------------------------

@pytest.mark.parametrize(("game", "layout", "code", "clause"), [
    pytest.param("tiger-buffalo", "P", "incorrect_card_count", "5.5.3",
                 id="rws_tb_5_5_3_pit_voids_an_incorrect_card_count"),
    pytest.param("tiger-buffalo-insurance-plus", "A", "incorrect_card_count", "5.5.3",
                 id="rws_ip_5_5_3_pit_voids_an_incorrect_card_count"),
    pytest.param("tiger-baccarat", "A", "simultaneous_draw_initial_unknown_order", "5.8.2.1",
                 id="mbs_5_8_2_1_pit_voids_a_double_draw_of_unknown_order"),
    pytest.param("tiger-baccarat", "A", "method_c_order_altered", "5.12.2",
                 id="mbs_5_12_2_pit_voids_a_method_c_order_altered"),
])
def test_the_pit_voids_under_the_clause_it_saw(game: str, layout: str, code: str,
                                              clause: str) -> None:
    t = Table(game, layout, top=["2S", "3H", "3S", "3D"])
    t.t.open_betting()
    t.t.close_betting()
    t.draw(double_draw=code.startswith("simultaneous"))
    t.draw()
    out = t.t.void_round("two cards left together, order not seen", "pit-boss", code)
    [result] = results(out)
    assert (result["void_reason"]["code"], result["void_reason"]["clause"]) == (code, clause)
    assert result["void_reason"]["detail"] == \
        "voided by pit-boss: two cards left together, order not seen"
    assert (code, clause) in alerts(out)
    assert all(b["result"] == "push" for b in result["bets"])  # every bet returned


def _command(name: str, **args: str) -> Any:
    body = {"id": "c1", "issued_at": "2026-11-26T00:00:00Z", "sig": {}, **args}
    return parse_command(name, json.dumps({"round_id": "r-1", **body}).encode())


@pytest.mark.parametrize(("game", "code"), [
    ("tiger-buffalo", "face_up_card"),  # a cause that does not void (RWS 5.10)
    ("tiger-buffalo", "void_returns_bets"),  # a consequence, not a cause (RWS 5.16)
    ("tiger-buffalo", "simultaneous_draw_initial_unknown_order"),  # MBS only
    ("tai-sai-open-cover", "card_not_of_set"),  # no cards in Tai Sai
    ("tiger-baccarat", "nonsense"),
])
def test_d14_void_round_refuses_an_irregularity_that_does_not_void_in_this_game(
        game: str, code: str) -> None:
    cmd = _command("void_round", reason="x", irregularity=code)
    with pytest.raises(CommandError, match=f"irregularity '{code}' does not void a round of "
                                           f"{game}; one of: ") as err:
        check_irregularity(cmd, GAMES[game])
    assert err.value.code == "bad_argument"


def test_rws_tb_5_18_void_round_without_an_irregularity_is_anything_else() -> None:
    check_irregularity(_command("void_round", reason="x"), GAMES["tiger-buffalo"])
    assert GAMES["tiger-buffalo"].pit_voidable()[-1] == "unresolved_irregularity"
    assert GAMES["tiger-buffalo"].irregularity("unresolved_irregularity").clause == "5.18"


def test_d14_clauses_the_controller_cannot_see_are_marked_for_the_pit() -> None:
    pit = {(g.id, i.clause) for g in GAMES.values() for i in g.irregularities
           if i.detected_by == "pit"}
    for game in ("tiger-buffalo", "tiger-buffalo-insurance-plus"):
        assert (game, "5.5.3") in pit
    assert ("tiger-buffalo", "5.13") in pit and ("tiger-buffalo-insurance-plus", "5.12") in pit
    for clause in ("5.7.1", "5.8.2.1", "5.8.2.2", "5.12.1", "5.12.2"):
        assert ("tiger-baccarat", clause) in pit
    # What the shoe does report stays the controller's: the double draw itself.
    assert ("tiger-baccarat", "5.8") not in pit and ("tiger-buffalo", "5.11") not in pit


# -- D15: insurance not offered (IP 5.13) ------------------------------------------------

def _insurance_round() -> Table:
    # Player 2+3 = 5, Banker 2+2 = 4: the four-card window offers Player Insurance.
    t = Table("tiger-buffalo-insurance-plus", "A", top=["2S", "2H", "3S", "2D", "4C", "5H"])
    t.t.open_betting()
    t.t.close_betting()
    for _ in range(4):
        t.draw()
    assert t.t.insurance_window == "four_cards"
    return t


def test_rws_ip_5_13_1_card_drawn_through_an_open_window_before_an_outcome() -> None:
    t = _insurance_round()
    out = t.draw()  # Player's third 4C: Player 9, Banker 4 still draws; nothing decided
    assert ("insurance_not_offered_before_outcome", "5.13.1") in alerts(out)
    assert kinds(out)[:4] == ["card_drawn", "insurance_offered_late", "insurance_closed",
                              "card"]
    detail = next(a.detail for a in out if isinstance(a, Alert))
    assert detail.startswith("draw 5: 4C was drawn while the four_cards insurance window "
                             "was open")
    assert t.t.state == "dealing"  # play continues: the Pit Manager offers insurance


def test_rws_ip_5_13_1_the_late_offer_is_settled_with_its_payout_cap() -> None:
    """'the total payout on the Insurance Bet(s) shall not exceed the Original Bet': the
    four-card window the Pit offered late carries the cap in the result; the next window,
    offered in time, does not."""
    t = _insurance_round()
    t.draw()  # through the open four-card window: 5.13.1
    t.t.close_insurance("c9")  # the player-third-card window, offered in time
    [result] = results(t.draw())
    capped = {b["window"] for b in result["bets"] if "payout_cap" in b}
    insured = {b["window"] for b in result["bets"] if "window" in b}
    assert capped == {"four_cards"} and insured == {"four_cards", "player_third_card"}
    assert all(b["payout_cap"] == {"limit": "original_bet", "clause": "5.13.1"}
               for b in result["bets"] if "payout_cap" in b)


def test_rws_ip_5_13_2_card_drawn_through_an_open_window_after_an_outcome() -> None:
    t = _insurance_round()
    t.draw()
    assert t.t.insurance_window == "player_third_card"
    out = t.draw()  # Banker's third 5H completes the round: 9-9
    assert ("insurance_not_offered_after_outcome", "5.13.2") in alerts(out)
    [result] = results(out)
    assert result["status"] == "valid" and result["winner"] == "tie"


def test_rws_ip_5_13_a_window_the_dealer_closes_raises_nothing() -> None:
    t = _insurance_round()
    t.t.close_insurance("c9")
    out = t.draw()
    assert not [a for a in alerts(out) if a[0].startswith("insurance_not_offered")]


# -- D16: the dealing device reset after "No more bets" (MBS 5.9) ------------------------

def _reset_after_two_cards() -> tuple[Table, list[Any]]:
    t = Table("tiger-baccarat", "A", top=["2S", "3H", "9S", "KH", "TD", "2C"])
    t.t.open_betting()
    t.t.close_betting()
    t.draw()
    t.draw()
    out = t.t.reset_dealing_device("dealer-3")
    t.effects += out
    return t, out


def test_mbs_5_9_reset_reopens_betting_and_keeps_the_drawn_cards_in_order() -> None:
    """D16: no clause sets a drawn card aside (MBS 5.2, 5.7, 5.8 keep or reconstruct the
    order); the deal goes on from the cards drawn before the reset."""
    t, out = _reset_after_two_cards()
    assert t.t.state == BETTING
    assert Record("betting_reopened", {"clause": "5.9", "by": "dealer-3",
                                       "cards_kept": ["2S", "3H"]}, "r1") in out
    assert DeviceCommand("shoe", sp.LockGate(0, True)) in out  # shut until "No more bets"
    assert alerts(out) == [("device_reset", "5.9")]
    detail = next(a.detail for a in out if isinstance(a, Alert))
    assert "players may withdraw their wagers" in detail and "(5.2)" in detail
    closed = t.t.close_betting()  # "No more bets" re-announced
    assert DeviceCommand("shoe", sp.LockGate(0, False)) in closed
    assert Record("next_card", {"needed": "player_card_2"}, "r1") in closed
    for _ in range(4):
        t.draw()
    [result] = results(t.effects)
    # Player 2S 9S TD = 1, Banker 3H KH 2C = 5.
    assert [c["card"] for c in result["cards"]] == ["2S", "3H", "9S", "KH", "TD", "2C"]
    assert (result["player_total"], result["banker_total"]) == (1, 5)


@pytest.mark.parametrize("game", ["tiger-buffalo", "tiger-buffalo-insurance-plus"])
def test_rws_has_no_reset_of_the_dealing_device(game: str) -> None:
    t = Table(game, "A")
    t.t.open_betting()
    t.t.close_betting()
    with pytest.raises(CommandRefusedError, match="have no reset of the dealing device"):
        t.t.reset_dealing_device("dealer-3")


def test_mbs_5_9_reset_only_after_no_more_bets() -> None:
    t = Table("tiger-baccarat", "A")
    for step in (lambda: None, t.t.open_betting):
        step()
        state = t.t.state
        with pytest.raises(CommandRefusedError, match="only after \"No more bets\""):
            t.t.reset_dealing_device("dealer-3")
        assert t.t.state == state


def test_mbs_5_9_a_restart_after_the_reset_keeps_betting_open(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    t = Table("tiger-baccarat", "A", top=["2S", "3H", "9S", "KH", "TD", "2C"])
    journal_effects(j, t.effects)
    for cmd in (t.t.open_betting, t.t.close_betting):
        journal_effects(j, cmd())
    journal_effects(j, t.draw())
    journal_effects(j, t.draw())
    journal_effects(j, t.t.reset_dealing_device("dealer-3"))
    fresh = BaccaratTable("bac-07", get_game("tiger-baccarat"), "A", DECKS, clock=time.time,
                          new_round_id=lambda: uuid.uuid4().hex)
    out = restore(fresh, j.records())
    assert fresh.state == BETTING
    assert fresh.round is not None and fresh.round.closed_at is None
    assert [c.code for c in fresh.round.cards] == ["2S", "3H"]  # kept (D16)
    assert ("technical_interruption_no_outcome", "5.17.1") in alerts(out)


def test_mbs_5_9_a_journal_from_before_d16_still_sets_its_cards_aside() -> None:
    """A betting_reopened written under the old reading is folded as it was decided."""

    t = Table("tiger-baccarat", "A", top=["2S", "3H", "9S", "KH", "TD", "2C"])
    log = t.effects + t.t.open_betting() + t.t.close_betting() + t.draw() + t.draw()
    log += t.t.reset_dealing_device("dealer-3")
    fresh = BaccaratTable("bac-07", get_game("tiger-baccarat"), "A", DECKS, clock=time.time,
                          new_round_id=lambda: uuid.uuid4().hex)
    for e in log:
        if isinstance(e, Record):
            body = ({"clause": "5.9", "by": "dealer-3", "cards_set_aside": ["2S", "3H"]}
                    if e.kind == "betting_reopened" else e.body)
            fresh.replay([Row(e.kind, body, e.round_id, 1.0)])
    assert fresh.state == BETTING and fresh.round is not None and fresh.round.cards == []


# -- D17: a double draw's order is the Pit's (RWS 5.11, MBS 5.8.2) -----------------------

def _double_drawn(game: str = "tiger-buffalo") -> Table:
    # Player 2+3, Banker 3+3; draw 3 left the shoe with draw 4; the Player's third is KC.
    t = Table(game, "A", top=["2S", "3H", "3S", "3D", "KC"])
    t.t.open_betting()
    t.t.close_betting()
    for n in range(1, 6):
        t.draw(double_draw=n == 3)
    return t


@pytest.mark.parametrize(("game", "clause"), [
    pytest.param("tiger-buffalo", "5.11", id="rws_tb_5_11_the_result_waits_for_the_pit"),
    pytest.param("tiger-buffalo-insurance-plus", "5.10",
                 id="rws_ip_5_10_the_result_waits_for_the_pit"),
    pytest.param("tiger-baccarat", "5.8", id="mbs_5_8_the_result_waits_for_the_pit"),
])
def test_a_complete_deal_with_a_double_draw_is_held(game: str, clause: str) -> None:
    t = _double_drawn(game)
    assert results(t.effects) == [] and t.t.state == "dealing"
    held = next(e for e in t.effects if isinstance(e, Record) and e.kind == "result_held")
    assert held.body == {"hold_id": "r1:1", "reason": "simultaneous_draw", "doubles": [3],
                         "clause": clause,
                         "order": "1:2S 2:3H 3:3S 4:3D 5:KC",
                         "reads": [[1, "2S"], [2, "3H"], [3, "3S"], [4, "3D"], [5, "KC"]]}
    assert DeviceCommand("shoe", sp.LockGate(0, True)) == t.effects[-2]
    out = t.t.confirm_order("pit-boss")
    [result] = results(out)
    assert (result["status"], result["winner"], result["banker_total"]) == ("valid", "banker", 6)
    assert kinds(out)[0] == "order_confirmed" and t.t.state == "idle"


def test_mbs_5_8_2_2_the_pit_sets_another_order_after_the_initial_deal() -> None:
    # Player 2+3, Banker A+2: the Player's third (4C) and the Banker's (9D) left together.
    t = Table("tiger-baccarat", "A", top=["2S", "AH", "3S", "2D", "4C", "9D"])
    t.t.open_betting()
    t.t.close_betting()
    for n in range(1, 7):
        t.draw(double_draw=n == 5)
    assert results(t.effects) == []  # as read: Player 9, Banker 2
    out = t.t.confirm_order("pit-manager", "5,6")  # 9D was the Player's: 4; Banker 3+4
    [result] = results(out)
    assert [c["card"] for c in result["cards"]] == ["2S", "AH", "3S", "2D", "9D", "4C"]
    assert (result["winner"], result["player_total"], result["banker_total"]) == (
        "banker", 4, 7)
    assert Record("order_confirmed", {"by": "pit-manager", "swap": "5,6", "hold": "r1:1",
                                      "cards": ["2S", "AH", "3S", "2D", "9D", "4C"],
                                      "draws": [1, 2, 3, 4, 5, 6]}, "r1") in out


def test_rws_5_11_mbs_5_8_2_2_the_pits_order_stands_when_the_deal_then_needs_a_card() -> None:
    # Issue 23: as read 2S 3H 3S 3D KC is complete (Player 5+K... Banker 6 stands); in the
    # Pit's order (draws 2 and 5 exchanged) the Banker needs a third card: play goes on.
    t = _double_drawn("tiger-baccarat")
    out = t.t.confirm_order("pit-manager", "2,5")
    assert results(out) == [] and t.t.state == "dealing" and t.t.round is not None
    assert [c.code for c in t.t.round.cards] == ["2S", "KC", "3S", "3D", "3H"]
    assert DeviceCommand("shoe", sp.LockGate(0, False)) in out
    assert kinds(out)[-1] == "next_card"


@pytest.mark.parametrize(("swap", "message"), [
    ("3,9", "swap takes two draw numbers of this round, from [1, 2, 3, 4, 5]"),
    ("x", "swap takes two draw numbers"),
])
def test_mbs_5_8_2_2_an_order_the_cards_dealt_cannot_follow_is_refused(swap: str,
                                                                       message: str) -> None:
    t = _double_drawn("tiger-baccarat")
    with pytest.raises(CommandRefusedError, match=message.replace("[", r"\[").replace(
            "]", r"\]")):
        t.t.confirm_order("pit-manager", swap)
    assert t.t.state == "dealing" and t.t.round is not None
    assert [c.code for c in t.t.round.cards] == ["2S", "3H", "3S", "3D", "KC"]  # unchanged
    [result] = results(t.t.void_round("order cannot be determined", "pit-manager"))
    assert result["status"] == "void"


def test_mbs_5_8_confirm_order_needs_a_held_result() -> None:
    t = Table("tiger-baccarat", "A")
    t.t.open_betting()
    t.t.close_betting()
    with pytest.raises(CommandRefusedError, match="nothing is held"):
        t.t.confirm_order("pit-manager")


def test_rws_tb_5_11_a_held_result_stays_held_across_a_restart(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    t = Table("tiger-buffalo", "A", top=["2S", "3H", "3S", "3D", "KC"])
    journal_effects(j, t.effects)
    for cmd in (t.t.open_betting, t.t.close_betting):
        journal_effects(j, cmd())
    for n in range(1, 6):
        journal_effects(j, t.draw(double_draw=n == 3))
    fresh = BaccaratTable("bac-07", get_game("tiger-buffalo"), "A", DECKS, clock=time.time,
                          new_round_id=lambda: uuid.uuid4().hex)
    out = restore(fresh, j.records())  # an outcome is established: 5.4.1, play continues
    assert results(out) == [] and ("simultaneous_draw", "5.11") in alerts(out)
    [result] = results(fresh.confirm_order("pit-boss"))
    assert result["winner"] == "banker"
