"""The link layer: exactly-once, in-order delivery over a lossy line. Sans-I/O; time is passed in.

Modelled on EZSP's ASH (bellows/ash.py) with Klipper's RTO estimate:

- A session starts with RST carrying the sender's random boot id; the peer answers
  RSTACK (the boot id it accepts, then its own). A RST with a new boot id means the peer
  restarted (firmware reboot): sequence numbers restart from 0, and every message not
  yet acknowledged is handed back as lost. A duplicate RST (same boot id) is answered
  again, never acted on twice.
- DATA frames carry SEQ (0-255, wrapping) and a piggybacked cumulative ACK (the next
  SEQ expected from the peer). At most ``window`` frames are unacknowledged.
- The receiver delivers only SEQ == expected; it re-ACKs duplicates and sends one NAK
  per gap (go-back-N). A NAK makes the sender resend from the NAKed SEQ at once.
- The retransmission timeout is estimated like TCP (RFC 6298, Karn's rule) and doubles
  on each timeout. After ``max_retries`` timeouts in a row the link FAILS and hands
  back every undelivered message; the driver then reconnects with a new session.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

from firmware_protocols.framing import PROTOCOL_VERSION, Frame, Kind

SEQ_MOD = 256


class LinkState(StrEnum):
    CONNECTING = "connecting"
    ESTABLISHED = "established"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Outgoing:
    msg: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Delivered:
    msg: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Established:
    peer_boot: int


@dataclass(frozen=True, slots=True)
class PeerReset:
    """The peer restarted (new boot id). ``lost`` were sent but never acknowledged."""

    peer_boot: int
    lost: tuple[Outgoing, ...]


@dataclass(frozen=True, slots=True)
class LinkFailed:
    reason: str
    lost: tuple[Outgoing, ...]


LinkEvent = Delivered | Established | PeerReset | LinkFailed


@dataclass(slots=True)
class _InFlight:
    seq: int
    out: Outgoing
    sent_at: float
    retransmitted: bool = False


@dataclass(slots=True)
class LinkStats:
    sent: int = 0
    delivered: int = 0
    retransmitted: int = 0
    duplicates: int = 0
    naks_sent: int = 0
    naks_received: int = 0
    timeouts: int = 0
    resets: int = 0


@dataclass
class Link:
    boot_id: int
    window: int = 8
    rto_initial: float = 0.2
    rto_min: float = 0.02
    rto_max: float = 2.0
    max_retries: int = 8
    version: int = PROTOCOL_VERSION  # a simulator may speak another to test version checks
    state: LinkState = LinkState.CONNECTING
    peer_boot: int | None = None
    stats: LinkStats = field(default_factory=LinkStats)

    def __post_init__(self) -> None:
        if not 1 <= self.window < SEQ_MOD // 2:
            raise ValueError(f"window {self.window} must be 1..127")
        self._out: list[bytes] = []
        self._tx_next = 0
        self._rx_next = 0
        self._nak_sent = False
        self._unacked: deque[_InFlight] = deque()
        self._pending: deque[Outgoing] = deque()
        self._rto = self.rto_initial
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._retries = 0
        self._rst_due: float | None = None
        self._rst_interval = self.rto_initial

    # -- driving the link -------------------------------------------------------------

    def connect(self, now: float) -> None:
        """Start (or restart) the session: send RST until the peer answers."""
        self.state = LinkState.CONNECTING
        self._send_rst(now)

    def send(self, msg: int, payload: bytes, now: float) -> None:
        """Queue a message; it goes out when the link is up and the window has room."""
        if self.state is LinkState.FAILED:
            raise RuntimeError("link failed; start a new session")
        self._pending.append(Outgoing(msg, payload))
        self._fill_window(now)

    def take_output(self) -> list[bytes]:
        """Encoded frames to write to the line, in order."""
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> float | None:
        if self.state is LinkState.CONNECTING:
            return self._rst_due
        if self.state is LinkState.ESTABLISHED and self._unacked:
            return self._unacked[0].sent_at + self._rto
        return None

    @property
    def rto(self) -> float:
        return self._rto

    @property
    def in_flight(self) -> int:
        return len(self._unacked) + len(self._pending)

    # -- timers -----------------------------------------------------------------------

    def poll(self, now: float) -> list[LinkEvent]:
        if self.state is LinkState.CONNECTING:
            if self._rst_due is not None and now >= self._rst_due:
                # Keep knocking while connecting; the driver decides when a device is missing.
                self._rst_interval = min(self._rst_interval * 2, self.rto_max)
                self._send_rst(now)
            return []
        if self.state is not LinkState.ESTABLISHED or not self._unacked:
            return []
        if now < self._unacked[0].sent_at + self._rto:
            return []
        self.stats.timeouts += 1
        if self._retries >= self.max_retries:
            return [self._fail(f"no acknowledgement after {self._retries} retransmissions")]
        self._retries += 1
        self._rto = min(self._rto * 2, self.rto_max)
        self._resend_from(self._unacked[0].seq, now)
        return []

    # -- frames from the line -----------------------------------------------------------

    def receive(self, frame: Frame, now: float) -> list[LinkEvent]:
        if frame.kind is Kind.RST:
            return self._on_rst(frame, now)
        if frame.kind is Kind.RSTACK:
            return self._on_rstack(frame, now)
        if self.state is not LinkState.ESTABLISHED:
            return []  # frames of a session we no longer have; the peer will resynchronise
        events: list[LinkEvent] = []
        self._on_ack(frame.ack, now)
        if frame.kind is Kind.DATA:
            events += self._on_data(frame)
        elif frame.kind is Kind.NAK:
            self.stats.naks_received += 1
            if self._unacked and self._unacked[0].seq == frame.ack:
                self._resend_from(frame.ack, now)
        self._fill_window(now)
        return events

    def _on_rst(self, frame: Frame, now: float) -> list[LinkEvent]:
        if len(frame.payload) != 4:
            return []
        (boot,) = struct.unpack(">I", frame.payload)
        self._emit(Frame(Kind.RSTACK, payload=struct.pack(">II", boot, self.boot_id)))
        if boot == self.peer_boot and self.state is LinkState.ESTABLISHED:
            return []  # a duplicate of the RST we already accepted
        event = self._reset_session(boot)
        self._fill_window(now)
        return [event]

    def _on_rstack(self, frame: Frame, now: float) -> list[LinkEvent]:
        if len(frame.payload) != 8:
            return []
        acked, boot = struct.unpack(">II", frame.payload)
        if acked != self.boot_id:
            return []  # an answer to someone else's (or an old) reset
        if self.state is LinkState.ESTABLISHED and boot == self.peer_boot:
            return []
        event = self._reset_session(boot)
        self._fill_window(now)
        return [event]

    def _reset_session(self, boot: int) -> LinkEvent:
        had_peer = self.peer_boot is not None
        # Messages meant for a previous peer session go back to the caller as lost; those
        # queued before the first session was up are simply sent now.
        lost = (tuple(f.out for f in self._unacked) + tuple(self._pending)) if had_peer else ()
        self._unacked.clear()
        if had_peer:
            self._pending.clear()
        self._tx_next = self._rx_next = 0
        self._nak_sent = False
        self._retries = 0
        self._rst_due = None
        self.peer_boot = boot
        self.state = LinkState.ESTABLISHED
        if had_peer:
            self.stats.resets += 1
            return PeerReset(boot, lost)
        return Established(boot)

    def _on_data(self, frame: Frame) -> list[LinkEvent]:
        if frame.seq == self._rx_next:
            self._rx_next = (self._rx_next + 1) % SEQ_MOD
            self._nak_sent = False
            self.stats.delivered += 1
            self._emit(Frame(Kind.ACK, ack=self._rx_next))
            return [Delivered(frame.msg, frame.payload)]
        behind = (self._rx_next - frame.seq) % SEQ_MOD
        if 0 < behind < SEQ_MOD // 2:
            self.stats.duplicates += 1
            self._emit(Frame(Kind.ACK, ack=self._rx_next))
        elif not self._nak_sent:
            self._nak_sent = True
            self.stats.naks_sent += 1
            self._emit(Frame(Kind.NAK, ack=self._rx_next))
        return []

    def _on_ack(self, ack: int, now: float) -> None:
        progressed = False
        while self._unacked:
            head = self._unacked[0]
            if not 0 < (ack - head.seq) % SEQ_MOD <= len(self._unacked):
                break
            self._unacked.popleft()
            progressed = True
            if not head.retransmitted:
                self._sample_rtt(now - head.sent_at)
        if progressed:
            self._retries = 0

    def _sample_rtt(self, rtt: float) -> None:
        if self._srtt is None:
            self._srtt, self._rttvar = rtt, rtt / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - rtt)
            self._srtt = 0.875 * self._srtt + 0.125 * rtt
        self._rto = min(max(self._srtt + 4 * self._rttvar, self.rto_min), self.rto_max)

    # -- sending ------------------------------------------------------------------------

    def _fill_window(self, now: float) -> None:
        if self.state is not LinkState.ESTABLISHED:
            return
        while self._pending and len(self._unacked) < self.window:
            out = self._pending.popleft()
            flight = _InFlight(self._tx_next, out, now)
            self._tx_next = (self._tx_next + 1) % SEQ_MOD
            self._unacked.append(flight)
            self.stats.sent += 1
            self._emit_data(flight)

    def _resend_from(self, seq: int, now: float) -> None:
        resend = False
        for flight in self._unacked:
            resend = resend or flight.seq == seq
            if resend:
                flight.sent_at = now
                flight.retransmitted = True
                self.stats.retransmitted += 1
                self._emit_data(flight)

    def _emit_data(self, flight: _InFlight) -> None:
        self._emit(Frame(Kind.DATA, flight.seq, self._rx_next, flight.out.msg,
                         flight.out.payload))

    def _send_rst(self, now: float) -> None:
        self._emit(Frame(Kind.RST, payload=struct.pack(">I", self.boot_id)))
        self._rst_due = now + self._rst_interval

    def _emit(self, frame: Frame) -> None:
        if self.version != PROTOCOL_VERSION:
            frame = Frame(frame.kind, frame.seq, frame.ack, frame.msg, frame.payload,
                          self.version)
        self._out.append(frame.to_bytes())

    def _fail(self, reason: str) -> LinkEvent:
        lost = tuple(f.out for f in self._unacked) + tuple(self._pending)
        self._unacked.clear()
        self._pending.clear()
        self.state = LinkState.FAILED
        return LinkFailed(reason, lost)
