"""The display's view of a table: only verified payloads, each applied once; what it
refuses, it says why. Adversarial inputs: forgeries, other keys, replays onto another
table's topic, duplicates, late wills, contract v2 additions."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from daemon.display.dice import CHI2_DF5_P001, MIN_THROWS_FOR_WATCH, dice_stats
from daemon.display.view import Display
from daemon.security.signing import Signer
from tests.keys import STRANGER_KEY, TABLE_KEY, TABLE_KEYRING
from tests.unit.display.payloads import AT, JID, correction, event, result, snapshot, v2

SIGNER = Signer(TABLE_KEY)


def wire(body: dict[str, Any], signer: Signer = SIGNER) -> bytes:
    return signer.seal(body).encode("utf-8")


def display() -> Display:
    return Display(TABLE_KEYRING)


def test_a_signed_result_is_shown() -> None:
    d = display()
    assert d.receive("tables/t1/results", wire(result(1)), AT) == "t1"
    view = d.view()["tables"]["t1"]
    assert [c["hand"]["seq"] for c in view["roads"]["bead_plate"]] == [1]
    assert view["last_results"][0]["wins"] == [{"bet": "banker", "pays": "1:1"}]


def test_forged_unsigned_foreign_and_misplaced_payloads_are_refused_with_reasons() -> None:
    d = display()
    genuine = json.loads(wire(result(1)))
    altered = {**genuine, "winner": "player"}
    unsigned = result(2)
    stranger = wire(result(3), Signer(STRANGER_KEY))
    cases = [("tables/t1/results", json.dumps(altered).encode(), "bad signature"),
             ("tables/t1/results", json.dumps(unsigned).encode(), "unsigned"),
             ("tables/t1/results", stranger, "unknown key"),
             # A genuine payload of t1, replayed onto t2's topic.
             ("tables/t2/results", wire(result(1)), "signed for table 't1'"),
             ("tables/t1/results", b"{not json", "not JSON"),
             ("tables/t1/results", b"[1, 2]", "not a JSON object")]
    for topic, raw, _ in cases:
        assert d.receive(topic, raw, AT) == ""
    reasons = [r["reason"] for r in d.refused_view()["last"]][::-1]
    for (_, _, why), reason in zip(cases, reasons, strict=True):
        assert why in reason
    assert d.refused_view()["total"] == len(cases)
    assert d.tables == {}  # nothing refused reached any table's view


def test_a_float_in_a_payload_is_refused_not_rounded() -> None:
    d = display()
    body = json.loads(wire(result(1)))
    body["player_total"] = 5.0
    assert d.receive("tables/t1/results", json.dumps(body).encode(), AT) == ""
    assert "float 5.0" in d.refused_view()["last"][0]["reason"]


def test_duplicates_and_replayed_copies_show_once() -> None:
    d = display()
    d.receive("tables/t1/results", wire(result(1)), AT)
    assert d.receive("tables/t1/results", wire(result(1)), AT) is None
    assert d.receive("tables/t1/results", wire(result(1, replayed=True)), AT) is None
    d.receive("tables/t1/results", wire(result(2, "player")), AT)
    view = d.view()["tables"]["t1"]
    assert [c["hand"]["seq"] for c in view["roads"]["bead_plate"]] == [1, 2]
    assert view["counters"]["duplicates"] == 2


def test_out_of_order_results_are_drawn_in_seq_order_and_gaps_named() -> None:
    d = display()
    for seq in (3, 1, 5):
        d.receive("tables/t1/results", wire(result(seq)), AT)
    view = d.view()["tables"]["t1"]
    assert [c["hand"]["seq"] for c in view["roads"]["bead_plate"]] == [1, 3, 5]
    assert view["gaps"] == [(2, 2), (4, 4)]


@given(st.permutations(list(range(1, 16))), st.lists(st.integers(1, 15), max_size=10))
def test_any_order_with_any_duplicates_gives_the_same_roads(order: list[int],
                                                            again: list[int]) -> None:
    winners = {s: ("banker", "player", "tie")[s % 3] for s in range(1, 16)}
    d = display()
    for seq in [*order, *again]:
        d.receive("tables/t1/results", wire(result(seq, winners[seq])), AT)
    ref = display()
    for seq in range(1, 16):
        ref.receive("tables/t1/results", wire(result(seq, winners[seq])), AT)
    assert d.view()["tables"]["t1"]["roads"] == ref.view()["tables"]["t1"]["roads"]


def test_a_late_will_from_an_older_session_is_not_news() -> None:
    d = display()
    status = {"type": "status", "table": "t1", "game": "tiger-buffalo", "layout": "P",
              "version": "0.1.0", "at": AT}
    d.receive("tables/t1/status", wire({**status, "state": "online", "session": 5}), AT)
    d.receive("tables/t1/status", wire({**status, "state": "offline", "session": 4}), AT)
    assert d.view()["tables"]["t1"]["status"]["state"] == "online"
    d.receive("tables/t1/status", wire({**status, "state": "offline", "session": 5}), AT)
    assert d.view()["tables"]["t1"]["status"]["state"] == "offline"


def test_the_round_in_progress_card_by_card_and_the_shoe_counters() -> None:
    d = display()
    d.receive("tables/t1/events", wire(event("shoe_loaded", None, shoe_id="shoe-1",
                                             shuffle_id=1, cards=416, deck_set=1)), AT)
    d.receive("tables/t1/events", wire(event("betting_opened", "r1", shoe_id="shoe-1")), AT)
    d.receive("tables/t1/events", wire(event("betting_closed", "r1")), AT)
    for n, (card, hand, pos) in enumerate([("9S", "player", 1), ("KH", "banker", 1),
                                           ("8S", "player", 2)], 1):
        d.receive("tables/t1/events", wire(event("card_drawn", "r1", draw_no=n, card=card,
                                                 confidence=100, deck_set=1,
                                                 double_draw=False, face_up=False)), AT)
        d.receive("tables/t1/events", wire(event("card", "r1", card=card, hand=hand,
                                                 position=pos, draw_no=n)), AT)
    # A replayed copy of a card changes nothing.
    d.receive("tables/t1/events", wire(event("card", "r1", card="8S", hand="player",
                                             position=2, draw_no=3, replayed=True)), AT)
    view = d.view()["tables"]["t1"]
    r = view["round"]
    assert [c["card"] for c in r["cards"]] == ["9S", "KH", "8S"]
    assert (r["player_total"], r["banker_total"], r["phase"]) == (7, 0, "dealing")
    assert view["shoe"] == {"shoe_id": "shoe-1", "hands": 0, "cards": 416, "dealt": 3,
                            "left": 413, "cut_card": False, "ended": None, "joined_at": None,
                            "catching_up": False, "not_fetched": None}


def test_roads_of_a_shoe_joined_midway_say_where_they_start() -> None:
    d = display()
    d.receive("tables/t1/results", wire(result(7)), AT)
    d.receive("tables/t1/results", wire(result(8)), AT)
    assert d.view()["tables"]["t1"]["shoe"]["joined_at"] == 7
    d.receive("tables/t1/events", wire(event("shoe_loaded", None, shoe_id="shoe-2",
                                             shuffle_id=2, cards=416, deck_set=1)), AT)
    d.receive("tables/t1/results", wire(result(9, shoe_id="shoe-2")), AT)
    assert d.view()["tables"]["t1"]["shoe"]["joined_at"] is None


def test_contract_v2_fields_are_tolerated_and_used() -> None:
    # journal_id and msg_seq on every payload (issue 15): a message seen is dropped by
    # them, a new journal's seq 1 is not mistaken for the old one's.
    d = display()
    a = result(1, journal_id="0" * 16, msg_seq=10, schema="tabled/result/2")
    assert d.receive("tables/t1/results", wire(a), AT) == "t1"
    assert d.receive("tables/t1/results", wire(a), AT) is None
    b = result(1, "player", journal_id="1" * 16, msg_seq=1, schema="tabled/result/2")
    assert d.receive("tables/t1/results", wire(b), AT) == "t1"
    view = d.view()["tables"]["t1"]
    assert [c["hand"]["winner"] for c in view["roads"]["bead_plate"]] == ["player"]


def test_v2_joined_mid_shoe_takes_the_snapshot_and_replays_the_shoes_results() -> None:
    d = display()
    ace = {"card": "AS", "hand": "player", "position": 1}
    d.receive("tables/t1/snapshot", wire(snapshot(300, 3, 100, [ace])), AT)
    view = d.view()["tables"]["t1"]
    assert (view["shoe"]["dealt"], view["shoe"]["left"], view["shoe"]["catching_up"]) == \
        (60, 356, True)
    assert view["round"]["cards"] == [ace] and view["round"]["phase"] == "dealing"
    t1 = d.tables["t1"]
    req = t1.catchup.next_request(0.0)
    assert req is not None
    assert (req["from_msg_seq"], req["to_msg_seq"], req["topics"], req["journal_id"]) == \
        (100, 300, ["results"], JID)
    assert t1.catchup.next_request(1.0) is None  # one at a time, until answered or RETRY
    # The answer on replay/to/{name}: the stored results, then the marker.
    for seq, msg in ((1, 130), (2, 190), (3, 297)):
        body = v2(result(seq, ("banker", "player", "tie")[seq - 1]), msg)
        assert d.receive("tables/t1/replay/to/display-1", wire(body), AT) == "t1"
    marker = v2({"type": "replay", "table": "t1", "id": req["id"], "from_msg_seq": 100,
                 "to_msg_seq": 300, "count": 3, "next_msg_seq": None, "first_available": 1,
                 "last_msg_seq": 300, "error": None}, None)
    d.receive("tables/t1/replay/to/display-1", wire(marker), AT)
    view = d.view()["tables"]["t1"]
    assert [c["hand"]["seq"] for c in view["roads"]["bead_plate"]] == [1, 2, 3]
    assert not view["shoe"]["catching_up"] and view["shoe"]["joined_at"] is None
    assert view["msg_gaps"] == [] and t1.catchup.next_request(10.0) is None
    # Live from as_of on; the card event of v2 carries the next card required.
    card = v2(event("card", "r13", card="9H", hand="banker", position=1, draw_no=61,
                    next="player_card_2"), 301)
    d.receive("tables/t1/events", wire(card), AT)
    r = d.view()["tables"]["t1"]["round"]
    assert [c["card"] for c in r["cards"]] == ["AS", "9H"] and r["needed"] == "player_card_2"
    assert d.view()["tables"]["t1"]["shoe"]["dealt"] == 61


def test_v2_a_gap_is_asked_for_and_what_never_comes_is_counted_lost() -> None:
    d = display()
    for msg in (1, 2, 5, 9):
        d.receive("tables/t1/alerts", wire(v2({"type": "alert", "code": "x", "clause": "",
                                               "detail": str(msg), "table": "t1",
                                               "round_id": None, "at": AT}, msg)), AT)
    t1 = d.tables["t1"]
    assert t1.catchup.gaps() == [(3, 4), (6, 8)]
    req = t1.catchup.next_request(0.0)
    assert req is not None and (req["from_msg_seq"], req["to_msg_seq"]) == (3, 4)
    assert "topics" not in req  # every topic: a gap is any message
    # Asked again after RETRY without an answer.
    again = t1.catchup.next_request(5.0)
    assert again is not None and again["from_msg_seq"] == 3 and again["id"] != req["id"]
    d.receive("tables/t1/alerts", wire(v2({"type": "alert", "code": "x", "clause": "",
                                           "detail": "3", "table": "t1", "round_id": None,
                                           "at": AT}, 3)), AT)
    marker = v2({"type": "replay", "table": "t1", "id": again["id"], "from_msg_seq": 3,
                 "to_msg_seq": 4, "count": 1, "next_msg_seq": None, "first_available": 1,
                 "last_msg_seq": 9, "error": None}, None)
    d.receive("tables/t1/replay/to/display-1", wire(marker), AT)
    view = d.view()["tables"]["t1"]
    assert view["lost"] == 1 and view["msg_gaps"] == [(6, 8)]


def test_v2_a_replayed_older_device_state_or_round_does_not_override_the_newer() -> None:
    d = display()
    dev = {"type": "device", "name": "shoe", "table": "t1", "at": AT}
    d.receive("tables/t1/devices/shoe", wire(v2({**dev, "state": "ready"}, 20)), AT)
    d.receive("tables/t1/replay/to/x", wire(v2({**dev, "state": "lost"}, 12)), AT)
    assert d.view()["tables"]["t1"]["devices"]["shoe"]["state"] == "ready"
    d.receive("tables/t1/events", wire(v2(event("betting_opened", "r2", shoe_id="s"), 30)), AT)
    d.receive("tables/t1/replay/to/x", wire(v2(event("betting_opened", "r1",
                                                     shoe_id="s"), 25)), AT)
    assert d.view()["tables"]["t1"]["round"]["round_id"] == "r2"


def test_replay_requests_and_other_answers_markers_are_not_the_tables_words() -> None:
    d = display()
    assert d.receive("tables/t1/replay/request", b'{"id": "x"}', AT) is None
    assert d.refused_view()["total"] == 0


def test_only_the_tables_asked_for_and_never_commands() -> None:
    d = Display(TABLE_KEYRING, tables={"t1"})
    other = {**result(1), "table": "t9"}
    assert d.receive("tables/t9/results", wire(other), AT) is None
    assert d.receive("tables/t1/cmd/void_round", b"{}", AT) is None
    assert d.receive("elsewhere/t1/results", wire(result(1)), AT) is None
    assert d.refused_view()["total"] == 0


def throw(seq: int, dice: list[int]) -> dict[str, Any]:
    return {"seq": seq, "status": "valid", "dice": dice, "total": sum(dice)}


def test_dice_statistics_worked_by_hand() -> None:
    rows = [throw(1, [1, 2, 3]), throw(2, [6, 6, 5]), throw(3, [4, 4, 4]),
            throw(4, [2, 2, 1]), {"seq": 5, "status": "void"}]
    s = dice_stats(rows)
    # 6 small/even; 17 big/odd; triple 4s neither; 5 small/odd.
    assert s["counts"] == {"big": 1, "small": 2, "odd": 2, "even": 1, "triple": 1}
    assert s["faces"] == {1: 2, 2: 3, 3: 1, 4: 3, 5: 1, 6: 2}
    assert (s["hot"], s["cold"]) == ([2, 4], [3, 5])
    assert s["totals"][6] == 1 and s["totals"][12] == 1 and s["totals"][17] == 1
    assert [x["seq"] for x in s["last"]] == [4, 3, 2, 1]
    assert s["watch"]["state"] == "too few throws"


def test_dice_watch_raises_on_a_loaded_die_and_not_on_a_fair_one() -> None:
    n = MIN_THROWS_FOR_WATCH
    fair = [throw(i, [1 + i % 6, 1 + (i + 2) % 6, 1 + (i + 4) % 6]) for i in range(n)]
    assert dice_stats(fair)["watch"]["state"] == "ok"
    loaded = [throw(i, [6, 6, 1 + i % 6]) for i in range(n)]
    s = dice_stats(loaded)
    assert s["watch"]["state"] == "ALERT" and float(s["watch"]["chi2"]) > CHI2_DF5_P001


def test_a_late_result_of_the_last_shoe_does_not_take_the_roads_back() -> None:
    d = display()
    d.receive("tables/t1/events", wire(event("shoe_loaded", None, shoe_id="shoe-2",
                                             shuffle_id=2, cards=416, deck_set=1)), AT)
    d.receive("tables/t1/results", wire(result(2, "player", shoe_id="shoe-2")), AT)
    # seq 1, the last hand of shoe-1, arrives only now (re-sent after a restart).
    d.receive("tables/t1/results", wire(result(1, replayed=True)), AT)
    view = d.view()["tables"]["t1"]
    assert view["shoe"]["shoe_id"] == "shoe-2"
    assert [c["hand"]["seq"] for c in view["roads"]["bead_plate"]] == [2]
    assert view["shoe"]["cards"] == 416


def test_each_table_has_its_own_view() -> None:
    d = display()
    d.receive("tables/t1/results", wire(result(1)), AT)
    d.receive("tables/t2/results", wire({**result(1, "player"), "table": "t2"}), AT)
    views = d.view()["tables"]
    assert [c["hand"]["winner"] for c in views["t1"]["roads"]["bead_plate"]] == ["banker"]
    assert [c["hand"]["winner"] for c in views["t2"]["roads"]["bead_plate"]] == ["player"]


def test_signed_but_malformed_payloads_are_refused_not_drawn() -> None:
    # A table that breaks its own schema (a bug, or a key in the wrong hands): the page
    # cannot draw it, so it refuses it with the reason, and keeps drawing the others.
    d = display()
    bad_results = [result(1, "dragon"), {**result(2), "player_total": "5"},
                   {**result(3), "cards": [{"card": "ZZ", "hand": "player", "position": 1}]},
                   {**result(4), "seq": "4"},
                   {"seq": 5, "round_id": "x", "table": "t1", "status": "valid",
                    "dice": [7, 1, 1], "total": 9}]
    for body in bad_results:
        assert d.receive("tables/t1/results", wire(body), AT) == ""
    assert d.receive("tables/t1/events", wire(event("card", "r1", card="XX", hand="player",
                                                    position=1, draw_no=1)), AT) == ""
    assert d.receive("tables/t1/events", wire(event("dice", "r1", dice=[1, 2])), AT) == ""
    reasons = [r["reason"] for r in d.refused_view()["last"]]
    assert all(r.startswith("signed but malformed: ") for r in reasons)
    assert d.refused_view()["total"] == 7
    d.receive("tables/t1/results", wire(result(6)), AT)
    assert [c["hand"]["seq"] for c in d.view()["tables"]["t1"]["roads"]["bead_plate"]] == [6]


def test_a_cleared_device_topic_is_shown_as_cleared_not_dropped() -> None:
    d = display()
    device = {"type": "device", "name": "shoe", "table": "t1", "state": "lost", "at": AT}
    d.receive("tables/t1/devices/shoe", wire(device), AT)
    assert d.receive("tables/t1/devices/shoe", b"", AT) == "t1"
    assert d.view()["tables"]["t1"]["devices"]["shoe"]["state"] == "cleared"
    assert d.receive("tables/t9/devices/shoe", b"", AT) is None  # no such table seen


def test_a_correction_voids_the_round_it_names_and_is_one_of_the_sequence() -> None:
    # Issue 15 / docs/mqtt.md "Corrections": on results, its own seq, `corrects` names the
    # round; it may arrive before the result after a gap.
    d = display()
    d.receive("tables/t1/results", wire(correction(3, "t1-000001")), AT)
    d.receive("tables/t1/results", wire(result(1)), AT)
    d.receive("tables/t1/results", wire(result(2, "player")), AT)
    view = d.view()["tables"]["t1"]
    bead = view["roads"]["bead_plate"]
    assert [(c["hand"]["seq"], c["hand"]["winner"], c["hand"]["corrected"]) for c in bead] \
        == [(1, None, True), (2, "player", False)]
    assert [c["hand"]["seq"] for c in view["roads"]["big_road"]] == [2]
    assert view["gaps"] == [] and view["counters"]["results"] == 3
    assert view["corrections"][0]["corrects"] == "t1-000001"
    assert view["last_results"][1]["corrected"] == {"seq": 3, "by": "pit-1"}


def test_a_corrected_throw_leaves_the_dice_statistics() -> None:
    d = display()
    for seq, dice in ((1, [6, 6, 6]), (2, [1, 2, 3])):
        body = {**result(seq), "game": "tai-sai-open-cover", "dice": dice, "total": sum(dice),
                "tumbles": 3, "flat": [True] * 3}
        for k in ("cards", "player_total", "banker_total", "natural", "winner"):
            body.pop(k)
        d.receive("tables/t1/results", wire(body), AT)
    d.receive("tables/t1/results", wire(correction(3, "t1-000001", "tai-sai-open-cover")), AT)
    stats = d.view()["tables"]["t1"]["dice"]
    assert stats["throws"] == 1 and stats["counts"]["triple"] == 0
    assert [(x["seq"], x["voided"]) for x in stats["last"]] == [(2, None), (1, "5.6")]


def test_the_tables_own_dice_watch_alert_is_shown_beside_the_displays() -> None:
    d = display()
    body = {**result(1), "game": "tai-sai-open-cover", "dice": [1, 2, 3], "total": 6}
    d.receive("tables/t1/results", wire(body), AT)
    alert = {"type": "alert", "code": "dice_watch", "clause": "", "table": "t1",
             "detail": "faces chi2 31.2 p 0.00001", "round_id": None, "at": AT,
             "replayed": False}
    d.receive("tables/t1/alerts", wire(alert), AT)
    assert d.view()["tables"]["t1"]["dice"]["table_watch"]["detail"] == alert["detail"]


def test_v2_a_late_result_of_a_replaced_journal_does_not_take_the_roads_back() -> None:
    d = display()
    old = {**result(5), "journal_id": "a" * 16, "msg_seq": 50}
    new = {**result(1, "player"), "journal_id": "b" * 16, "msg_seq": 2}
    late = {**result(6), "journal_id": "a" * 16, "msg_seq": 51}
    for body in (old, new, late):
        d.receive("tables/t1/results", wire(body), AT)
    bead = d.view()["tables"]["t1"]["roads"]["bead_plate"]
    assert [(c["hand"]["seq"], c["hand"]["winner"]) for c in bead] == [(1, "player")]


def test_a_new_journal_met_while_following_is_wanted_whole_though_its_snapshot_is_first(
        ) -> None:
    from daemon.consumers.catchup import CatchUp  # noqa: PLC0415

    c = CatchUp("t1")
    c.joined({"journal_id": "a" * 16, "as_of_msg_seq": 10}, 0)  # joining: from 11 on
    for n in range(11, 14):
        c.saw("a" * 16, n)
    assert c.journals["a" * 16].missing() == []
    # The table's journal is replaced; its snapshot arrives before its messages, and its
    # journal_started (msg_seq 1) was lost on the way.
    c.joined({"journal_id": "b" * 16, "as_of_msg_seq": 4}, 0)
    for n in (2, 3, 4):
        c.saw("b" * 16, n)
    assert c.journals["b" * 16].missing() == [(1, 1)]


def test_tai_sai_5_14_a_held_throw_is_shown_held_until_thrown_again() -> None:
    d = display()
    for kind, extra in [("betting_opened", {}), ("betting_closed", {}),
                        ("throw_held", {"hold_id": "r1/hold-1", "clause": "5.14",
                                        "why": "unread"})]:
        d.receive("tables/t1/events", wire(event(kind, "r1", **extra)), AT)
    assert d.view()["tables"]["t1"]["round"]["phase"] == "held for the pit"
    d.receive("tables/t1/events", wire(event("throw_again", "r1", by="sup",
                                             hold="r1/hold-1")), AT)
    assert d.view()["tables"]["t1"]["round"]["phase"] == "awaiting tumble"


def test_v2_the_page_counts_what_replay_answers_brought_not_a_replayed_flag() -> None:
    # Contract v2 has no `replayed` field: a copy sent again is byte-identical and dropped
    # as a duplicate. What the health panel counts is what came by replay (issue 26).
    d = display()
    d.receive("tables/t1/results", wire(v2(result(1), 10)), AT)
    d.receive("tables/t1/replay/to/display-1", wire(v2(result(1), 10)), AT)  # a copy
    d.receive("tables/t1/replay/to/display-1", wire(v2(result(2, "player"), 20)), AT)
    d.receive("tables/t1/results", wire(v2(result(3), 30)), AT)
    view = d.view()["tables"]["t1"]
    assert view["counters"] == {"results": 3, "duplicates": 1, "fetched": 1}
    assert all("replayed" not in r for r in view["last_results"])
