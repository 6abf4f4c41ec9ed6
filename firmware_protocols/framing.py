"""Frames: the one byte format all three devices share. The generated specs (shoe.md,
shuffler.md, tumbler.md) are the reference; this is one implementation of them.

Bytes 0-7 mean the same in every version, so a receiver can always tell a frame of a
version it does not speak from noise:

    +------+-----+------+-----+-----+-----+-----+------+--------+-----------+---------+
    | 0x7E | VER | KIND | SEQ | ACK | MSG | LEN | HCHK | (SESS) | PAYLOAD   | CRC     |
    +------+-----+------+-----+-----+-----+-----+------+--------+-----------+---------+
      1      1     1      1     1     1     1     1      v2: 1    0..250      v1: 2, v2: 4

HCHK is the low byte of CRC-16/CCITT-FALSE over VER..LEN. Version 1 ends with
CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over VER..PAYLOAD; version 2 adds SESS (the
session's number, so a frame of an earlier session is never taken for one of this) and
ends with CRC-32 (ISO-HDLC, as zlib) over VER..PAYLOAD. Like Klipper's msgproto, the
decoder never trusts a start byte alone: a frame counts only when its header check,
length and CRC hold; otherwise it drops one byte and looks for the next start byte.

The header check exists because a start byte inside garbage, followed by a plausible
LEN, would otherwise make the decoder wait for up to 263 bytes that may never come,
holding good frames behind it. HCHK rejects 255 of 256 such false starts at once. For the
rest, the decoder gives the candidate the time its bytes take on the line (plus a
margin); only a candidate that stays incomplete longer than that is given up for a
complete valid frame that starts later. Before that rule's time limit, a frame carried
inside another frame's payload, with the outer frame arriving in two reads, replaced the
outer frame.
"""

from __future__ import annotations

import binascii
import zlib
from dataclasses import dataclass
from enum import IntEnum

SOF = 0x7E
VERSIONS = (1, 2, 3)  # the versions this implementation speaks, oldest first
PROTOCOL_VERSION = VERSIONS[-1]  # the newest, offered in every RST
HEADER_SIZE = 8  # SOF VER KIND SEQ ACK MSG LEN HCHK: the same in every version
MAX_PAYLOAD = 250
# Per version: bytes between the header and the payload (SESS), and the CRC's size.
# Version 3 frames are version 2 frames; what it adds (event identity) is the first
# STAMP_SIZE bytes of a DATA frame's payload, the link's business (link.py).
EXTRA = {1: 0, 2: 1, 3: 1}
CRC_SIZES = {1: 2, 2: 4, 3: 4}
CRC_SIZE = CRC_SIZES[1]
MAX_FRAME = max(HEADER_SIZE + EXTRA[v] + MAX_PAYLOAD + CRC_SIZES[v] for v in VERSIONS)
BYTE_TIME_115200 = 10 / 115200  # 8N1: ten bits on the wire per byte
STALL_MARGIN = 0.05  # seconds a candidate frame may lag its line time (OS, USB latency)


class Kind(IntEnum):
    DATA = 0  # carries a message; sequenced
    ACK = 1  # ACK field: the next sequence number expected from the peer
    NAK = 2  # ACK field: the sequence number to resend from
    RST = 3  # link reset; payload: boot id (u32), then (newer) version and resume fields
    RSTACK = 4  # reset accepted; payload: the acknowledged boot id, own boot id, then more


class FrameError(ValueError):
    """Raised only by Frame construction/encoding with invalid fields (a caller bug)."""


