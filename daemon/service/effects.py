"""What the table's state machine decides, carried out journal first: the effects of one
input are committed in one transaction (their records, alerts, results and the messages
they publish) before any device command they imply is sent and before the outbox is
woken. Inputs a device sent in one read share one transaction (group commit). A device
command's outcome is journalled truthfully (daemon/drivers/command_outcome.py).

This is the one place that turns records into published payloads (``_apply_one``,
``_event``); a card's event is planned by daemon/mqtt/wire/event.py.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import structlog

from daemon.config import TableConfig
from daemon.drivers.command_outcome import Outcome, Verdict, deliver
from daemon.drivers.seen import META_PREFIX, Mark
from daemon.mqtt import wire
from daemon.mqtt.envelope import stamp
from daemon.mqtt.publisher import Publisher
from daemon.round.effects import Alert, DeviceCommand, Effect, Record, RoundResult
from daemon.service.state import ServiceState
from daemon.service.storage import StorageWatch
from daemon.store.journal import Journal, JournalError, Publish
from daemon.system.metrics import TableMetrics
from daemon.timestamps import iso

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

    # What the payload code below reads, by the names it has always had.
    @property
    def cfg(self) -> TableConfig:
        return self.state.cfg

    @property
    def journal(self) -> Journal:
        return self.state.journal

    @property
    def topics(self) -> dict[str, str]:
        return self.state.topics

    def clock(self) -> float:
        return float(self.state.clock())

    # -- applying effects ---------------------------------------------------------------

    def apply(self, effects: list[Effect], seen: tuple[str, Mark] | None = None) -> bool:
        """Journals what one input caused; False if it could not be (nothing happened).
        ``seen``: the device event it came from, marked taken in the same transaction, so
        that a restart drops it if the device sends it again, and never drops it unacted."""
        if self.state.storage_error is not None:
            return False  # device input and commands already refuse; timers' effects end here
        try:
            # One transaction for everything one input caused: atomic, and one fsync.
            with self.journal.batch():
                commands = self.record(effects)
                if seen is not None:
                    self.journal.stage_meta(META_PREFIX + seen[0], seen[1].dumps)
        except JournalError as exc:
            # Journal first: none of it happened, and no device is told anything.
            self.storage.failed(exc)
            return False
        if seen is not None:
            self.state.seen.take(*seen)
        self.send(commands)
        return True

    def record(self, effects: list[Effect]) -> list[DeviceCommand]:
        """Journal the effects (inside the caller's batch); the device commands to send
        once that batch is committed."""
        events = wire.event.plan(effects)
        for i, e in enumerate(effects):
            round_id = getattr(e, "round_id", None)
            with structlog.contextvars.bound_contextvars(round_id=round_id):
                self._apply_one(e, events.get(i))
        return [e for e in effects if isinstance(e, DeviceCommand)]

    def send(self, commands: list[DeviceCommand]) -> None:
        if self._deferred is not None:  # in a group: sent once the group is committed
            self._deferred.extend(commands)
            return
        for c in commands:  # only once what they follow from is on disk
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
            with self.journal.group():
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
        return wire.event.payload(kind, body, round_id, self.clock(), self.cfg.table_id)

    def _apply_one(self, e: Effect, event: wire.event.Published = None) -> None:
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
            final = self.journal.record_result(e.round_id, wire.results_payload(e.facts),
                                               self.topics["results"])
            self.metrics.result(str(final["status"]))
            slog.info("result", seq=final["seq"], status=final["status"],
                      winner=final.get("winner"), total=final.get("total"))

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
                    c.message for c in self.state.table.device_ready(e.device)])
        if outcome.verdict is Verdict.UNKNOWN:
            self.apply([Alert("device_command_outcome_unknown", "", outcome.detail)])
        elif outcome.verdict is not Verdict.DONE:
            self.apply([Alert("device_command_failed", "", outcome.detail)])
        elif outcome.detail:  # the table heard the answer as it was read (devices.py)
            log.warning("%s", outcome.detail)

    def act(self, handler: Callable[[], list[Effect]], what: str,
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
                             self.state.table.round.round_id if self.state.table.round
                             else None)]
        self.apply([*(before or []), *effects], seen)
