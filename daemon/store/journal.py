"""The journal and the outbox, in one SQLite file (WAL, synchronous=FULL; only the
outbox's delivery marks skip their fsync, see ``mark_delivered``).

Every state change of a round is appended here before it is acted on or published, in
one transaction with the messages it causes. A result gets its per-table ``seq``, never
reused, and its ``round_id`` is UNIQUE: a round can have one result only, whatever is
killed when.

Every message is built, numbered, sealed (signed) and stored once, at commit
(``messages``): it gets the journal's ``journal_id`` (random, made with the journal) and
the next ``msg_seq`` (contiguous over all the table's topics), and goes on the wire as
the stored bytes, as often as it must, and again for a replay request. ``unsent`` holds
the ``msg_seq`` of the messages not yet acknowledged; a delivered one leaves it.

Writes are synchronous on the event loop thread. A commit with fsync costs 0.35-0.42 ms
median and under 1 ms at p99 here (``.venv/bin/python -m bench.journal``,
docs/performance.md), and keeps the order of events trivially correct; a writer thread
would add a queue whose loss on a crash would need its own story. Re-measure on the SD
card of the target board.

"Checkpoint" alone means the table-state record (daemon/round/checkpoint.py: a restart
folds from the latest one, ``last_checkpoint``); SQLite's copy of its write-ahead log
into the database file is ``wal_checkpoint``.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from daemon.errors import TabledError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2

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
CREATE INDEX IF NOT EXISTS journal_checkpoint ON journal(id) WHERE kind='checkpoint';
CREATE INDEX IF NOT EXISTS journal_at ON journal(at);
CREATE TABLE IF NOT EXISTS results (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id   TEXT NOT NULL UNIQUE,
    journal_id INTEGER NOT NULL REFERENCES journal(id)
);
CREATE TABLE IF NOT EXISTS messages (
    msg_seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    at       REAL NOT NULL,
    topic    TEXT NOT NULL,
    payload  TEXT NOT NULL,
    qos      INTEGER NOT NULL,
    retain   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_retained ON messages(topic, msg_seq) WHERE retain=1;
CREATE TABLE IF NOT EXISTS unsent (
    msg_seq  INTEGER PRIMARY KEY REFERENCES messages(msg_seq),
    attempts INTEGER NOT NULL DEFAULT 0
);
"""

# Format 1 kept every payload, delivered or not, unsigned, in ``outbox``; what was still
# pending is numbered and sealed like a new message, and the old table dropped.
V1_OUTBOX = "SELECT topic, payload, qos, retain FROM outbox WHERE delivered_at IS NULL ORDER BY id"

Sealer = Callable[[Mapping[str, Any]], str]
RECORDS_MIN_AGE = 86400.0  # seconds: retention never prunes a younger record
# A WAL checkpoint is due after this many commits, and runs while betting is open
# (docs/architecture.md, "WAL checkpoints while betting is open"). SQLite checkpoints
# inside a commit at WAL_BOUND pages, for a log that betting never comes to (the broker
# away for long, a table that deals no rounds); the log's file is cut back to
# WAL_FILE_LIMIT bytes when it starts over after growing past it.
WAL_CHECKPOINT_COMMITS = 64
WAL_BOUND = 4000  # pages: 16 MB at SQLite's 4 KB
WAL_FILE_LIMIT = 4 << 20


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
    id: int  # the message's msg_seq
    topic: str
    payload: str  # the sealed bytes, exactly as stored
    qos: int
    retain: bool
    created_at: float
    attempts: int


@dataclass(frozen=True, slots=True)
class Backlog:
    """The outbox not yet acknowledged by the broker."""

    messages: int
    oldest_msg_seq: int | None
    oldest_at: float | None  # when the oldest was stored (epoch seconds)


@dataclass(frozen=True, slots=True)
class JournalRecord:
    id: int
    at: float
    round_id: str | None
    kind: str
    body: dict[str, Any]


class MessageWatch(Protocol):
    """Told of every message as the journal stores it (the service's snapshot,
    daemon/service/snapshot.py)."""

    def message_stored(self, topic: str, message: dict[str, Any]) -> None:
        """``message`` as numbered, inside the transaction that stores it: it may stage a
        meta value to commit with it (``stage_meta``), and must not write otherwise; a
        rolled-back transaction leaves what it folded in to be reloaded."""


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