def crc16(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _crc(version: int, body: bytes) -> bytes:
    if version >= 2:
        return crc32(body).to_bytes(4, "big")
    return crc16(body).to_bytes(2, "big")


@dataclass(frozen=True, slots=True)
class Frame:
    kind: Kind
    seq: int = 0
    ack: int = 0
    msg: int = 0
    payload: bytes = b""
    version: int = 1
    sess: int = 0  # version 2 and 3: the session's number; not sent in version 1

    def __post_init__(self) -> None:
        for name in ("seq", "ack", "msg", "version", "sess"):
            v = getattr(self, name)
            if not 0 <= v <= 0xFF:
                raise FrameError(f"frame {name} {v} is not a byte")
        if len(self.payload) > MAX_PAYLOAD:
            raise FrameError(f"payload of {len(self.payload)} bytes exceeds {MAX_PAYLOAD}")
        if self.version == 1 and self.sess:
            raise FrameError("a version 1 frame has no session number")

    def to_bytes(self) -> bytes:
        head = bytes((self.version, int(self.kind), self.seq, self.ack, self.msg,
                      len(self.payload)))
        extra = bytes((self.sess,)) if EXTRA.get(self.version, 0) else b""
        body = head + bytes((crc16(head) & 0xFF,)) + extra + self.payload
        return bytes((SOF,)) + body + _crc(self.version, body)

    @classmethod
    def from_bytes(cls, data: bytes) -> Frame:
        """Decode exactly one frame; raises DecodeError naming what is wrong."""
        items = Decoder().feed(data)
        frames = [i for i in items if isinstance(i, Frame)]
        if len(items) != 1 or len(frames) != 1:
            problems = [str(i) for i in items if isinstance(i, DecodeError)]
            raise DecodeError("not_one_frame", len(data),
                              "; ".join(problems) or f"{len(frames)} frames in {len(data)} bytes")
        return frames[0]


@dataclass(frozen=True, slots=True)
class DecodeError(Exception):
    """What the decoder skipped, and why. Returned in the output stream, not raised by feed()."""

    reason: str  # "garbage" | "bad_crc" | "bad_kind" | "unsupported_version"
    skipped: int  # bytes dropped
    detail: str = ""

    def __str__(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.reason}: skipped {self.skipped} byte(s){detail}"


class Decoder:
    """Incremental: ``feed(bytes, now)`` returns the frames (and DecodeErrors) completed so far.

    It never raises on any input. After garbage it recovers the next valid frame. ``now``
    is the time the bytes arrived; with ``now=None`` (a captured stream decoded offline)
    the bytes given are taken as all there is, so an incomplete candidate may be given up
    at once for a valid frame after it. ``byte_time`` is the line's seconds per byte.
    """

    def __init__(self, versions: tuple[int, ...] = VERSIONS,
                 byte_time: float = BYTE_TIME_115200) -> None:
        self._buf = bytearray()
        self._versions = versions
        self._byte_time = byte_time
        self._since: float | None = None  # when the candidate at _buf[0] was first seen
        self.frames = 0
        self.errors = 0

    @property
    def pending(self) -> int:
        return len(self._buf)

    def next_deadline(self) -> float | None:
        """When an incomplete candidate frame would be given up (poll then)."""
        if self._since is None or not self._buf:
            return None
        return self._since + self._line_time()

    def poll(self, now: float) -> list[Frame | DecodeError]:
        return self.feed(b"", now)

    def feed(self, data: bytes, now: float | None = None) -> list[Frame | DecodeError]:
        self._buf += data
        out: list[Frame | DecodeError] = []
        skipped = 0  # bytes dropped since the last frame, reported once as one error
        reason = "garbage"
        detail = ""
        while True:
            start = self._buf.find(SOF)
            if start < 0:
                skipped += len(self._buf)
                self._drop(len(self._buf))
                break
            skipped += start
            self._drop(start)
            status = self._check(0)
            if status == _NEED_MORE:
                if self._since is None:
                    self._since = now
                if not self._stalled(now):
                    break
                ahead = self._valid_frame_ahead()
                if ahead is None:
                    break
                skipped += ahead
                self._drop(ahead)
                continue
            if status < 0:
                if status == _BAD_CRC:
                    reason = "bad_crc"
                elif status == _OTHER_VERSION and reason == "garbage":
                    reason = "unsupported_version"
                    detail = (f"peer speaks protocol version {self._buf[1]}, we speak "
                              f"{_spoken(self._versions)}")
                skipped += 1
                self._drop(1)
                continue
            if skipped:
                self._error(out, reason, skipped, detail)
                skipped, reason, detail = 0, "garbage", ""
            frame_bytes = bytes(self._buf[:status])
            self._drop(status)
            out.append(self._frame(frame_bytes))
        if skipped:
            self._error(out, reason, skipped, detail)
        return out

    def _drop(self, n: int) -> None:
        if n:
            del self._buf[:n]
            self._since = None

    def _line_time(self) -> float:
        if len(self._buf) >= HEADER_SIZE and self._buf[1] in self._versions:
            total = _total(self._buf[1], self._buf[6])
        else:
            total = MAX_FRAME
        return total * self._byte_time + STALL_MARGIN

    def _stalled(self, now: float | None) -> bool:
        if now is None or self._since is None:
            return True
        return now >= self._since + self._line_time()

    def _valid_frame_ahead(self) -> int | None:
        """Offset of a later start byte that begins a complete valid frame, if any."""
        pos = self._buf.find(SOF, 1)
        while pos > 0:
            if self._check(pos) > 0:
                return pos
            pos = self._buf.find(SOF, pos + 1)
        return None

    def _error(self, out: list[Frame | DecodeError], reason: str, n: int,
               detail: str = "") -> None:
        self.errors += 1
        out.append(DecodeError(reason, n, detail))

    def _frame(self, raw: bytes) -> Frame | DecodeError:
        version, kind, seq, ack, msg = raw[1:6]
        try:
            k = Kind(kind)
        except ValueError:
            self.errors += 1
            return DecodeError("bad_kind", len(raw), f"KIND {kind}")
        self.frames += 1
        start = HEADER_SIZE + EXTRA[version]
        sess = raw[HEADER_SIZE] if EXTRA[version] else 0
        return Frame(k, seq, ack, msg, bytes(raw[start:-CRC_SIZES[version]]), version, sess)

    def _check(self, pos: int) -> int:
        """Length of the valid frame at _buf[pos], or _NEED_MORE / a negative status."""
        buf = self._buf
        if len(buf) - pos < HEADER_SIZE:
            return _NEED_MORE
        head = bytes(buf[pos + 1:pos + 7])
        if crc16(head) & 0xFF != buf[pos + 7] or head[5] > MAX_PAYLOAD:
            return _BAD_HEADER
        version = head[0]
        if version not in self._versions:
            return _OTHER_VERSION
        total = _total(version, head[5])
        if len(buf) - pos < total:
            return _NEED_MORE
        crc_size = CRC_SIZES[version]
        body = bytes(buf[pos + 1:pos + total - crc_size])
        if _crc(version, body) != bytes(buf[pos + total - crc_size:pos + total]):
            return _BAD_CRC
        return total


_NEED_MORE, _BAD_HEADER, _BAD_CRC, _OTHER_VERSION = 0, -1, -2, -3


def _spoken(versions: tuple[int, ...]) -> str:
    """"1, 2 and 3": the versions a decoder speaks, for a person to read."""
    names = [str(v) for v in versions]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _total(version: int, length: int) -> int:
    return HEADER_SIZE + EXTRA[version] + length + CRC_SIZES[version]
