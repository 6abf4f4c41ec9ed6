"""The table service: devices -> table state machine -> journal -> outbox -> MQTT.

Effects from the state machine are applied in order, journal first: a record or result
is committed (with its outbox entry) before any device command it implies is sent and
before it is published. Commands arrive on ``{prefix}/{table}/cmd/{name}`` and are
answered on ``replies`` (through the outbox, like everything else).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from daemon import __version__
from daemon.authority import ACCEPTED, REFUSED, CommandAuthority, Untrusted
from daemon.commands import (
    Command,
    CommandError,
    check_irregularity,
    check_round,
    command_id,
    parse_command,
    reply,
)
from daemon.config import BrokerConfig, TableConfig
from daemon.drivers.device import DeviceDriver, DeviceNotReadyError, DeviceState, DeviceStatus
from daemon.games import get_game
from daemon.mqtt.publisher import BrokerSettings, Publisher
from daemon.results import iso
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
    RoundResult,
)
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.recovery import restore
from daemon.round.tai_sai import TaiSaiTable
from daemon.store.journal import Journal, JournalError, Publish
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


def tls_context(b: BrokerConfig) -> ssl.SSLContext | None:
    """mqtts://: verify the broker (system CAs or ca_file); present a client certificate
    when cert_file/key_file are given."""
    if not b.tls:
        return None
    ctx = ssl.create_default_context(cafile=str(b.ca_file) if b.ca_file else None)
    if b.cert_file is not None:
        ctx.load_cert_chain(str(b.cert_file), str(b.key_file) if b.key_file else None)
    return ctx


class TableService:
    def __init__(self, cfg: TableConfig, *, clock: Any = time.time) -> None:
        self.cfg = cfg
        self.clock = clock
        self.game = get_game(cfg.game)
        base = f"{cfg.topic_prefix}/{cfg.table_id}"
        self.topics = {name: f"{base}/{name}" for name in
                       ("status", "events", "results", "alerts", "replies")}
        self.cmd_prefix = f"{base}/cmd/"
        self.journal = Journal(cfg.journal_path)
        self.table = self._new_table()
        # Set while the journal cannot be written: no round advances, nothing is acted on.
        self.storage_error: str | None = None
        self.dropped_while_failed = 0
        b = cfg.broker
        self.publisher = Publisher(
            self.journal,
            BrokerSettings(b.host, b.port, b.username, b.password, tls_context(b), b.client_id,
                           nodes=b.nodes),
            self.topics["status"], self._status, self._retained,
            subscriptions=(f"{self.cmd_prefix}+",), on_message=self._on_mqtt,
            signer=cfg.signer, on_journal_error=self._storage_failed,
            on_lost=self._session_lost)
        self.session_watch = SessionWatch(clock, b.client_id)
        self.authority = CommandAuthority(cfg.table_id, cfg.principals, cfg.command_max_age,
                                          clock)
        self.untrusted = Untrusted(clock)
        self.drivers = {
            name: DeviceDriver(name, url, *DEVICES[name],
                               on_message=functools.partial(self._on_device, name),
                               on_status=self._on_device_status,
                               on_problem=self._on_device_problem,
                               on_rejected=self._on_device_rejected,
                               serial=cfg.serials.get(name), on_impostor=self._on_impostor)
            for name, url in cfg.devices.items() if name in DEVICES
        }
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers = self._device_handlers()
        self.recovered = asyncio.Event()  # the journal is read and any open round resolved

    def _new_table(self) -> RoundLifecycle:
        if self.game.kind == "baccarat":
            assert self.cfg.decks is not None
            return BaccaratTable(self.cfg.table_id, self.game, self.cfg.layout, self.cfg.decks,
                                 clock=self.clock, new_round_id=self._new_round_id,
                                 confidence_floor=self.cfg.card_confidence_floor)
        return TaiSaiTable(self.cfg.table_id, self.game, self.cfg.layout, clock=self.clock,
                           new_round_id=self._new_round_id)

    def _new_round_id(self) -> str:
        return f"{self.cfg.table_id}-{uuid.uuid4().hex[:12]}"

    # -- payloads -----------------------------------------------------------------------

    def _status(self, state: str, session: int) -> Mapping[str, Any]:
        return {"type": "status", "state": state, "session": session,
                "table": self.cfg.table_id, "game": self.cfg.game, "layout": self.cfg.layout,
                "version": __version__, "at": iso(self.clock())}

    def _device_payload(self, s: DeviceStatus) -> dict[str, Any]:
        return {"type": "device", "at": iso(self.clock()), **s.as_dict()}

    def _retained(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(f"{self.cfg.topic_prefix}/{self.cfg.table_id}/devices/{n}",
                 self._device_payload(d.status)) for n, d in self.drivers.items()]

    def _event(self, kind: str, body: Mapping[str, Any], round_id: str | None
               ) -> dict[str, Any]:
        return {"type": "event", "event": kind, "table": self.cfg.table_id,
                "round_id": round_id, "at": iso(self.clock()), "replayed": False, **body}

    # -- applying effects ---------------------------------------------------------------

    def apply(self, effects: list[Effect]) -> None:
        if self.storage_error is not None:
            return  # _on_device and execute already refuse; effects of timers end here
        try:
            # One transaction for everything one input caused: atomic, and one fsync.
            with self.journal.batch():
                commands = self._record(effects)
        except JournalError as exc:
            # Journal first: none of it happened, and no device is told anything.
            self._storage_failed(exc)
        else:
            self._send(commands)

    def _record(self, effects: list[Effect]) -> list[DeviceCommand]:
        """Journal the effects (inside the caller's batch); the device commands to send
        once that batch is committed."""
        for e in effects:
            round_id = getattr(e, "round_id", None)
            with structlog.contextvars.bound_contextvars(round_id=round_id):
                self._apply_one(e)
        return [e for e in effects if isinstance(e, DeviceCommand)]

    def _send(self, commands: list[DeviceCommand]) -> None:
        for c in commands:  # only once what they follow from is on disk
            self._spawn(self._device_command(c))
        self.publisher.wake()

    # -- a journal that cannot be written --------------------------------------------------

    def _storage_failed(self, exc: Exception) -> None:
        """Stop the table where it stands, and say so by every path that does not need the
        journal: a direct alert, the log, systemd's STATUS (daemon/health.py)."""
        if self.storage_error is not None:
            return
        self.storage_error = str(exc)
        log.error("journal unavailable: %s; the table accepts no rounds until it can be "
                  "written again", exc)
        alert = {"type": "alert", "table": self.cfg.table_id, "round_id": None,
                 "at": iso(self.clock()), "replayed": False, "code": "journal_unavailable",
                 "clause": "", "detail": f"{exc}; the table accepts no rounds until the "
                                         "journal can be written"}
        self._spawn(self.publisher.publish_now(self.topics["alerts"], alert))
        if "shoe" in self.drivers:  # no card may be drawn that cannot be recorded
            self._spawn(self._send_unrecorded(DeviceCommand("shoe", shoe.LockGate(0, True))))
        self._spawn(self._probe_storage())

    async def _send_unrecorded(self, e: DeviceCommand) -> None:
        try:
            await self.drivers[e.device].command(e.message)
        except (DeviceNotReadyError, TimeoutError) as exc:
            log.error("%s to %s failed: %s", e.message.NAME, e.device, exc or "timed out")

    async def _probe_storage(self, every: float = 2.0) -> None:
        while self.storage_error is not None:
            await asyncio.sleep(every)
            try:
                self.journal.append("journal_recovered", {
                    "error": self.storage_error, "dropped_device_messages":
                    self.dropped_while_failed})
            except JournalError:
                continue
            log.warning("the journal can be written again; rebuilding the table from it")
            # The table in memory may be ahead of the journal: rebuild it from what was
            # recorded, and let the technical-interruption rule resolve the open round.
            records = self.journal.records()
            self.table = self._new_table()
            self._handlers = self._device_handlers()
            self.storage_error = None
            self.dropped_while_failed = 0
            self.apply(restore(self.table, records))

    def _apply_one(self, e: Effect) -> None:
        if isinstance(e, Record):
            self.journal.append(e.kind, e.body, round_id=e.round_id, publish=(
                Publish(self.topics["events"], self._event(e.kind, e.body, e.round_id)),))
            slog.info(e.kind, **e.body)
        elif isinstance(e, Alert):
            body = {"code": e.code, "clause": e.clause, "detail": e.detail}
            self.journal.append("alert", body, round_id=e.round_id, publish=(Publish(
                self.topics["alerts"], {"type": "alert", "table": self.cfg.table_id,
                                        "round_id": e.round_id, "at": iso(self.clock()),
                                        "replayed": False, **body}),))
            log.warning("alert %s (clause %s): %s", e.code, e.clause, e.detail)
        elif isinstance(e, RoundResult):
            final = self.journal.record_result(e.round_id, e.payload, self.topics["results"])
            slog.info("result", seq=final["seq"], status=final["status"],
                      winner=final.get("winner"), total=final.get("total"))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _device_command(self, e: DeviceCommand) -> None:
        driver = self.drivers.get(e.device)
        detail = ""
        try:
            if driver is None:
                raise DeviceNotReadyError(f"no {e.device} is configured")
            # After a restart the device must be identified again before any command.
            await driver.wait_ready(30)
            answer = await driver.command(e.message)
            if isinstance(answer, CommandResult) and answer.result != 0:
                detail = f"{e.device} refused {e.message.NAME}: {answer.detail}"
        except (DeviceNotReadyError, TimeoutError) as exc:
            detail = f"{e.message.NAME} to {e.device} failed: {exc or 'timed out'}"
        if detail:
            self.apply([Alert("device_command_failed", "", detail)])

    # -- inputs -------------------------------------------------------------------------

    def _device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return self.table.device_handlers()

    def _on_impostor(self, detail: str) -> None:
        self.apply([Alert("device_serial_mismatch", "", detail)])

    def _on_device_problem(self, detail: str) -> None:
        self.apply([Alert("device_protocol_error", "", detail)])

    def _on_device_rejected(self, m: Message, detail: str) -> None:
        """A device message with a field outside its documented range: the table decides
        what it means for the round (the Pit's, never a guess), and the alert carries the
        raw frame."""
        if self.storage_error is not None:
            self.dropped_while_failed += 1
            return
        self._act(lambda: self.table.device_fault(m, detail), detail)

    def _act(self, handler: Callable[[], list[Effect]], what: str) -> None:
        """Run a table handler; whatever it raises is a bug, journalled as an alert, and
        never reaches the device session (which would drop the message and reconnect)."""
        try:
            effects = handler()
        except Exception as exc:
            log.exception("handling %s failed", what)
            effects = [Alert("internal_error", "", f"handling {what} failed: {exc!r}; the "
                             "round waits for the Pit",
                             self.table.round.round_id if self.table.round else None)]
        self.apply(effects)

    def _on_device(self, device: str, m: Message) -> None:
        handler = self._handlers.get(type(m))
        recorded = isinstance(m, self.table.RECORDED)
        if self.storage_error is not None:
            if handler is not None or recorded:  # heartbeats and replies need no record
                self.dropped_while_failed += 1
                log.error("journal unavailable: %s %s not acted on", device, m)
            return
        if handler is not None:
            self._act(functools.partial(handler, m), f"{device} {m}")
        elif recorded:
            body = {k: v for k, v in m.__dict__.items() if isinstance(v, int | str | bool)}
            self.apply([Record(f"{device}_{m.NAME}", body, None)])

    def _on_device_status(self, s: DeviceStatus) -> None:
        if s.state is DeviceState.READY and self.storage_error is None:
            for c in self.table.device_ready(s.name):
                self._spawn(self._device_command(c))
        topic = f"{self.cfg.topic_prefix}/{self.cfg.table_id}/devices/{s.name}"
        try:
            self.journal.append("device", s.as_dict(), publish=(
                Publish(topic, self._device_payload(s), retain=True),))
        except JournalError as exc:
            self._storage_failed(exc)
            self._spawn(self.publisher.publish_now(topic, self._device_payload(s)))
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
        if self.storage_error is not None:
            cid = command_id(payload)
            answer = reply(cid, name, ok=False, state=self.table.state, code="storage_failed",
                           error=f"the journal cannot be written ({self.storage_error}); "
                                 "no command is carried out until it can",
                           round_id=self._open_round())
            self._answer(answer)
            return answer
        try:
            cmd = parse_command(name, payload)
            principal = self.authority.authenticate(cmd)
        except CommandError as exc:
            return self._unauthenticated(exc)
        who = principal.name
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
                                                    cmd.body["issued_at"], **cmd.args})
                    commands = self._record(effects)
                    answer = reply(cmd.id, cmd.name, ok=True, state=t.state,
                                   round_id=self._open_round())
                    self.journal.append("reply", answer, publish=(
                        Publish(self.topics["replies"], answer),))
            except JournalError as exc:
                self._storage_failed(exc)
                # The table in memory may have moved; it is rebuilt from the journal when
                # the journal can be written again. Refused, and said so directly.
                return self.execute(name, payload)
            self.authority.settle(cmd.id, "accepted")
            self._send(commands)
            return answer

    def _open_round(self) -> str | None:
        rnd = self.table.round
        return rnd.round_id if rnd is not None else None

    def _refused(self, cmd: Command, who: str, exc: CommandError) -> dict[str, Any]:
        """An authenticated command that is not carried out: journalled with its reply
        (and an alert if it was denied), so its id can never be used again."""
        answer = reply(cmd.id, cmd.name, ok=False, state=self.table.state, error=exc,
                       round_id=self._open_round())
        self.authority.settle(cmd.id, f"refused ({exc.code})")
        try:
            with self.journal.batch():
                self.journal.append(REFUSED, {"name": cmd.name, "id": cmd.id, "by": who,
                                              "issued_at": cmd.body["issued_at"],
                                              "code": exc.code, **cmd.args})
                self.journal.append("reply", answer,
                                    publish=(Publish(self.topics["replies"], answer),))
                if exc.code == "denied":
                    self._record([Alert("command_denied", "", f"{cmd.name} ({cmd.id}): {exc}")])
        except JournalError as err:
            self._storage_failed(err)
            self._spawn(self.publisher.publish_now(self.topics["replies"], answer))
        else:
            self.publisher.wake()
        return answer

    def _unauthenticated(self, exc: CommandError) -> dict[str, Any]:
        """Anyone on the broker can send this: a counter, not a journal row; the reply and
        the alert go out directly, each within its rate limit."""
        self.untrusted.note(exc.code)
        answer = reply(exc.command_id, exc.name, ok=False, state=self.table.state, error=exc,
                       round_id=self._open_round())
        if exc.code == "denied":
            more = self.untrusted.alert()
            if more is not None:
                self.apply([Alert("command_denied", "",
                                  f"{exc.name} ({exc.command_id}): {exc}{more}")])
        if self.untrusted.may_reply():
            self._spawn(self.publisher.publish_now(self.topics["replies"], answer))
        return answer

    def _answer(self, answer: dict[str, Any]) -> None:
        if self.storage_error is None:
            try:
                self.journal.append("reply", answer,
                                    publish=(Publish(self.topics["replies"], answer),))
            except JournalError as exc:
                self._storage_failed(exc)
            else:
                self.publisher.wake()
                return
        self._spawn(self.publisher.publish_now(self.topics["replies"], answer))

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        records = self.journal.records()
        self.authority.remember_journal(records)
        self.journal.append("started", {"version": __version__, "table": self.cfg.table_id})
        # Technical interruption: rebuild from the journal and resolve an open round.
        self.apply(restore(self.table, records))
        self.recovered.set()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.publisher.run())
            for d in self.drivers.values():
                tg.create_task(d.run())

    async def devices_ready(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            for d in self.drivers.values():
                await d.wait_ready()