class StoredMessages:
    """What the journal's stored messages say, read from its connection: shared by the
    daemon's journal and the replay server's read-only reader (``JournalReader``)."""

    _db: sqlite3.Connection

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def last_msg_seq(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='messages'"
                               ).fetchone()
        return 0 if row is None else int(row[0])

    def messages(self, first: int, last: int, limit: int,
                 topics: tuple[str, ...] = ("%",)) -> list[OutboxEntry]:
        """Stored messages first..last (msg_seq) on topics matching any of ``topics``
        (SQL LIKE patterns), at most ``limit``: for a replay."""
        match = " OR ".join("topic LIKE ?" for _ in topics)
        rows = self._db.execute(
            "SELECT msg_seq, topic, payload, qos, retain, at, 0 FROM messages "
            f"WHERE msg_seq BETWEEN ? AND ? AND ({match}) ORDER BY msg_seq LIMIT ?",
            (first, last, *topics, limit))
        return [OutboxEntry(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def first_msg_seq(self) -> int:
        """The oldest message still stored (retention prunes older ones)."""
        row = self._db.execute("SELECT min(msg_seq) FROM messages").fetchone()
        first = int(row[0]) if row and row[0] is not None else self.last_msg_seq() + 1
        return max(first, int(self.get_meta("journal_from") or 0))


class JournalReader(StoredMessages):
    """The journal opened read-only, by another process than the daemon's (the replay
    server, daemon/replay/): SQLite's WAL lets it read while the daemon writes, and it
    can write nothing."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False)
            self._db.execute("SELECT 1 FROM meta LIMIT 1")
        except sqlite3.Error as exc:
            raise JournalError(f"cannot read journal {self.path}: {exc}") from exc

    @property
    def journal_id(self) -> str:
        """Read each time: an operator-accepted replacement gives the file a new one."""
        return str(self.get_meta("journal_id"))

    def close(self) -> None:
        self._db.close()


class Journal(StoredMessages):
    def __init__(self, path: Path | str, *, clock: Any = time.time,
                 sealer: Sealer = _dumps) -> None:
        self.path = Path(path)
        self._clock = clock
        self._seal = sealer  # the signer's seal: a message is signed once, at commit
        # Told of every message as it is stored, inside its transaction (the snapshot).
        self.watch: MessageWatch | None = None
        self._depth = 0
        self._grouped = False  # inside group(): each unit directly in it is a savepoint
        # Meta values written once, just before their unit commits (the snapshot moves
        # with every message, and is written once per transaction, not once per message).
        self._staged: dict[str, Callable[[], str]] = {}
        self._next_msg_seq: int | None = None  # known while no transaction rolled back
        # Commits since the last wal_checkpoint(); each writes about 10 log pages in the
        # daemon (strace over bench.end_to_end: docs/performance.md, "profiled").
        self._commits = 0
        self.created = not self.path.exists()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_BOUND}")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_FILE_LIMIT}")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(SCHEMA)
            version = self._db.execute(
                "SELECT value FROM meta WHERE key='schema_version'").fetchone()
            ok = self._db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open journal {self.path}: {exc}") from exc
        if ok != "ok":
            raise JournalError(f"journal {self.path} failed its integrity check: {ok}")
        found = int(version[0]) if version else SCHEMA_VERSION
        if found > SCHEMA_VERSION:
            # A rollback after an upgrade that changed the format: reading it would lose data.
            self._db.close()
            raise JournalError(f"journal {self.path} has format {found}; this release "
                               f"understands format {SCHEMA_VERSION} or older. Run the "
                               "release that wrote it, or restore a backup.")
        with self._tx():
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('session', '0')")
            # The journal's identity: a new file, or a history that was broken off (an
            # operator-accepted replacement, see ``new_identity``), gets a new one.
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('journal_id', ?)",
                             (secrets.token_hex(8),))
            self.journal_id = str(self.get_meta("journal_id"))
            if found < 2:
                self._migrate_v1()
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                             (str(SCHEMA_VERSION),))
        self.journal_id = str(self.get_meta("journal_id"))

    def _migrate_v1(self) -> None:
        if not self._db.execute("SELECT 1 FROM sqlite_master WHERE name='outbox'").fetchone():
            return
        for topic, payload, qos, retain in self._db.execute(V1_OUTBOX).fetchall():
            body = json.loads(payload)
            body.pop("replayed", None)
            self._queue(Publish(topic, body, qos, bool(retain)), self._clock())
        self._db.execute("DROP TABLE outbox")

    def new_identity(self) -> str:
        """A new ``journal_id``: for a journal whose history was broken off (a restored
        backup the operator accepted), so no consumer takes its messages for the old
        ones with the same numbers."""
        with self._tx():
            self._db.execute("UPDATE meta SET value=? WHERE key='journal_id'",
                             (secrets.token_hex(8),))
            # Stored messages before this point carry the old id: not this journal's.
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('journal_from', ?)",
                             (str(self.last_msg_seq() + 1),))
        self.journal_id = str(self.get_meta("journal_id"))
        return self.journal_id

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        if self._depth:
            if self._grouped and self._depth == 1:  # one unit of a group: all of it or none
                if not self._db.in_transaction:  # the group's first write begins it
                    self._db.execute("BEGIN IMMEDIATE")
                yield from self._unit("SAVEPOINT unit", "RELEASE unit",
                                      ("ROLLBACK TO unit", "RELEASE unit"))
            else:  # inside batch(): one transaction, one fsync, for all of it
                yield
            return
        yield from self._unit("BEGIN IMMEDIATE", "COMMIT", ("ROLLBACK",))

    def _unit(self, begin: str, end: str, undo: tuple[str, ...]) -> Iterator[None]:
        """One all-or-nothing unit of writes: a transaction, or a savepoint in a group."""
        self._depth += 1
        try:
            self._db.execute(begin)
            yield
            self._write_staged()
            self._db.execute(end)
        except BaseException as exc:
            # Also when the end itself failed (disk full): never leave a transaction open,
            # or every later write would fail with "cannot start a transaction".
            self._rolled_back(*undo)
            err = self._error(exc)
            if err is exc:
                raise
            raise err from exc
        finally:
            self._depth -= 1
        self._commits += end == "COMMIT"

    def _rolled_back(self, *undo: str) -> None:
        self._staged.clear()
        self._next_msg_seq = None  # numbers given back: read them again
        if self._db.in_transaction:
            with suppress(sqlite3.Error):
                for statement in undo or ("ROLLBACK",):
                    self._db.execute(statement)

    def _write_staged(self) -> None:
        for key, value in self._staged.items():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value()))
        self._staged.clear()

    def stage_meta(self, key: str, value: Callable[[], str]) -> None:
        """Set a meta value in the current transaction, computed once just before it
        commits (however many times it is staged in it)."""
        assert self._depth, "stage_meta is for use inside a transaction"
        self._staged[key] = value

    def _error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, sqlite3.IntegrityError):
            if "results.round_id" in str(exc):
                return DuplicateResultError(str(exc))
            return JournalError(f"journal {self.path}: {exc}")
        if isinstance(exc, sqlite3.Error):
            return JournalError(f"journal {self.path}: write failed: {exc}")
        return exc

    @contextmanager
    def group(self) -> Iterator[None]:
        """Group commit: inputs that arrived together (several frames in one read) share
        one transaction and one fsync. Each unit inside (a ``batch()``, an ``append``) is
        a savepoint: all of it or none of it, so an exception from outside the journal (a
        link that failed after its first frames) leaves the units already complete to be
        committed, as they would have been one by one; a journal error in the commit
        rolls the whole group back, and the caller acts on none of it."""
        if self._depth:
            yield
            return
        self._depth += 1
        self._grouped = True  # begun by its first write: most reads bring only link acks
        try:
            try:
                yield
            except BaseException as exc:
                if isinstance(exc, JournalError | sqlite3.Error):
                    raise
                self._commit_group()
                raise
            self._commit_group()
        except BaseException as exc:
            self._rolled_back()
            err = self._error(exc)
            if err is exc:
                raise
            raise err from exc
        finally:
            self._grouped = False
            self._depth -= 1

    def _commit_group(self) -> None:
        if self._db.in_transaction:
            self._db.execute("COMMIT")
            self._commits += 1

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
        record_id = int(cur.lastrowid or 0)
        for p in publish:
            self._queue(p, now)
        return record_id

    def _queue(self, p: Publish, now: float) -> int:
        """Number, seal and store one message, and queue it to be sent: its only build."""
        if self._next_msg_seq is None:
            self._next_msg_seq = self.last_msg_seq() + 1
        msg_seq = self._next_msg_seq
        full = {**p.payload, "journal_id": self.journal_id, "msg_seq": msg_seq}
        sealed = self._seal(full)
        if self.watch is not None:
            self.watch.message_stored(p.topic, full)
        self._db.execute("INSERT INTO messages(msg_seq, at, topic, payload, qos, retain) "
                         "VALUES (?,?,?,?,?,?)", (msg_seq, now, p.topic, sealed, p.qos,
                                                  int(p.retain)))
        self._next_msg_seq = msg_seq + 1
        self._db.execute("INSERT INTO unsent(msg_seq) VALUES (?)", (msg_seq,))
        return msg_seq

    def record_result(self, round_id: str, result: Mapping[str, Any], topic: str, *,
                      record: Mapping[str, Any]) -> dict[str, Any]:
        """Assign the next ``seq``, journal the result as ``record`` (the table's own
        record of it, daemon/round/records.py) and queue ``result``, its payload, with
        ``round_id`` and ``seq``, in one transaction. Returns the payload as queued.

        Raises DuplicateResultError if the round already has a result.
        """
        with self._tx():
            # The seq first (a rolled-back transaction gives it back), so the result is
            # built once, whole.
            seq = int(self._db.execute(
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name='results'), 0)"
            ).fetchone()[0]) + 1
            final = {**result, "round_id": round_id, "seq": seq}
            record_id = self._append("result", record, round_id, (Publish(topic, final),))
            self._db.execute("INSERT INTO results(seq, round_id, journal_id) VALUES (?,?,?)",
                             (seq, round_id, record_id))
        return final

    @property
    def wal_checkpoint_due(self) -> bool:
        """The log holds at least WAL_CHECKPOINT_COMMITS commits since the last one."""
        return self._commits >= WAL_CHECKPOINT_COMMITS

    def wal_checkpoint(self) -> None:
        """Copy the write-ahead log into the database file now (PASSIVE: it waits for no
        reader). SQLite would otherwise do it inside whichever commit takes the log past
        its bound, a card's or a result's, at several times that commit's cost; the
        publisher calls this when it is due, the outbox is empty and the table is
        taking bets (docs/architecture.md, "WAL checkpoints while betting is open").
        What it copies is already durable in the log: a failed checkpoint loses
        nothing, and SQLite's own, at WAL_BOUND pages, stays as the bound."""
        self._commits = 0
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("journal WAL checkpoint failed (the log keeps everything): %s", exc)

    def next_session(self) -> int:
        """The number the next MQTT session will have (like Sparkplug's bdSeq); it is
        used up only by ``session_started``, so failed connection attempts share it."""
        return int(self.get_meta("session") or 0) + 1

    def session_started(self, session: int) -> None:
        with self._tx():
            self._db.execute("UPDATE meta SET value=? WHERE key='session'", (str(session),))

    def set_meta(self, key: str, value: str) -> None:
        with self._tx():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- the outbox ---------------------------------------------------------------------

    def pending(self, limit: int = 100, after: int = 0) -> list[OutboxEntry]:
        rows = self._db.execute(
            "SELECT m.msg_seq, m.topic, m.payload, m.qos, m.retain, m.at, u.attempts "
            "FROM unsent u JOIN messages m USING (msg_seq) WHERE u.msg_seq > ? "
            "ORDER BY u.msg_seq LIMIT ?", (after, limit))
        return [OutboxEntry(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def max_outbox_id(self, pending_only: bool = False) -> int:
        """The last msg_seq given (or the last one still unsent)."""
        if pending_only:
            return int(self._db.execute("SELECT coalesce(max(msg_seq), 0) FROM unsent")
                       .fetchone()[0])
        return self.last_msg_seq()

    def last_seq(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='results'"
                               ).fetchone()
        return 0 if row is None else int(row[0])

    def pending_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM unsent").fetchone()[0])

    def now(self) -> float:
        """The journal's clock (what ``at`` of its records and messages is read from)."""
        return float(self._clock())

    def backlog(self) -> Backlog:
        try:
            n, first = self._db.execute("SELECT count(*), min(msg_seq) FROM unsent"
                                        ).fetchone()
        except sqlite3.Error as exc:
            raise JournalError(f"journal {self.path}: cannot read the outbox: {exc}") from exc
        if first is None:
            return Backlog(0, None, None)
        at = self._db.execute("SELECT at FROM messages WHERE msg_seq=?", (first,)).fetchone()
        return Backlog(int(n), int(first), float(at[0]))

    def prune(self, keep_days: float, keep_rounds: int) -> int:
        """Retention: delete stored messages older than ``keep_days`` or from before the
        last ``keep_rounds`` results, whichever cuts more; never one still unsent, nor
        the latest of a retained topic. Returns how many were deleted."""
        cutoff = self._clock() - keep_days * 86400
        # The result before the last keep_rounds: it and everything before it may go.
        row = self._db.execute(
            "SELECT msg_seq FROM messages WHERE topic LIKE '%/results' "
            "ORDER BY msg_seq DESC LIMIT 1 OFFSET ?", (keep_rounds,)).fetchone()
        upto = 0 if row is None else int(row[0])
        with self._tx():
            cur = self._db.execute(
                "DELETE FROM messages WHERE (at < ? OR msg_seq <= ?) "
                "AND msg_seq NOT IN (SELECT msg_seq FROM unsent) "
                "AND msg_seq NOT IN (SELECT max(msg_seq) FROM messages WHERE retain=1 "
                "GROUP BY topic)", (cutoff, upto))
        return int(cur.rowcount)

    def prune_records(self, keep_days: float, keep_rounds: int) -> int:
        """Retention of records: delete those from before the latest checkpoint (a restart
        folds from it: daemon/round/checkpoint.py) that are older than ``keep_days`` or
        from before the last ``keep_rounds`` results, like stored messages, but never one
        younger than a day (the command ids a restart must still refuse, at most two
        hours old, are in it). Without a checkpoint nothing goes. Returns how many."""
        cp = self.last_checkpoint()
        if cp is None:
            return 0
        now = self._clock()
        row = self._db.execute("SELECT journal_id FROM results ORDER BY seq DESC "
                               "LIMIT 1 OFFSET ?", (keep_rounds,)).fetchone()
        upto = 0 if row is None else int(row[0])
        where = ("id < ? AND at < ? AND (at < ? OR id <= ?)",
                 (cp, now - RECORDS_MIN_AGE, now - keep_days * 86400, upto))
        with self._tx():
            # A result's row goes with its record (its round_id's uniqueness with it: round
            # ids are random, and a correction reaches only the rounds a checkpoint keeps).
            self._db.execute("DELETE FROM results WHERE journal_id IN "
                             f"(SELECT id FROM journal WHERE {where[0]})", where[1])
            cur = self._db.execute(f"DELETE FROM journal WHERE {where[0]}", where[1])
        return int(cur.rowcount)

    def last_checkpoint(self) -> int | None:
        row = self._db.execute("SELECT max(id) FROM journal WHERE kind='checkpoint'"
                               ).fetchone()
        return None if row[0] is None else int(row[0])

    def last_checkpoint_at(self) -> float | None:
        row = self._db.execute("SELECT at FROM journal WHERE id = (SELECT max(id) FROM "
                               "journal WHERE kind='checkpoint')").fetchone()
        return None if row is None else float(row[0])

    def records_for_recovery(self) -> list[JournalRecord]:
        """What a restart folds: from the latest checkpoint on (every record without one)."""
        cp = self.last_checkpoint()
        return self.records(after=0 if cp is None else cp - 1)

    def records_since(self, at: float) -> list[JournalRecord]:
        rows = self._db.execute("SELECT id, at, round_id, kind, body FROM journal "
                                "WHERE at >= ? ORDER BY id", (at,))
        return [JournalRecord(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def latest_sent(self, topics: list[str]) -> dict[str, str]:
        """The last stored retained message of each topic, unless it is still unsent
        (the outbox sends it, in order)."""
        out: dict[str, str] = {}
        for topic in topics:
            row = self._db.execute(
                "SELECT msg_seq, payload FROM messages WHERE topic=? AND retain=1 "
                "ORDER BY msg_seq DESC LIMIT 1", (topic,)).fetchone()
            if row is not None and not self._db.execute(
                    "SELECT 1 FROM unsent WHERE msg_seq=?", (row[0],)).fetchone():
                out[topic] = str(row[1])
        return out

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
            self._db.execute("UPDATE unsent SET attempts = attempts + 1 WHERE msg_seq=?",
                             (entry_id,))

    def mark_delivered(self, *entry_ids: int) -> None:
        """One transaction for a whole window of acknowledged entries, not fsync'd: a
        mark lost to a power cut only sends those entries again, byte for byte, which
        consumers already handle (at least once, de-duplicated by ``msg_seq``). Its
        fsync was half of all fsyncs at a table dealing normally (docs/performance.md)."""
        with self._unsynced():
            self._db.executemany("DELETE FROM unsent WHERE msg_seq=?",
                                 [(i,) for i in entry_ids])

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
