"""The snapshot is a fold over the published payloads; restarting it from what the
journal kept (its meta) at any point gives what folding on would have given."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.mqtt.snapshot import TableView
from daemon.mqtt.wire import snapshot


def stream(rounds: list[list[str]]) -> list[dict[str, Any]]:
    """A shoe's published payloads: each round's cards, then its result."""
    out: list[dict[str, Any]] = []

    def add(p: dict[str, Any]) -> None:
        out.append({**p, "msg_seq": len(out) + 1, "at": "2026-11-26T10:00:00.000Z"})

    add({"type": "event", "event": "shoe_loaded", "shoe_id": "s1", "shuffle_id": 7,
         "cards": 416, "round_id": None})
    draw = 0
    for n, cards in enumerate(rounds):
        rid = f"r{n}"
        add({"type": "event", "event": "betting_opened", "round_id": rid, "shoe_id": "s1"})
        add({"type": "event", "event": "betting_closed", "round_id": rid})
        for i, c in enumerate(cards):
            draw += 1
            add({"type": "event", "event": "card", "round_id": rid, "card": c,
                 "draw_no": draw, "confidence": 99, "deck_set": 1, "face_up": False,
                 "hand": ("player", "banker")[i % 2], "position": i // 2 + 1,
                 "next": None if i == len(cards) - 1 else "banker_card_1"})
        add({"type": "result", "round_id": rid, "seq": n + 1, "shoe_id": "s1",
             "status": "valid"})
    return out


def test_a_shoe_mid_round() -> None:
    view = TableView()
    msgs = stream([["2S", "3H", "4D", "5C"], ["6S", "7H"]])[:-1]  # round 2 still open
    for p in msgs:
        view.fold(p)
    body = snapshot.body(view, "dealing")
    assert body["as_of_msg_seq"] == len(msgs)
    assert body["shoe"] == {"shoe_id": "s1", "shuffle_id": 7, "cards": 416, "dealt": 6,
                            "left": 410, "hand": 1, "loaded_msg_seq": 1,
                            "first_result_seq": 1}
    assert body["round"]["round_id"] == "r1" and body["round"]["betting"] is False
    assert [c["card"] for c in body["round"]["cards"]] == ["6S", "7H"]
    assert body["last_result_seq"] == 1


CARDS = st.lists(st.sampled_from(["AS", "2H", "TD", "KC", "9S", "5H"]), min_size=4,
                 max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(CARDS, min_size=1, max_size=8), st.data())
def test_a_restart_at_any_message_gives_the_same_snapshot(rounds: list[list[str]],
                                                          data: st.DataObject) -> None:
    msgs = stream(rounds)
    cut = data.draw(st.integers(0, len(msgs)))
    straight = TableView()
    for p in msgs:
        straight.fold(p)
    before = TableView()
    for p in msgs[:cut]:
        before.fold(p)
    after = TableView.loads(before.dumps())  # what the journal's meta holds
    for p in msgs[cut:]:
        after.fold(p)
    assert snapshot.body(after, "idle") == snapshot.body(straight, "idle")
    assert snapshot.body(straight, "idle")["shoe"]["hand"] == len(rounds)


def test_tai_sai_5_14_a_held_throw_shows_held_until_the_pit_lets_it_be_thrown_again() -> None:
    view = TableView()
    at = "2026-11-26T10:00:00.000Z"
    events = [("betting_opened", {}), ("betting_closed", {}),
              ("throw_held", {"hold_id": "r1/hold-1", "clause": "5.14", "why": "unread"})]
    for n, (event, body) in enumerate(events, 1):
        view.fold({"type": "event", "event": event, "round_id": "r1", "msg_seq": n,
                   "at": at, **body})
    assert snapshot.body(view, "tumbling")["round"]["held"] is True
    view.fold({"type": "event", "event": "throw_again", "round_id": "r1", "msg_seq": 4,
               "at": at, "by": "sup", "hold": "r1/hold-1"})
    assert snapshot.body(view, "tumbling")["round"]["held"] is False
