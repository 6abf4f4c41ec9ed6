"""Issue 28: what the Pit page shows waiting, from the table's signed messages: each hold
with exactly the commands the table takes for it, cleared only on the table's word."""

from __future__ import annotations

from daemon.display.pit import PitWaits, table_of_play
from daemon.games.table_of_play import banker_draws, player_draws


def test_a_reads_hold_waits_until_the_table_says_its_deal_is_reconstructed() -> None:
    pit = PitWaits()
    assert pit.event({"event": "result_held", "round_id": "r1", "hold_id": "r1/hold-1",
                      "reason": "reads", "clause": "5.18", "order": "1:9S 2:?? 3:AS",
                      "reads": [[1, "9S"], [3, "AS"]], "doubles": []})
    (hold,) = pit.view()["holds"]
    assert hold["actions"] == ["reconstruct_deal", "void_round"]
    assert hold["reads"] == [[1, "9S"], [3, "AS"]]
    assert not pit.event({"event": "deal_reconstructed", "hold": "r1/hold-0"})
    assert pit.event({"event": "deal_reconstructed", "hold": "r1/hold-1"})
    assert pit.view()["holds"] == []


def test_each_kind_of_hold_offers_what_the_table_takes() -> None:
    pit = PitWaits()
    pit.event({"event": "result_held", "round_id": "r1", "hold_id": "h1",
               "reason": "simultaneous_draw", "doubles": [5, 6]})
    pit.event({"event": "throw_held", "round_id": "r2", "hold_id": "r2/hold-1",
               "clause": "5.14", "why": "a die unread"})
    pit.event({"event": "result_disputed", "round_id": "r0", "draw_no": 3, "first": "9S",
               "again": "8S", "clause": "5.18"})
    kinds = {h["kind"]: h["actions"] for h in pit.view()["holds"]}
    assert kinds == {"simultaneous_draw": ["confirm_order", "void_round"],
                     "throw": ["throw_again", "void_round"],
                     "disputed": ["confirm_result", "void_settled_round"]}
    assert pit.result({"round_id": "r1", "seq": 4})  # the held round's result: gone
    assert pit.event({"event": "betting_opened", "round_id": "r3"})  # D23: it stands
    assert [h["kind"] for h in pit.view()["holds"]] == ["throw"]


def test_a_correction_clears_the_dispute_of_the_round_it_corrects() -> None:
    pit = PitWaits()
    pit.event({"event": "result_disputed", "round_id": "r0", "draw_no": 4, "first": "7D",
               "again": "KD", "clause": "5.18"})
    assert pit.result({"type": "correction", "corrects": "r0", "seq": 2, "status": "void"})
    assert pit.view()["holds"] == []


def test_replies_are_kept_by_id_for_the_page() -> None:
    pit = PitWaits()
    pit.reply({"id": "pit-1", "command": "void_round", "ok": False,
               "error": {"code": "denied", "message": "x"}, "state": "idle"})
    assert pit.view()["replies"][0]["error"]["code"] == "denied"


def test_the_table_of_play_the_page_checks_with_is_the_engines() -> None:
    top = table_of_play()
    assert all(top["player"][p][b] == player_draws(p, b) for p in range(10) for b in range(10))
    assert all(top["banker"][p][b][t] == banker_draws(p, b, None if t == 10 else t)
               for p in range(10) for b in range(10) for t in range(11))
    assert top["points"]["K"] == 0 and top["points"]["A"] == 1


def test_ip_3_14_the_squeeze_is_offered_while_the_banker_third_card_is_to_come() -> None:
    """IP 3.14: the table takes ``declare_squeeze`` in a round being dealt at a table of a
    game with Insurance, until the Banker Hand's third card is drawn or it is declared."""
    pit = PitWaits()
    ip = "tiger-buffalo-insurance-plus"
    assert not pit.event({"event": "betting_closed", "round_id": "r0"}, "tiger-buffalo")
    assert pit.view()["holds"] == []  # a game without Insurance: nothing to waive
    assert pit.event({"event": "betting_closed", "round_id": "r1"}, ip)
    (offer,) = pit.view()["holds"]
    assert (offer["kind"], offer["key"], offer["hold"], offer["round_id"], offer["clause"],
            offer["actions"]) == ("squeeze", "squeeze:r1", None, "r1", "3.14",
                                  ["declare_squeeze"])
    assert not pit.event({"event": "card", "round_id": "r1", "hand": "player",
                          "position": 3, "card": "3D"}, ip)
    assert pit.event({"event": "squeeze_declared", "round_id": "r1", "by": "alice"}, ip)
    assert pit.view()["holds"] == []
    pit.event({"event": "betting_closed", "round_id": "r2"}, ip)
    assert pit.event({"event": "card", "round_id": "r2", "hand": "banker", "position": 3,
                      "card": "3C"}, ip)  # too late to declare
    assert pit.view()["holds"] == []
    pit.event({"event": "betting_closed", "round_id": "r3"}, ip)
    assert pit.event({"event": "result_held", "round_id": "r3", "hold_id": "r3/h1",
                      "reason": "reads"}, ip)
    assert [h["kind"] for h in pit.view()["holds"]] == ["reads"]  # held: not dealing


def test_tai_sai_5_6_the_page_is_offered_the_causes_that_void_a_settled_round() -> None:
    """Tai Sai 5.6 reaches back ("all affected Rounds of play shall be Voided"): the page
    offers void_settled_round under the game's own causes; the baccarat games, none
    (earlier outcomes stand; a dispute is answered on its own hold)."""
    pit = PitWaits()
    assert pit.view("tai-sai-open-cover")["corrects"] == ["damaged_dice"]
    assert pit.view("tiger-buffalo")["corrects"] == []
    assert pit.view(None)["corrects"] == []
