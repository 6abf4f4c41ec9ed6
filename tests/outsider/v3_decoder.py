"""An outsider's codec for tabled's device protocol, versions 1-3, written from the
generated Markdown alone (firmware_protocols/shoe.md, shuffler.md, tumbler.md) without
reading the project's codec (issue #24). Test-only: it exists to check that the published
spec, its vectors and the C reference device agree with a reading that shares no code
with them. Section names in comments are the spec's headings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

SOF = 0x7E
DATA, ACK, NAK, RST, RSTACK = 0, 1, 2, 3, 4
VERSIONS = (1, 2, 3)
MAX_LEN = 250
STAMP_LEN = 12
BAUD = 115200
BYTE_MS = 10 * 1000 / BAUD  # 8N1: start, 8 data bits, stop
LARGEST_FRAME = 13 + MAX_LEN  # a version 2 (and 3) frame


class InvalidMessageError(ValueError):
    """The message is invalid (Types: reported and dropped)."""


# --- Framing: CRCs -------------------------------------------------------------------


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no final XOR."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC, bit by bit (not zlib, so the check is independent)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


# --- Framing: frames -----------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    ver: int
    kind: int
    seq: int = 0
    ack: int = 0
    msg: int = 0
    sess: int | None = None  # versions 2 and 3 only
    payload: bytes = b""


def _crc_size(ver: int) -> int:
    return 2 if ver == 1 else 4


def frame_size(ver: int, length: int) -> int:
    """10 + LEN (v1); 13 + LEN (v2, and v3 'laid out as a version 2 frame')."""
    return 8 + (0 if ver == 1 else 1) + length + _crc_size(ver)


def encode_frame(f: Frame) -> bytes:
    if f.ver not in VERSIONS or len(f.payload) > MAX_LEN:
        raise ValueError(f"cannot frame {f}")
    header = bytes([f.ver, f.kind, f.seq, f.ack, f.msg, len(f.payload)])
    body = header + bytes([crc16(header) & 0xFF])
    if f.ver != 1:
        if f.sess is None:
            raise ValueError("a version 2 or 3 frame needs SESS")
        body += bytes([f.sess])
    body += f.payload
    crc = crc16(body) if f.ver == 1 else crc32(body)
    return bytes([SOF]) + body + crc.to_bytes(_crc_size(f.ver), "big")


def _header_holds(buf: bytes, i: int) -> bool:
    head = buf[i + 1 : i + 7]
    return len(head) == 6 and buf[i + 7] == crc16(head) & 0xFF and head[5] <= MAX_LEN


def _frame_at(buf: bytes, i: int) -> Frame | None:
    """The complete valid frame (of a version spoken) starting at buf[i], if any."""
    if i + 8 > len(buf) or buf[i] != SOF or not _header_holds(buf, i):
        return None
    ver, kind, seq, ack, msg, length = buf[i + 1 : i + 7]
    if ver not in VERSIONS:
        return None
    end = i + frame_size(ver, length)
    if end > len(buf):
        return None
    crc_at = end - _crc_size(ver)
    body = buf[i + 1 : crc_at]
    crc = crc16(body) if ver == 1 else crc32(body)
    if crc != int.from_bytes(buf[crc_at:end], "big"):
        return None
    sess = None if ver == 1 else buf[i + 8]
    payload = bytes(buf[i + 9 - (ver == 1) : crc_at])
    return Frame(ver, kind, seq, ack, msg, sess, payload)


def decode_stream(data: bytes) -> list[Frame]:
    """Receiving, for a decoder with no more bytes coming (so every wait has expired):
    a valid frame is taken whole; a frame of KIND above 4 is dropped whole, not searched
    inside; anything else costs one byte and the search resumes at the next 0x7E."""
    out: list[Frame] = []
    i = 0
    while i < len(data):
        if data[i] != SOF:
            i += 1
            continue
        f = _frame_at(data, i)
        if f is None:
            i += 1
            continue
        if f.kind <= RSTACK:
            out.append(f)
        i += frame_size(f.ver, len(f.payload))
    return out


def unsupported_version(data: bytes, i: int) -> int | None:
    """The VER of a candidate at data[i] whose header holds but whose version is not
    spoken ('unsupported protocol version N'), else None."""
    if i + 8 <= len(data) and data[i] == SOF and _header_holds(data, i):
        ver = data[i + 1]
        return None if ver in VERSIONS else ver
    return None


class Receiver:
    """Receiving, incrementally, with the time rule: a candidate whose header holds but
    whose bytes have not all arrived is waited for as long as they take plus 50 ms."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiting_since: float | None = None

    def feed(self, data: bytes, now_ms: float) -> list[Frame]:
        self.buf += data
        out: list[Frame] = []
        while self.buf:
            start = self.buf.find(SOF)
            if start < 0:
                self.buf.clear()
                break
            del self.buf[:start]
            buf = bytes(self.buf)
            f = _frame_at(buf, 0)
            if f is not None:
                if f.kind <= RSTACK:
                    out.append(f)
                del self.buf[: frame_size(f.ver, len(f.payload))]
                self.waiting_since = None
                continue
            if len(buf) < 8:
                break
            ver, length = buf[1], buf[6]
            if _header_holds(buf, 0) and ver in VERSIONS and len(buf) < frame_size(ver, length):
                if self.waiting_since is None:
                    self.waiting_since = now_ms
                missing = frame_size(ver, length) - len(buf)
                expired = now_ms - self.waiting_since >= missing * BYTE_MS + 50
                later = any(_frame_at(buf, j) for j in range(1, len(buf)) if buf[j] == SOF)
                if not (expired and later):
                    break
            self.waiting_since = None
            del self.buf[:1]
        return out


