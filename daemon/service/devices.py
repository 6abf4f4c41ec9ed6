"""The device board: the table's devices, what they send and how they are shown.

It makes the drivers and is their ``DeviceListener`` (daemon/drivers/device.py): a
message is judged by its event identity (daemon/drivers/seen.py: a repeat is dropped, a
gap is lost events), then handed to the table's handler for its type
(``device_handlers()``), or journalled as a record the table keeps (``RECORDED``); what
the handler returns is journalled and acted on (effects.py). A device's state is shown
retained on ``devices/NAME``, debounced, once it holds.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from contextlib import AbstractContextManager
from typing import Any

from daemon.drivers.device import DeviceDriver, DeviceState, DeviceStatus
from daemon.drivers.seen import Mark
from daemon.mqtt.publisher import Publisher
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, Effect, Record
from daemon.service.effects import Effects
from daemon.service.pending import UnreadableCommandError, load_command, owed_key
from daemon.service.state import ServiceState
from daemon.service.storage import StorageWatch
from daemon.service.topics import DEVICES
from daemon.store.journal import JournalError, Publish
from daemon.timestamps import iso
from firmware_protocols import shuffler
from firmware_protocols.common import CommandResult, CommandResultCode
from firmware_protocols.wire import Message

log = logging.getLogger(__name__)

DEVICE_DEBOUNCE = 0.5  # s a device state must hold before it is shown
# What a change of makes a device state news (not detail, decode_errors): a new
# handshake (sessions) is, so a reboot quicker than the debounce still shows.
SHOWN = ("fault", "firmware", "model", "protocol_version", "serial", "sessions", "state",
         "url")


class DeviceBoard:
    def __init__(self, state: ServiceState, effects: Effects, storage: StorageWatch,
                 publisher: Publisher) -> None:
        self.state = state
        self.effects = effects
        self.storage = storage
        self.publisher = publisher
        cfg = state.cfg
        state.drivers.update({
            name: DeviceDriver(name, url, *DEVICES[name], self, serial=cfg.serials.get(name))
            for name, url in cfg.devices.items() if name in DEVICES})
        self.handlers = self.state.table.device_handlers()
        # Commands a restart found owed (pending.py): asked after once their device is up;
        # those it could not read back, alerted at the start (TableService.begin).
        self.unreadable: list[Alert] = []
        for name in state.drivers:
            try:
                owed = load_command(DEVICES[name][0], state.journal.get_meta(owed_key(name)))
            except UnreadableCommandError as exc:
                # Not forgotten in silence: alerted once the start is journalled (begin).
                self.unreadable.append(Alert(
                    "device_command_outcome_unknown", "",
                    f"{name}: {exc}; the daemon restarted while it was owed: whether the "
                    f"{name} carried it out is not known, and it is not sent again (ask "
                    "for it again)"))
                continue
            if owed is not None:
                effects.pending[name] = owed
        self._recover = set(effects.pending)
        self.events_repeated = 0  # device events dropped as already taken (version 3)
        self._latest: dict[str, DeviceStatus] = {}
        self._shown: dict[str, tuple[Any, ...]] = {}
        self.stopping = False  # the table stopped: later device news is not shown

    def rebuilt(self) -> None:
        """The table was made again (storage.py): its handlers are the new table's."""
        self.handlers = self.state.table.device_handlers()

    # -- the drivers' DeviceListener ------------------------------------------------------

    def together(self) -> AbstractContextManager[None]:
        return self.effects.together()

    def device_message(self, device: str, m: Message) -> None:
        s = self.state
        handler = self.handlers.get(type(m))
        recorded = isinstance(m, s.table.RECORDED)
        if s.storage_error is not None:
            if handler is not None or recorded:  # heartbeats and replies need no record
                self.storage.dropped_while_failed += 1
                log.error("journal unavailable: %s %s not acted on", device, m)
            return
        judged = self._judge(device, m)
        if judged is None:
            return
        lost, seen = judged
        shown = device if self.effects.shows(device, m) else None
        if handler is not None:
            table = s.table
            if isinstance(m, shuffler.ShuffleComplete) and isinstance(table, BaccaratTable):
                # Which commitment the shuffler made is its session's version (shuffler.md).
                version = s.drivers[device].status.protocol_version
                handler = functools.partial(table.shuffle_complete, protocol_version=version)
            self.effects.act(functools.partial(handler, m), f"{device} {m}", lost, seen,
                             shown)
        elif recorded:
            body = {k: v for k, v in m.__dict__.items() if isinstance(v, int | str | bool)}
            self.effects.apply([*lost, Record(f"{device}_{m.NAME}", body, None)], seen,
                               shown)
        elif lost or seen is not None or shown:  # nothing else records it: its mark alone
            self.effects.apply(lost, seen, shown)

    def device_answered(self, device: str, command: Message, answer: Message) -> None:
        """A command the device accepted is the table's to know as it is read, among the
        device's events (a tumbler's confirmed Arm binds the throw that follows it); the
        sender (effects.py) only alerts what went wrong."""
        if self.state.storage_error is not None or not isinstance(answer, CommandResult) \
                or answer.result != CommandResultCode.OK:
            return
        self.effects.act(functools.partial(self.state.table.command_answered, device, command),
                         f"{device} accepted {command.NAME}")

    def device_rejected(self, device: str, m: Message, detail: str) -> None:
        """A device message with a field outside its documented range: the table decides
        what it means for the round (the Pit's, never a guess), and the alert carries the
        raw frame."""
        if self.state.storage_error is not None:
            self.storage.dropped_while_failed += 1
            return
        judged = self._judge(device, m)
        if judged is None:
            return
        lost, seen = judged
        self.effects.act(functools.partial(self.state.table.device_fault, m, detail), detail,
                         lost, seen)

    def device_problem(self, device: str, detail: str) -> None:
        self.effects.apply([Alert("device_protocol_error", "", detail)])

    def device_impostor(self, device: str, detail: str) -> None:
        self.effects.apply([Alert("device_serial_mismatch", "", detail)])

    def device_status(self, s: DeviceStatus) -> None:
        if s.state is DeviceState.READY and self.state.storage_error is None:
            for c in self.state.table.device_ready(s.name):
                self.state.spawn(self.effects.device_command(c))
            owed = self.effects.pending.get(s.name)
            if s.name in self._recover and owed is not None:
                self._recover.discard(s.name)
                self.state.spawn(self.effects.recover(s.name, owed))
        # Debounced: a device that flaps (a shoe unplugged retries every few hundred ms)
        # is shown in its settled state, once, and only when what is shown changes. Ready
        # is shown at once, so it comes before what the device does next (its gate).
        first = s.name not in self._latest
        self._latest[s.name] = s
        if first or s.state is DeviceState.READY:
            self._show_device_now(s.name)
        elif not self.state.running(f"device:{s.name}"):
            self.state.spawn(self._show_device(s.name, DEVICE_DEBOUNCE),
                             name=f"device:{s.name}")

    # -- judging an event ---------------------------------------------------------------

    def _judge(self, device: str, m: Message
               ) -> tuple[list[Effect], tuple[str, Mark] | None] | None:
        """A version 3 message by its stamp: None if its event was taken already (dropped);
        else what the events lost before it mean to the table, and the mark to journal."""
        drivers = self.state.drivers
        stamp = drivers[device].stamp if device in drivers else None
        if stamp is None:  # protocol 1 or 2: no identity, the table's own checks (draw_no)
            return [], None
        verdict = self.state.seen.judge(device, stamp.origin, stamp.number, m.EVENT)
        if verdict.repeat:
            self.events_repeated += 1
            log.info("%s: %s (event %d of boot %08x) was taken already: dropped", device,
                     m.NAME, stamp.number, stamp.origin)
            return None
        lost: list[Effect] = []
        if verdict.lost is not None:
            lost = self.state.table.events_lost(device, *verdict.lost)
        return lost, None if verdict.mark is None else (device, verdict.mark)

    # -- showing a device ---------------------------------------------------------------

    async def _show_device(self, name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self._show_device_now(name)

    def _show_device_now(self, name: str) -> None:
        if self.stopping:
            return
        s = self._latest[name]
        d = s.as_dict()
        before = self._shown.get(name)
        if before is not None and before[SHOWN.index("state")] in ("ready", "lost") and \
                s.state in (DeviceState.CONNECTING, DeviceState.HANDSHAKING):
            d["state"] = "lost"  # reconnecting: it is lost until it is ready again
        shown = tuple(v for k, v in sorted(d.items()) if k in SHOWN)
        if before == shown:
            return
        self._shown[name] = shown
        topic = self.state.device_topic(name)
        payload = {**self._device_payload(s), "state": d["state"]}
        try:
            self.state.journal.append("device", d, publish=(Publish(topic, payload,
                                                                    retain=True),))
        except JournalError as exc:
            self.storage.failed(exc)
            self.state.spawn(self.publisher.publish_now(topic,
                                                        self.state.out_of_band(payload)))
        self.publisher.wake()

    def _device_payload(self, s: DeviceStatus) -> dict[str, Any]:
        return self.state.stamp({"type": "device", "at": iso(self.state.clock()),
                                 **s.as_dict()})

    def retained(self) -> list[tuple[str, str]]:
        """The stored device states, for a broker that lost its retained messages."""
        return list(self.state.journal.latest_sent(
            [self.state.device_topic(n) for n in self.state.drivers]).items())

    def cleared(self) -> list[str]:
        """Device topics of devices this table does not have any more, whose retained
        state it published and has not yet cleared."""
        j = self.state.journal
        gone = [self.state.device_topic(n) for n in DEVICES if n not in self.state.drivers]
        return [t for t, p in j.latest_sent(gone).items()
                if j.get_meta(f"cleared:{t}") != str(json.loads(p)["msg_seq"])]

    def was_cleared(self, topic: str) -> None:
        j = self.state.journal
        last = j.latest_sent([topic]).get(topic)
        if last is not None:
            j.set_meta(f"cleared:{topic}", str(json.loads(last)["msg_seq"]))

    def last_words(self) -> None:
        """A clean stop: every device is shown offline with the table."""
        self.stopping = True  # later device news is not shown: the table is offline
        if self.state.storage_error is None:
            j = self.state.journal
            with j.batch():
                for name, d in self.state.drivers.items():
                    body = {**self._device_payload(d.status), "state": "offline",
                            "detail": "the table stopped"}
                    j.append("device", {"name": name, "state": "offline"},
                             publish=(Publish(self.state.device_topic(name), body,
                                              retain=True),))

    async def ready(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            for d in self.state.drivers.values():
                await d.wait_ready()
