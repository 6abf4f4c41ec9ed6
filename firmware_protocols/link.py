"""The link layer: exactly-once, in-order delivery over a lossy line. Sans-I/O; time is passed in.

Modelled on EZSP's ASH (bellows/ash.py) with Klipper's RTO estimate. The generated specs
state the rules; this implements them:

- A session starts with RST carrying the sender's random boot id and the newest
  protocol version it speaks; the peer answers RSTACK (the boot id it accepts, its own,
  and the version chosen: the lower of the two). RST and RSTACK are always framed as
  version 1 so that any peer can read them; DATA, ACK and NAK use the session's version.
  A RST with a new boot id means the peer restarted its side; a duplicate RST (same boot
  id) is answered again, never acted on twice.
- RST and RSTACK also name the session that ended before (both boot ids) with, in the
  ACK field, the next SEQ its sender had expected in it. So after a reset or a failure
  each end learns which of its unacknowledged messages the peer did receive: those are
  not lost. The rest are re-sent in the new session (a device does this) or handed back
  as lost (the host does this: its commands are asked again by the layer above).
- DATA frames carry SEQ (0-255, wrapping) and a piggybacked cumulative ACK (the next SEQ
  expected from the peer). At most ``window`` frames are unacknowledged.
- The receiver delivers in SEQ order; it re-ACKs old SEQs, keeps frames past a gap
  (within the window) until it closes, and NAKs a gap (again if it stays open a minimum
  RTO later). A NAK acknowledges what precedes it and makes the sender resend every
  unacknowledged frame from the NAKed SEQ on at once (go-back-N).
- A device holds at most ``capacity`` messages it accepted and the peer has not
  acknowledged, in flight or queued (or carried from the session before); ``send`` refuses
  another at once, and never drops one it took: a new session re-sends them all.
- The retransmission timeout is estimated like TCP (RFC 6298, Karn's rule), never below
  twice the longest frame's time on the line, and doubles on each timeout, up to four
  times the estimate, until progress. The ``max_retries``-th timeout in a row FAILS the
  link once nothing has come from the peer for 5 s; a new session (new boot id) follows.
- Version 3: every DATA frame's payload starts with the sender's stamp (``Stamp``): its
  ``origin`` (the boot id it chose at power-up, kept across link sessions), the message's
  number, and the number of the peer's message it answers. Numbers are given when a
  message is accepted, so a message re-sent in a later session keeps its identity, and
  the layer above can drop what it has already seen, whatever the link did.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

from firmware_protocols.framing import (
    BYTE_TIME_115200,
    MAX_FRAME,
    MAX_PAYLOAD,
    PROTOCOL_VERSION,
    VERSIONS,
    Frame,
    Kind,
)

SEQ_MOD = 256
RST_INTERVAL_MAX = 0.25  # seconds between RSTs while connecting, at most
RTO_INITIAL = 0.2  # seconds: the RTO of a session's first RST and DATA, before any sample
RTO_FLOOR = 0.02  # seconds: the minimum RTO on a fast line (USB), for scheduling jitter
SILENCE_TO_FAIL = 5.0  # seconds without a frame from the peer, at the least, before failing
DEVICE_QUEUE = 24  # what the simulated devices hold, as the C reference device (TD_QUEUE)
STAMPED = 3  # the first version whose DATA frames carry a stamp
STAMP_SIZE = 12  # ORIGIN u32, NUM u32, RE u32, big-endian, before the message's fields
MAX_MESSAGE = MAX_PAYLOAD - STAMP_SIZE  # a message's own bytes, in every version


def min_rto(byte_time: float) -> float:
    """The least RTO at this line speed: the longest frame out, and one back, plus 10 ms."""
    return max(RTO_FLOOR, 2 * MAX_FRAME * byte_time + 0.01)


class LinkState(StrEnum):
    CONNECTING = "connecting"
    ESTABLISHED = "established"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Stamp:
    """A version 3 message's identity. ``origin``: the sender's boot id at power-up (not
    the link session's, which changes after a link failure); ``number``: a device's event
    number (the last one, for a heartbeat or an answer), or a host's command number;
    ``reply_to``: the number of the peer's command this answers, 0 if none."""

    origin: int
    number: int
    reply_to: int = 0

    def to_bytes(self) -> bytes:
        return struct.pack(">III", self.origin, self.number, self.reply_to)


@dataclass(frozen=True, slots=True)
class Outgoing:
    msg: int
    payload: bytes
    number: int = 0  # given when accepted: re-sent in a later session, it is the same
    reply_to: int = 0


@dataclass(frozen=True, slots=True)
class Delivered:
    msg: int
    payload: bytes
    stamp: Stamp | None = None  # version 3; None: the frame was too short to carry one


@dataclass(frozen=True, slots=True)
class Established:
    """A session is up. ``resent``: messages of the session before that the peer had not
    received and that are sent again in this one; ``lost``: those this end gave up."""

    peer_boot: int
    version: int = 1
    resent: int = 0
    lost: tuple[Outgoing, ...] = ()


@dataclass(frozen=True, slots=True)
class PeerReset:
    """The peer started a new session (it restarted, or its link failed). ``lost`` were sent
    but not received by the peer, and will not be sent again (see Link.resend)."""

    peer_boot: int
    lost: tuple[Outgoing, ...]
    resent: int = 0


@dataclass(frozen=True, slots=True)
class LinkFailed:
    """No acknowledgement for too long. ``unacknowledged`` may or may not have arrived: the
    next session's RST/RSTACK exchange tells which."""

    reason: str
    unacknowledged: tuple[Outgoing, ...]


LinkEvent = Delivered | Established | PeerReset | LinkFailed


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What a new session needs to know about the one before: both boot ids, the next SEQ
    this end expected, and its messages not known to have arrived (with their SEQs).

    ``carried``: this end received a DATA frame in it; ``before``: the last earlier session
    that carried something, as (own boot, peer boot, next SEQ expected)."""

    own_boot: int
    peer_boot: int
    rx_next: int
    unacked: tuple[tuple[int, Outgoing], ...] = ()
    pending: tuple[Outgoing, ...] = ()
    carried: bool = True
    before: tuple[int, int, int] | None = None

    @property
    def named(self) -> tuple[int, int, int] | None:
        """The session to name in the next RST or RSTACK: the last one in which this end
        received anything. A session that carried nothing may be one the peer never
        established (its RSTACK was lost): naming it told the peer nothing, and a device
        re-sent everything the one before had delivered."""
        return (self.own_boot, self.peer_boot, self.rx_next) if self.carried else self.before


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
    stale: int = 0  # frames of another session or version, or before the session: ignored
    confirmed: int = 0  # unacknowledged at a reset, but received by the peer after all


@dataclass
class Link:
    boot_id: int
    window: int = 8
    rto_initial: float = RTO_INITIAL
    rto_max: float = 2.0
    max_retries: int = 8  # the link fails on this many timeouts in a row
    version: int = PROTOCOL_VERSION  # the newest version offered; another is a foreign peer
    byte_time: float = BYTE_TIME_115200  # the line's seconds per byte
    resend: bool = False  # re-send unreceived messages in the next session (devices do)
    resume: SessionSummary | None = None  # the session before this link object, if any
    # At most this many messages accepted and not acknowledged (None: no limit; the host's
    # commands each wait for their answer, so a few at most are ever held).
    capacity: int | None = None
    # The boot id chosen at power-up, for stamps (None: boot_id). A link that fails starts
    # its next session under a new boot_id, but its messages are the same device's.
    origin: int | None = None
    # Numbers given before this link object (a host's commands: its next session goes on
    # from its last command's number, under the same origin, as the spec's NUM says).
    numbered: int = 0
    state: LinkState = LinkState.CONNECTING
    peer_boot: int | None = None
    session_version: int = 1
    stats: LinkStats = field(default_factory=LinkStats)

    def __post_init__(self) -> None:
        if not 1 <= self.window < SEQ_MOD // 2:
            raise ValueError(f"window {self.window} must be 1..127")
        self.rto_min = min_rto(self.byte_time)
        if self.origin is None:
            self.origin = self.boot_id
        self._number = self.numbered  # the last number given to a message accepted
        self._out: list[bytes] = []
        self._tx_next = 0
        self._rx_next = 0
        self._sess = 0
        self._nak_sent = False
        self._nak_at = 0.0
        self._heard_at = 0.0  # when the last frame of the session came from the peer
        self._ahead: dict[int, Frame] = {}  # received past a gap, delivered once it closes
        self._unacked: deque[_InFlight] = deque()
        self._pending: deque[Outgoing] = deque()
        self._rto = max(self.rto_initial, self.rto_min)
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._retries = 0
        self._rst_due: float | None = None
        self._rst_interval = self._rto
        self._line_free = 0.0  # when our last queued byte leaves the line
        self._prev = self.resume
        self._answered: SessionSummary | None = None  # named in our last RSTACK
        self._carried = False  # a DATA frame was delivered in this session
        self._before: tuple[int, int, int] | None = None  # see SessionSummary.named

    # -- driving the link -------------------------------------------------------------

    def connect(self, now: float) -> None:
        """Start the session: send RST until the peer answers."""
        self.state = LinkState.CONNECTING
        self._send_rst(now)

    def restart(self, now: float, boot_id: int) -> None:
        """After a failure: a new session under a new boot id (the peer would take the
        old one for a duplicate), carrying what the failed session had not delivered."""
        if self.state is LinkState.ESTABLISHED:
            self._prev = self._summary()  # it carries the queue: sent from there, once
            self._unacked.clear()
            self._pending.clear()
        self.boot_id = boot_id
        self.peer_boot = None
        self._rst_interval = self._rto = max(self.rto_initial, self.rto_min)
        self.connect(now)

    def send(self, msg: int, payload: bytes, now: float, *, event: bool = True,
             reply_to: int = 0, number: int | None = None) -> bool:
        """Queue a message; it goes out when the link is up and the window has room.
        False: refused at once, not taken (``capacity`` messages are held); the caller
        keeps it and tries again later. A message taken is never dropped. ``event``: it
        takes the next number (a heartbeat or an answer carries the last one given).
        ``number``: a message sent again with the number it was given before (a host's
        command whose answer was lost: the device knows it by it), taking none."""
        if len(payload) > MAX_MESSAGE:
            raise ValueError(f"a message of {len(payload)} bytes exceeds {MAX_MESSAGE}")
        if number is not None and not 0 < number <= self._number:
            raise ValueError(f"number {number} was never given (the last is {self._number})")
        if self.room == 0:
            return False
        if number is None:
            self._number += event
        self._pending.append(Outgoing(msg, payload, self._number if number is None
                                      else number, reply_to))
        self._fill_window(now)
        return True

    @property
    def last_number(self) -> int:
        """The number of the last message accepted (a host's: its last command's)."""
        return self._number

    @property
    def room(self) -> int | None:
        """How many more messages ``send`` would take now (None: no limit)."""
        if self.capacity is None:
            return None
        held = len(self._unacked) + len(self._pending)
        if self.resend and self._prev is not None:  # carried into the next session
            held += len(self._prev.unacked) + len(self._prev.pending)
        return max(0, self.capacity - held)

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

    def summary(self) -> SessionSummary | None:
        """The session to name in the next RST (for a new Link object after this one)."""
        if self.state is LinkState.ESTABLISHED:
            return self._summary()
        return self._prev

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
                # Up to 0.25 s, not 2 s: a RST is at most 23 bytes, and on a noisy line
                # (BER 1e-2) only about one RST/RSTACK exchange in 60 gets through.
                self._rst_interval = min(self._rst_interval * 2, RST_INTERVAL_MAX)
                self._send_rst(now)
            return []
        if self.state is not LinkState.ESTABLISHED or not self._unacked:
            return []
        if now < self._unacked[0].sent_at + self._rto:
            return []
        self.stats.timeouts += 1
        self._retries += 1
        if self._retries >= self.max_retries and now - self._heard_at >= SILENCE_TO_FAIL:
            return [self._fail(f"no acknowledgement after {self._retries} timeouts in a row, "
                               f"nothing from the peer for {now - self._heard_at:.1f}s")]
        # Double the RTO, but only up to four times the estimate: a serial line has no
        # congestion to back off from, and on a noisy one short rounds are what delivers.
        cap = min(4 * self._estimate(), self.rto_max)
        self._rto = min(self._rto * 2, cap)
        self._resend_from(self._unacked[0].seq, now)
        return []

    # -- frames from the line -----------------------------------------------------------

    def receive(self, frame: Frame, now: float) -> list[LinkEvent]:
        if frame.kind is Kind.RST:
            return self._on_rst(frame, now)
        if frame.kind is Kind.RSTACK:
            return self._on_rstack(frame, now)
        if self.state is not LinkState.ESTABLISHED or frame.version != self.session_version \
                or frame.sess != self._sess:
            self.stats.stale += 1  # before the session, or of another: the peer resends
            return []
        events: list[LinkEvent] = []
        # The peer is there: timeouts count toward failure only while it is silent. On a
        # noisy line (BER 1e-2) eight lost round trips in a row are common, and failing
        # there cost a session reset, itself slow to get through, every few seconds.
        self._retries = 0
        self._heard_at = now
        self._on_ack(frame.ack, now)
        if frame.kind is Kind.DATA:
            events += self._on_data(frame, now)
        elif frame.kind is Kind.NAK:
            self.stats.naks_received += 1
            if self._unacked and self._unacked[0].seq == frame.ack:
                self._resend_from(frame.ack, now)
        self._fill_window(now)
        return events

    def _on_rst(self, frame: Frame, now: float) -> list[LinkEvent]:
        if len(frame.payload) < 4:
            return []
        (boot,) = struct.unpack_from(">I", frame.payload)
        offered = frame.payload[4] if len(frame.payload) >= 5 else 1
        if offered < 1:
            return []
        version = min(offered, self.version) if self.version in VERSIONS else self.version
        if boot == self.peer_boot and self.state is LinkState.ESTABLISHED:
            self._send_rstack(boot, self.session_version, self._answered)
            return []  # a duplicate of the RST we already accepted
        mine = self._summary() if self.state is LinkState.ESTABLISHED else self._prev
        event = self._reset_session(boot, version, _resume_fields(frame, 5), now)
        self._answered = mine
        self._send_rstack(boot, version, mine)
        self._fill_window(now)
        return [event]

    def _on_rstack(self, frame: Frame, now: float) -> list[LinkEvent]:
        if len(frame.payload) < 8:
            return []
        acked, boot = struct.unpack_from(">II", frame.payload)
        chosen = frame.payload[8] if len(frame.payload) >= 9 else 1
        if acked != self.boot_id:
            return []  # an answer to someone else's (or an old) reset
        if chosen > self.version or chosen < 1:
            return []  # a version we did not offer
        if self.state is LinkState.ESTABLISHED and boot == self.peer_boot:
            return []
        event = self._reset_session(boot, chosen, _resume_fields(frame, 9), now)
        self._fill_window(now)
        return [event]

    def _reset_session(self, boot: int, version: int, resume: tuple[int, int, int] | None,
                       now: float) -> LinkEvent:
        had_peer = self.peer_boot is not None and self.state is LinkState.ESTABLISHED
        if had_peer:
            self._prev = self._summary()
            self._pending.clear()
        self._unacked.clear()
        prev, self._prev = self._prev, None
        carried: list[Outgoing] = []
        self._carried = False
        self._before = prev.named if prev is not None else None
        if prev is not None:
            received = _confirmed(prev, resume)
            self.stats.confirmed += received
            carried = [out for _, out in prev.unacked[received:]] + list(prev.pending)
        self._tx_next = self._rx_next = 0
        self._nak_sent = False
        self._ahead.clear()
        self._retries = 0
        self._rst_due = None
        self.peer_boot = boot
        self.session_version = version
        self._heard_at = now
        self._sess = (self.boot_id ^ boot) & 0xFF if version >= 2 else 0
        self.state = LinkState.ESTABLISHED
        lost: tuple[Outgoing, ...] = ()
        if self.resend:
            self._pending.extendleft(reversed(carried))
        else:
            lost = tuple(carried)
        resent = len(carried) - len(lost)
        if had_peer:
            self.stats.resets += 1
            return PeerReset(boot, lost, resent)
        return Established(boot, version, resent, lost)

    def _summary(self) -> SessionSummary:
        assert self.peer_boot is not None
        return SessionSummary(self.boot_id, self.peer_boot, self._rx_next,
                              tuple((f.seq, f.out) for f in self._unacked),
                              tuple(self._pending), self._carried, self._before)

    def _on_data(self, frame: Frame, now: float) -> list[LinkEvent]:
        if frame.seq == self._rx_next:
            delivered: list[LinkEvent] = []
            next_frame: Frame | None = frame
            self._carried = True
            while next_frame is not None:  # and what was kept from past the gap
                self._rx_next = (self._rx_next + 1) % SEQ_MOD
                self.stats.delivered += 1
                delivered.append(_delivered(next_frame))
                next_frame = self._ahead.pop(self._rx_next, None)
            self._nak_sent = False
            self._emit(Frame(Kind.ACK, ack=self._rx_next))
            return delivered
        behind = (self._rx_next - frame.seq) % SEQ_MOD
        if 0 < behind < SEQ_MOD // 2:  # old: a duplicate; 128..255 behind means ahead
            self.stats.duplicates += 1
            self._emit(Frame(Kind.ACK, ack=self._rx_next))
            return []
        if SEQ_MOD - behind < self.window:  # within the window: keep it (the spec's "may")
            self._ahead[frame.seq] = frame
        if not self._nak_sent or now - self._nak_at >= self.rto_min:
            # One NAK per gap; again only if the gap is still open a minimum RTO later
            # (the NAK or the frames it asked for were lost too: on a noisy line, waiting
            # for the sender's backed-off RTO stalled the link for seconds).
            self._nak_sent, self._nak_at = True, now
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
            # Progress ends the backoff: the RTO returns to the estimate. Under Karn's
            # rule alone it stayed at 2 s while every frame in flight was a resent one.
            self._rto = min(self._estimate(), self.rto_max)

    def _estimate(self) -> float:
        base = self.rto_min if self._srtt is None else self._srtt + 4 * self._rttvar
        return max(base, self.rto_min)

    def _sample_rtt(self, rtt: float) -> None:
        rtt = max(rtt, 0.0)
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
            self._emit_data(flight, now)

    def _resend_from(self, seq: int, now: float) -> None:
        resend = False
        for flight in self._unacked:
            resend = resend or flight.seq == seq
            if resend:
                flight.retransmitted = True
                self.stats.retransmitted += 1
                self._emit_data(flight, now)

    def _emit_data(self, flight: _InFlight, now: float) -> None:
        out = flight.out
        payload = out.payload
        if self.session_version >= STAMPED and self.version in VERSIONS:
            assert self.origin is not None
            payload = Stamp(self.origin, out.number, out.reply_to).to_bytes() + payload
        raw = self._emit(Frame(Kind.DATA, flight.seq, self._rx_next, out.msg, payload))
        # The RTO runs from when the frame's last byte leaves the line, not from when it
        # was queued behind others: at 115200 baud a full window takes 180 ms to send.
        self._line_free = max(self._line_free, now) + len(raw) * self.byte_time
        flight.sent_at = self._line_free

    def _send_rst(self, now: float) -> None:
        named = self._prev.named if self._prev else None
        payload = struct.pack(">IB", self.boot_id, self.version) + _name(named)
        self._emit(Frame(Kind.RST, ack=named[2] if named else 0, payload=payload),
                   control=True)
        self._rst_due = now + self._rst_interval

    def _send_rstack(self, boot: int, version: int, prev: SessionSummary | None) -> None:
        named = prev.named if prev else None
        payload = struct.pack(">IIB", boot, self.boot_id, version) + _name(named)
        self._emit(Frame(Kind.RSTACK, ack=named[2] if named else 0, payload=payload),
                   control=True)

    def _emit(self, frame: Frame, control: bool = False) -> bytes:
        if self.version not in VERSIONS:  # a foreign peer, to test version handling
            frame = Frame(frame.kind, frame.seq, frame.ack, frame.msg, frame.payload,
                          self.version)
        elif not control and self.session_version >= 2:
            frame = Frame(frame.kind, frame.seq, frame.ack, frame.msg, frame.payload,
                          self.session_version, self._sess)
        raw = frame.to_bytes()
        self._out.append(raw)
        return raw

    def _fail(self, reason: str) -> LinkEvent:
        unacked = tuple(f.out for f in self._unacked) + tuple(self._pending)
        self._prev = self._summary()
        self._unacked.clear()
        self._pending.clear()
        self.state = LinkState.FAILED
        return LinkFailed(reason, unacked)


def _delivered(frame: Frame) -> Delivered:
    """A DATA frame's message, and its stamp in version 3 (a frame too short for one is
    delivered without, for the layer above to report as malformed)."""
    if frame.version < STAMPED:
        return Delivered(frame.msg, frame.payload)
    if len(frame.payload) < STAMP_SIZE:
        return Delivered(frame.msg, frame.payload, None)
    origin, number, reply_to = struct.unpack_from(">III", frame.payload)
    return Delivered(frame.msg, frame.payload[STAMP_SIZE:], Stamp(origin, number, reply_to))


def _name(named: tuple[int, int, int] | None) -> bytes:
    """The resume fields of a RST or RSTACK: both boot ids of the session named."""
    return b"" if named is None else struct.pack(">II", named[0], named[1])


def _resume_fields(frame: Frame, at: int) -> tuple[int, int, int] | None:
    """The peer's previous own boot id, its previous peer's, and the ACK field's SEQ."""
    if len(frame.payload) < at + 8:
        return None
    prev_own, prev_peer = struct.unpack_from(">II", frame.payload, at)
    return prev_own, prev_peer, frame.ack


def _confirmed(prev: SessionSummary, resume: tuple[int, int, int] | None) -> int:
    """How many of prev's unacknowledged messages the peer says it received."""
    if resume is None or not prev.unacked:
        return 0
    peer_prev_own, peer_prev_peer, ack = resume
    if peer_prev_own != prev.peer_boot or peer_prev_peer != prev.own_boot:
        return 0  # the peer names another session: nothing is known to have arrived
    first = prev.unacked[0][0]
    received = (ack - first) % SEQ_MOD
    return received if received <= len(prev.unacked) else 0