# --- Link layer ----------------------------------------------------------------------


def sess_of(rst_boot: int, rstack_boot: int) -> int:
    """Session number: the low byte of the two boot ids XORed."""
    return (rst_boot ^ rstack_boot) & 0xFF


@dataclass(frozen=True)
class Rst:
    boot: int
    version: int = 1  # absent: 1
    previous: tuple[int, int] | None = None  # (sender's boot id, peer's) in that session
    ack: int = 0  # the next SEQ the sender expected in the session named


@dataclass(frozen=True)
class RstAck:
    accepted: int
    boot: int
    version: int = 1
    previous: tuple[int, int] | None = None
    ack: int = 0


def _previous_bytes(previous: tuple[int, int] | None) -> bytes:
    return (
        b"" if previous is None else previous[0].to_bytes(4, "big") + previous[1].to_bytes(4, "big")
    )


def _previous_of(payload: bytes, at: int) -> tuple[int, int] | None:
    if len(payload) < at + 8:
        return None
    return int.from_bytes(payload[at : at + 4], "big"), int.from_bytes(
        payload[at + 4 : at + 8], "big"
    )


def encode_rst(r: Rst) -> bytes:
    """RST and RSTACK are always version 1 frames."""
    payload = r.boot.to_bytes(4, "big") + bytes([r.version]) + _previous_bytes(r.previous)
    return encode_frame(Frame(1, RST, ack=r.ack if r.previous else 0, payload=payload))


def encode_rstack(r: RstAck) -> bytes:
    payload = (
        r.accepted.to_bytes(4, "big") + r.boot.to_bytes(4, "big") + bytes([r.version])
    ) + _previous_bytes(r.previous)
    return encode_frame(Frame(1, RSTACK, ack=r.ack if r.previous else 0, payload=payload))


def decode_rst(f: Frame) -> Rst:
    p = f.payload
    if f.kind != RST or f.ver != 1 or len(p) < 4:
        raise InvalidMessageError(f"not a RST: {f}")
    return Rst(int.from_bytes(p[:4], "big"), p[4] if len(p) > 4 else 1, _previous_of(p, 5), f.ack)


def decode_rstack(f: Frame) -> RstAck:
    p = f.payload
    if f.kind != RSTACK or f.ver != 1 or len(p) < 8:
        raise InvalidMessageError(f"not a RSTACK: {f}")
    version = p[8] if len(p) > 8 else 1
    return RstAck(
        int.from_bytes(p[:4], "big"),
        int.from_bytes(p[4:8], "big"),
        version,
        _previous_of(p, 9),
        f.ack,
    )


def rstack_taken(r: RstAck, own_boot: int, offered: int) -> bool:
    """An RSTACK naming another boot id, or a version 0 or above the offer, is ignored."""
    return r.accepted == own_boot and 1 <= r.version <= offered


