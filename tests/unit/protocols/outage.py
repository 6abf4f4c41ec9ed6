"""A scenario runner for the link layer: a device and a host, each driven as in the field,
over a 115200-baud line one or both of whose directions go dead for a while.

The device (as hil/device.py and the C emulator) sends a numbered event every 0.25 s and
a heartbeat every second, answers IDENTIFY, holds an event the link refuses until there
is room, and starts a new session under a new boot id when its link fails. The host (as
daemon/drivers/device.py) identifies the device at each session (3 s to answer), ends a
session on a link failure, a missed handshake or 3.5 s without a message, and opens a new
Link with the old one's summary after 0.2 s. Time is simulated; a run takes a second.
"""

from __future__ import annotations

import random
import struct
from collections import deque
from dataclasses import dataclass, field

from firmware_protocols.framing import Decoder, Frame
from firmware_protocols.link import (
    DEVICE_QUEUE,
    Delivered,
    Link,
    LinkEvent,
    LinkFailed,
    LinkState,
    PeerReset,
    SessionSummary,
)

BYTE_TIME = 10 / 115200
STEP = 0.002
IDENTIFY, IDENTIFY_REPLY, HEARTBEAT, EVENT = 0x01, 0x02, 0x03, 0x20
HANDSHAKE_TIMEOUT, HEARTBEAT_TIMEOUT, BACKOFF = 3.0, 3.5, 0.2  # the driver's defaults
SCENARIOS = ("host-to-device dead", "device-to-host dead", "both dead")


@dataclass
class Direction:
    dead: tuple[float, float] = (0.0, 0.0)  # from, until
    free: float = 0.0
    air: list[tuple[float, bytes]] = field(default_factory=list)
    decoder: Decoder = field(default_factory=Decoder)

    def send(self, now: float, raw: bytes) -> None:
        start = max(now, self.free)
        self.free = start + len(raw) * BYTE_TIME
        if not self.dead[0] <= now < self.dead[1]:
            self.air.append((self.free, raw))

    def arrived(self, now: float) -> list[Frame]:
        out: list[Frame] = []
        while self.air and self.air[0][0] <= now:
            out += [f for f in self.decoder.feed(self.air.pop(0)[1], now)
                    if isinstance(f, Frame)]
        return out


@dataclass
class Outcome:
    sent: int
    arrivals: list[int]  # event numbers, in the order the host received them
    host_sessions: int
    device_failures: int

    @property
    def duplicates(self) -> int:
        return len(self.arrivals) - len(set(self.arrivals))

    @property
    def reorderings(self) -> int:
        """Times an event arrived right after a later-numbered one."""
        return sum(b < a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False))

    @property
    def lost(self) -> int:
        return self.sent - len(set(self.arrivals))


class Host:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.link = Link(rng.getrandbits(32))
        self.previous: SessionSummary | None = None
        self.sessions = 1
        self.ready = False
        self.identify_due: float | None = None
        self.last_rx = 0.0
        self.reconnect_at: float | None = None
        self.arrivals: list[int] = []

    def start(self, now: float) -> None:
        self.link.connect(now)
        self._identify(now)

    def _identify(self, now: float) -> None:
        self.ready = False
        self.link.send(IDENTIFY, b"\x00", now)
        self.identify_due = now + HANDSHAKE_TIMEOUT

    def _end(self, now: float) -> None:
        """The driver's session ends and its port closes; after the backoff a new Link
        names what this one received."""
        self.previous = self.link.summary()
        self.ready, self.identify_due = False, None
        self.reconnect_at = now + BACKOFF

    def handle(self, events: list[LinkEvent], now: float) -> None:
        for e in events:
            if isinstance(e, Delivered):
                self.last_rx = now
                if e.msg == EVENT:
                    self.arrivals.append(struct.unpack(">I", e.payload)[0])
                elif e.msg == IDENTIFY_REPLY:
                    self.ready, self.identify_due = True, None
            elif isinstance(e, PeerReset):
                self._identify(now)
            elif isinstance(e, LinkFailed):
                self._end(now)
                return

    def timers(self, now: float) -> None:
        if self.reconnect_at is not None:
            if now >= self.reconnect_at:
                self.reconnect_at = None
                self.sessions += 1
                self.last_rx = now
                self.link = Link(self.rng.getrandbits(32), resume=self.previous)
                self.start(now)
            return
        handshake_missed = self.identify_due is not None and now >= self.identify_due
        if handshake_missed or (self.ready and now - self.last_rx > HEARTBEAT_TIMEOUT):
            self._end(now)


class Device:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.link = Link(rng.getrandbits(32), resend=True, capacity=DEVICE_QUEUE)
        self.sensor: deque[int] = deque()  # events the link refused, waiting in order
        self.failures = 0
        self.next_beat = 1.0

    def event(self, number: int, now: float) -> None:
        self.sensor.append(number)
        self.flush(now)

    def flush(self, now: float) -> None:
        while self.sensor and self.link.send(EVENT, struct.pack(">I", self.sensor[0]), now):
            self.sensor.popleft()

    def handle(self, events: list[LinkEvent], now: float) -> None:
        for e in events:
            if isinstance(e, Delivered) and e.msg == IDENTIFY:
                self.link.send(IDENTIFY_REPLY, e.payload, now)
            elif isinstance(e, LinkFailed):
                self.failures += 1
                self.link.restart(now, self.rng.getrandbits(32))

    def timers(self, now: float) -> None:
        self.flush(now)
        if now >= self.next_beat and self.link.state is LinkState.ESTABLISHED:
            self.link.send(HEARTBEAT, bytes(7), now)  # refused when full: state, not event
            self.next_beat = now + 1.0


def run(scenario: str, seed: int, *, outage: float = 10.0, seconds: float = 40.0) -> Outcome:
    """Events for ``seconds`` (the outage starts 2-8 s in), then up to a minute to drain."""
    rng = random.Random(seed)
    device, host = Device(rng), Host(rng)
    up, down = Direction(), Direction()
    start = rng.uniform(2.0, 8.0)
    if scenario in ("host-to-device dead", "both dead"):
        down.dead = (start, start + outage)
    if scenario in ("device-to-host dead", "both dead"):
        up.dead = (start, start + outage)
    device.link.connect(0.0)
    host.start(0.0)
    now, sent, next_event = 0.0, 0, 0.5
    while now < seconds + 60.0:
        now += STEP
        if now >= next_event and now < seconds:
            sent += 1
            device.event(sent, now)
            next_event += 0.25
        for raw in device.link.take_output():
            up.send(now, raw)
        for raw in host.link.take_output():
            down.send(now, raw)
        for f in up.arrived(now):
            if host.reconnect_at is None:  # the port is closed between sessions
                host.handle(host.link.receive(f, now), now)
        for f in down.arrived(now):
            device.handle(device.link.receive(f, now), now)
        device.handle(device.link.poll(now), now)
        if host.reconnect_at is None:
            host.handle(host.link.poll(now), now)
        device.timers(now)
        host.timers(now)
        if now >= seconds and len(set(host.arrivals)) == sent and not device.sensor \
                and not device.link.in_flight:
            break
    return Outcome(sent, host.arrivals, host.sessions, device.failures)


if __name__ == "__main__":
    for name in SCENARIOS:
        for s in range(5):
            o = run(name, s)
            print(f"{name:>20} seed {s}: sent {o.sent}, duplicates {o.duplicates}, "
                  f"reorderings {o.reorderings}, lost {o.lost}, host sessions "
                  f"{o.host_sessions}, device failures {o.device_failures}")
