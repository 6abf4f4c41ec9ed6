"""The link layer: sessions, resets, acknowledgement, retransmission, failure, and a
property: exactly once, in order, over a lossy, corrupting, duplicating line."""

from __future__ import annotations

import random
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocols.framing import Decoder, Frame, Kind
from firmware_protocols.link import (
    Delivered,
    Established,
    Link,
    LinkEvent,
    LinkFailed,
    LinkState,
    Outgoing,
    PeerReset,
)


class Wire:
    """Two links joined through a line model. Time advances in fixed steps."""

    def __init__(self, a: Link, b: Link, *, loss: float = 0.0, flip: float = 0.0,
                 dup: float = 0.0, seed: int = 0) -> None:
        self.a, self.b = a, b
        self.da, self.db = Decoder(), Decoder()
        self.rng = random.Random(seed)
        self.loss, self.flip, self.dup = loss, flip, dup
        self.now = 0.0
        self.events: dict[str, list[LinkEvent]] = {"a": [], "b": []}
        self.cut = False

    def line(self, data: bytes) -> bytes:
        if self.cut:
            return b""
        out = bytearray()
        for sent in data:
            if self.rng.random() < self.loss:
                continue
            byte = sent ^ (1 << self.rng.randrange(8)) if self.rng.random() < self.flip else sent
            out.append(byte)
            if self.rng.random() < self.dup:
                out.append(byte)
        return bytes(out)

    def step(self, dt: float = 0.005) -> None:
        self.now += dt
        for src, dst, dec, name in ((self.a, self.b, self.db, "b"), (self.b, self.a, self.da, "a")):
            for raw in src.take_output():
                for item in dec.feed(self.line(raw)):
                    if isinstance(item, Frame):
                        self.events[name] += dst.receive(item, self.now)
        self.events["a"] += self.a.poll(self.now)
        self.events["b"] += self.b.poll(self.now)

    def run(self, seconds: float) -> None:
        for _ in range(int(seconds / 0.005)):
            self.step()

    def delivered(self, name: str) -> list[bytes]:
        return [e.payload for e in self.events[name] if isinstance(e, Delivered)]


def pair(**kw: float) -> Wire:
    w = Wire(Link(0xA), Link(0xB), **kw)  # type: ignore[arg-type]
    w.a.connect(0.0)
    w.b.connect(0.0)
    return w


def test_session_comes_up_both_ways() -> None:
    w = pair()
    w.run(0.05)
    assert w.a.state is w.b.state is LinkState.ESTABLISHED
    assert w.a.peer_boot == 0xB and w.b.peer_boot == 0xA


def test_messages_queued_before_the_session_are_sent_after() -> None:
    w = Wire(Link(1), Link(2))
    w.a.send(0x20, b"early", 0.0)
    w.a.connect(0.0)
    w.run(0.1)
    assert w.delivered("b") == [b"early"]


def test_lost_rst_is_resent() -> None:
    w = Wire(Link(1), Link(2))
    w.a.connect(0.0)
    w.a.take_output()  # the first RST is lost
    w.run(1.0)
    assert w.a.state is LinkState.ESTABLISHED


def test_duplicate_rst_does_not_reset_twice() -> None:
    w = pair()
    w.run(0.05)
    w.a.send(1, b"x", w.now)
    w.run(0.05)
    events = w.b.receive(Frame(Kind.RST, payload=struct.pack(">I", 0xA)), w.now)
    assert events == []
    assert w.b.stats.resets == 0


def test_peer_reboot_restarts_sequences_and_returns_unacknowledged() -> None:
    w = pair()
    w.run(0.05)
    w.cut = True
    w.a.send(1, b"unanswered", w.now)
    w.run(0.05)
    w.cut = False
    w.b = Link(0xBB)  # the device rebooted with a new boot id
    w.db = Decoder()
    w.b.connect(w.now)
    w.run(0.2)
    resets = [e for e in w.events["a"] if isinstance(e, PeerReset)]
    assert resets == [PeerReset(0xBB, (Outgoing(1, b"unanswered"),))]
    w.a.send(1, b"after", w.now)
    w.run(0.1)
    assert [e.payload for e in w.events["b"] if isinstance(e, Delivered)] == [b"after"]


def test_gap_gets_one_nak_and_a_resend() -> None:
    w = pair()
    w.run(0.05)
    for i in range(3):
        w.a.send(1, bytes([i]), w.now)
    frames = w.a.take_output()
    for raw in (frames[0], frames[2]):  # the middle frame is lost
        for f in w.db.feed(raw):
            assert isinstance(f, Frame)
            w.events["b"] += w.b.receive(f, w.now)
    assert w.b.stats.naks_sent == 1
    w.run(0.05)
    assert w.delivered("b") == [b"\x00", b"\x01", b"\x02"]
    assert w.a.stats.naks_received == 1


def test_window_limits_unacknowledged_frames() -> None:
    w = pair()
    w.run(0.05)
    for i in range(20):
        w.a.send(1, bytes([i]), w.now)
    assert len(w.a.take_output()) == w.a.window


def test_silent_peer_fails_the_link_with_everything_undelivered() -> None:
    w = pair()
    w.run(0.05)
    w.cut = True
    w.a.send(1, b"one", w.now)
    w.a.send(1, b"two", w.now)
    w.run(30)
    failed = [e for e in w.events["a"] if isinstance(e, LinkFailed)]
    assert len(failed) == 1 and [o.payload for o in failed[0].lost] == [b"one", b"two"]
    assert w.a.state is LinkState.FAILED


def test_rto_adapts_to_round_trip() -> None:
    w = pair()
    w.run(0.05)
    for i in range(50):
        w.a.send(1, bytes([i]), w.now)
        w.run(0.02)
    assert w.a.rto < 0.2


def test_established_event_names_the_peer() -> None:
    w = pair()
    w.run(0.05)
    assert Established(0xB) in w.events["a"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=60),
       st.floats(0, 0.02), st.floats(0, 0.002), st.floats(0, 0.02), st.integers(0, 2**32))
def test_exactly_once_in_order_over_a_bad_line(payloads: list[bytes], loss: float, flip: float,
                                               dup: float, seed: int) -> None:
    w = Wire(Link(1, max_retries=50), Link(2, max_retries=50), loss=loss, flip=flip, dup=dup,
             seed=seed)
    w.a.connect(0.0)
    w.b.connect(0.0)
    for p in payloads:
        w.a.send(7, p, 0.0)
        w.b.send(8, p[::-1], 0.0)
    for _ in range(40_000):
        w.step()
        if len(w.delivered("b")) == len(payloads) and len(w.delivered("a")) == len(payloads):
            break
    assert not [e for e in w.events["a"] + w.events["b"] if isinstance(e, LinkFailed)]
    assert w.delivered("b") == payloads
    assert w.delivered("a") == [p[::-1] for p in payloads]