@dataclass
class SessionHistory:
    """What an end remembers of its sessions, to name one when resuming: the last one
    in which it received a DATA frame, with the next SEQ it expected there."""

    sessions: list[tuple[int, int, int | None]] = field(default_factory=list)

    def session(self, own: int, peer: int) -> None:
        self.sessions.append((own, peer, None))

    def received(self, next_seq: int) -> None:
        own, peer, _ = self.sessions[-1]
        self.sessions[-1] = (own, peer, next_seq)

    def rst(self, boot: int, offer: int) -> Rst:
        for own, peer, next_seq in reversed(self.sessions):
            if next_seq is not None:
                return Rst(boot, offer, (own, peer), next_seq)
        return Rst(boot, offer)


def min_rto_ms() -> float:
    """Twice a largest frame's time on the line plus 10 ms, never below 20 ms."""
    return max(2 * LARGEST_FRAME * BYTE_MS + 10, 20.0)


INITIAL_RTO_MS = 200.0


def rto_after_timeouts(timeouts: int) -> list[float]:
    """The RTO, first the initial one, then after each timeout on a line that never
    answered: doubling, never beyond four times the estimate (the minimum RTO before any
    sample) nor 2 s, never below the minimum RTO."""
    estimate = min_rto_ms()
    rto = max(INITIAL_RTO_MS, estimate)
    out = [rto]
    for _ in range(timeouts):
        rto = max(min(2 * rto, 4 * estimate, 2000.0), estimate)
        out.append(rto)
    return out


def rst_times(count: int) -> list[float]:
    """When an unanswered link sends its RSTs: after the initial RTO, then twice the
    last interval, never more than 250 ms apart."""
    times = [0.0]
    interval = min(max(INITIAL_RTO_MS, min_rto_ms()), 250.0)
    while len(times) < count:
        times.append(times[-1] + interval)
        interval = min(2 * interval, 250.0)
    return times


class DeviceQueue:
    """A full queue: at most `capacity` accepted, unacknowledged messages; the next is
    refused at once, none accepted is ever dropped."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.held: list[bytes] = []

    def offer(self, message: bytes) -> bool:
        if len(self.held) >= self.capacity:
            return False
        self.held.append(message)
        return True


# --- Event identity (version 3) ------------------------------------------------------


@dataclass(frozen=True)
class Stamp:
    origin: int
    num: int
    re: int = 0

    def encode(self) -> bytes:
        return b"".join(v.to_bytes(4, "big") for v in (self.origin, self.num, self.re))

    @staticmethod
    def decode(data: bytes) -> Stamp:
        if len(data) < STAMP_LEN:
            raise InvalidMessageError("payload shorter than the stamp")
        return Stamp(*(int.from_bytes(data[i : i + 4], "big") for i in (0, 4, 8)))


ANSWERS = frozenset(
    {"identify_reply", "status_reply", "command_result", "inventory_reply", "order_chunk"}
)
# heartbeat and the four direct answers take no event number of their own
NOT_EVENTS = frozenset(
    {"heartbeat", "identify_reply", "status_reply", "command_result", "inventory_reply"}
)


class EventFilter:
    """The host drops what it has already seen: per device, the last (ORIGIN, NUM)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[int, int]] = {}
        self.lost: list[tuple[str, int, int]] = []  # (device, first missing, last missing)

    def take(self, device: str, name: str, stamp: Stamp) -> bool:
        """True when the host acts on this message; False when it is a repeat."""
        seen = self.last.get(device)
        if seen is None or seen[0] != stamp.origin:
            if name not in NOT_EVENTS:
                self.last[device] = (stamp.origin, stamp.num)
            return True
        if name in NOT_EVENTS:
            if stamp.num > seen[1]:
                self.lost.append((device, seen[1] + 1, stamp.num))
            return True
        if stamp.num <= seen[1]:
            return False
        if stamp.num > seen[1] + 1:
            self.lost.append((device, seen[1] + 1, stamp.num - 1))
        self.last[device] = (stamp.origin, stamp.num)
        return True


# --- Types and messages --------------------------------------------------------------

RANKS = "A23456789TJQK"
SUITS = "SHDC"
CARDS = tuple(r + s for s in SUITS for r in RANKS)  # suit-major, as the inventory


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    lo: int | None = None  # the values column; None: any
    hi: int | None = None
    card_or_unread: bool = False  # "a card (A 2-9 T J Q K, then S H D C) or ??"


@dataclass(frozen=True)
class Message:
    id: int
    name: str
    device: str  # common, shoe, shuffler, tumbler
    to_device: bool
    fields: tuple[Field, ...]


