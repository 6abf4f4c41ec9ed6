"""The journal and the outbox, in one SQLite file (WAL, synchronous=FULL; only the
outbox's delivery marks skip their fsync, see ``mark_delivered``).

Every state change of a round is appended here before it is acted on or published, in
one transaction with the outbox entries it causes. A result gets its per-table ``seq``
from an AUTOINCREMENT key, which SQLite never reuses, and its ``round_id`` is UNIQUE: a
round can have one result only, whatever is killed when.

Writes are synchronous on the event loop thread. A commit with fsync costs 0.35-0.42 ms
median and under 1 ms at p99 here (bench/journal.py), and keeps the order of events
trivially correct; a writer thread would add a queue whose loss on a crash would need
its own story. Re-measure on the SD card of the target board.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.errors import TabledError

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       REAL NOT NULL,
    round_id TEXT,
    kind     TEXT NOT NULL,
    body     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_round ON journal(round_id);
CREATE TABLE IF NOT EXISTS results (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id   TEXT NOT NULL UNIQUE,
    journal_id INTEGER NOT NULL REFERENCES journal(id)
);
CREATE TABLE IF NOT EXISTS outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    topic        TEXT NOT NULL,
    payload      TEXT NOT NULL,
    qos          INTEGER NOT NULL,
    retain       INTEGER NOT NULL,
    created_at   REAL NOT NULL,
    delivered_at REAL,
    attempts     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(id) WHERE delivered_at IS NULL;
"""


class JournalError(TabledError, RuntimeError):
    """The journal cannot be written (disk full, I/O error, corrupt file). Nothing was recorded."""


class DuplicateResultError(JournalError):
    """A result for this round_id is already recorded."""


@dataclass(frozen=True, slots=True)
class Publish:
    topic: str
    payload: Mapping[str, Any]
    qos: int = 1
    retain: bool = False


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    id: int
    topic: str
    payload: str
    qos: int
    retain: bool
    created_at: float
    attempts: int


@dataclass(frozen=True, slots=True)
class JournalRecord:
    id: int
    at: float
    round_id: str | None
    kind: str
    body: dict[str, Any]


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


