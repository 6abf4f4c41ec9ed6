"""The typed journal records (daemon/round/records.py): one registry, bodies unchanged,
unknown kinds refused, earlier shapes upcast."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from daemon.round import checkpoint, records
from daemon.round.baccarat import BaccaratTable
from daemon.round.lifecycle import Folded
from daemon.round.records import KINDS, UnknownRecordError
from daemon.round.tai_sai import TaiSaiTable
from tests.unit.round.parts import Row, baccarat, dealing, fold, tai_sai, with_shoe

GOLDEN = sorted((Path(__file__).parent / "checkpoints").glob("format*-*.json"))


def _journalled() -> list[dict[str, Any]]:
    """Records earlier releases journalled (the golden files' next steps)."""
    return [r for p in GOLDEN for r in json.loads(p.read_text(encoding="utf-8"))["next"]]


def test_every_kind_a_table_writes_is_registered_and_every_registered_kind_written() -> None:
    written = {r.KIND for t in (BaccaratTable, TaiSaiTable) for c in t.__mro__
               for r in c.__dict__.get("RECORDS", ())}
    assert written == set(KINDS)


def test_a_journalled_body_reads_into_its_record_and_serialises_to_the_same_body() -> None:
    seen, earlier = set(), 0
    for r in _journalled():
        record = KINDS[r["kind"]].read(r["body"])
        if records.upcast(r["kind"], r["body"]) != r["body"]:
            earlier += 1  # an earlier version (format-1 files): read, never written again
            continue
        assert record.body() == r["body"], r["kind"]
        seen.add(r["kind"])
    assert earlier > 0
    assert len(seen) >= 15  # the files cover most kinds; the fold tests the rest live


@pytest.mark.parametrize("table", [baccarat, tai_sai])
def test_a_misspelled_kind_is_refused_in_replay(table: Any) -> None:
    t = table()
    with pytest.raises(UnknownRecordError, match="betting_openned"):
        t.replay([Row("betting_openned", {}, "r1", 1.0)])
    assert t.round is None


def test_what_the_service_journals_for_itself_is_passed_over() -> None:
    t = baccarat()
    t.replay([Row("started", {"version": "x"}, None, 1.0),
              Row("shoe_tamper", {"seq": 1}, None, 1.0),
              Row("command", {"name": "open_betting"}, None, 1.0)])
    assert Folded.read("reply", {}, None, 1.0) is None


def test_a_record_of_another_tables_kind_changes_nothing() -> None:
    t = tai_sai()
    fold(t, "shoe_ended", {"shoe_id": None, "why": "x"})
    assert t.state == "idle"


def test_a_fold_named_after_no_kind_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="_fold_shoe_loded"):
        class Misspelled(BaccaratTable):
            def _fold_shoe_loded(self, r: Folded[records.ShoeLoaded]) -> None:
                pass


def test_a_kind_written_without_its_fold_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="no _fold_shoe_loaded"):
        class Forgetful(TaiSaiTable):
            RECORDS = (records.ShoeLoaded,)


def test_a_record_a_table_does_not_declare_is_refused_live() -> None:
    t = tai_sai()
    with pytest.raises(TypeError, match="does not declare 'cut_card'"):
        t._rec(records.CutCard(3))


def test_fields_left_out_at_their_default_stay_out_of_the_body() -> None:
    assert records.CardDealt("9S", "player", 1, 4).body() == \
        {"card": "9S", "hand": "player", "position": 1, "draw_no": 4}
    assert records.CardDealt("9S", "player", 1, 4, carried=True).body()["carried"] is True
    assert "protocol_version" not in records.ShuffleCertified(1, 8, "00").body()
    assert records.ShuffleCertified.read({"shuffle_id": 1, "decks": 8, "commitment": "00",
                                          "protocol_version": 3}).protocol_version == 3


