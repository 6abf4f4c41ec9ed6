"""The table service: devices -> table state machine -> journal -> outbox -> MQTT.

``TableService`` makes the parts (daemon/service/__init__.py maps them) and wires them:
it is the publisher's upstream (daemon/mqtt/publisher.py ``Upstream``: status, retained
state, messages in) and what the storage watch tells when the journal can be written
again. Effects are applied journal first (effects.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from daemon import __version__, reload
from daemon.config import TableConfig
from daemon.drivers.device import DeviceDriver
from daemon.drivers.seen import Seen
from daemon.games.model import GameRules
from daemon.mqtt.client import tls_context
from daemon.mqtt.publisher import BrokerSettings, Publisher
from daemon.mqtt.snapshot import TableView
from daemon.mqtt.takeover import SessionWatch
from daemon.replay.supervisor import ReplayProcess
from daemon.replay.worker import WorkerSpec
from daemon.round import checkpoint
from daemon.round.effects import Alert, Effect, Record
from daemon.round.lifecycle import BETTING, RoundLifecycle
from daemon.round.records import RecordError
from daemon.round.recovery import restore
from daemon.security.authority import CommandAuthority, Untrusted
from daemon.service.commands import CommandDesk
from daemon.service.devices import DeviceBoard
from daemon.service.effects import Effects
from daemon.service.journal_identity import JournalIdentity
from daemon.service.retention import Retention
from daemon.service.snapshot import Snapshot
from daemon.service.state import ServiceState
from daemon.service.storage import StorageWatch
from daemon.service.topics import SUBSCRIBED
from daemon.store.journal import (
    RECORDS_MIN_AGE,
    Journal,
    JournalError,
    JournalRecord,
    OutboxEntry,
)
from daemon.system.metrics import TableMetrics
from daemon.timestamps import iso

# Seconds a start waits for the replay process to subscribe before going online without
# it (a broker that refuses it, a process that cannot start: the table deals regardless).
REPLAY_READY = 5.0


class TableService:
    def __init__(self, cfg: TableConfig, *, clock: Any = time.time) -> None:
        self.identity = JournalIdentity(cfg, clock)
        self.state = ServiceState(cfg, self.identity.journal, clock)
        self.metrics = TableMetrics(self)  # read at scrape time, all but its counters
        b = cfg.broker
        self.publisher = Publisher(
            self.journal,
            BrokerSettings(b.host, b.port, b.username, b.password, tls_context(b), b.client_id,
                           nodes=b.nodes),
            self.topics["status"], self,
            subscriptions=tuple(f"{self.state.base}/{t}" for t in SUBSCRIBED),
            signer=cfg.signer)
        self.snapshot = Snapshot(self.state, self.publisher)
        self.journal.watch = self.snapshot  # inside each transaction that stores a message
        self.storage = StorageWatch(self.state, self.publisher, self.snapshot, self)
        self.effects = Effects(self.state, self.storage, self.publisher, self.metrics)
        self.board = DeviceBoard(self.state, self.effects, self.storage, self.publisher)
        self.desk = CommandDesk(self.state, self.effects, self.storage, self.publisher,
                                self.metrics)
        # Replay requests are read and answered in a process of their own (issue 25: a
        # flood of them must not cost the rounds): daemon/replay/.
        self.replays = ReplayProcess(self._replay_spec(cfg), self.metrics,
                                     self._replay_conflict)
        self.retention = Retention(self.state)
        self.session_watch = SessionWatch(clock, b.client_id)
        self.recovered = asyncio.Event()  # the journal is read and any open round resolved

    # -- what the parts share, by the names the rest of tabled reads -----------------------

    @property
    def cfg(self) -> TableConfig:
        return self.state.cfg

    @property
    def clock(self) -> Any:
        return self.state.clock

    @property
    def game(self) -> GameRules[Any]:
        return self.state.game

    @property
    def journal(self) -> Journal:
        return self.state.journal

    @property
    def topics(self) -> dict[str, str]:
        return self.state.topics

    @property
    def table(self) -> RoundLifecycle:
        return self.state.table

    @property
    def drivers(self) -> dict[str, DeviceDriver]:
        return self.state.drivers

    @property
    def storage_error(self) -> str | None:
        return self.state.storage_error

    @property
    def seen(self) -> Seen:
        return self.state.seen

    @property
    def view(self) -> TableView:
        return self.snapshot.view

    @property
    def authority(self) -> CommandAuthority:
        return self.desk.authority

    @property
    def untrusted(self) -> Untrusted:
        return self.desk.untrusted

    # -- the publisher's upstream ---------------------------------------------------------

    def status(self, state: str, session: int, started: float, with_at: bool = True
               ) -> Mapping[str, Any]:
        return self.state.out_of_band({
            "type": "status", "state": state, "session": session,
            "session_started_at": iso(started), "at": iso(self.clock()) if with_at else None,
            "game": self.cfg.game, "layout": self.cfg.layout, "version": __version__})

    def retained(self) -> list[tuple[str, str | Mapping[str, Any]]]:
        """What a broker that lost its retained messages needs: the stored device
        states, and the snapshot."""
        out: list[tuple[str, str | Mapping[str, Any]]] = list(self.board.retained())
        out.append((self.topics["snapshot"], self.snapshot.payload()))
        return out

    def cleared(self) -> list[str]:
        return self.board.cleared()

    def was_cleared(self, topic: str) -> None:
        self.board.was_cleared(topic)

    def last_state(self) -> list[tuple[str, Mapping[str, Any]]]:
        return self.snapshot.last_state()

    async def message(self, topic: str, payload: bytes) -> None:
        if topic.startswith(self.desk.prefix):
            self.desk.execute(topic[len(self.desk.prefix):], payload)

    def journal_failed(self, exc: JournalError) -> None:
        self.storage.failed(exc)

    async def heard(self) -> None:
        """The first "online" means replay requests are heard too, as it means commands
        are (publisher.py): the replay process subscribes first, if it can in time."""
        if not self.replays.running:  # a publisher run alone (tests, tools)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REPLAY_READY):
                await self.replays.subscribed.wait()

    def session_lost(self, reason: str) -> None:
        self.replays.table_session_lost()
        detail = self.session_watch.lost(reason)
        if detail is not None:
            self.apply([Alert("mqtt_session_taken_over", "", detail)])

    def _replay_conflict(self, why: str) -> None:
        self.apply([Alert("replay_identity_conflict", "", why)])

    def stopping(self) -> None:
        """A clean stop: every device is shown offline with the table, and the identity
        file is brought up to date."""
        self.board.last_words()
        self.identity.save()

    def quiet(self) -> bool:
        return self.table.state == BETTING

    def delivered(self, entries: list[OutboxEntry]) -> None:
        self.metrics.delivered(entries)

    # -- the storage watch's owner --------------------------------------------------------

    def rebuild(self, records: list[JournalRecord]) -> None:
        """The journal can be written again; the table in memory may be ahead of it:
        rebuilt from what was recorded, and the technical-interruption rule resolves the
        open round."""
        s = self.state
        s.table = s.new_table()
        self.board.rebuilt()
        s.seen = s.load_seen()  # memory may be ahead of the journal, too
        self.snapshot.reload()
        self.apply(restore(s.table, records))

    # -- what the rest of tabled calls ----------------------------------------------------

    def execute(self, name: str, payload: bytes) -> dict[str, Any]:
        return self.desk.execute(name, payload)

    def apply(self, effects: list[Effect]) -> bool:
        return self.effects.apply(effects)

    def reconfigure(self, new: TableConfig, by: str = "reload") -> reload.Plan:
        plan = self.desk.reconfigure(new, by)
        if not plan.refused and ({"broker.credentials", "log.level"} & set(plan.changed)
                                 or self.replays.conflict is not None):
            self.replays.renew(self._replay_spec(new))  # its next process uses them
        return plan

    @staticmethod
    def _replay_spec(cfg: TableConfig) -> WorkerSpec:
        return WorkerSpec.of(cfg, cfg.log_level or logging.getLevelName(
            logging.getLogger().level))

    def refuse_reload(self, reasons: list[str], by: str = "reload") -> reload.Plan:
        return self.desk.refuse_reload(reasons, by)

    def retain(self) -> None:
        self.retention.retain()

    async def compare_with_broker(self) -> None:
        await self.identity.compare_with_broker(self.publisher.broker, self.topics)

    def save_identity(self) -> None:
        self.identity.save()

    async def devices_ready(self, timeout: float) -> None:
        await self.board.ready(timeout)

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
        except (checkpoint.CheckpointError, RecordError) as exc:  # written by a release
            # that reads it (a record kind or shape this one does not know)
            raise JournalError(f"cannot rebuild the table from {self.cfg.journal_path}: "
                               f"{exc}; run the release that wrote it") from exc
        self.apply(effects)
        self.recovered.set()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.replays.run())
            tg.create_task(self.identity.keep())
            tg.create_task(self.snapshot.keep())
            tg.create_task(self.retention.keep())
            for d in self.drivers.values():
                tg.create_task(d.run())
            tg.create_task(self.publisher.run())

    def begin(self) -> None:
        """Journal the start; announce a new journal; say which journal this table has."""
        self.journal.append("started", {"version": __version__, "table": self.cfg.table_id,
                                        "journal_id": self.journal.journal_id})
        if self.identity.announce is not None:  # consumers learn of a new journal_id from it
            self.apply([Record("journal_started", self.identity.announce, None)])
            self.identity.announce = None
        if self.board.unreadable:
            self.apply(list[Effect](self.board.unreadable))
            self.board.unreadable = []
        self.save_identity()