def _m(id_: int, name: str, device: str, to_device: bool, *fields: Field) -> Message:
    return Message(id_, name, device, to_device, fields)


F = Field
TAG = F("tag", "u8")
CATALOGUE: tuple[Message, ...] = (
    _m(0x01, "identify", "common", True, TAG),
    _m(
        0x02,
        "identify_reply",
        "common",
        False,
        TAG,
        F("kind", "u8", 1, 3),
        F("model", "str"),
        F("firmware", "str"),
        F("protocol_version", "u8"),
        F("serial", "str"),
    ),
    _m(
        0x03,
        "heartbeat",
        "common",
        False,
        F("uptime_ms", "u32"),
        F("state", "u8", 0, 3),
        F("fault", "u16"),
    ),
    _m(0x04, "status", "common", True, TAG),
    _m(
        0x05,
        "status_reply",
        "common",
        False,
        TAG,
        F("state", "u8", 0, 3),
        F("fault", "u16"),
        F("detail", "str"),
    ),
    _m(0x06, "fault", "common", False, F("code", "u16"), F("detail", "str")),
    _m(0x07, "fault_cleared", "common", False, F("code", "u16")),
    _m(0x08, "command_result", "common", False, TAG, F("result", "u8", 0, 5), F("detail", "str")),
    _m(0x09, "door", "common", False, F("open", "bool")),
    _m(
        0x20,
        "card_drawn",
        "shoe",
        False,
        F("draw_no", "u16", 1, 520),
        F("card", "card", card_or_unread=True),
        F("confidence", "u8", 0, 100),
        F("deck_set", "u32"),
        F("double_draw", "bool"),
        F("face_up", "bool"),
    ),
    _m(0x21, "shoe_loaded", "shoe", False, F("cards", "u16", 1, 520), F("deck_set", "u32")),
    _m(0x22, "cut_card", "shoe", False, F("draw_no", "u16", 0, 520)),
    _m(0x23, "shoe_empty", "shoe", False, F("draw_no", "u16", 0, 520)),
    _m(0x24, "dealer_button", "shoe", False, F("button", "u8", 1, 2)),
    _m(0x25, "tamper", "shoe", False, F("sensor", "u8", 1, 3)),
    _m(0x26, "gate", "shoe", False, F("locked", "bool")),
    _m(0x30, "lock_gate", "shoe", True, TAG, F("locked", "bool")),
    _m(0x31, "set_clock", "shoe", True, TAG, F("unix_ms", "u64")),
    _m(0x40, "shuffle_started", "shuffler", False, F("shuffle_id", "u32"), F("decks", "u8", 1, 10)),
    _m(
        0x41,
        "shuffle_complete",
        "shuffler",
        False,
        F("shuffle_id", "u32"),
        F("decks", "u8", 1, 10),
        F("inventory", "u8[52]", 0, 20),
        F("foreign_cards", "u16"),
        F("rng_ok", "bool"),
        F("commitment", "bytes[32]"),
    ),
    _m(
        0x42,
        "order_chunk",
        "shuffler",
        False,
        F("shuffle_id", "u32"),
        F("offset", "u16", 0, 519),
        F("total", "u16", 1, 520),
        F("nonce", "bytes[16]"),
        F("cards", "card[]"),
    ),
    _m(
        0x43,
        "inventory_reply",
        "shuffler",
        False,
        TAG,
        F("inventory", "u8[52]", 0, 20),
        F("foreign_cards", "u16"),
    ),
    _m(0x50, "start_shuffle", "shuffler", True, TAG, F("decks", "u8", 1, 10)),
    _m(0x51, "inventory", "shuffler", True, TAG),
    _m(0x52, "request_order", "shuffler", True, TAG, F("shuffle_id", "u32")),
    _m(0x60, "activated", "tumbler", False, F("source", "u8", 1, 2), F("armed", "bool")),
    _m(0x61, "tumble", "tumbler", False, F("count", "u8", 1, 255)),
    _m(
        0x62,
        "settled",
        "tumbler",
        False,
        F("dice", "u8[3]", 0, 6),
        F("tilt", "u16[3]", 0, 900),
        F("flat", "u8[3]", 0, 1),
        F("confidence", "u8", 0, 100),
    ),
    _m(0x70, "arm", "tumbler", True, TAG, F("armed", "bool")),
    _m(0x71, "tumble_now", "tumbler", True, TAG),
)
BY_ID = {m.id: m for m in CATALOGUE}
BY_NAME = {m.name: m for m in CATALOGUE}

