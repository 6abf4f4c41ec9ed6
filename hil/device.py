"""The device side of a link, shared by every simulator. Sans-I/O: time is passed in.

A simulator subclasses SimDevice, answers its own commands in ``handle`` and emits
events. Timed behaviour (a shuffle taking seconds, a tumbling dome) is scheduled with
``after``; ``poll(now)`` runs what is due. Transports (hil/ports.py) move the bytes.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocols.commands import host_commands
from firmware_protocols.common import (
    CommandResult,
    CommandResultCode,
    DeviceKind,
    DeviceState,
    Fault,
    FaultCleared,
    Heartbeat,
    Identify,
    IdentifyReply,
    Status,
    StatusReply,
    out_of_range,
)
from firmware_protocols.endpoint import Endpoint, Numbered
from firmware_protocols.framing import PROTOCOL_VERSION
from firmware_protocols.link import DEVICE_QUEUE, Link, LinkFailed
from firmware_protocols.wire import Catalogue, Message

HEARTBEAT_INTERVAL = 1.0
CARRIED_OUT_KEPT = 16  # commands remembered as carried out, against one sent again


@dataclass(frozen=True)
class Identity:
    kind: DeviceKind
    model: str
    firmware: str
    serial: str


class SimDevice:
    def __init__(self, catalogue: Catalogue, identity: Identity, *, seed: int = 0,
                 protocol_version: int = PROTOCOL_VERSION, speed: float = 1.0) -> None:
        self.catalogue = catalogue
        self.identity = identity
        self.rng = random.Random(seed)
        self.protocol_version = protocol_version
        self.speed = speed  # >1 runs timed behaviour faster (tests, benchmarks)
        self.state = DeviceState.READY
        self.fault = 0
        self.booted_at = 0.0
        self.received: list[Message] = []  # every host command, for assertions
        self._timers: list[tuple[float, int, Callable[[float], None]]] = []
        self._tie = itertools.count()
        self._next_heartbeat = 0.0
        # Back-pressure: events the link refused (it holds all it can) wait here, in
        # order, and go first once there is room; none is dropped. Each with the number
        # of the command it answers (version 3), 0 for none.
        self.held: deque[tuple[Message, int]] = deque()
        self._answering = 0  # the number of the host command being handled now
        self._from = 0  # the host's origin for it
        # Version 3: (host origin, command number) of the commands carried out (answered
        # ok), newest last: one sent again (its answer was lost) is answered ok again and
        # not carried out twice.
        self.carried_out: deque[tuple[int, int]] = deque(maxlen=CARRIED_OUT_KEPT)
        self.endpoint = self._new_endpoint()

    def _new_endpoint(self) -> Endpoint:
        # A device re-sends what the host had not received when a session ends (the
        # spec's rule); the host drops what it has already seen (card draw_no).
        link = Link(self.rng.getrandbits(32), version=self.protocol_version, resend=True,
                    capacity=DEVICE_QUEUE)
        # Another device's commands are decoded too, to be answered "1 unknown command"
        # (the spec's rule); an id that no spec defines is reported and dropped.
        own = tuple(self.catalogue.by_id.values())
        foreign = tuple(c for c in host_commands() if c.MSG_ID not in self.catalogue.by_id)
        return Endpoint(Catalogue(self.catalogue.device, own, foreign), link)

    # -- the line ---------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Power on: open a link session (RST) and start heartbeats."""
        self.booted_at = now
        self._next_heartbeat = now + HEARTBEAT_INTERVAL
        self.endpoint.connect(now)

    def reboot(self, now: float) -> None:
        """Firmware reboot mid-stream: a new boot id, sequence numbers restart, timers die."""
        self._timers.clear()
        self.held.clear()  # a reboot keeps nothing
        self.carried_out.clear()
        self.endpoint = self._new_endpoint()
        self.state, self.fault = DeviceState.READY, 0
        self.on_reboot()
        self.start(now)

    def feed(self, data: bytes, now: float) -> None:
        for event in self.endpoint.feed(data, now):
            msg = event.message if isinstance(event, Numbered) else event
            if isinstance(msg, Message):
                # Version 3: its answers echo its number.
                stamp = event.stamp if isinstance(event, Numbered) else None
                self._answering = stamp.number if stamp is not None else 0
                self._from = stamp.origin if stamp is not None else 0
                self.received.append(msg)
                try:
                    self._dispatch(msg, now)
                finally:
                    self._answering = self._from = 0
        self.poll(now)

    def poll(self, now: float) -> None:
        for event in self.endpoint.poll(now):
            if isinstance(event, LinkFailed):  # a new session, under a new boot id
                self.endpoint.link.restart(now, self.rng.getrandbits(32))
        self._flush_held(now)
        while self._timers and self._timers[0][0] <= now:
            _, _, action = heapq.heappop(self._timers)
            action(now)
        if now >= self._next_heartbeat and self.endpoint.link.state == "established":
            if not self.held:  # a heartbeat is state, not an event: one refused is skipped
                self.endpoint.send(Heartbeat(self._uptime_ms(now), int(self.state),
                                             self.fault), now)
            self._next_heartbeat = now + HEARTBEAT_INTERVAL

    def take_output(self) -> bytes:
        return self.endpoint.take_output()

    def next_deadline(self) -> float:
        candidates = [self._next_heartbeat]
        if self._timers:
            candidates.append(self._timers[0][0])
        link_due = self.endpoint.next_deadline()
        if link_due is not None:
            candidates.append(link_due)
        return min(candidates)

    # -- behaviour ----------------------------------------------------------------------

    def emit(self, message: Message, now: float) -> None:
        """Send an event, or (while a command is handled) its answer, in order."""
        self.held.append((message, self._answering))
        self._flush_held(now)

    def _flush_held(self, now: float) -> None:
        while self.held:
            message, reply_to = self.held[0]
            if not self.endpoint.send(message, now, reply_to):
                return
            self.held.popleft()

    def after(self, delay: float, action: Callable[[float], None], now: float) -> None:
        heapq.heappush(self._timers, (now + delay / self.speed, next(self._tie), action))

    def reply(self, tag: int, now: float, result: CommandResultCode = CommandResultCode.OK,
              detail: str = "") -> None:
        if result is CommandResultCode.OK and self._answering:
            self.carried_out.append((self._from, self._answering))
        self.emit(CommandResult(tag, int(result), detail), now)

    def raise_fault(self, code: int, detail: str, now: float) -> None:
        self.state, self.fault = DeviceState.FAULT, code
        self.emit(Fault(code, detail), now)

    def clear_fault(self, now: float) -> None:
        if self.fault:
            self.emit(FaultCleared(self.fault), now)
        self.state, self.fault = DeviceState.READY, 0

    def _dispatch(self, msg: Message, now: float) -> None:
        if msg.SENDER == "host" and (problems := out_of_range(msg)):
            # Refused before any other check: the spec's values column of host commands.
            tag = getattr(msg, "tag", 0)
            self.reply(tag, now, CommandResultCode.BAD_ARGUMENT, "; ".join(problems))
        elif isinstance(msg, Identify):
            i = self.identity
            self.emit(IdentifyReply(msg.tag, int(i.kind), i.model, i.firmware,
                                    self.protocol_version, i.serial), now)
        elif isinstance(msg, Status):
            self.emit(StatusReply(msg.tag, int(self.state), self.fault, self.state.name.lower()),
                      now)
        elif msg.SENDER == "host" and self._answering and \
                (self._from, self._answering) in self.carried_out:
            # The same command again (its answer was lost): done already, said again.
            self.emit(CommandResult(getattr(msg, "tag", 0), int(CommandResultCode.OK), ""),
                      now)
        elif msg.SENDER == "host":
            self.handle(msg, now)
        # Events sent by a confused host are ignored, as firmware would.

    def handle(self, msg: Message, now: float) -> None:
        """Device-specific commands; the default refuses them."""
        tag = getattr(msg, "tag", 0)
        self.reply(tag, now, CommandResultCode.UNKNOWN_COMMAND, f"{msg.NAME} not supported")

    def on_reboot(self) -> None:
        """Reset device-specific state on a reboot."""

    def _uptime_ms(self, now: float) -> int:
        return int((now - self.booted_at) * 1000) & 0xFFFFFFFF
