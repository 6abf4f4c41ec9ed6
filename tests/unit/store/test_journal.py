"""Journal and outbox on a real SQLite file."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from daemon.store.journal import (
    WAL_BOUND,
    WAL_CHECKPOINT_COMMITS,
    WAL_FILE_LIMIT,
    DuplicateResultError,
    Journal,
    JournalError,
    Publish,
)
from tests.child import killed


def test_wal_and_full_sync(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    assert j._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert j._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    # SQLite's own checkpoint, inside a commit, only as a bound: they come while betting
    # is open (tests/integration/test_journal_wal_checkpoints.py)
    assert j._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_BOUND
    assert j._db.execute("PRAGMA journal_size_limit").fetchone()[0] == WAL_FILE_LIMIT


def test_event_and_its_publishes_are_one_transaction(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    with pytest.raises(TypeError):  # a payload that cannot be serialised
        j.append("card", {"ok": 1}, publish=(Publish("t", {"bad": object()}),))
    assert j.records() == [] and j.pending() == []


def test_one_result_per_round_and_seq_never_reused(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    assert j.record_result("a", {"replayed": False}, "t/results", record={})["seq"] == 1
    with pytest.raises(DuplicateResultError):
        j.record_result("a", {"replayed": False}, "t/results", record={})
    assert j.record_result("b", {"replayed": False}, "t/results", record={})["seq"] == 2
    j.close()
    assert Journal(tmp_path / "j.db").record_result("c", {}, "t/results", record={})["seq"] == 3


def test_outbox_order_and_delivery(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    for n in range(5):
        j.append("e", {"n": n}, publish=(Publish("t", {"n": n}),))
    ids = [e.id for e in j.pending()]
    assert ids == sorted(ids)
    j.mark_delivered(ids[0])
    j.mark_attempt(ids[1])
    assert [e.id for e in j.pending()] == ids[1:]
    assert j.pending()[0].attempts == 1
    assert j.max_outbox_id(pending_only=True) == ids[-1]


def test_session_counts_sessions_not_connection_attempts(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    assert [j.next_session(), j.next_session()] == [1, 1]  # two failed attempts
    j.session_started(1)
    assert j.next_session() == 2
    j.close()
    assert Journal(tmp_path / "j.db").next_session() == 2


def test_disk_full_is_a_clear_error_and_records_nothing(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.append("e", {"n": 0})
    pages = j._db.execute("PRAGMA page_count").fetchone()[0]
    j._db.execute(f"PRAGMA max_page_count={pages}")  # the disk is now full
    before = len(j.records())
    with pytest.raises(JournalError, match="full"):
        for n in range(10_000):
            j.append("e", {"n": n, "pad": "x" * 500})
    j._db.execute("PRAGMA max_page_count=1073741823")
    after = j.records()
    assert len(after) >= before and all(r.body.get("n") is not None for r in after)


def test_corrupt_file_is_refused_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "j.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(JournalError, match=str(bad)):
        Journal(bad)


def test_a_journal_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.set_meta("schema_version", "3")
    j.close()
    with pytest.raises(JournalError, match="has format 3; this release understands format 2"):
        Journal(tmp_path / "j.db")


def test_a_batch_is_all_or_nothing(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.record_result("r1", {"replayed": False}, "t/results", record={})
    before = (len(j.records()), j.pending_count())
    with pytest.raises(DuplicateResultError), j.batch():
        j.append("card", {"n": 1}, publish=(Publish("t/events", {"n": 1}),))
        j.record_result("r1", {"replayed": False}, "t/results", record={})  # the same round again
    assert (len(j.records()), j.pending_count()) == before
    j.append("after", {})  # and the journal is writable: no transaction left open
    assert j.records()[-1].kind == "after"


def test_delivery_marks_skip_the_fsync_and_nothing_else_does(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.append("e", {"n": 0}, publish=(Publish("t", {"n": 0}),))
    seen: list[str] = []
    j._db.set_trace_callback(seen.append)
    j.mark_delivered(j.pending()[0].id)
    updates = [i for i, s in enumerate(seen) if s.startswith("DELETE FROM unsent")]
    assert seen.index("PRAGMA synchronous=NORMAL") < updates[0] < \
        seen.index("PRAGMA synchronous=FULL")
    seen.clear()
    j.append("e", {"n": 1}, publish=(Publish("t", {"n": 1}),))
    j.record_result("r1", {"replayed": False}, "t/results", record={})
    assert not [s for s in seen if s.startswith("PRAGMA")]  # a round's records keep FULL
    assert j._db.execute("PRAGMA synchronous").fetchone()[0] == 2
    with j.batch():  # inside a batch there is one fsync for all, so no switching
        seen.clear()
        j.mark_delivered(j.pending()[0].id)
        assert not [s for s in seen if s.startswith("PRAGMA")]


def test_delivery_marks_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    j = Journal(path)
    for n in range(3):
        j.append("e", {"n": n}, publish=(Publish("t", {"n": n}),))
    j.close()
    child = (f"import os, signal; from daemon.store.journal import Journal\n"
             f"j = Journal({str(path)!r})\n"
             f"j.mark_delivered(*[e.id for e in j.pending()][:2])\n"
             f"os.kill(os.getpid(), signal.SIGKILL)\n")
    killed(child)
    assert [json.loads(e.payload)["n"] for e in Journal(path).pending()] == [2]


def test_msg_seq_is_contiguous_over_topics_and_a_rollback_gives_numbers_back(
        tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.append("e", {}, publish=(Publish("t/events", {"n": 1}), Publish("t/alerts", {"n": 2})))
    with pytest.raises(DuplicateResultError), j.batch():
        j.record_result("r1", {}, "t/results", record={})
        j.record_result("r1", {}, "t/results", record={})
    j.record_result("r2", {}, "t/results", record={})
    got = [json.loads(e.payload) for e in j.pending()]
    assert [(p["msg_seq"], p["journal_id"]) for p in got] == [
        (1, j.journal_id), (2, j.journal_id), (3, j.journal_id)]
    assert got[-1]["seq"] == 1  # the rolled-back result took no seq either


def test_delivered_messages_leave_the_outbox_and_stay_replayable(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    for n in range(4):
        j.append("e", {}, publish=(Publish("t/events" if n % 2 else "t/results", {"n": n}),))
    j.mark_delivered(1, 2, 3)
    assert j._db.execute("SELECT count(*) FROM unsent").fetchone()[0] == 1
    assert [e.id for e in j.messages(1, 4, 10)] == [1, 2, 3, 4]
    assert [e.id for e in j.messages(1, 4, 10, ("t/results",))] == [1, 3]
    assert [e.id for e in j.messages(2, 4, 1)] == [2]


def test_retention_prunes_old_messages_but_not_unsent_nor_the_last_retained(
        tmp_path: Path) -> None:
    now = [1_000_000.0]
    j = Journal(tmp_path / "j.db", clock=lambda: now[0])
    j.append("d", {}, publish=(Publish("t/devices/shoe", {"s": "ready"}, retain=True),))
    for n in range(10):
        j.record_result(f"r{n}", {}, "t/results", record={})
        now[0] += 3600
    j.mark_delivered(*range(1, 10))  # 10 and 11 are not delivered yet
    now[0] += 40 * 86400
    assert j.prune(keep_days=30, keep_rounds=100) == 8  # 2..9: the rest must stay
    assert [e.id for e in j.messages(1, 99, 99)] == [1, 10, 11]
    assert j.first_msg_seq() == 1 and j.last_msg_seq() == 11
    j.record_result("late", {}, "t/results", record={})
    assert json.loads(j.pending()[-1].payload)["msg_seq"] == 12  # never reused


def test_retention_by_rounds(tmp_path: Path) -> None:
    now = [1_000_000.0]
    j = Journal(tmp_path / "j.db", clock=lambda: now[0])
    for n in range(10):
        j.record_result(f"r{n}", {}, "t/results", record={})
        now[0] += 1
        j.append("e", {}, publish=(Publish("t/events", {"after": n}),))  # the next round's
    j.mark_delivered(*range(1, 21))
    assert j.prune(keep_days=30, keep_rounds=3) == 13  # all but what the last 3 rounds published
    assert [e.id for e in j.messages(1, 99, 99)] == [14, 15, 16, 17, 18, 19, 20]


def test_a_format_1_journal_is_upgraded_and_its_pending_payloads_numbered(
        tmp_path: Path) -> None:
    import sqlite3  # noqa: PLC0415

    path = tmp_path / "j.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1'), ('session', '7');
        CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
            payload TEXT NOT NULL, qos INTEGER NOT NULL, retain INTEGER NOT NULL,
            created_at REAL NOT NULL, delivered_at REAL, attempts INTEGER NOT NULL DEFAULT 0);
        INSERT INTO outbox(topic, payload, qos, retain, created_at, delivered_at) VALUES
            ('t/results', '{"seq":1,"replayed":false}', 1, 0, 1, 2),
            ('t/results', '{"seq":2,"replayed":false}', 1, 0, 1, NULL);
    """)
    db.close()
    j = Journal(path)
    [pending] = [json.loads(e.payload) for e in j.pending()]
    assert pending == {"seq": 2, "journal_id": j.journal_id, "msg_seq": 1}
    assert j.get_meta("schema_version") == "2" and j.next_session() == 8


