"""Payload fields and messages. A message is a frozen dataclass whose fields name their wire type.

    @message(0x20, "card_drawn", "device")
    @dataclass(frozen=True)
    class CardDrawn(Message):
        draw_no: int = wire(U16, "draws since the shoe was loaded")

to_bytes()/from_bytes() follow the field order. The same definitions generate the
Markdown specs, so code and documentation cannot disagree.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar


class MessageError(ValueError):
    """A payload that does not match its message's layout."""


@dataclass(frozen=True, slots=True)
class WireType:
    name: str
    size: str  # for the spec: "1", "2", "1+n", ...
    doc: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes, int], tuple[Any, int]]  # (data, offset) -> (value, new offset)


def _need(data: bytes, pos: int, n: int, what: str) -> None:
    if len(data) - pos < n:
        raise MessageError(f"{what} needs {n} byte(s) at offset {pos}, payload has {len(data)}")


def _uint(fmt: str, name: str, bits: int) -> WireType:
    size = struct.calcsize(fmt)

    def enc(v: Any) -> bytes:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << bits:
            raise MessageError(f"{v!r} is not a {name}")
        return struct.pack(fmt, v)

    def dec(data: bytes, pos: int) -> tuple[Any, int]:
        _need(data, pos, size, name)
        return struct.unpack_from(fmt, data, pos)[0], pos + size

    return WireType(name, str(size), f"unsigned, big-endian, {bits} bits", enc, dec)


U8 = _uint(">B", "u8", 8)
U16 = _uint(">H", "u16", 16)
U32 = _uint(">I", "u32", 32)
U64 = _uint(">Q", "u64", 64)


def _bool_enc(v: Any) -> bytes:
    if not isinstance(v, bool):
        raise MessageError(f"{v!r} is not a bool")
    return b"\x01" if v else b"\x00"


def _bool_dec(data: bytes, pos: int) -> tuple[Any, int]:
    _need(data, pos, 1, "bool")
    if data[pos] > 1:
        raise MessageError(f"bool at offset {pos} is {data[pos]}, not 0 or 1")
    return data[pos] == 1, pos + 1


BOOL = WireType("bool", "1", "0 = false, 1 = true; other values are an error", _bool_enc,
                _bool_dec)


def _str_enc(v: Any) -> bytes:
    if not isinstance(v, str):
        raise MessageError(f"{v!r} is not a string")
    raw = v.encode("utf-8")
    if len(raw) > 64:
        raise MessageError(f"string of {len(raw)} bytes exceeds 64")
    return bytes((len(raw),)) + raw


def _str_dec(data: bytes, pos: int) -> tuple[Any, int]:
    _need(data, pos, 1, "string length")
    n = data[pos]
    if n > 64:  # the spec's limit binds the receiver too: a longer one is invalid
        raise MessageError(f"string at offset {pos} has length {n}, over 64")
    _need(data, pos + 1, n, "string")
    try:
        return data[pos + 1:pos + 1 + n].decode("utf-8"), pos + 1 + n
    except UnicodeDecodeError as exc:
        raise MessageError(f"string at offset {pos} is not UTF-8: {exc.reason}") from None


STR = WireType("str", "1+n", "u8 length n (at most 64), then n bytes of UTF-8", _str_enc,
               _str_dec)


def _card_enc(v: Any) -> bytes:
    if not isinstance(v, str) or len(v) != 2 or not v.isascii():
        raise MessageError(f"{v!r} is not a two-character card code")
    return v.encode("ascii")


def _card_dec(data: bytes, pos: int) -> tuple[Any, int]:
    _need(data, pos, 2, "card")
    raw = data[pos:pos + 2]
    if not all(0x20 < b < 0x7F for b in raw):
        raise MessageError(f"card at offset {pos} is not printable ASCII: {raw.hex()}")
    return raw.decode("ascii"), pos + 2


CARD = WireType("card", "2", "two ASCII characters, rank then suit: A 2-9 T J Q K and S H D C "
                "(e.g. 'TD'). The protocol carries what the reader saw; the controller "
                "validates it", _card_enc, _card_dec)


def fixed_bytes(n: int) -> WireType:
    def enc(v: Any) -> bytes:
        if not isinstance(v, bytes) or len(v) != n:
            raise MessageError(f"expected exactly {n} bytes")
        return v

    def dec(data: bytes, pos: int) -> tuple[Any, int]:
        _need(data, pos, n, f"{n} bytes")
        return bytes(data[pos:pos + n]), pos + n

    return WireType(f"bytes[{n}]", str(n), f"{n} raw bytes", enc, dec)


