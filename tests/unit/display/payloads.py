"""Payloads as a table publishes them (results, corrections, events, snapshots, contract v2's
numbers), built by the display's tests and the page's."""

from __future__ import annotations

from typing import Any

AT = "2026-11-26T10:00:00.000Z"


def result(seq: int, winner: str = "banker", **extra: Any) -> dict[str, Any]:
    cards = [{"card": "2S", "hand": "player", "position": 1},
             {"card": "3H", "hand": "banker", "position": 1},
             {"card": "3S", "hand": "player", "position": 2},
             {"card": "4D", "hand": "banker", "position": 2}]
    return {"type": "result", "schema": "tabled/result/1", "round_id": f"t1-{seq:06d}",
            "seq": seq, "table": "t1", "game": "tiger-buffalo", "layout": "P",
            "shoe_id": "shoe-1", "shuffle_id": 1, "status": "valid", "cards": cards,
            "player_total": 5, "banker_total": 7, "natural": False, "winner": winner,
            "bets": [{"bet": winner, "result": "win", "pays": "1:1", "line": "x",
                      "clause": "4.1.1"}],
            "opened_at": AT, "closed_at": AT, "settled_at": AT, "replayed": False, **extra}


def event(kind: str, rid: str | None, **extra: Any) -> dict[str, Any]:
    return {"type": "event", "event": kind, "table": "t1", "round_id": rid, "at": AT,
            "replayed": False, **extra}


JID = "3f9c0a51d2e47b68"


def v2(body: dict[str, Any], msg_seq: int | None) -> dict[str, Any]:
    return {**body, "journal_id": JID, "msg_seq": msg_seq,
            "schema": f"tabled/{body['type']}/2"}


def snapshot(as_of: int, hand: int, loaded: int, cards: list[dict[str, Any]]) -> dict[str, Any]:
    # The fields of docs/mqtt.md (contract v2), "{prefix}/{table}/snapshot".
    return v2({"type": "snapshot", "table": "t1", "state": "dealing", "as_of_msg_seq": as_of,
               "first_msg_seq": 1, "at": AT,
               "shoe": {"shoe_id": "shoe-1", "shuffle_id": 1, "cards": 416, "dealt": 60,
                        "left": 356, "hand": hand, "loaded_msg_seq": loaded,
                        "first_result_seq": 1},
               "round": {"round_id": "r13", "opened_at": AT, "betting": False,
                         "held": False, "cards": cards, "dice": None},
               "last_result_seq": hand, "last_result_msg_seq": as_of - 3}, None)


def correction(seq: int, corrects: str, game: str = "tiger-buffalo") -> dict[str, Any]:
    return {"type": "correction", "schema": "tabled/correction/1",
            "round_id": f"{corrects}/correction", "seq": seq, "table": "t1", "game": game,
            "layout": "P", "corrects": corrects, "status": "void", "by": "pit-1",
            "void_reason": {"code": "damaged_dice", "clause": "5.6", "text": "t",
                            "detail": "d"},
            "bets": [], "settled_at": AT, "replayed": False}