def test_a_reset_journalled_before_d16_still_restarts_the_deal() -> None:
    body = {"by": "pit", "clause": "5.9", "cards_set_aside": ["9S"]}
    assert records.BettingReopened.read(body) == \
        records.BettingReopened("5.9", "pit", [], deal_restarted=True)
    t = dealing(with_shoe(baccarat("tiger-baccarat")))
    fold(t, "card", {"card": "9S", "hand": "player", "position": 1, "draw_no": 1}, "r1")
    fold(t, "betting_reopened", body, "r1")
    assert t.round is not None and t.round.cards == [] and t.state == "betting_open"
    t2 = dealing(with_shoe(baccarat("tiger-baccarat")))
    fold(t2, "card", {"card": "9S", "hand": "player", "position": 1, "draw_no": 1}, "r1")
    fold(t2, "betting_reopened", {"by": "pit", "clause": "5.9", "cards_kept": ["9S"]}, "r1")
    assert t2.round is not None and [c.code for c in t2.round.cards] == ["9S"]


def test_holds_and_orders_journalled_before_their_ids_read_as_version_one() -> None:
    assert records.ResultHeld.read({"reason": "reads"}).hold_id is None
    assert records.OrderConfirmed.read({"by": "pit", "swap": "5,6", "cards": []}).draws \
        is None
    assert records.upcast("result_held", {"hold_id": "r1:1"}) == {"hold_id": "r1:1"}


def test_a_format_one_checkpoint_is_upcast_to_format_two() -> None:
    v1 = {"format": 1, "state": "dealing", "vars": {"round": {
        "$obj": "daemon.round.lifecycle:RoundData", "f": {"round_id": "r1"}}}}
    v2 = checkpoint.upcast_v1_v2(v1)
    assert v2["format"] == 2
    assert v2["vars"]["round"]["f"] == {"hold_id": None, "holds": 0, "round_id": "r1"}
    assert checkpoint.READS == (1, 2)


def test_a_fold_that_keeps_a_body_keeps_it_as_journalled() -> None:
    # A throw journalled before the tumbler's own count: judge_throw falls back on the
    # controller's count only if the key is absent, so none may be added on reading.
    t = tai_sai()
    fold(t, "betting_opened", {}, "r1")
    fold(t, "betting_closed", {}, "r1")
    body = {"dice": [1, 2, 3], "tilt": [0, 0, 0], "flat": [True] * 3, "tumbles": 3}
    fold(t, "dice", body, "r1")
    assert t.throw == body


def test_a_result_journalled_as_its_published_payload_reads_as_the_tables_record() -> None:
    # Before issue 27 the journal's result record was the payload published for it.
    valid = {"type": "result", "schema": "tabled/result/2", "status": "valid",
             "dice": [2, 5, 6], "total": 13, "round_id": "r1", "seq": 1, "bets": []}
    void = {"type": "result", "status": "void", "dice": [1, 1, 2], "round_id": "r2",
            "void_reason": {"code": "x", "clause": "5.5.1"}, "bets": []}
    corrected = {"type": "correction", "status": "void", "corrects": "r1", "seq": 3}
    assert [records.Result.read(b) for b in (valid, void, corrected)] == [
        records.Result(True, [2, 5, 6]), records.Result(False, [1, 1, 2]),
        records.Result(False, voids="r1")]
    assert records.Result.read({"valid": True}).body() == {"valid": True}
    # and a table rebuilt from the old records is the table rebuilt from the new ones
    old, new = tai_sai(), tai_sai()
    journals: list[tuple[TaiSaiTable, list[dict[str, Any]]]] = [
        (old, [valid, void, corrected]),
        (new, [{"valid": True, "dice": [2, 5, 6]}, {"valid": False, "dice": [1, 1, 2]},
               {"valid": False, "voids": "r1"}])]
    for t, bodies in journals:
        for rid, body in zip(("r1", "r2", "r1/correction"), bodies, strict=True):
            if rid != "r1/correction":
                fold(t, "betting_opened", {}, rid)
                fold(t, "betting_closed", {}, rid)
            fold(t, "result", body, rid)
    assert old.published == new.published == {"r1": "corrected", "r2": "void"}
    assert checkpoint.body(old, tai_sai()) == checkpoint.body(new, tai_sai())
    assert checkpoint.body(new, tai_sai()) != checkpoint.body(tai_sai(), tai_sai())
