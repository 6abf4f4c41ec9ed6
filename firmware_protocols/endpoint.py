"""One end of a device link: decoder + link layer + message catalogue. Sans-I/O.

The host drivers and the HIL simulators both use it, so both ends parse the same way.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from firmware_protocols.framing import DecodeError, Decoder, Frame
from firmware_protocols.link import STAMPED, Delivered, Link, LinkEvent, Stamp
from firmware_protocols.wire import Catalogue, Message, MessageError

RAW_HISTORY = 100  # like Klipper: keep the last frames for post-mortem dumps


@dataclass(frozen=True, slots=True)
class RawFrame:
    at: float
    direction: str  # "rx" | "tx"
    data: bytes


@dataclass(frozen=True, slots=True)
class BadMessage:
    """A frame that arrived intact but whose payload does not match its message."""

    msg: int
    payload: bytes
    error: str


@dataclass(frozen=True, slots=True)
class Numbered:
    """A message of a version 3 session, with its identity (the peer's stamp)."""

    message: Message
    stamp: Stamp


EndpointEvent = Message | Numbered | LinkEvent | DecodeError | BadMessage


class Endpoint:
    def __init__(self, catalogue: Catalogue, link: Link) -> None:
        self.catalogue = catalogue
        self.link = link
        self.decoder = Decoder(byte_time=link.byte_time)
        self.history: deque[RawFrame] = deque(maxlen=RAW_HISTORY)
        self._now = 0.0

    def connect(self, now: float) -> None:
        self.link.connect(now)

    def send(self, message: Message, now: float, reply_to: int = 0,
             number: int | None = None) -> bool:
        """False: the link refused it at once (it holds all it can); it is not taken.
        ``reply_to``: the number of the command this answers (version 3); ``number``: the
        number it was sent with before (Link.send)."""
        return self.link.send(message.MSG_ID, message.to_bytes(), now, event=message.EVENT,
                              reply_to=reply_to, number=number)

    def feed(self, data: bytes, now: float) -> list[EndpointEvent]:
        """Bytes from the line -> messages and link events, in order."""
        self._now = now
        return self._frames(self.decoder.feed(data, now), now)

    def _frames(self, items: list[Frame | DecodeError], now: float) -> list[EndpointEvent]:
        events: list[EndpointEvent] = []
        for item in items:
            if isinstance(item, DecodeError):
                events.append(item)
                continue
            self.history.append(RawFrame(now, "rx", item.to_bytes()))
            events += self._link_events(self.link.receive(item, now))
        return events

    def poll(self, now: float) -> list[EndpointEvent]:
        self._now = now
        return self._frames(self.decoder.poll(now), now) + self._link_events(self.link.poll(now))

    def next_deadline(self) -> float | None:
        """The next time poll() has something to do: a retransmission, or giving up an
        incomplete frame."""
        due = [d for d in (self.link.next_deadline(), self.decoder.next_deadline())
               if d is not None]
        return min(due) if due else None

    def take_output(self) -> bytes:
        frames = self.link.take_output()
        for f in frames:
            self.history.append(RawFrame(self._now, "tx", f))
        return b"".join(frames)

    def _link_events(self, events: list[LinkEvent]) -> list[EndpointEvent]:
        out: list[EndpointEvent] = []
        for e in events:
            if isinstance(e, Delivered):
                if e.stamp is None and self.link.session_version >= STAMPED:
                    out.append(BadMessage(e.msg, e.payload, "a version 3 DATA frame shorter "
                                          "than its stamp"))
                    continue
                try:
                    message = self.catalogue.decode(e.msg, e.payload)
                except MessageError as exc:
                    out.append(BadMessage(e.msg, e.payload, str(exc)))
                    continue
                out.append(message if e.stamp is None else Numbered(message, e.stamp))
            else:
                out.append(e)
        return out

    def dump(self) -> list[str]:
        """The last frames, oldest first, as 'rx 12.345 7e01...' lines for the log."""
        return [f"{r.direction} {r.at:.3f} {r.data.hex()}" for r in self.history]


def decode_frame_bytes(catalogue: Catalogue, data: bytes) -> Message:
    """A whole DATA frame in hex examples -> its message (for specs and tests)."""
    frame = Frame.from_bytes(data)
    return catalogue.decode(frame.msg, frame.payload)