class Journal:
    def __init__(self, path: Path | str, *, clock: Any = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._depth = 0
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            ok = self._db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open journal {self.path}: {exc}") from exc
        if ok != "ok":
            raise JournalError(f"journal {self.path} failed its integrity check: {ok}")
        with self._tx():
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('session', '0')")
        version = int(self.get_meta("schema_version") or 0)
        if version > SCHEMA_VERSION:
            # A rollback after an upgrade that changed the format: reading it would lose data.
            self._db.close()
            raise JournalError(f"journal {self.path} has format {version}; this release "
                               f"understands format {SCHEMA_VERSION} or older. Run the "
                               "release that wrote it, or restore a backup.")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        if self._depth:  # inside batch(): one transaction, one fsync, for all of it
            yield
            return
        self._depth += 1
        try:
            self._db.execute("BEGIN IMMEDIATE")
            yield
            self._db.execute("COMMIT")
        except BaseException as exc:
            # Also when COMMIT itself failed (disk full): never leave a transaction open,
            # or every later write would fail with "cannot start a transaction".
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.IntegrityError):
                if "results.round_id" in str(exc):
                    raise DuplicateResultError(str(exc)) from exc
                raise JournalError(f"journal {self.path}: {exc}") from exc
            if isinstance(exc, sqlite3.Error):
                raise JournalError(f"journal {self.path}: write failed: {exc}") from exc
            raise
        finally:
            self._depth -= 1

    def batch(self) -> AbstractContextManager[None]:
        """Several appends as one transaction: all recorded, or none (and one fsync)."""
        return self._tx()

    # -- writing ------------------------------------------------------------------------

    def append(self, kind: str, body: Mapping[str, Any], *, round_id: str | None = None,
               publish: tuple[Publish, ...] = ()) -> int:
        """Record an event and queue what it publishes, atomically. Returns the journal id."""
        with self._tx():
            return self._append(kind, body, round_id, publish)

    def _append(self, kind: str, body: Mapping[str, Any], round_id: str | None,
                publish: tuple[Publish, ...]) -> int:
        now = self._clock()
        cur = self._db.execute("INSERT INTO journal(at, round_id, kind, body) VALUES (?,?,?,?)",
                               (now, round_id, kind, _dumps(body)))
        journal_id = int(cur.lastrowid or 0)
        for p in publish:
            self._db.execute(
                "INSERT INTO outbox(topic, payload, qos, retain, created_at) VALUES (?,?,?,?,?)",
                (p.topic, _dumps(p.payload), p.qos, int(p.retain), now))
        return journal_id

    def record_result(self, round_id: str, result: Mapping[str, Any], topic: str
                      ) -> dict[str, Any]:
        """Assign the next ``seq``, journal the result and queue it, in one transaction.

        Raises DuplicateResultError if the round already has a result.
        """
        with self._tx():
            journal_id = self._append("result", result, round_id, ())
            cur = self._db.execute("INSERT INTO results(round_id, journal_id) VALUES (?,?)",
                                   (round_id, journal_id))
            seq = int(cur.lastrowid or 0)
            final = {**result, "round_id": round_id, "seq": seq}
            self._db.execute("UPDATE journal SET body=? WHERE id=?", (_dumps(final), journal_id))
            self._db.execute(
                "INSERT INTO outbox(topic, payload, qos, retain, created_at) VALUES (?,?,1,0,?)",
                (topic, _dumps(final), self._clock()))
        return final

    def next_session(self) -> int:
        """The MQTT session counter (like Sparkplug's bdSeq), incremented per connection."""
        with self._tx():
            (value,) = self._db.execute("SELECT value FROM meta WHERE key='session'").fetchone()
            session = int(value) + 1
            self._db.execute("UPDATE meta SET value=? WHERE key='session'", (str(session),))
        return session

    def set_meta(self, key: str, value: str) -> None:
        with self._tx():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # -- the outbox ---------------------------------------------------------------------

    def pending(self, limit: int = 100, after: int = 0) -> list[OutboxEntry]:
        rows = self._db.execute(
            "SELECT id, topic, payload, qos, retain, created_at, attempts FROM outbox "
            "WHERE delivered_at IS NULL AND id > ? ORDER BY id LIMIT ?", (after, limit))
        return [OutboxEntry(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def max_outbox_id(self, pending_only: bool = False) -> int:
        where = " WHERE delivered_at IS NULL" if pending_only else ""
        return int(self._db.execute(f"SELECT coalesce(max(id), 0) FROM outbox{where}")
                   .fetchone()[0])

    def pending_count(self) -> int:
        return int(self._db.execute(
            "SELECT count(*) FROM outbox WHERE delivered_at IS NULL").fetchone()[0])

    @contextmanager
    def _unsynced(self) -> Iterator[None]:
        """A transaction without its own fsync (WAL, synchronous=NORMAL), for bookkeeping
        whose loss costs only a re-send. It survives a killed process like any other (the
        WAL is in the page cache); a power cut may lose it, unless a later fsync'd commit,
        which flushes the whole WAL, came first. Everything of a round keeps FULL."""
        if self._depth:  # inside batch(): it shares the batch's fsync anyway
            with self._tx():
                yield
            return
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._tx():
                yield
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

    def mark_attempt(self, entry_id: int) -> None:
        with self._unsynced():
            self._db.execute("UPDATE outbox SET attempts = attempts + 1 WHERE id=?", (entry_id,))

    def mark_delivered(self, *entry_ids: int) -> None:
        """One transaction for a whole window of acknowledged entries, not fsync'd: a
        mark lost to a power cut only sends those entries again, flagged ``replayed``,
        which consumers already handle (at least once, deduplicated by ``seq``). Its
        fsync was half of all fsyncs at a table dealing normally (docs/performance.md)."""
        now = self._clock()
        with self._unsynced():
            self._db.executemany(
                "UPDATE outbox SET delivered_at=? WHERE id=? AND delivered_at IS NULL",
                [(now, i) for i in entry_ids])

    # -- reading ------------------------------------------------------------------------

    def records(self, round_id: str | None = None, after: int = 0) -> list[JournalRecord]:
        if round_id is None:
            rows = self._db.execute(
                "SELECT id, at, round_id, kind, body FROM journal WHERE id > ? ORDER BY id",
                (after,))
        else:
            rows = self._db.execute(
                "SELECT id, at, round_id, kind, body FROM journal WHERE round_id=? AND id > ? "
                "ORDER BY id", (round_id, after))
        return [JournalRecord(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def result_seqs(self) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1])) for r in
                self._db.execute("SELECT seq, round_id FROM results ORDER BY seq")]