def u8_array(n: int, doc: str) -> WireType:
    def enc(v: Any) -> bytes:
        if not isinstance(v, tuple) or len(v) != n:
            raise MessageError(f"expected a tuple of {n} values")
        return b"".join(U8.encode(x) for x in v)

    def dec(data: bytes, pos: int) -> tuple[Any, int]:
        _need(data, pos, n, f"u8[{n}]")
        return tuple(data[pos:pos + n]), pos + n

    return WireType(f"u8[{n}]", str(n), doc, enc, dec)


def u16_array(n: int, doc: str) -> WireType:
    def enc(v: Any) -> bytes:
        if not isinstance(v, tuple) or len(v) != n:
            raise MessageError(f"expected a tuple of {n} values")
        return b"".join(U16.encode(x) for x in v)

    def dec(data: bytes, pos: int) -> tuple[Any, int]:
        _need(data, pos, 2 * n, f"u16[{n}]")
        return struct.unpack_from(f">{n}H", data, pos), pos + 2 * n

    return WireType(f"u16[{n}]", str(2 * n), doc, enc, dec)


def _cards_enc(v: Any) -> bytes:
    if not isinstance(v, tuple) or len(v) > 100:
        raise MessageError("expected a tuple of at most 100 card codes")
    return bytes((len(v),)) + b"".join(CARD.encode(c) for c in v)


def _cards_dec(data: bytes, pos: int) -> tuple[Any, int]:
    _need(data, pos, 1, "card count")
    n, pos = data[pos], pos + 1
    if n > 100:  # the count's range is its encoding, as a str's 64: invalid, not clipped
        raise MessageError(f"card count {n} is over 100")
    cards = []
    for _ in range(n):
        c, pos = CARD.decode(data, pos)
        cards.append(c)
    return tuple(cards), pos


CARDS = WireType("card[]", "1+2n", "u8 count n (at most 100), then n cards", _cards_enc,
                 _cards_dec)


def wire(kind: WireType, doc: str, default: Any = MISSING) -> Any:
    return field(default=default, metadata={"wire": kind, "doc": doc})


@dataclass(frozen=True)
class Message:
    """Base of every message. Subclasses are registered with @message."""

    MSG_ID: ClassVar[int]
    NAME: ClassVar[str]
    SENDER: ClassVar[str]  # "host" or "device"
    DOC: ClassVar[str]
    # Version 3: whether it takes the next number (see the spec's "Event identity"). A
    # heartbeat or a direct answer carries the last one instead: it is state or a reply,
    # and a host that kept only events' numbers would take the gap for lost events.
    EVENT: ClassVar[bool] = True
    # The events a device sends only once it has carried this command out: when its
    # answer is lost, they tell whether it did (a command with none is never sent again).
    SHOWN_BY: ClassVar[tuple[type[Message], ...]] = ()

    def answered_by(self, reply: Message) -> bool:
        """Whether ``reply``, which carries no tag, answers this command (see the spec)."""
        return False

    def to_bytes(self) -> bytes:
        out = bytearray()
        for f in fields(self):
            try:
                out += f.metadata["wire"].encode(getattr(self, f.name))
            except MessageError as exc:
                raise MessageError(f"{self.NAME}.{f.name}: {exc}") from None
        return bytes(out)

    @classmethod
    def from_bytes(cls: type[M], payload: bytes) -> M:
        values: dict[str, Any] = {}
        pos = 0
        for f in fields(cls):
            try:
                values[f.name], pos = f.metadata["wire"].decode(payload, pos)
            except MessageError as exc:
                raise MessageError(f"{cls.NAME}.{f.name}: {exc}") from None
        # Bytes after the last known field are a newer peer's fields: ignored (the spec).
        return cls(**values)


M = TypeVar("M", bound=Message)


def message(msg_id: int, name: str, sender: str) -> Callable[[type[M]], type[M]]:
    def register(cls: type[M]) -> type[M]:
        cls.MSG_ID, cls.NAME, cls.SENDER = msg_id, name, sender
        cls.DOC = (cls.__doc__ or "").strip()
        return cls
    return register


class Catalogue:
    """The messages one device speaks, by id, for decoding."""

    def __init__(self, device: str, *groups: tuple[type[Message], ...]) -> None:
        self.device = device
        self.by_id: dict[int, type[Message]] = {}
        for group in groups:
            for cls in group:
                if cls.MSG_ID in self.by_id:
                    raise ValueError(f"{device}: message id 0x{cls.MSG_ID:02X} used twice")
                self.by_id[cls.MSG_ID] = cls

    def decode(self, msg_id: int, payload: bytes) -> Message:
        cls = self.by_id.get(msg_id)
        if cls is None:
            raise MessageError(f"{self.device}: unknown message id 0x{msg_id:02X}")
        return cls.from_bytes(payload)
