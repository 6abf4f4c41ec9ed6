"""The table service: devices -> table state machine -> journal -> outbox -> MQTT.

Effects from the state machine are applied in order, journal first: a record or result
is committed (with its outbox entry) before any device command it implies is sent and
before it is published. Commands arrive on ``{prefix}/{table}/cmd/{name}`` and are
answered on ``replies`` (through the outbox, like everything else).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import ssl
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import structlog

from daemon import __version__, reload
from daemon.authority import ACCEPTED, REFUSED, CommandAuthority, Untrusted
from daemon.commands import (
    Command,
    CommandError,
    check_irregularity,
    check_round,
    parse_command,
    reply,
)
from daemon.config import BrokerConfig, TableConfig
from daemon.drivers.command_outcome import Outcome, Verdict, deliver, reason
from daemon.drivers.device import DeviceDriver, DeviceNotReadyError, DeviceState, DeviceStatus
from daemon.drivers.seen import META_PREFIX, Mark, Seen
from daemon.games import get_game
from daemon.metrics import TableMetrics
from daemon.mqtt import card_event, last_seen, replay
from daemon.mqtt.envelope import out_of_band, stamp
from daemon.mqtt.publisher import BrokerSettings, Publisher
from daemon.mqtt.snapshot import TableView
from daemon.results import iso
from daemon.round import checkpoint
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
    RoundResult,
)
from daemon.round.lifecycle import BETTING, RoundLifecycle
from daemon.round.recovery import restore
from daemon.round.tai_sai import TaiSaiTable
from daemon.signing import Keyring, signable
from daemon.store import identity
from daemon.store.identity import Identity, JournalIdentityError
from daemon.store.journal import RECORDS_MIN_AGE, Journal, JournalError, Publish
from daemon.takeover import SessionWatch
from firmware_protocols import shoe, shuffler, tumbler
from firmware_protocols.common import CommandResult, DeviceKind
from firmware_protocols.wire import Catalogue, Message

log = logging.getLogger(__name__)
slog = structlog.get_logger("tabled.table")

DEVICES: dict[str, tuple[Catalogue, DeviceKind]] = {
    "shoe": (shoe.CATALOGUE, DeviceKind.SHOE),
    "shuffler": (shuffler.CATALOGUE, DeviceKind.SHUFFLER),
    "tumbler": (tumbler.CATALOGUE, DeviceKind.TUMBLER),
}


DEVICE_DEBOUNCE = 0.5  # s a device state must hold before it is shown
# What a change of makes a device state news (not detail, decode_errors): a new
# handshake (sessions) is, so a reboot quicker than the debounce still shows.
SHOWN = ("fault", "firmware", "model", "protocol_version", "serial", "sessions", "state",
         "url")
IDENTITY_EVERY = 5.0  # s between updates of the identity file (identity.py)
SNAPSHOT_EVERY = 0.2  # s: the retained snapshot follows the table at most this often
# A checkpoint of the table a day (daemon/round/checkpoint.py): a restart folds a day of
# records at most, and retention prunes what came before it.
CHECKPOINT_EVERY = 86400.0


def tls_context(b: BrokerConfig) -> ssl.SSLContext | None:
    """mqtts://: verify the broker (system CAs or ca_file); present a client certificate
    when cert_file/key_file are given."""
    if not b.tls:
        return None
    ctx = ssl.create_default_context(cafile=str(b.ca_file) if b.ca_file else None)
    if b.cert_file is not None:
        ctx.load_cert_chain(str(b.cert_file), str(b.key_file) if b.key_file else None)
    return ctx


# The table's own topics under {prefix}/{table_id}/ (docs/mqtt.md); devices/NAME and
# replay/to/NAME besides.
TOPICS = ("status", "events", "results", "alerts", "replies", "snapshot")
# What it reads: its commands and replay requests (and its status, read back by the
# publisher to see a late will).
SUBSCRIBED = ("cmd/+", "replay/request")


def table_topics(cfg: TableConfig) -> tuple[list[str], list[str]]:
    """What the table subscribes to and what it publishes on, for the broker's ACL
    (tabled doctor checks each): one device topic per configured device, and one reply
    topic standing for every requester's."""
    base = f"{cfg.topic_prefix}/{cfg.table_id}"
    subscribed = [f"{base}/{t}" for t in (*SUBSCRIBED, "status")]
    published = [f"{base}/{t}" for t in TOPICS]
    published += [f"{base}/devices/{name}" for name in cfg.devices if name in DEVICES]
    published.append(f"{base}/replay/to/tabled-doctor")
    return subscribed, published