Value = int | bool | str | bytes | tuple[int, ...] | tuple[str, ...]
_INT = {"u8": 1, "u16": 2, "u32": 4, "u64": 8}


def _array(t: str) -> tuple[str, int] | None:
    """('u8', 52) for 'u8[52]'; None for other types (card[] has a count)."""
    if t.endswith("]") and "[" in t and not t.endswith("[]"):
        base, n = t[:-1].split("[")
        return base, int(n)
    return None


def _card_bytes(code: str) -> bytes:
    raw = code.encode("ascii")
    if len(raw) != 2 or not all(0x21 <= b <= 0x7E for b in raw):
        raise ValueError(f"card {code!r}")
    return raw


def encode_value(t: str, v: Value) -> bytes:
    if t in _INT:
        assert isinstance(v, int)
        return int(v).to_bytes(_INT[t], "big")
    if t == "bool":
        return bytes([1 if v else 0])
    if t == "str":
        assert isinstance(v, str)
        raw = v.encode("utf-8")
        if len(raw) > 64:
            raise ValueError("str over 64 bytes")
        return bytes([len(raw)]) + raw
    if t == "card":
        assert isinstance(v, str)
        return _card_bytes(v)
    if t == "card[]":
        assert isinstance(v, tuple)
        if len(v) > 100:
            raise ValueError("card[] over 100")
        return bytes([len(v)]) + b"".join(_card_bytes(str(c)) for c in v)
    arr = _array(t)
    assert arr is not None, t
    base, n = arr
    if base == "bytes":
        assert isinstance(v, bytes) and len(v) == n
        return v
    assert isinstance(v, tuple) and len(v) == n
    return b"".join(int(x).to_bytes(_INT[base], "big") for x in v)


def _take(data: bytes, at: int, n: int) -> bytes:
    if at + n > len(data):
        raise InvalidMessageError("payload shorter than its fields")
    return data[at : at + n]


def _card(raw: bytes) -> str:
    if not all(0x21 <= b <= 0x7E for b in raw):
        raise InvalidMessageError(f"card byte outside 0x21-0x7E: {raw.hex()}")
    return raw.decode("ascii")


def decode_value(t: str, data: bytes, at: int) -> tuple[Value, int]:
    if t in _INT:
        return int.from_bytes(_take(data, at, _INT[t]), "big"), at + _INT[t]
    if t == "bool":
        b = _take(data, at, 1)[0]
        if b > 1:
            raise InvalidMessageError(f"bool of {b}")
        return b == 1, at + 1
    if t == "str":
        n = _take(data, at, 1)[0]
        if n > 64:
            raise InvalidMessageError(f"str of {n} bytes")
        try:
            return _take(data, at + 1, n).decode("utf-8"), at + 1 + n
        except UnicodeDecodeError as e:
            raise InvalidMessageError("bad UTF-8") from e
    if t == "card":
        return _card(_take(data, at, 2)), at + 2
    if t == "card[]":
        n = _take(data, at, 1)[0]
        if n > 100:
            raise InvalidMessageError(f"card[] of {n}")
        raw = _take(data, at + 1, 2 * n)
        return tuple(_card(raw[i : i + 2]) for i in range(0, 2 * n, 2)), at + 1 + 2 * n
    arr = _array(t)
    assert arr is not None, t
    base, n = arr
    if base == "bytes":
        return _take(data, at, n), at + n
    size = _INT[base]
    raw = _take(data, at, size * n)
    return tuple(
        int.from_bytes(raw[i : i + size], "big") for i in range(0, size * n, size)
    ), at + size * n


def encode_message(m: Message, values: dict[str, Value]) -> bytes:
    return b"".join(encode_value(f.type, values[f.name]) for f in m.fields)


@dataclass(frozen=True)
class Decoded:
    message: Message
    values: dict[str, Value]
    out_of_range: tuple[str, ...]  # fields outside their values: a firmware fault


def _in_range(f: Field, v: Value) -> bool:
    if f.card_or_unread:
        return v in CARDS or v == "??"
    if f.lo is None or f.hi is None:
        return True
    items = v if isinstance(v, tuple) else (v,)
    return all(isinstance(x, int) and f.lo <= x <= f.hi for x in items)


