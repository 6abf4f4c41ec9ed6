"""Frames: the one byte format all three devices share. See framing.md.

    +------+-----+------+-----+-----+-----+-----+------+-----------+---------+
    | 0x7E | VER | KIND | SEQ | ACK | MSG | LEN | HCHK | PAYLOAD   | CRC16   |
    +------+-----+------+-----+-----+-----+-----+------+-----------+---------+
      1      1     1      1     1     1     1     1      0..250      2 (BE)

HCHK is the low byte of CRC-16/CCITT-FALSE over VER..LEN; CRC16 is CRC-16/CCITT-FALSE
(poly 0x1021, init 0xFFFF) over VER..PAYLOAD, HCHK included. Like Klipper's msgproto,
the decoder never trusts a start byte alone: a frame counts only when its header check,
length and CRC hold; otherwise it drops one byte and looks for the next start byte.

The header check exists because a start byte inside garbage, followed by a plausible
LEN, would otherwise make the decoder wait for up to 259 bytes that may never come,
holding good frames behind it. HCHK rejects 255 of 256 such false starts at once; for
the rest, the decoder looks ahead and takes any complete valid frame that follows.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass
from enum import IntEnum

SOF = 0x7E
PROTOCOL_VERSION = 1
HEADER_SIZE = 8  # SOF VER KIND SEQ ACK MSG LEN HCHK
CRC_SIZE = 2
MAX_PAYLOAD = 250
MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE


class Kind(IntEnum):
    DATA = 0  # carries a message; sequenced
    ACK = 1  # ACK field: the next sequence number expected from the peer
    NAK = 2  # ACK field: the sequence number to resend from
    RST = 3  # link reset; payload: the sender's boot id (u32)
    RSTACK = 4  # reset accepted; payload: the acknowledged boot id, then own boot id


class FrameError(ValueError):
    """Raised only by Frame construction/encoding with invalid fields (a caller bug)."""


def crc16(data: bytes) -> int:
    return binascii.crc_hqx(data, 0xFFFF)


@dataclass(frozen=True, slots=True)
class Frame:
    kind: Kind
    seq: int = 0
    ack: int = 0
    msg: int = 0
    payload: bytes = b""
    version: int = PROTOCOL_VERSION

    def __post_init__(self) -> None:
        for name in ("seq", "ack", "msg", "version"):
            v = getattr(self, name)
            if not 0 <= v <= 0xFF:
                raise FrameError(f"frame {name} {v} is not a byte")
        if len(self.payload) > MAX_PAYLOAD:
            raise FrameError(f"payload of {len(self.payload)} bytes exceeds {MAX_PAYLOAD}")

    def to_bytes(self) -> bytes:
        head = bytes((self.version, int(self.kind), self.seq, self.ack, self.msg,
                      len(self.payload)))
        body = head + bytes((crc16(head) & 0xFF,)) + self.payload
        return bytes((SOF,)) + body + crc16(body).to_bytes(2, "big")

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

    reason: str  # "garbage" | "bad_crc" | "bad_length" | "bad_kind" | "unsupported_version"
    skipped: int  # bytes dropped
    detail: str = ""

    def __str__(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.reason}: skipped {self.skipped} byte(s){detail}"


class Decoder:
    """Incremental: ``feed(bytes)`` returns the frames (and DecodeErrors) completed so far.

    It never raises on any input. After garbage it recovers the next valid frame.
    """

    def __init__(self, version: int = PROTOCOL_VERSION) -> None:
        self._buf = bytearray()
        self._version = version
        self.frames = 0
        self.errors = 0

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame | DecodeError]:
        self._buf += data
        out: list[Frame | DecodeError] = []
        skipped = 0  # bytes dropped since the last frame, reported once as one error
        reason = "garbage"
        while True:
            start = self._buf.find(SOF)
            if start < 0:
                skipped += len(self._buf)
                self._buf.clear()
                break
            skipped += start
            del self._buf[:start]
            status = _check(self._buf, 0)
            if status == _NEED_MORE:
                ahead = self._valid_frame_ahead()
                if ahead is None:
                    break
                skipped += ahead
                del self._buf[:ahead]
                continue
            if status < 0:
                reason = {_BAD_HEADER: reason, _BAD_CRC: "bad_crc"}.get(status, reason)
                skipped += 1
                del self._buf[:1]
                continue
            if skipped:
                self._error(out, reason, skipped)
                skipped, reason = 0, "garbage"
            frame_bytes = bytes(self._buf[:status])
            del self._buf[:status]
            out.append(self._frame(frame_bytes))
        if skipped:
            self._error(out, reason, skipped)
        return out

    def _valid_frame_ahead(self) -> int | None:
        """Offset of a later start byte that begins a complete valid frame, if any."""
        pos = self._buf.find(SOF, 1)
        while pos > 0:
            if _check(self._buf, pos) > 0:
                return pos
            pos = self._buf.find(SOF, pos + 1)
        return None

    def _error(self, out: list[Frame | DecodeError], reason: str, n: int,
               detail: str = "") -> None:
        self.errors += 1
        out.append(DecodeError(reason, n, detail))

    def _frame(self, raw: bytes) -> Frame | DecodeError:
        version, kind, seq, ack, msg = raw[1:6]
        if version != self._version:
            self.errors += 1
            return DecodeError("unsupported_version", len(raw),
                               f"peer speaks protocol version {version}, we speak {self._version}")
        try:
            k = Kind(kind)
        except ValueError:
            self.errors += 1
            return DecodeError("bad_kind", len(raw), f"KIND {kind}")
        self.frames += 1
        return Frame(k, seq, ack, msg, bytes(raw[HEADER_SIZE:-CRC_SIZE]), version)


_NEED_MORE, _BAD_HEADER, _BAD_CRC = 0, -1, -2


def _check(buf: bytearray, pos: int) -> int:
    """Length of the valid frame at buf[pos], or _NEED_MORE / _BAD_HEADER / _BAD_CRC."""
    if len(buf) - pos < HEADER_SIZE:
        return _NEED_MORE
    head = bytes(buf[pos + 1:pos + 7])
    if crc16(head) & 0xFF != buf[pos + 7] or head[5] > MAX_PAYLOAD:
        return _BAD_HEADER
    total = HEADER_SIZE + head[5] + CRC_SIZE
    if len(buf) - pos < total:
        return _NEED_MORE
    body = bytes(buf[pos + 1:pos + total - CRC_SIZE])
    if crc16(body) != int.from_bytes(buf[pos + total - CRC_SIZE:pos + total], "big"):
        return _BAD_CRC
    return total
