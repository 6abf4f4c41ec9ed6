"""The shared byte vectors (firmware_protocols/vectors.txt), which the C reference device's
tests read too: each is checked here against the Python codec, with CRCs recomputed bit by
bit and message fields parsed from their text, not from the codec's own objects."""

from __future__ import annotations

import hashlib
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from firmware_protocols import common, shoe, shuffler, spec, tumbler
from firmware_protocols.framing import DecodeError, Decoder, Frame, Kind
from firmware_protocols.wire import Catalogue
from tests.unit.protocols.crcs import bitwise_crc, bitwise_crc32

ROOT = Path(__file__).resolve().parents[3]
LINES = [line.split(" ") for line in
         (ROOT / "firmware_protocols" / "vectors.txt").read_text(encoding="utf-8").splitlines()
         if line and not line.startswith("#")]
CATALOGUES: dict[str, Catalogue] = {"common": shoe.CATALOGUE, "shoe": shoe.CATALOGUE,
                                    "shuffler": shuffler.CATALOGUE,
                                    "tumbler": tumbler.CATALOGUE}


def of(kind: str) -> list[list[str]]:
    return [t[1:] for t in LINES if t[0] == kind]


def test_the_vectors_file_is_up_to_date() -> None:
    assert (ROOT / "firmware_protocols" / "vectors.txt").read_text(encoding="utf-8") == \
        spec.render_vectors(), "run 'tabled protocols docs'"


def test_every_message_has_a_vector() -> None:
    names = {t[2] for t in of("msg")}
    every = {cls.NAME for cls in (*common.COMMON, *shoe.SHOE_MESSAGES,
                                  *shuffler.SHUFFLER_MESSAGES, *tumbler.TUMBLER_MESSAGES)}
    assert names == every


@pytest.mark.parametrize("t", of("crc"), ids=lambda t: f"{t[0]}-{len(t[1]) // 2}")
def test_crc_vectors(t: list[str]) -> None:
    fn = bitwise_crc if t[0] == "crc16" else bitwise_crc32
    assert fn(bytes.fromhex(t[1])) == int(t[2], 16)


@pytest.mark.parametrize("t", of("frame"), ids=lambda t: t[-1][:24])
def test_frame_vectors(t: list[str]) -> None:
    version, kind, seq, ack, msg, sess = map(int, t[:6])
    payload = b"" if t[6] == "-" else bytes.fromhex(t[6])
    frame = Frame(Kind(kind), seq, ack, msg, payload, version, sess)
    assert frame.to_bytes().hex() == t[7]
    assert Decoder().feed(bytes.fromhex(t[7])) == [frame]


def parse_value(token: str) -> tuple[str, Any]:
    type_name, _, text = token.partition(":")
    if type_name == "str":
        return type_name, "" if text == "-" else bytes.fromhex(text).decode("utf-8")
    if type_name == "card[]":
        return type_name, () if text == "-" else tuple(text[i:i + 2]
                                                       for i in range(0, len(text), 2))
    if type_name == "card":
        return type_name, text
    if type_name.startswith("u16["):
        return type_name, tuple(int(v) for v in text.split(","))
    if type_name.startswith("u8["):
        return type_name, tuple(bytes.fromhex(text))
    if type_name.startswith("bytes["):
        return type_name, bytes.fromhex(text)
    if type_name == "bool":
        return type_name, text == "1"
    return type_name, int(text)


@pytest.mark.parametrize("t", of("msg"), ids=lambda t: t[2])
def test_message_vectors(t: list[str]) -> None:
    device, msg_id, name = t[0], int(t[1], 16), t[2]
    eq = t.index("=")
    payload = b"" if t[eq + 1] == "-" else bytes.fromhex(t[eq + 1])
    message = CATALOGUES[device].decode(msg_id, payload)
    assert name == message.NAME
    parsed = [parse_value(tok) for tok in t[3:eq]]
    assert [(f.metadata["wire"].name, getattr(message, f.name)) for f in fields(message)] \
        == parsed
    assert message.to_bytes() == payload
    for version, hexed in ((1, t[eq + 2]), (2, t[eq + 3])):
        frame = Frame.from_bytes(bytes.fromhex(hexed))
        assert (frame.version, frame.kind, frame.msg, frame.payload) == (
            version, Kind.DATA, msg_id, payload)


@pytest.mark.parametrize("t", of("stream"), ids=lambda t: t[0][:16])
def test_stream_vectors(t: list[str]) -> None:
    out = Decoder().feed(bytes.fromhex(t[0]))
    frames = [f.to_bytes().hex() for f in out if not isinstance(f, DecodeError)]
    assert frames == ([] if t[1] == "-" else t[1].split(","))


def test_commitment_vector() -> None:
    (sid, nonce, cards, digest), = of("commit")
    data = int(sid).to_bytes(4, "big") + bytes.fromhex(nonce) + "".join(
        cards.split(",")).encode("ascii")
    assert hashlib.sha256(data).hexdigest() == digest
    assert shuffler.commitment(int(sid), bytes.fromhex(nonce), cards.split(",")).hex() == digest


@pytest.mark.parametrize("t", of("commit3"), ids=lambda t: f"{t[0]}-{t[1]}")
def test_commitment_v3_vectors(t: list[str]) -> None:
    """Version 3 binds the decks and the total: the bytes, laid out here from the spec's
    words, not from commitment_v3."""
    sid, decks, nonce, cards, digest = t
    order = cards.split(",")
    data = (int(sid).to_bytes(4, "big") + int(decks).to_bytes(1, "big")
            + len(order).to_bytes(2, "big") + bytes.fromhex(nonce)
            + "".join(order).encode("ascii"))
    assert hashlib.sha256(data).hexdigest() == digest
    assert shuffler.commitment_v3(int(sid), int(decks), bytes.fromhex(nonce), order).hex() \
        == digest
    assert shuffler.commitment_for(3, int(sid), int(decks), bytes.fromhex(nonce), order) \
        .hex() == digest
    # A version 2 session keeps v2's commitment, which does not bind the decks.
    assert shuffler.commitment_for(2, int(sid), int(decks), bytes.fromhex(nonce), order) \
        == shuffler.commitment(int(sid), bytes.fromhex(nonce), order) != bytes.fromhex(digest)


def test_sha256_vectors_are_fips_180_4() -> None:
    """The FIPS 180-4 examples the C device's SHA-256 is tested with."""
    got = {m: d for m, d in of("sha256")}
    assert got["616263"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert got["a*1000000"] == \
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    assert len(got) == 4