class TableService:
    def __init__(self, cfg: TableConfig, *, clock: Any = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        # The game as this table plays it: its [table] readings (e.g. twin_tiger_pair).
        self.game = get_game(cfg.game).configured(cfg.rules.readings)
        base = f"{cfg.topic_prefix}/{cfg.table_id}"
        self.topics = {name: f"{base}/{name}" for name in TOPICS}
        self.cmd_prefix = f"{base}/cmd/"
        self.replay_request = f"{base}/replay/request"
        self.journal, self._announce = self._open_journal()
        # What a consumer that saw every message knows: kept with the journal.
        self.view = TableView.loads(self.journal.get_meta("snapshot"))
        self.journal.watch = self._fold
        self._snapshot_due = False
        self._replays = replay.Fair()
        self._replay_turn = asyncio.Lock()
        self._replays_waiting = 0  # admitted, not yet answered: at most MAX_WAITING
        self._busy = replay.Bucket(1.0, 1.0)
        self.replays_dropped = 0
        self.table = self._new_table()
        self.seen = self._load_seen()
        self.events_repeated = 0  # device events dropped as already taken (version 3)
        # Set while the journal cannot be written: no round advances, nothing is acted on.
        self.storage_error: str | None = None
        self.dropped_while_failed = 0
        # Authenticated commands refused while it could not: journalled once it can.
        self._refused_unjournalled: list[dict[str, Any]] = []
        self.metrics = TableMetrics(self)  # read at scrape time, all but its counters
        b = cfg.broker
        self.publisher = Publisher(
            self.journal,
            BrokerSettings(b.host, b.port, b.username, b.password, tls_context(b), b.client_id,
                           nodes=b.nodes),
            self.topics["status"], self._status, self._retained,
            subscriptions=tuple(f"{base}/{t}" for t in SUBSCRIBED),
            on_message=self._on_mqtt, at_once={self.replay_request: self._admit_replay},
            signer=cfg.signer, on_journal_error=self._storage_failed,
            on_lost=self._session_lost, on_stop=self._last_words, cleared=self._cleared,
            on_cleared=self._was_cleared, last_state=self._last_snapshot,
            quiet=lambda: self.table.state == BETTING,
            on_delivered=self.metrics.delivered)
        self.session_watch = SessionWatch(clock, b.client_id)
        self.authority = CommandAuthority(cfg.table_id, cfg.principals, cfg.command_max_age,
                                          clock, cfg.webauthn)
        self.untrusted = Untrusted(clock)
        self.drivers = {
            name: DeviceDriver(name, url, *DEVICES[name],
                               on_message=functools.partial(self._on_device, name),
                               on_status=self._on_device_status,
                               on_problem=self._on_device_problem,
                               on_rejected=functools.partial(self._on_device_rejected,
                                                             name),
                               serial=cfg.serials.get(name), on_impostor=self._on_impostor,
                               together=self._together)
            for name, url in cfg.devices.items() if name in DEVICES
        }
        self._tasks: set[asyncio.Task[None]] = set()
        self._device_latest: dict[str, DeviceStatus] = {}
        self._device_shown: dict[str, tuple[Any, ...]] = {}
        self.stopping = False
        # Inside ``_together``: the device commands to send once the group is on disk.
        self._deferred: list[DeviceCommand] | None = None
        self._handlers = self._device_handlers()
        self.recovered = asyncio.Event()  # the journal is read and any open round resolved

    def _open_journal(self) -> tuple[Journal, dict[str, Any] | None]:
        """Open the journal this table had, or refuse (identity.py); the announcement
        of a new journal, if it is one."""
        cfg = self.cfg
        path = identity.identity_path(cfg.journal_path)
        known = identity.read(path)
        exists = cfg.journal_path.exists()
        accept = cfg.journal_policy.accept_new
        if known is not None and not exists and accept is None:
            raise JournalIdentityError(f"{identity.problem(known, False, None)}. "
                                       f"{identity.HOW}")
        journal = Journal(cfg.journal_path, sealer=cfg.signer.seal, clock=self.clock)
        found = Identity(journal.journal_id, journal.last_msg_seq(), journal.last_seq())
        why = identity.problem(known, exists, found)
        if why is not None and accept is None:
            journal.close()
            raise JournalIdentityError(f"{why}. {identity.HOW}")
        announce = None
        if why is not None:
            assert known is not None
            if known.journal_id == journal.journal_id:  # an older copy: its history broke
                journal.new_identity()
            announce = {"why": why, "accepted": accept,
                        "previous_journal_id": known.journal_id,
                        "previous_msg_seq": known.msg_seq, "previous_seq": known.seq}
        elif journal.created:
            announce = {"why": "a new journal", "accepted": None,
                        "previous_journal_id": None if known is None else known.journal_id}
        self._identity_path = path
        return journal, announce

    async def compare_with_broker(self) -> None:
        """Before anything is published: is this journal behind what the broker saw of
        it (the table's own retained snapshot, daemon/mqtt/last_seen.py)? Refused with
        the figures unless accepted; an accepted one gets a new journal_id, announced
        with the numbers of the one it replaces."""
        snapshot = await last_seen.retained_snapshot(
            self.publisher.broker, self.topics["snapshot"], self.topics["status"],
            Keyring.of([self.cfg.signer.key.public_key()]))
        seen = None if snapshot is None else identity.seen_in(snapshot)
        j = self.journal
        why = identity.behind(seen, Identity(j.journal_id, j.last_msg_seq(), j.last_seq()))
        if why is None:
            return
        assert seen is not None
        accept = self.cfg.journal_policy.accept_new
        if accept is None:
            raise JournalIdentityError(f"{why}. {identity.HOW}")
        log.warning("%s; accepted: %s; it gets a new journal_id", why, accept)
        replaced = j.journal_id
        j.new_identity()
        self._announce = {"why": why, "accepted": accept, "previous_journal_id": replaced,
                          "previous_msg_seq": seen.msg_seq, "previous_seq": seen.seq}

    def save_identity(self) -> None:
        """What the table has published from, for the next start to compare."""
        j = self.journal
        try:
            identity.write(self._identity_path,
                           Identity(j.journal_id, j.last_msg_seq(), j.last_seq()))
        except OSError as exc:
            log.error("cannot write %s: %s", self._identity_path, exc)

    def _new_table(self) -> RoundLifecycle:
        if self.game.kind == "baccarat":
            assert self.cfg.decks is not None
            return BaccaratTable(self.cfg.table_id, self.game, self.cfg.layout, self.cfg.decks,
                                 clock=self.clock, new_round_id=self._new_round_id,
                                 confidence_floor=self.cfg.card_confidence_floor,
                                 insurance_offered=self.cfg.rules.insurance_offered)
        return TaiSaiTable(self.cfg.table_id, self.game, self.cfg.layout, clock=self.clock,
                           new_round_id=self._new_round_id,
                           confidence_floor=self.cfg.rules.dice_confidence_floor,
                           dice_watch=self.cfg.rules.dice_watch)

    def _load_seen(self) -> Seen:
        """Each device's last event taken, as journalled with what it produced."""
        marks = {}
        for name in self.cfg.devices:
            text = self.journal.get_meta(META_PREFIX + name)
            if text is not None:
                marks[name] = Mark.loads(text)
        return Seen(marks)

    def _new_round_id(self) -> str:
        return f"{self.cfg.table_id}-{uuid.uuid4().hex[:12]}"

    # -- payloads -----------------------------------------------------------------------

    def _status(self, state: str, session: int, started: float, with_at: bool = True
                ) -> Mapping[str, Any]:
        return out_of_band({
            "type": "status", "state": state, "session": session,
            "session_started_at": iso(started), "at": iso(self.clock()) if with_at else None,
            "game": self.cfg.game, "layout": self.cfg.layout, "version": __version__},
            self.cfg.table_id, self.journal.journal_id)

    def _device_topic(self, name: str) -> str:
        return f"{self.cfg.topic_prefix}/{self.cfg.table_id}/devices/{name}"

    def _device_payload(self, s: DeviceStatus) -> dict[str, Any]:
        return stamp({"type": "device", "at": iso(self.clock()), **s.as_dict()},
                     self.cfg.table_id)

    def _retained(self) -> list[tuple[str, str | Mapping[str, Any]]]:
        """What a broker that lost its retained messages needs: the stored device
        states, and the snapshot."""
        topics = [self._device_topic(n) for n in self.drivers]
        out: list[tuple[str, str | Mapping[str, Any]]] = list(
            self.journal.latest_sent(topics).items())
        out.append((self.topics["snapshot"], self._snapshot()))
        return out

    # -- catch-up: the snapshot and replays ------------------------------------------------

    def _fold(self, topic: str, payload: dict[str, Any]) -> None:
        """Every stored message, inside its transaction: the snapshot moves with it."""
        self.view.fold(payload)
        self.journal.stage_meta("snapshot", self.view.dumps)  # once, at the commit
        self._snapshot_due = True

    def _last_snapshot(self) -> list[tuple[str, Mapping[str, Any]]]:
        """A clean stop: the snapshot as of the last words, whether or not the timer of
        _keep_snapshot has come round (a retained snapshot one result behind otherwise)."""
        if self.storage_error is not None:
            return []
        self._snapshot_due = False
        return [(self.topics["snapshot"], self._snapshot())]

    def _snapshot(self) -> dict[str, Any]:
        return out_of_band({**self.view.body(self.table.state), "at": iso(self.clock()),
                            "first_msg_seq": self.journal.first_msg_seq()},
                           self.cfg.table_id, self.journal.journal_id)

    async def _keep_snapshot(self, every: float = SNAPSHOT_EVERY) -> None:
        """The retained snapshot, at most every ``every`` seconds while things change."""
        while True:
            await asyncio.sleep(every)
            if self._snapshot_due and self.storage_error is None:
                self._snapshot_due = False
                await self.publisher.publish_now(self.topics["snapshot"], self._snapshot(),
                                                 retain=True)

    def _admit_replay(self, payload: bytes) -> None:
        """Size, then the requester's name, then its share of the budget, all before any
        task is made: a flood costs the table a length check and a 1 KiB parse each."""
        head = replay.head_of(payload)
        if head is None:  # too large, not JSON, or nowhere to answer
            self.replays_dropped += 1
            self.metrics.replays_refused.labels("dropped").inc()
            return
        answer = f"{self.cfg.topic_prefix}/{self.cfg.table_id}/replay/to/{head.reply_to}"
        kept = None if self._replays_waiting >= replay.MAX_WAITING else \
            self._replays.take(head.reply_to, lambda: head.most(self.journal.last_msg_seq()))
        if kept is not None:
            self._replays_waiting += 1
            self._spawn(self._serve_replay(answer, payload, head.reply_to, kept))
        elif self._busy.take():
            self.metrics.replays_refused.labels("busy").inc()
            self._spawn(self._replay_marker(answer, payload, error=(
                "busy", f"at most {replay.PER_RATE:g} replay requests and "
                f"{replay.PER_MESSAGE_RATE:g} messages a second for one requester, "
                f"{replay.RATE:g} and {replay.MESSAGE_RATE:g} for all; try again")))
        else:
            self.replays_dropped += 1
            self.metrics.replays_refused.labels("dropped").inc()

    async def _serve_replay(self, answer: str, payload: bytes, reply_to: str, kept: int
                            ) -> None:
        sent = 0
        try:
            sent = await self._answer_replay(answer, payload)
        finally:
            self._replays_waiting -= 1
            # Admission set aside the most it could send (replay.Fair): the rest back.
            self._replays.give_back(reply_to, kept - sent)

    async def _answer_replay(self, answer: str, payload: bytes) -> int:
        """Answer one request; returns how many stored messages it sent."""
        try:
            req = replay.parse(payload)
        except replay.ReplayError as exc:
            self.metrics.replays_refused.labels(exc.code).inc()
            await self._replay_marker(answer, payload, error=(exc.code, str(exc)))
            return 0
        if req.journal_id is not None and req.journal_id != self.journal.journal_id:
            self.metrics.replays_refused.labels("other_journal").inc()
            await self._replay_marker(answer, payload, error=(
                "other_journal", f"this table's journal is {self.journal.journal_id}, not "
                f"{req.journal_id}: its msg_seq numbers mean other messages"))
            return 0
        newest = self.journal.last_msg_seq()
        last = newest if req.last is None else min(req.last, newest)
        base = f"{self.cfg.topic_prefix}/{self.cfg.table_id}/"
        patterns = tuple(base + ("devices/%" if t == "devices" else t) for t in req.topics)
        first = max(req.first, self.journal.first_msg_seq())  # older: pruned, or not ours
        rows = self.journal.messages(first, last, replay.MAX_MESSAGES, patterns)
        size, sent = 0, 0
        for row in rows:
            size += len(row.payload)
            if sent and size > replay.MAX_BYTES:
                break
            sent += 1
        rows = rows[:sent]
        cut = len(rows) == replay.MAX_MESSAGES or size > replay.MAX_BYTES
        for n, row in enumerate(rows):  # the stored bytes; paho keeps their order
            # One replayed message at a time, waiting for its PUBACK: replays hold at
            # most one of the connection's in-flight slots, and the table's own messages
            # (the outbox) the rest (side by side they filled them all, and a round's
            # result waited behind megabytes of replays). Taken per message, in turn
            # (the lock is first come, first served), so answers interleave: a short one
            # is not kept behind a flooder's 500 (bench/replay_flood.py).
            async with self._replay_turn:
                if not await self.publisher.publish_now(answer, row.payload):
                    return n  # no connection: the requester asks again
        covered = rows[-1].id if cut else last
        self.metrics.replays_served.inc()
        await self._replay_marker(answer, payload, req=req, count=len(rows),
                                  covered=covered, more=cut)
        return len(rows)

    async def _replay_marker(self, topic: str, payload: bytes, *,
                             req: replay.ReplayRequest | None = None,
                             error: tuple[str, str] | None = None, count: int = 0,
                             covered: int | None = None, more: bool = False) -> None:
        try:
            rid = json.loads(payload).get("id")
        except (ValueError, RecursionError, AttributeError):  # any bytes are data
            rid = None
        echo = isinstance(rid, str) and len(rid) <= 64 and signable(rid)
        await self.publisher.publish_now(topic, out_of_band({
            "type": "replay", "id": rid if echo else None,
            "from_msg_seq": None if req is None else req.first, "to_msg_seq": covered,
            "count": count, "next_msg_seq": None if not more or covered is None
            else covered + 1, "first_available": self.journal.first_msg_seq(),
            "last_msg_seq": self.journal.last_msg_seq(), "at": iso(self.clock()),
            "error": None if error is None else {"code": error[0], "message": error[1]}},
            self.cfg.table_id, self.journal.journal_id))

    async def _keep_retention(self, every: float = 3600.0) -> None:
        while True:
            self.retain()
            await asyncio.sleep(every)

    def retain(self) -> None:
        """Retention: a checkpoint when the last is a day old (a restart folds from it),
        then stored messages and records past the window pruned (docs/operations.md)."""
        policy = self.cfg.journal_policy
        try:
            self.checkpoint_if_due()
            gone = self.journal.prune(policy.keep_days, policy.keep_rounds)
            records = self.journal.prune_records(policy.keep_days, policy.keep_rounds)
        except JournalError as exc:
            log.error("retention: %s", exc)
        else:
            if gone or records:
                log.info("retention: %d stored messages and %d records pruned", gone,
                         records)

    def checkpoint_if_due(self, every: float = CHECKPOINT_EVERY) -> None:
        if self.storage_error is not None:  # the table may be ahead of its journal
            return
        last = self.journal.last_checkpoint_at()
        if last is not None and self.clock() - last < every:
            return
        # Made from the fold of the journal, not from the live table: a checkpoint holds
        # only what a restart would fold (not, say, an order reveal half received, which
        # is asked for again). It is what recovery does, of a day of records at most.
        folded = self._new_table()
        folded.replay(self.journal.records_for_recovery())
        try:
            body = checkpoint.make(folded, self._new_table)
        except checkpoint.CheckpointError as exc:
            log.error("no checkpoint: %s", exc)
            return
        self.journal.append(checkpoint.KIND, body)

    def _cleared(self) -> list[str]:
        """Device topics of devices this table does not have any more, whose retained
        state it published and has not yet cleared."""
        gone = [self._device_topic(n) for n in DEVICES if n not in self.drivers]
        return [t for t, p in self.journal.latest_sent(gone).items()
                if self.journal.get_meta(f"cleared:{t}") != str(json.loads(p)["msg_seq"])]

    def _was_cleared(self, topic: str) -> None:
        last = self.journal.latest_sent([topic]).get(topic)
        if last is not None:
            self.journal.set_meta(f"cleared:{topic}", str(json.loads(last)["msg_seq"]))

    def _last_words(self) -> None:
        """A clean stop: every device is shown offline with the table, and the identity
        file is brought up to date."""
        self.stopping = True  # later device news is not shown: the table is offline
        if self.storage_error is None:
            with self.journal.batch():
                for name, d in self.drivers.items():
                    body = {**self._device_payload(d.status), "state": "offline",
                            "detail": "the table stopped"}
                    self.journal.append("device", {"name": name, "state": "offline"},
                                        publish=(Publish(self._device_topic(name), body,
                                                         retain=True),))
        self.save_identity()

    def _event(self, kind: str, body: Mapping[str, Any], round_id: str | None
               ) -> dict[str, Any]:
        return stamp({"type": "event", "event": kind, "round_id": round_id,
                      "at": iso(self.clock()), **body}, self.cfg.table_id)

    # -- applying effects ---------------------------------------------------------------

    def apply(self, effects: list[Effect], seen: tuple[str, Mark] | None = None) -> bool:
        """Journals what one input caused; False if it could not be (nothing happened).
        ``seen``: the device event it came from, marked taken in the same transaction, so
        that a restart drops it if the device sends it again, and never drops it unacted."""
        if self.storage_error is not None:
            return False  # _on_device and execute already refuse; timers' effects end here
        try:
            # One transaction for everything one input caused: atomic, and one fsync.
            with self.journal.batch():
                commands = self._record(effects)
                if seen is not None:
                    self.journal.stage_meta(META_PREFIX + seen[0], seen[1].dumps)
        except JournalError as exc:
            # Journal first: none of it happened, and no device is told anything.
            self._storage_failed(exc)
            return False
        if seen is not None:
            self.seen.take(*seen)
        self._send(commands)
        return True

    def _record(self, effects: list[Effect]) -> list[DeviceCommand]:
        """Journal the effects (inside the caller's batch); the device commands to send
        once that batch is committed."""
        events = card_event.plan(effects)
        for i, e in enumerate(effects):
            round_id = getattr(e, "round_id", None)
            with structlog.contextvars.bound_contextvars(round_id=round_id):
                self._apply_one(e, events.get(i))
        return [e for e in effects if isinstance(e, DeviceCommand)]

    def _send(self, commands: list[DeviceCommand]) -> None:
        if self._deferred is not None:  # in a group: sent once the group is committed
            self._deferred.extend(commands)
            return
        for c in commands:  # only once what they follow from is on disk
            self._spawn(self._device_command(c))
        self.publisher.wake()

    @contextlib.contextmanager
    def _together(self) -> Iterator[None]:
        """Group commit for what a device sent in one read (several frames: cards dealt
        fast, a gate report and a card): each input is still journalled whole or not at
        all (a savepoint), all of them in one transaction and one fsync, and what they make
        the devices do is sent, and the outbox woken, only once the group is on disk."""
        if self._deferred is not None or self.storage_error is not None:
            yield
            return
        self._deferred = []
        try:
            with self.journal.group():
                yield
        except JournalError as exc:
            self._deferred = None  # none of it is on disk: nothing of it is acted on
            self._storage_failed(exc)
            return
        except BaseException:
            self._flush_group()  # the inputs before the failure are on disk: act on them
            raise
        self._flush_group()

    def _flush_group(self) -> None:
        commands, self._deferred = self._deferred or [], None
        self._send(commands)

    # -- a journal that cannot be written --------------------------------------------------

    def _storage_failed(self, exc: Exception) -> None:
        """Stop the table where it stands, and say so by every path that does not need the
        journal: a direct alert, the log, systemd's STATUS (daemon/health.py)."""
        if self.storage_error is not None:
            return
        self.storage_error = str(exc)
        try:  # what was folded in but rolled back is not in the snapshot either
            self.view = TableView.loads(self.journal.get_meta("snapshot"))
        except Exception:  # an unreadable file: the rebuild in _probe_storage reloads it
            log.exception("the snapshot cannot be reloaded from the journal")
        log.error("journal unavailable: %s; the table accepts no rounds until it can be "
                  "written again", exc)
        alert = out_of_band({"type": "alert", "round_id": None, "at": iso(self.clock()),
                             "code": "journal_unavailable", "clause": "",
                             "detail": f"{exc}; the table accepts no rounds until the "
                                       "journal can be written"},
                            self.cfg.table_id, self.journal.journal_id)
        self._spawn(self.publisher.publish_now(self.topics["alerts"], alert))
        if "shoe" in self.drivers:  # no card may be drawn that cannot be recorded
            self._spawn(self._send_unrecorded(DeviceCommand("shoe", shoe.LockGate(0, True))))
        self._spawn(self._probe_storage())

    async def _send_unrecorded(self, e: DeviceCommand) -> None:
        try:
            await self.drivers[e.device].command(e.message)
        except (DeviceNotReadyError, TimeoutError) as exc:
            log.error("%s to %s not confirmed: %s", e.message.NAME, e.device, reason(exc))

    async def _probe_storage(self, every: float = 2.0) -> None:
        while self.storage_error is not None:
            await asyncio.sleep(every)
            try:
                with self.journal.batch():
                    self.journal.append("journal_recovered", {
                        "error": self.storage_error, "dropped_device_messages":
                        self.dropped_while_failed,
                        "refused_commands": len(self._refused_unjournalled)})
                    # Refused while the disk was full: their ids are journalled now, so
                    # a restart remembers them too (authority.remember_journal).
                    for record in self._refused_unjournalled:
                        self.journal.append(REFUSED, record)
            except JournalError:
                continue
            self._refused_unjournalled.clear()
            log.warning("the journal can be written again; rebuilding the table from it")
            # The table in memory may be ahead of the journal: rebuild it from what was
            # recorded, and let the technical-interruption rule resolve the open round.
            records = self.journal.records_for_recovery()
            self.table = self._new_table()
            self._handlers = self._device_handlers()
            self.seen = self._load_seen()  # memory may be ahead of the journal, too
            self.storage_error = None
            self.dropped_while_failed = 0
            self.view = TableView.loads(self.journal.get_meta("snapshot"))
            self.apply(restore(self.table, records))

    def _apply_one(self, e: Effect, event: card_event.Published = None) -> None:
        if isinstance(e, Record):
            # Journalled as recorded; published as planned (one event per card).
            self.journal.append(e.kind, e.body, round_id=e.round_id, publish=() if event
                                is None else (Publish(self.topics["events"], self._event(
                                    event[0], event[1], e.round_id)),))
            slog.info(e.kind, **e.body)
        elif isinstance(e, Alert):
            body = {"code": e.code, "clause": e.clause, "detail": e.detail}
            self.journal.append("alert", body, round_id=e.round_id, publish=(Publish(
                self.topics["alerts"], stamp({"type": "alert", "round_id": e.round_id,
                                              "at": iso(self.clock()), **body},
                                             self.cfg.table_id)),))
            self.metrics.alerts.labels(e.code).inc()
            log.warning("alert %s (clause %s): %s", e.code, e.clause, e.detail)
        elif isinstance(e, RoundResult):
            final = self.journal.record_result(e.round_id, e.payload, self.topics["results"])
            self.metrics.result(str(final["status"]))
            slog.info("result", seq=final["seq"], status=final["status"],
                      winner=final.get("winner"), total=final.get("total"))

    def _spawn(self, coro: Any, name: str | None = None) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _device_command(self, e: DeviceCommand) -> None:
        """Send a command the table decided on, and journal what became of it, truthfully:
        a command whose answer was lost may have run (command_outcome.py)."""
        driver = self.drivers.get(e.device)
        name = e.message.NAME
        if driver is None:
            outcome = Outcome(Verdict.NOT_SENT, f"{name} to {e.device} not sent: no "
                                                f"{e.device} is configured")
        else:
            try:  # after a restart the device must be identified again before any command
                await driver.wait_ready(30)
            except TimeoutError:
                s = driver.status
                outcome = Outcome(Verdict.NOT_SENT, f"{name} to {e.device} not sent: the "
                                                    f"{e.device} was not ready within 30 s "
                                                    f"({s.state.value}: "
                                                    f"{s.detail or 'no detail'})")
            else:
                outcome = await deliver(driver, e.message, lambda: [
                    c.message for c in self.table.device_ready(e.device)])
        if outcome.verdict is Verdict.UNKNOWN:
            self.apply([Alert("device_command_outcome_unknown", "", outcome.detail)])
        elif outcome.verdict is not Verdict.DONE:
            self.apply([Alert("device_command_failed", "", outcome.detail)])
        else:
            if outcome.detail:
                log.warning("%s", outcome.detail)
            confirmed = outcome.confirmed
            if isinstance(outcome.answer, CommandResult) and confirmed is not None:
                self._act(lambda: self.table.command_answered(e.device, confirmed),
                          f"{e.device} accepted {confirmed.NAME}")

    # -- inputs -------------------------------------------------------------------------

    def _device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return self.table.device_handlers()

    def _on_impostor(self, detail: str) -> None:
        self.apply([Alert("device_serial_mismatch", "", detail)])

    def _on_device_problem(self, detail: str) -> None:
        self.apply([Alert("device_protocol_error", "", detail)])

    def _on_device_rejected(self, device: str, m: Message, detail: str) -> None:
        """A device message with a field outside its documented range: the table decides
        what it means for the round (the Pit's, never a guess), and the alert carries the
        raw frame."""
        if self.storage_error is not None:
            self.dropped_while_failed += 1
            return
        judged = self._judge(device, m)
        if judged is None:
            return
        lost, seen = judged
        self._act(lambda: self.table.device_fault(m, detail), detail, lost, seen)

    def _judge(self, device: str, m: Message
               ) -> tuple[list[Effect], tuple[str, Mark] | None] | None:
        """A version 3 message by its stamp: None if its event was taken already (dropped);
        else what the events lost before it mean to the table, and the mark to journal."""
        stamp = self.drivers[device].stamp if device in self.drivers else None
        if stamp is None:  # protocol 1 or 2: no identity, the table's own checks (draw_no)
            return [], None
        verdict = self.seen.judge(device, stamp.origin, stamp.number, m.EVENT)
        if verdict.repeat:
            self.events_repeated += 1
            log.info("%s: %s (event %d of boot %08x) was taken already: dropped", device,
                     m.NAME, stamp.number, stamp.origin)
            return None
        lost: list[Effect] = []
        if verdict.lost is not None:
            lost = self.table.events_lost(device, *verdict.lost)
        return lost, None if verdict.mark is None else (device, verdict.mark)

    def _act(self, handler: Callable[[], list[Effect]], what: str,
             before: list[Effect] | None = None, seen: tuple[str, Mark] | None = None
             ) -> None:
        """Run a table handler; whatever it raises is a bug, journalled as an alert, and
        never reaches the device session (which would drop the message and reconnect).
        ``before``: effects that precede it (events lost before this one)."""
        try:
            effects = handler()
        except Exception as exc:
            log.exception("handling %s failed", what)
            effects = [Alert("internal_error", "", f"handling {what} failed: {exc!r}; the "
                             "round waits for the Pit",
                             self.table.round.round_id if self.table.round else None)]
        self.apply([*(before or []), *effects], seen)

    def _on_device(self, device: str, m: Message) -> None:
        handler = self._handlers.get(type(m))
        recorded = isinstance(m, self.table.RECORDED)
        if self.storage_error is not None:
            if handler is not None or recorded:  # heartbeats and replies need no record
                self.dropped_while_failed += 1
                log.error("journal unavailable: %s %s not acted on", device, m)
            return
        judged = self._judge(device, m)
        if judged is None:
            return
        lost, seen = judged
        if handler is not None:
            table = self.table
            if isinstance(m, shuffler.ShuffleComplete) and isinstance(table, BaccaratTable):
                # Which commitment the shuffler made is its session's version (shuffler.md).
                version = self.drivers[device].status.protocol_version
                handler = functools.partial(table.shuffle_complete, protocol_version=version)
            self._act(functools.partial(handler, m), f"{device} {m}", lost, seen)
        elif recorded:
            body = {k: v for k, v in m.__dict__.items() if isinstance(v, int | str | bool)}
            self.apply([*lost, Record(f"{device}_{m.NAME}", body, None)], seen)
        elif lost or seen is not None:  # an event nothing else records: its mark alone
            self.apply(lost, seen)

    def _on_device_status(self, s: DeviceStatus) -> None:
        if s.state is DeviceState.READY and self.storage_error is None:
            for c in self.table.device_ready(s.name):
                self._spawn(self._device_command(c))
        # Debounced: a device that flaps (a shoe unplugged retries every few hundred ms)
        # is shown in its settled state, once, and only when what is shown changes. Ready
        # is shown at once, so it comes before what the device does next (its gate).
        first = s.name not in self._device_latest
        self._device_latest[s.name] = s
        if first or s.state is DeviceState.READY:
            self._show_device_now(s.name)
        elif not any(t.get_name() == f"device:{s.name}" for t in self._tasks):
            self._spawn(self._show_device(s.name, DEVICE_DEBOUNCE), name=f"device:{s.name}")

    async def _show_device(self, name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self._show_device_now(name)

    def _show_device_now(self, name: str) -> None:
        if self.stopping:
            return
        s = self._device_latest[name]
        d = s.as_dict()
        before = self._device_shown.get(name)
        if before is not None and before[SHOWN.index("state")] in ("ready", "lost") and \
                s.state in (DeviceState.CONNECTING, DeviceState.HANDSHAKING):
            d["state"] = "lost"  # reconnecting: it is lost until it is ready again
        shown = tuple(v for k, v in sorted(d.items()) if k in SHOWN)
        if before == shown:
            return
        self._device_shown[name] = shown
        topic = self._device_topic(name)
        payload = {**self._device_payload(s), "state": d["state"]}
        try:
            self.journal.append("device", d, publish=(Publish(topic, payload, retain=True),))
        except JournalError as exc:
            self._storage_failed(exc)
            self._spawn(self.publisher.publish_now(topic, out_of_band(
                payload, self.cfg.table_id, self.journal.journal_id)))
        self.publisher.wake()

    def _session_lost(self, reason: str) -> None:
        detail = self.session_watch.lost(reason)
        if detail is not None:
            self.apply([Alert("mqtt_session_taken_over", "", detail)])

    async def _on_mqtt(self, topic: str, payload: bytes) -> None:
        if not topic.startswith(self.cmd_prefix):
            return
        self.execute(topic[len(self.cmd_prefix):], payload)

    def execute(self, name: str, payload: bytes) -> dict[str, Any]:
        """Run one command. Every authenticated command is journalled with its outcome and
        answered; unauthenticated input is counted and answered within a rate limit."""
        # Authenticated first, whatever the journal's state: an id is used from here on,
        # so a command refused now (storage_failed included) can never run later, and
        # unauthenticated input takes the rate-limited path on a full disk too.
        try:
            cmd = parse_command(name, payload)
            principal = self.authority.authenticate(cmd)
        except CommandError as exc:
            return self._unauthenticated(exc)
        who = principal.name
        if self.storage_error is not None:
            return self._refused(cmd, who, self._storage_refusal(cmd))
        try:
            self.authority.permit(cmd, principal)
            check_irregularity(cmd, self.game)
            check_round(cmd, self._open_round())
        except CommandError as exc:
            return self._refused(cmd, who, exc)
        t = self.table
        actions = t.commands(who, cmd.args)
        action = actions.get(cmd.name)
        try:
            if action is None:
                raise CommandRefusedError(f"{cmd.name} does not apply to {self.game.id}")
            effects = action()
        except CommandRefusedError as exc:
            return self._refused(cmd, who, CommandError("wrong_state", str(exc), cmd.id,
                                                        cmd.name))
        else:
            # The command, what it caused and its reply: one transaction, one fsync.
            try:
                with self.journal.batch():
                    self.journal.append(ACCEPTED, {"name": cmd.name, "id": cmd.id,
                                                    "by": who, "issued_at":
                                                    cmd.body["issued_at"], **cmd.args,
                                                    **self.authority.trail(cmd)})
                    commands = self._record(effects)
                    answer = reply(cmd.id, cmd.name, ok=True, state=t.state,
                                   round_id=self._open_round())
                    self.journal.append("reply", answer, publish=(self._reply(answer),))
            except JournalError as exc:
                self._storage_failed(exc)
                # The table in memory may have moved; it is rebuilt from the journal when
                # the journal can be written again. Refused, and said so directly.
                return self._refused(cmd, who, self._storage_refusal(cmd))
            self.authority.settle(cmd.id, "accepted")
            self.metrics.accepted.labels(cmd.name).inc()
            self._send(commands)
            return answer

    # -- reload (systemctl reload: SIGHUP, daemon/reload.py) -------------------------------

    def reconfigure(self, new: TableConfig, by: str = "reload") -> reload.Plan:
        """Apply what may change mid-round, all of it or none: journalled first (what
        changed and who may now command the table), then applied with no await in
        between, so no command is judged half by the old config and half by the new."""
        p = reload.plan(self.cfg, new)
        if p.refused:
            return self.refuse_reload(p.refused, by)
        try:
            tls = tls_context(new.broker)  # a certificate that does not load: refused
        except (OSError, ssl.SSLError) as exc:
            return self.refuse_reload([f"broker: the TLS files do not load: {exc}"], by)
        body = {"by": by, "changed": p.changed, **reload.principal_changes(self.cfg, new),
                "principals": reload.principals_view(new)}
        try:
            self.journal.append("config_reloaded", body)
        except JournalError as exc:
            self._storage_failed(exc)
            return self.refuse_reload([f"the journal cannot be written ({exc}): nothing is "
                                       "changed that it cannot record"], by)
        self.authority.reconfigure(new.principals, new.command_max_age, new.webauthn)
        if isinstance(self.table, TaiSaiTable):
            self.table.watch = reload.rewatch(self.table.watch, new.rules.dice_watch)
        b = new.broker  # used from the next connection on
        self.publisher.broker = dataclasses.replace(
            self.publisher.broker, username=b.username, password=b.password, tls=tls)
        self.cfg = new
        slog.warning("config reloaded", **body)
        return p

    def refuse_reload(self, reasons: list[str], by: str = "reload") -> reload.Plan:
        """A reload not applied: logged as an error and journalled, with every reason."""
        log.error("reload refused, the running config is kept: %s", "; ".join(reasons))
        if self.storage_error is None:
            with contextlib.suppress(JournalError):  # the log says it either way
                self.journal.append("config_reload_refused", {"by": by, "reasons": reasons})
        return reload.Plan(reasons, [])

    def _open_round(self) -> str | None:
        rnd = self.table.round
        return rnd.round_id if rnd is not None else None

    def _storage_refusal(self, cmd: Command) -> CommandError:
        return CommandError("storage_failed", f"the journal cannot be written "
                            f"({self.storage_error}); no command is carried out until it "
                            "can", cmd.id, cmd.name)

    def _refused(self, cmd: Command, who: str, exc: CommandError) -> dict[str, Any]:
        """An authenticated command that is not carried out: journalled with its reply
        (and an alert if it was denied), so its id can never be used again. While the
        journal cannot be written, its id is kept in memory (the authority) and its record
        waits for the next commit (``_probe_storage``); the reply goes out directly."""
        answer = reply(cmd.id, cmd.name, ok=False, state=self.table.state, error=exc,
                       round_id=self._open_round())
        self.authority.settle(cmd.id, f"refused ({exc.code})")
        self.metrics.refused.labels(exc.code).inc()
        record = {"name": cmd.name, "id": cmd.id, "by": who,
                  "issued_at": cmd.body["issued_at"], "code": exc.code, **cmd.args,
                  **self.authority.trail(cmd)}
        try:
            if self.storage_error is not None:
                raise JournalError(self.storage_error)
            with self.journal.batch():
                self.journal.append(REFUSED, record)
                self.journal.append("reply", answer, publish=(self._reply(answer),))
                if exc.code == "denied":
                    self._record([Alert("command_denied", "", f"{cmd.name} ({cmd.id}): {exc}")])
        except JournalError as err:
            self._storage_failed(err)
            self._refused_unjournalled.append(record)
            self._spawn(self.publisher.publish_now(self.topics["replies"], out_of_band(
                answer, self.cfg.table_id, self.journal.journal_id)))
        else:
            self.publisher.wake()
        return answer

    def _unauthenticated(self, exc: CommandError) -> dict[str, Any]:
        """Anyone on the broker can send this: a counter, not a journal row; the reply and
        the alert go out directly, each within its rate limit."""
        self.untrusted.note(exc.code)
        answer = reply(exc.command_id, exc.name, ok=False, state=self.table.state, error=exc,
                       round_id=self._open_round())
        if exc.code == "denied" and self.storage_error is None:
            more = self.untrusted.alert()
            if more is not None:
                self.apply([Alert("command_denied", "",
                                  f"{exc.name} ({exc.command_id}): {exc}{more}")])
                if self.storage_error is None:  # stored: the slot is taken, not before
                    self.untrusted.alerted()
        if self.untrusted.may_reply():  # not journalled, so not numbered
            self._spawn(self.publisher.publish_now(self.topics["replies"], out_of_band(
                answer, self.cfg.table_id, self.journal.journal_id)))
        return answer

    def _reply(self, answer: Mapping[str, Any]) -> Publish:
        return Publish(self.topics["replies"], stamp(answer, self.cfg.table_id))

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        records = self.journal.records_for_recovery()
        # Command ids are refused again for 2 x max_age (two hours at most), and
        # retention keeps every record of the last day, checkpoint or not.
        self.authority.remember_journal(
            self.journal.records_since(self.clock() - RECORDS_MIN_AGE))
        self.begin()
        # Technical interruption: rebuild from the journal and resolve an open round.
        try:
            effects = restore(self.table, records)
        except checkpoint.CheckpointError as exc:  # written by a release that reads it
            raise JournalError(f"cannot rebuild the table from {self.cfg.journal_path}: "
                               f"{exc}; run the release that wrote it") from exc
        self.apply(effects)
        self.recovered.set()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.publisher.run())
            tg.create_task(self._keep_identity())
            tg.create_task(self._keep_snapshot())
            tg.create_task(self._keep_retention())
            for d in self.drivers.values():
                tg.create_task(d.run())

    def begin(self) -> None:
        """Journal the start; announce a new journal; say which journal this table has."""
        self.journal.append("started", {"version": __version__, "table": self.cfg.table_id,
                                        "journal_id": self.journal.journal_id})
        if self._announce is not None:  # consumers learn of a new journal_id from it
            self.apply([Record("journal_started", self._announce, None)])
            self._announce = None
        self.save_identity()

    async def _keep_identity(self, every: float = IDENTITY_EVERY) -> None:
        while True:
            await asyncio.sleep(every)
            self.save_identity()

    async def devices_ready(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            for d in self.drivers.values():
                await d.wait_ready()

