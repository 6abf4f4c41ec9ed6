"""What the table's state machine decides, carried out journal first: the effects of one
input are committed in one transaction (their records, alerts, results and the messages
they publish) before any device command they imply is sent and before the outbox is
woken. Inputs a device sent in one read share one transaction (group commit). A device
command's outcome is journalled truthfully (daemon/drivers/command_outcome.py); one whose
work the table waits for is kept owed in the journal until the device shows it or its
outcome is settled, and a restart asks again (pending.py).

This is the one place that turns records into published payloads (``_apply_one``,
``_event``); what a record publishes is the table's decision (``Record.event``), mapped
by daemon/mqtt/wire/event.py.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import structlog

from daemon.drivers.command_outcome import Outcome, Verdict, deliver, recover
from daemon.drivers.seen import META_PREFIX, Mark
from daemon.mqtt import wire
from daemon.mqtt.envelope import stamp
from daemon.mqtt.publisher import Publisher
from daemon.round.effects import Alert, DeviceCommand, Effect, Record, RoundResult
from daemon.service.pending import dump_command, owed_key
from daemon.service.state import ServiceState
from daemon.service.storage import StorageWatch
from daemon.store.journal import JournalError, Publish
from daemon.system.metrics import TableMetrics
from daemon.timestamps import iso
from firmware_protocols.wire import Message

log = logging.getLogger(__name__)
slog = structlog.get_logger("tabled.table")


class Effects:
    def __init__(self, state: ServiceState, storage: StorageWatch, publisher: Publisher,
                 metrics: TableMetrics) -> None:
        self.state = state
        self.storage = storage
        self.publisher = publisher
        self.metrics = metrics
        # Inside ``together``: the device commands to send once the group is on disk.
        self._deferred: list[DeviceCommand] | None = None
        # Per device, the command whose work the table waits for (pending.py), as
        # journalled: loaded by the device board at start.
        self.pending: dict[str, Message] = {}

    # -- applying effects ---------------------------------------------------------------

    def apply(self, effects: list[Effect], seen: tuple[str, Mark] | None = None,
              shown: str | None = None) -> bool:
        """Journals what one input caused; False if it could not be (nothing happened).
        ``seen``: the device event it came from, marked taken in the same transaction, so
        that a restart drops it if the device sends it again, and never drops it unacted.
        ``shown``: the device whose pending command that event shows carried out (no
        longer owed, in the same transaction)."""
        if self.state.storage_error is not None:
            return False  # device input and commands already refuse; timers' effects end here
        try:
            # One transaction for everything one input caused: atomic, and one fsync.
            with self.state.journal.batch():
                commands = self.record(effects)
                if seen is not None:
                    self.state.journal.stage_meta(META_PREFIX + seen[0], seen[1].dumps)
                if shown is not None:
                    self.state.journal.stage_meta(owed_key(shown), lambda: "")
        except JournalError as exc:
            # Journal first: none of it happened, and no device is told anything.
            self.storage.failed(exc)
            return False
        if seen is not None:
            self.state.seen.take(*seen)
        if shown is not None:
            self.pending.pop(shown, None)
        self.send(commands)
        return True

    def shows(self, device: str, message: Message) -> bool:
        """Whether ``message`` shows the command owed by ``device`` carried out."""
        owed = self.pending.get(device)
        return owed is not None and isinstance(message, owed.SHOWN_BY)

    def record(self, effects: list[Effect]) -> list[DeviceCommand]:
        """Journal the effects (inside the caller's batch); the device commands to send
        once that batch is committed."""
        for e in effects:
            round_id = getattr(e, "round_id", None)
            with structlog.contextvars.bound_contextvars(round_id=round_id):
                self._apply_one(e)
        commands = [e for e in effects if isinstance(e, DeviceCommand)]
        for c in commands:
            if c.message.SHOWN_BY:  # owed from this transaction on (pending.py)
                self.state.journal.stage_meta(owed_key(c.device),
                                        functools.partial(dump_command, c.message))
        return commands

    def send(self, commands: list[DeviceCommand]) -> None:
        if self._deferred is not None:  # in a group: sent once the group is committed
            self._deferred.extend(commands)
            return
        for c in commands:  # only once what they follow from is on disk
            if c.message.SHOWN_BY:
                self.pending[c.device] = c.message
            self.state.spawn(self.device_command(c))
        self.publisher.wake()

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Group commit for what a device sent in one read (several frames: cards dealt
        fast, a gate report and a card): each input is still journalled whole or not at
        all (a savepoint), all of them in one transaction and one fsync, and what they make
        the devices do is sent, and the outbox woken, only once the group is on disk."""
        if self._deferred is not None or self.state.storage_error is not None:
            yield
            return
        self._deferred = []
        try:
            with self.state.journal.group():
                yield
        except JournalError as exc:
            self._deferred = None  # none of it is on disk: nothing of it is acted on
            self.storage.failed(exc)
            return
        except BaseException:
            self._flush_group()  # the inputs before the failure are on disk: act on them
            raise
        self._flush_group()

    def _flush_group(self) -> None:
        commands, self._deferred = self._deferred or [], None
        self.send(commands)

    def _event(self, kind: str, body: Mapping[str, Any], round_id: str | None
               ) -> dict[str, Any]:
        return wire.event.payload(kind, body, round_id, self.state.clock(), self.state.cfg.table_id)

    def _apply_one(self, e: Effect) -> None:
        if isinstance(e, Record):
            # Journalled as recorded; published as the table decided (one event per card).
            event = wire.event.published(e)
            self.state.journal.append(e.kind, e.body, round_id=e.round_id, publish=() if event
                                is None else (Publish(self.state.topics["events"], self._event(
                                    event[0], event[1], e.round_id)),))
            slog.info(e.kind, **e.body)
        elif isinstance(e, Alert):
            body = {"code": e.code, "clause": e.clause, "detail": e.detail}
            self.state.journal.append("alert", body, round_id=e.round_id, publish=(Publish(
                self.state.topics["alerts"], stamp({"type": "alert", "round_id": e.round_id,
                                              "at": iso(self.state.clock()), **body},
                                             self.state.cfg.table_id)),))
            self.metrics.alerts.labels(e.code).inc()
            log.warning("alert %s (clause %s): %s", e.code, e.clause, e.detail)
        elif isinstance(e, RoundResult):
            final = self.state.journal.record_result(e.round_id, wire.results_payload(e.facts),
                                               self.state.topics["results"], record=e.record.body())
            self.metrics.result(e.facts.status)
            outcome = getattr(e.facts, "outcome", None)  # a correction has none of its own
            slog.info("result", seq=final["seq"], status=e.facts.status,
                      winner=getattr(outcome, "winner", None),
                      total=getattr(outcome, "total", None))

    # -- devices told -------------------------------------------------------------------

    async def device_command(self, e: DeviceCommand) -> None:
        """Send a command the table decided on, and journal what became of it, truthfully:
        a command whose answer was lost may have run (command_outcome.py)."""
        driver = self.state.drivers.get(e.device)
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
                    c.message for c in self.state.table.device_ready(e.device)],
                    self._outcome_unknown, lambda: e.device in self.pending)
        self._settle(e.device, outcome)

    async def recover(self, device: str, message: Message) -> None:
        """A command a restart found owed (pending.py): the device, now back, is asked
        its state, and sent it again if it never took it."""
        log.warning("%s to %s was owed when the daemon stopped: asking the %s its state",
                    message.NAME, device, device)
        outcome = await recover(self.state.drivers[device], message,
                                lambda: device in self.pending, self._outcome_unknown)
        self._settle(device, outcome)

    def _settle(self, device: str, outcome: Outcome) -> None:
        """Journal what became of a command; it is owed no more."""
        if device in self.pending and self.state.storage_error is None:
            try:
                self.state.journal.set_meta(owed_key(device), "")
            except JournalError as exc:
                self.storage.failed(exc)
            else:
                del self.pending[device]
        if outcome.verdict is Verdict.UNKNOWN:
            self.apply([Alert("device_command_outcome_unknown", "", outcome.detail)])
        elif outcome.verdict is not Verdict.DONE:
            self.apply([Alert("device_command_failed", "", outcome.detail)])
        elif outcome.detail:  # the table heard the answer as it was read (devices.py)
            log.warning("%s", outcome.detail)

    def _outcome_unknown(self, detail: str) -> None:
        self.apply([Alert("device_command_outcome_unknown", "", detail)])

    def act(self, handler: Callable[[], list[Effect]], what: str,
            before: list[Effect] | None = None, seen: tuple[str, Mark] | None = None,
            shown: str | None = None) -> None:
        """Run a table handler; whatever it raises is a bug, journalled as an alert, and
        never reaches the device session (which would drop the message and reconnect).
        ``before``: effects that precede it (events lost before this one)."""
        try:
            effects = handler()
        except Exception as exc:
            log.exception("handling %s failed", what)
            effects = [Alert("internal_error", "", f"handling {what} failed: {exc!r}; the "
                             "round waits for the Pit",
                             self.state.table.round.round_id if self.state.table.round
                             else None)]
        self.apply([*(before or []), *effects], seen, shown)