def decode_message(msg_id: int, payload: bytes) -> Decoded:
    """Decoded field by field; bytes after the last known field are ignored."""
    m = BY_ID.get(msg_id)
    if m is None:
        raise InvalidMessageError(f"unknown MSG 0x{msg_id:02x}")
    values: dict[str, Value] = {}
    at = 0
    for f in m.fields:
        values[f.name], at = decode_value(f.type, payload, at)
    bad = tuple(f.name for f in m.fields if not _in_range(f, values[f.name]))
    return Decoded(m, values, bad)


def data_frame(
    ver: int,
    m: Message,
    values: dict[str, Value],
    *,
    seq: int = 0,
    ack: int = 0,
    sess: int | None = None,
    stamp: Stamp | None = None,
) -> bytes:
    """A DATA frame; version 3 puts the stamp before the fields."""
    body = encode_message(m, values)
    if ver == 3:
        if stamp is None:
            raise ValueError("a version 3 DATA frame needs a stamp")
        body = stamp.encode() + body
    return encode_frame(Frame(ver, DATA, seq, ack, m.id, sess, body))


def decode_data(f: Frame) -> tuple[Stamp | None, Decoded]:
    if f.kind != DATA:
        raise InvalidMessageError(f"not DATA: {f}")
    if f.ver == 3:
        return Stamp.decode(f.payload), decode_message(f.msg, f.payload[STAMP_LEN:])
    return None, decode_message(f.msg, f.payload)


# --- Shuffle commitment (shuffle_complete) -------------------------------------------


def commitment(
    shuffle_id: int, nonce: bytes, order: Sequence[str], decks: int | None = None
) -> bytes:
    """Version 3 (decks given): SHA-256 over shuffle_id u32, decks u8, total u16, nonce,
    the cards; versions 1 and 2: without decks and total."""
    head = shuffle_id.to_bytes(4, "big")
    if decks is not None:
        head += bytes([decks]) + len(order).to_bytes(2, "big")
    return hashlib.sha256(head + nonce + b"".join(_card_bytes(c) for c in order)).digest()


def device_answer(device: str, msg_id: int, payload: bytes) -> int | None:
    """Spec, "Commands a device does not carry out": the command_result a `device` answers
    at once: 1 for another device's command, 2 for a value outside the command's values;
    None when it answers nothing (a MSG in no spec, a device's message, or an invalid
    payload). ValueError: its own command in range, which its state decides."""
    m = BY_ID.get(msg_id)
    if m is None or not m.to_device:
        return None
    try:
        d = decode_message(msg_id, payload)
    except InvalidMessageError:
        return None
    if m.device not in ("common", device):
        return 1
    if d.out_of_range:
        return 2
    raise ValueError(f"{m.name} is the {device}'s own command")


class Reveal:
    """The host's side of a reveal: each card placed at its position; a repeat changes
    nothing; another card, nonce or total at a position already held is a contradiction."""

    def __init__(self, shuffle_id: int, decks: int, committed: bytes) -> None:
        self.shuffle_id, self.decks, self.committed = shuffle_id, decks, committed
        self.cards: dict[int, str] = {}
        self.nonce: bytes | None = None
        self.total: int | None = None
        self.contradiction = False

    def chunk(self, v: dict[str, Value]) -> None:
        nonce, total, offset, cards = v["nonce"], v["total"], v["offset"], v["cards"]
        assert isinstance(nonce, bytes) and isinstance(total, int) and isinstance(offset, int)
        assert isinstance(cards, tuple)
        if v["shuffle_id"] != self.shuffle_id:
            return
        if (self.nonce not in (None, nonce)) or (self.total not in (None, total)):
            self.contradiction = True
        self.nonce, self.total = nonce, total
        for i, card in enumerate(cards):
            pos = offset + i
            if self.cards.setdefault(pos, str(card)) != card or pos >= total:
                self.contradiction = True

    def verified(self, version: int) -> bool:
        """The host binds itself: total is decks x 52, the order is decks of each card,
        complete, and matches the commitment of the session's version."""
        if self.contradiction or self.nonce is None or self.total != self.decks * 52:
            return False
        if sorted(self.cards) != list(range(self.total)):
            return False
        order = [self.cards[i] for i in range(self.total)]
        if any(order.count(c) != self.decks for c in CARDS):
            return False
        decks = self.decks if version == 3 else None
        return commitment(self.shuffle_id, self.nonce, order, decks) == self.committed
