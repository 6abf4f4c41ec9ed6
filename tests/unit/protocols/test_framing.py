"""Framing: byte vectors fed whole, split and byte by byte; garbage; bad CRC; versions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_protocols.framing import (
    MAX_PAYLOAD,
    SOF,
    DecodeError,
    Decoder,
    Frame,
    FrameError,
    Kind,
    crc16,
)
from tests.unit.protocols.crcs import bitwise_crc, bitwise_crc32

# Vectors assembled by hand from the spec's table, checksummed by bitwise_crc below.
VECTORS = [
    (Frame(Kind.DATA, 1, 0, 0x20, b"hello"), "7e 01 00 01 00 20 05 47 68 65 6c 6c 6f 8b 35"),
    (Frame(Kind.ACK, 0, 5, 0, b""), "7e 01 01 00 05 00 00 11 b2 5a"),
    (Frame(Kind.RST, payload=bytes.fromhex("0000abcd")),
     "7e 01 03 00 00 00 04 e6 00 00 ab cd 84 c4"),
]


def test_crc16_ccitt_false_check_value() -> None:
    assert crc16(b"123456789") == bitwise_crc(b"123456789") == 0x29B1


@pytest.mark.parametrize(("frame", "hexed"), VECTORS)
def test_vector_checksums_are_right(frame: Frame, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert raw[7] == bitwise_crc(raw[1:7]) & 0xFF
    assert int.from_bytes(raw[-2:], "big") == bitwise_crc(raw[1:-2])


@pytest.mark.parametrize(("frame", "hexed"), VECTORS)
def test_vector_encodes_exactly(frame: Frame, hexed: str) -> None:
    assert frame.to_bytes().hex(" ") == hexed


def _frames(items: list[Frame | DecodeError]) -> list[Frame]:
    return [i for i in items if isinstance(i, Frame)]


@pytest.mark.parametrize(("frame", "hexed"), VECTORS)
def test_vector_decodes_whole_split_and_byte_by_byte(frame: Frame, hexed: str) -> None:
    data = bytes.fromhex(hexed)
    assert _frames(Decoder().feed(data)) == [frame]
    half = Decoder()
    assert half.feed(data[: len(data) // 2]) == []
    assert _frames(half.feed(data[len(data) // 2:])) == [frame]
    one = Decoder()
    got: list[Frame | DecodeError] = []
    for b in data:
        got += one.feed(bytes([b]))
    assert got == [frame]


def test_garbage_in_front_is_reported_and_skipped() -> None:
    frame = VECTORS[0][0]
    out = Decoder().feed(b"\x00\xff" + bytes([SOF]) + b"junk" + frame.to_bytes())
    assert _frames(out) == [frame]
    assert [e.reason for e in out if isinstance(e, DecodeError)] == ["garbage"]


def test_bad_crc_then_good_frame() -> None:
    good = VECTORS[0][0].to_bytes()
    bad = bytearray(good)
    bad[10] ^= 0x01
    out = Decoder().feed(bytes(bad) + good)
    assert _frames(out) == [VECTORS[0][0]]
    assert isinstance(out[0], DecodeError) and out[0].reason == "bad_crc"


def test_false_start_with_valid_header_does_not_stall_a_good_frame() -> None:
    """A garbage start byte whose header check passes by chance must not hold a frame back."""
    head = bytes([1, 0, 0, 0, 0, 200])
    fake = bytes([SOF]) + head + bytes([crc16(head) & 0xFF])
    good = VECTORS[0][0]
    assert _frames(Decoder().feed(fake + good.to_bytes())) == [good]


def test_truncated_frame_then_good_frame() -> None:
    good = VECTORS[0][0].to_bytes()
    out = Decoder().feed(good[:9] + good)
    assert _frames(out) == [VECTORS[0][0]]


def test_unsupported_version_is_reported_not_delivered() -> None:
    v9 = Frame(Kind.DATA, 0, 0, 0x20, b"x", version=9).to_bytes()
    out = Decoder().feed(v9 + VECTORS[0][0].to_bytes())
    assert isinstance(out[0], DecodeError) and out[0].reason == "unsupported_version"
    assert "version 9" in out[0].detail
    assert _frames(out) == [VECTORS[0][0]]


def test_unknown_kind_is_reported() -> None:
    body = bytes([1, 9, 0, 0, 0, 0])
    raw = bytes([SOF]) + body + bytes([crc16(body) & 0xFF])
    raw += crc16(raw[1:]).to_bytes(2, "big")
    out = Decoder().feed(raw)
    assert [e.reason for e in out if isinstance(e, DecodeError)] == ["bad_kind"]


@pytest.mark.parametrize("kwargs", [{"seq": 256}, {"msg": -1}, {"payload": bytes(MAX_PAYLOAD + 1)}])
def test_invalid_frames_cannot_be_built(kwargs: dict[str, object]) -> None:
    with pytest.raises(FrameError):
        Frame(Kind.DATA, **kwargs)  # type: ignore[arg-type]


def test_from_bytes_wants_exactly_one_frame() -> None:
    with pytest.raises(DecodeError, match="not_one_frame"):
        Frame.from_bytes(VECTORS[0][0].to_bytes() * 2)


frames = st.builds(Frame, st.sampled_from(list(Kind)), st.integers(0, 255), st.integers(0, 255),
                   st.integers(0, 255), st.binary(max_size=MAX_PAYLOAD))


@given(frames)
def test_round_trip(frame: Frame) -> None:
    assert _frames(Decoder().feed(frame.to_bytes())) == [frame]


@given(st.binary(max_size=2000), st.lists(st.integers(1, 50), max_size=20))
def test_arbitrary_bytes_never_crash(data: bytes, cuts: list[int]) -> None:
    d = Decoder()
    pos = 0
    for c in [*cuts, len(data)]:
        for item in d.feed(data[pos:pos + c]):
            assert isinstance(item, Frame | DecodeError)
        pos += c
    assert d.pending <= 2000


@given(st.lists(st.tuples(st.binary(max_size=40).map(lambda b: b.replace(bytes([SOF]), b"")),
                          frames), max_size=12),
       st.integers(1, 64))
def test_every_frame_is_recovered_after_garbage(pairs: list[tuple[bytes, Frame]],
                                                chunk: int) -> None:
    """Garbage without a start byte between frames never costs a frame, however it is split."""
    stream = b"".join(g + f.to_bytes() for g, f in pairs)
    d = Decoder()
    got: list[Frame] = []
    for i in range(0, len(stream), chunk):
        got += _frames(d.feed(stream[i:i + chunk]))
    assert got == [f for _, f in pairs]


def test_a_frame_inside_a_payload_does_not_replace_its_frame_arriving_in_two_reads() -> None:
    """The look-ahead took a valid frame hidden in a payload (here an ACK) for the real
    one while the outer frame was still arriving; the false ACK then acknowledged frames
    in flight. A candidate is now given its line time before anything after it counts."""
    inner = Frame(Kind.ACK, ack=7).to_bytes()
    outer = Frame(Kind.DATA, 3, 0, 0x20, b"ab" + inner + b"cd")
    raw = outer.to_bytes()
    cut = raw.index(inner) + len(inner) + 1
    d = Decoder()
    first = d.feed(raw[:cut], now=10.0)
    second = d.feed(raw[cut:], now=10.002)
    assert first == [] and second == [outer]


def test_a_false_start_is_given_up_after_its_line_time_for_the_frame_behind_it() -> None:
    head = bytes([1, 0, 0, 0, 0, 200])
    fake = bytes([SOF]) + head + bytes([crc16(head) & 0xFF])
    good = VECTORS[0][0]
    d = Decoder()
    assert d.feed(fake + good.to_bytes(), now=0.0) == []
    deadline = d.next_deadline()
    assert deadline is not None and deadline <= 0.0 + 263 * 10 / 115200 + 0.05
    assert d.poll(deadline - 0.001) == []
    assert _frames(d.poll(deadline)) == [good]


# Version 2: the same header, then SESS, and CRC-32 (ISO-HDLC) over VER..PAYLOAD.
V2_VECTORS = [
    (Frame(Kind.DATA, 1, 0, 0x20, b"hello", version=2, sess=0x5A),
     "7e 02 00 01 00 20 05 a7 5a 68 65 6c 6c 6f bb 9c 37 24"),
    (Frame(Kind.ACK, 0, 5, 0, b"", version=2, sess=0x5A), "7e 02 01 00 05 00 00 f1 5a cf 89 34 c6"),
]


@pytest.mark.parametrize(("frame", "hexed"), V2_VECTORS)
def test_v2_vector_checksums_encoding_and_decoding(frame: Frame, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert bitwise_crc32(b"123456789") == 0xCBF43926
    assert raw[7] == bitwise_crc(raw[1:7]) & 0xFF
    assert int.from_bytes(raw[-4:], "big") == bitwise_crc32(raw[1:-4])
    assert frame.to_bytes().hex(" ") == hexed
    assert _frames(Decoder().feed(raw)) == [frame]


def test_a_v2_frame_with_one_bit_flipped_is_rejected() -> None:
    raw = bytearray(V2_VECTORS[0][0].to_bytes())
    for i in range(1, len(raw)):
        for bit in range(8):
            raw[i] ^= 1 << bit
            assert _frames(Decoder().feed(bytes(raw))) == []
            raw[i] ^= 1 << bit
