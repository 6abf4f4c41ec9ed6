"""The service journals a result as the table's own record, and publishes the wire
layer's payload for it, built and sealed once (issue 27): through the real service."""

from __future__ import annotations

import json
from pathlib import Path

from daemon.round import checkpoint
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import tumbler as tp
from tests.unit.service.helpers import tai_sai_service


async def test_the_journal_keeps_the_tables_record_and_the_messages_the_payload(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    s.begin()
    t = s.table
    assert isinstance(t, TaiSaiTable)
    assert s.apply(t.open_betting() + t.close_betting())
    assert s.apply(t.command_answered("tumbler", tp.Arm(0, True)))
    assert s.apply(t.activated(tp.Activated(1, True)))
    for n in (1, 2, 3):
        assert s.apply(t.tumble(tp.Tumble(n)))
    assert s.apply(t.settled(tp.Settled((2, 5, 6), (0, 0, 0), (1, 1, 1), 97)))
    [rid] = [r.round_id for r in s.journal.records() if r.kind == "betting_opened"]
    assert s.apply(t.void_settled_round("pit-1", str(rid), "damaged dice"))

    kept = [(r.round_id, r.body) for r in s.journal.records() if r.kind == "result"]
    assert kept == [(rid, {"valid": True, "dice": [2, 5, 6]}),
                    (f"{rid}/correction", {"valid": False, "voids": rid})]
    topic = s.topics["results"]
    sent = [json.loads(m.payload) for m in
            s.journal.messages(1, s.journal.last_msg_seq(), 100, (topic,))]
    assert [(p["type"], p["status"], p["round_id"], p["seq"]) for p in sent] == [
        ("result", "valid", rid, 1), ("correction", "void", f"{rid}/correction", 2)]
    assert sent[0]["dice"] == [2, 5, 6] and sent[1]["corrects"] == rid

    rebuilt = s.state.new_table()  # a restart folds the table's records
    rebuilt.replay(s.journal.records())
    assert isinstance(rebuilt, TaiSaiTable)
    assert (rebuilt.state, rebuilt.round, rebuilt.published) == \
        (t.state, None, {rid: "corrected"})
    fresh = s.state.new_table()
    assert isinstance(fresh, TaiSaiTable)
    assert checkpoint.encode(rebuilt.watch) == checkpoint.encode(t.watch) != \
        checkpoint.encode(fresh.watch)  # the valid throw's dice, read from its record
