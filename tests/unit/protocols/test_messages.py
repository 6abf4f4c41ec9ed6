"""Message payloads: round trips, and clear errors for every malformed payload."""

from __future__ import annotations

import contextlib
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_protocols import shoe, shuffler, tumbler
from firmware_protocols.endpoint import decode_frame_bytes
from firmware_protocols.examples import EXAMPLES
from firmware_protocols.wire import Message, MessageError, WireType

CATALOGUES = {"shoe": shoe.CATALOGUE, "shuffler": shuffler.CATALOGUE,
              "tumbler": tumbler.CATALOGUE}
ALL = sorted({cls for c in CATALOGUES.values() for cls in c.by_id.values()},
             key=lambda c: c.MSG_ID)

CARD_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def strategy(wt: WireType) -> st.SearchStrategy[Any]:
    name = wt.name
    if name.startswith("u") and "[" not in name:
        return st.integers(0, (1 << int(name[1:])) - 1)
    if name == "bool":
        return st.booleans()
    if name == "str":
        return st.text(max_size=16)
    if name == "card":
        return st.text(CARD_CHARS, min_size=2, max_size=2)
    if name == "card[]":
        return st.lists(st.text(CARD_CHARS, min_size=2, max_size=2), max_size=100).map(tuple)
    if name.startswith("bytes["):
        n = int(name[6:-1])
        return st.binary(min_size=n, max_size=n)
    if name.startswith("u8["):
        n = int(name[3:-1])
        return st.lists(st.integers(0, 255), min_size=n, max_size=n).map(tuple)
    if name.startswith("u16["):
        n = int(name[4:-1])
        return st.lists(st.integers(0, 65535), min_size=n, max_size=n).map(tuple)
    raise AssertionError(name)


def messages(cls: type[Message]) -> st.SearchStrategy[Message]:
    return st.builds(cls, **{f.name: strategy(f.metadata["wire"]) for f in fields(cls)})


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.NAME)
@given(data=st.data())
def test_round_trip(cls: type[Message], data: st.DataObject) -> None:
    m = data.draw(messages(cls))
    assert cls.from_bytes(m.to_bytes()) == m


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.NAME)
def test_truncated_payload_is_a_clear_error(cls: type[Message]) -> None:
    payload = EXAMPLES[cls].to_bytes()
    if not payload:
        return
    with pytest.raises(MessageError, match=cls.NAME):
        cls.from_bytes(payload[:-1])


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.NAME)
def test_trailing_bytes_are_accepted_and_ignored(cls: type[Message]) -> None:
    """Forward compatibility (the spec's rule): a newer peer may append fields; a receiver
    decodes the fields it knows and ignores the rest. They were rejected, so no field
    could ever be added."""
    assert cls.from_bytes(EXAMPLES[cls].to_bytes() + b"\x00\x07new") == EXAMPLES[cls]


@given(st.integers(0, 255), st.binary(max_size=250))
def test_arbitrary_payloads_only_raise_message_error(msg_id: int, payload: bytes) -> None:
    for catalogue in CATALOGUES.values():
        with contextlib.suppress(MessageError):
            catalogue.decode(msg_id, payload)


def test_bad_bool_string_and_card_are_named() -> None:
    with pytest.raises(MessageError, match=r"gate\.locked: bool at offset 0 is 2"):
        shoe.Gate.from_bytes(b"\x02")
    with pytest.raises(MessageError, match="not UTF-8"):
        shoe.CATALOGUE.decode(0x06, b"\x01\x02\x01\xff")
    with pytest.raises(MessageError, match=r"card_drawn\.card: card at offset 2 is not printable"):
        shoe.CardDrawn.from_bytes(b"\x00\x01\x00\x01" + bytes(8))


def test_unknown_message_id_is_named() -> None:
    with pytest.raises(MessageError, match="tumbler: unknown message id 0x20"):
        tumbler.CATALOGUE.decode(0x20, b"")


def test_invalid_values_cannot_be_encoded() -> None:
    with pytest.raises(MessageError, match="draw_no"):
        shoe.CardDrawn(70000, "TD", 1, 1, False, False).to_bytes()


def test_shuffler_commitment_binds_order_nonce_and_id() -> None:
    order = ("AS", "KD", "7C")
    c = shuffler.commitment(1, bytes(16), order)
    assert c != shuffler.commitment(2, bytes(16), order)
    assert c != shuffler.commitment(1, bytes(15) + b"\x01", order)
    assert c != shuffler.commitment(1, bytes(16), ("KD", "AS", "7C"))
    assert len(c) == 32


def test_inventory_order_is_52_distinct_cards() -> None:
    assert len(set(shuffler.INVENTORY_ORDER)) == 52
    assert shuffler.inventory_of(["AS", "AS", "KC", "??"])[0] == 2


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.NAME)
def test_spec_example_frames_decode_to_their_example(cls: type[Message]) -> None:
    from firmware_protocols.framing import Frame, Kind  # noqa: PLC0415

    example = EXAMPLES[cls]
    raw = Frame(Kind.DATA, 0, 0, cls.MSG_ID, example.to_bytes()).to_bytes()
    device = next(n for n, c in CATALOGUES.items() if cls in c.by_id.values())
    assert decode_frame_bytes(CATALOGUES[device], raw) == example