def test_a_checkpoint_puts_every_commit_in_the_database_file_itself(tmp_path: Path) -> None:
    """SQLite would copy the log into the file inside whichever commit takes the log past
    its bound (a card's, a result's); ``checkpoint()`` does it when the publisher finds
    the table taking bets. After it, the file alone, without its log, holds everything
    committed; before it, it did not."""
    path, alone = tmp_path / "j.db", tmp_path / "alone.db"
    j = Journal(path)
    j.wal_checkpoint()  # whatever opening the journal committed
    for n in range(WAL_CHECKPOINT_COMMITS - 1):
        j.append("card", {"n": n}, round_id="r1", publish=(Publish("t/events", {"n": n}),))
    assert not j.wal_checkpoint_due
    j.record_result("r1", {"n": 1}, "t/results", record={})
    assert j.wal_checkpoint_due

    def in_the_file_alone() -> int:
        shutil.copyfile(path, alone)  # the database file, not its -wal
        db = sqlite3.connect(alone)
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name='journal'").fetchone():
                return 0  # not even the schema is in the file yet
            return int(db.execute("SELECT count(*) FROM journal").fetchone()[0])
        finally:
            db.close()

    assert in_the_file_alone() < WAL_CHECKPOINT_COMMITS
    j.wal_checkpoint()
    assert not j.wal_checkpoint_due
    assert in_the_file_alone() == WAL_CHECKPOINT_COMMITS
    j.append("card", {"n": 41}, round_id="r2")  # and the journal goes on as before
    assert [r.body["n"] for r in j.records(round_id="r2")] == [41]


