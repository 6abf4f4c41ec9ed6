"""Two rules of the spec about a new session, through two real links: the host's stamp
(Event identity, "The host's stamp") and the RTO a session started with RST begins with
("A new session starts the RTO afresh")."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from firmware_protocols import common, shuffler
from firmware_protocols.endpoint import Endpoint, Numbered
from firmware_protocols.link import DEVICE_QUEUE, Link, LinkFailed, LinkState, SessionSummary

STEP = 0.001


class Line:
    """A host and a device endpoint on a line that carries each byte after ``delay``
    seconds (or loses it, while ``cut``)."""

    def __init__(self, host: Endpoint, device: Endpoint, delay: float = 0.0) -> None:
        self.host, self.device, self.delay, self.now = host, device, delay, 0.0
        self.cut = False
        self._to_device: list[tuple[float, bytes]] = []
        self._to_host: list[tuple[float, bytes]] = []
        self.at_device: list[Numbered] = []
        self.events: list[object] = []

    def run(self, seconds: float) -> None:
        for _ in range(round(seconds / STEP)):
            self.now += STEP
            for ep, queue in ((self.host, self._to_device), (self.device, self._to_host)):
                out = ep.take_output()
                if out and not self.cut:
                    queue.append((self.now + self.delay, out))
            self._deliver(self._to_device, self.device)
            self._deliver(self._to_host, self.host)
            for ep in (self.host, self.device):
                self._took(ep, ep.poll(self.now))

    def _deliver(self, queue: list[tuple[float, bytes]], ep: Endpoint) -> None:
        while queue and queue[0][0] <= self.now:
            self._took(ep, ep.feed(queue.pop(0)[1], self.now))

    def _took(self, ep: Endpoint, events: Sequence[object]) -> None:
        self.events += events
        if ep is self.device:
            self.at_device += [e for e in events if isinstance(e, Numbered)]


def endpoint(boot: int, *, device: bool = False,
             resume: SessionSummary | None = None, origin: int | None = None,
             numbered: int = 0) -> Endpoint:
    """A host's link (as the driver opens one per connection, with its ORIGIN and its
    numbering carried over), or a device's."""
    if device:
        return Endpoint(shuffler.CATALOGUE, Link(boot, resend=True, capacity=DEVICE_QUEUE))
    return Endpoint(shuffler.CATALOGUE, Link(boot, resume=resume, origin=origin,
                                             numbered=numbered))


def stamps(line: Line) -> list[tuple[int, int]]:
    return [(n.stamp.origin, n.stamp.number) for n in line.at_device]


def test_the_hosts_origin_is_its_boot_id_of_the_session() -> None:
    """The host's ORIGIN is the boot id it chose when it started driving the device: a
    session the device starts keeps it and the numbering; a session the host starts (a
    new link, as the driver opens one per connection) has a new boot id on the link, but
    the same ORIGIN, and goes on numbering (daemon/drivers/device.py carries both over),
    so that a command sent again after a lost answer is known by its stamp."""
    host = endpoint(0xB0)
    device = endpoint(0xD0, device=True)
    line = Line(host, device)
    host.connect(0.0)
    line.run(0.05)
    host.send(common.Identify(1), line.now)
    host.send(common.Status(2), line.now)
    line.run(0.05)
    device.link.restart(line.now, 0xD1)  # the device's link failed: its RST, our RSTACK
    line.run(0.05)
    host.send(common.Identify(3), line.now)
    line.run(0.05)
    line.host = host2 = endpoint(0xB1, resume=host.link.summary(), origin=host.link.origin,
                                 numbered=host.link.last_number)
    host2.connect(line.now)
    line.run(0.05)
    host2.send(common.Identify(4), line.now)
    line.run(0.05)
    assert stamps(line) == [(0xB0, 1), (0xB0, 2), (0xB0, 3), (0xB0, 4)]
    assert all(n.stamp.reply_to == 0 for n in line.at_device)


def test_a_session_started_with_rst_starts_the_rto_at_200_ms() -> None:
    """An estimate from a slow earlier session (RTO well above 200 ms) is not where the
    next session's RSTs start: after the link fails, the RST is resent after 200 ms,
    then at most every 250 ms, and the new session's RTO is 200 ms."""
    host = endpoint(0xB0)
    device = endpoint(0xD0, device=True)
    line = Line(host, device, delay=0.08)  # RTT 160 ms: under 200, so sampled
    host.connect(0.0)
    line.run(1.0)
    assert device.link.state is LinkState.ESTABLISHED
    for tag in range(3):
        device.send(shuffler.InventoryReply(tag, (0,) * 52, 0), line.now)
        line.run(1.0)
    slow = device.link.rto
    assert slow > 0.3, "the samples of a slow line set the estimate"
    line.cut = True
    device.send(shuffler.InventoryReply(9, (0,) * 52, 0), line.now)
    while not any(isinstance(e, LinkFailed) for e in line.events):
        line.run(0.1)
    device.link.restart(line.now, 0xD1)
    assert device.link.rto == 0.2
    device.take_output()  # the first RST
    sent = [line.now]
    for _ in range(3):
        due = device.next_deadline()
        assert due is not None
        device.poll(due)
        assert device.take_output(), "a RST resent"
        sent.append(due)
    gaps = [round((b - a) * 1000) for a, b in itertools.pairwise(sent)]
    assert gaps == [200, 250, 250]

