"""Retention of journal records, on the daemon's own service and a real SQLite file: a
daily checkpoint, records before it and past the window pruned, the file bounded over
many weeks of rounds, a restart after pruning exactly the table that folding every
record gives, and a SIGKILL in the middle of pruning losing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.round import checkpoint, lifecycle
from daemon.round.baccarat import BaccaratTable
from daemon.service import TableService
from daemon.store.journal import Journal, JournalError
from tests.child import killed
from tests.integration.service_dealer import Dealer, config

HOUR = 3600.0


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")
               if not p.name.endswith(".identity"))


async def test_records_stay_bounded_and_a_restart_after_pruning_is_exact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkpoint holds the rounds a correction can still reach, so it grows until
    # there are SETTLED_KEPT of them (10,000: docs/performance.md); fewer here, so that
    # forty days reach the plateau.
    monkeypatch.setattr(lifecycle, "SETTLED_KEPT", 48)
    now = [1_800_000_000.0]
    cfg = config(tmp_path)
    s = TableService(cfg, clock=lambda: now[0])
    s.begin()
    dealer = Dealer(s, seed=7)
    sizes, counts = {}, {}
    for n in range(1, 24 * 40 + 1):  # 40 days, a round an hour
        dealer.round(n - 1)
        now[0] += HOUR
        if n % 24 == 0:  # the daemon runs retention hourly; once a day is enough here
            # Delivered, as the publisher would have (no broker here): unsent messages
            # are never pruned.
            s.journal.mark_delivered(*(e.id for e in s.journal.pending(limit=10_000)))
            s.retain()
        if n in (24 * 20, 24 * 40):
            s.journal._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            sizes[n] = file_bytes(cfg.journal_path)
            counts[n] = s.journal._db.execute("SELECT count(*) FROM journal").fetchone()[0]
    # Bounded: twenty more days of rounds, no more records nor a larger file.
    assert counts[24 * 40] <= counts[24 * 20] * 1.05, counts
    assert sizes[24 * 40] <= sizes[24 * 20] * 1.05, sizes
    kept = s.journal.records()
    assert kept[0].at >= now[0] - 3 * 24 * HOUR  # two days kept, one more till the next
    assert s.journal.last_checkpoint() is not None
    live = s.table
    s.journal.close()

    again = TableService(cfg, clock=lambda: now[0])  # a restart on the pruned file
    restored = again.state.new_table()
    restored.replay(again.journal.records_for_recovery())
    assert checkpoint.exact(live, restored)
    assert restored.state == "idle" and isinstance(restored, BaccaratTable) and \
        restored.shoe is not None and restored.shoe.drawn == live.shoe.drawn  # type: ignore
    again.journal.close()


def test_a_kill_in_the_middle_of_pruning_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    now = [1_800_000_000.0]
    j = Journal(path, clock=lambda: now[0])
    for n in range(3000):
        j.append("e", {"n": n})
        if n % 100 == 99:
            j.record_result(f"r{n}", {"n": n}, "t/results", record={})
    j.append(checkpoint.KIND, {"format": checkpoint.FORMAT, "state": "idle", "vars": {}})
    j.append("after", {})
    before = [(r.id, r.kind) for r in j.records()]
    j.close()
    child = (f"import os, signal, time; from daemon.store.journal import Journal\n"
             f"j = Journal({str(path)!r}, clock=lambda: {now[0] + 10 * 86400})\n"
             f"armed = []\n"
             f"def tick():\n"
             f"    if armed: os.kill(os.getpid(), signal.SIGKILL)\n"
             f"def trace(sql):\n"  # the results' rows are gone, the records' going
             f"    if sql.startswith('DELETE FROM journal'): armed.append(1)\n"
             f"j._db.set_trace_callback(trace)\n"
             f"j._db.set_progress_handler(tick, 100)\n"
             f"j.prune_records(1, 100)\n"
             f"print('finished')\n")
    assert "finished" not in killed(child).stdout  # killed inside the DELETE
    j = Journal(path)
    assert [(r.id, r.kind) for r in j.records()] == before  # all of it, or (below) none
    j2 = Journal(path, clock=lambda: now[0] + 10 * 86400)
    assert j2.prune_records(1, 100) == len(before) - 2  # all but the checkpoint and after
    assert [r.kind for r in j2.records()] == [checkpoint.KIND, "after"]
    assert j2.last_seq() == 30 and j2.result_seqs() == []  # seq is never reused


async def test_a_checkpoint_this_release_cannot_read_stops_the_start(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    s = TableService(cfg, clock=lambda: 1.8e9)
    s.begin()
    s.journal.append(checkpoint.KIND, {"format": checkpoint.FORMAT + 1, "state": "idle",
                                       "vars": {}})
    s.journal.close()
    again = TableService(cfg, clock=lambda: 1.8e9)
    with pytest.raises(JournalError, match=f"checkpoint format {checkpoint.FORMAT + 1}; this "
                                           "release reads formats 1, 2"):
        await again.run()
    again.journal.close()