def _killed_in_a_checkpoint(path: Path, n: int) -> bool:
    """Commit n records, then checkpoint; a thread of the child sends SIGKILL once the
    file has grown (SQLite copies without the GIL). True if the kill came before the
    copy was done (the file alone, without its log, is not all of it)."""
    child = (f"import os, signal, threading, time\n"
             f"from daemon.store.journal import Journal, Publish\n"
             f"j = Journal({str(path)!r})\n"
             f"j._db.execute('PRAGMA wal_autocheckpoint=0')  # all of it in the log\n"
             f"for n in range({n}):\n"
             f"    j.append('e', {{'n': n, 'pad': 'x' * 3000}},\n"
             f"             publish=(Publish('t', {{'n': n}}),))\n"
             f"print('committed', flush=True)\n"
             f"base = os.path.getsize({str(path)!r})\n"
             f"def kill():\n"
             f"    while True:\n"
             f"        if os.path.getsize({str(path)!r}) > base:\n"
             f"            os.kill(os.getpid(), signal.SIGKILL)\n"
             f"threading.Thread(target=kill, daemon=True).start()\n"
             f"j.wal_checkpoint()\n"
             f"time.sleep(5)  # the file grew: the thread kills it now at the latest\n")
    assert killed(child).stdout == "committed\n"
    alone = path.with_suffix(".alone")
    shutil.copyfile(path, alone)  # the file alone, as the kill left it
    db = sqlite3.connect(alone)
    try:  # half copied: not even a database on its own, or missing records
        return int(db.execute("SELECT count(*) FROM journal").fetchone()[0]) < n
    except sqlite3.DatabaseError:  # "malformed", or no journal table yet
        return True
    finally:
        db.close()


def test_a_process_killed_inside_a_checkpoint_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL while ``checkpoint()`` copies the log into the file: the file is half
    written, the log is whole, and the next open has every commit, each message still
    queued. On a loaded machine the killing thread may come too late; a try that missed
    the checkpoint is not counted, and five misses fail."""
    n = 1000
    for attempt in range(5):
        path = tmp_path / f"j{attempt}.db"
        if _killed_in_a_checkpoint(path, n):
            break
    else:
        raise AssertionError("in five tries no kill came inside the checkpoint")
    j = Journal(path)  # its integrity check runs here
    assert [r.body["n"] for r in j.records()] == list(range(n))
    assert [json.loads(e.payload)["n"] for e in j.pending(limit=n + 1)] == list(range(n))
    j.wal_checkpoint()  # and checkpoints again, whole this time
    j.close()
