"""The electronic card shuffler (USB, vendor bulk endpoints 0x01 / 0x81). Spec: shuffler.md."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from firmware_protocols.common import ANY, COMMON, between, limits
from firmware_protocols.wire import (
    BOOL,
    CARDS,
    U8,
    U16,
    U32,
    Catalogue,
    Message,
    fixed_bytes,
    message,
    u8_array,
    wire,
)

USB_VID = 0x1D50  # see shuffler.md: configure the real device's ids in the rig description
USB_PID = 0x6178
EP_OUT = 0x01
EP_IN = 0x81

SUITS = "SHDC"
RANKS = "A23456789TJQK"
# Inventory order: suit-major, S H D C, each A 2 3 ... 9 T J Q K.
INVENTORY_ORDER: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)


class ShufflerFault(IntEnum):
    JAM = 0x0201
    ELEVATOR = 0x0202
    RNG_SELF_CHECK_FAILED = 0x0203
    DOOR_OPENED_DURING_SHUFFLE = 0x0204
    CARD_COUNT_MISMATCH = 0x0205


def inventory_of(cards: Iterable[str]) -> tuple[int, ...]:
    """Counts per card in INVENTORY_ORDER; codes outside it are not counted here."""
    c = Counter(cards)
    return tuple(c[code] for code in INVENTORY_ORDER)


def commitment(shuffle_id: int, nonce: bytes, order: Iterable[str]) -> bytes:
    """SHA-256 over shuffle_id (u32 BE), the 16-byte nonce and the order as ASCII codes."""
    h = hashlib.sha256(shuffle_id.to_bytes(4, "big"))
    h.update(nonce)
    for card in order:
        h.update(card.encode("ascii"))
    return h.digest()


COMMITMENT_V3_FROM = 3
"""The protocol version from which a shuffler commits with ``commitment_v3``: the
session's version, agreed in RST/RSTACK, which both ends know before a shuffle starts."""


def commitment_v3(shuffle_id: int, decks: int, nonce: bytes, order: Iterable[str]) -> bytes:
    """SHA-256 over shuffle_id (u32 BE), decks (u8), total (u16 BE: the cards in the order),
    the 16-byte nonce and the order as ASCII codes. Unlike v2's, it binds the shoe the
    shuffler certifies (its decks and size), so the shuffler, not only the host, answers
    for a short order."""
    cards = tuple(order)
    h = hashlib.sha256(shuffle_id.to_bytes(4, "big") + decks.to_bytes(1, "big")
                       + len(cards).to_bytes(2, "big"))
    h.update(nonce)
    for card in cards:
        h.update(card.encode("ascii"))
    return h.digest()


def commitment_for(version: int, shuffle_id: int, decks: int, nonce: bytes,
                   order: Iterable[str]) -> bytes:
    """The commitment a shuffler speaking protocol ``version`` makes."""
    if version >= COMMITMENT_V3_FROM:
        return commitment_v3(shuffle_id, decks, nonce, order)
    return commitment(shuffle_id, nonce, order)


@limits(shuffle_id=ANY, decks=between(1, 10))
@message(0x40, "shuffle_started", "device")
@dataclass(frozen=True)
class ShuffleStarted(Message):
    """A shuffle began (by start_shuffle or the shuffler's own button)."""

    shuffle_id: int = wire(U32, "unique per shuffle; never reused by a device")
    decks: int = wire(U8, "decks being shuffled")


@limits(shuffle_id=ANY, decks=between(1, 10), inventory=between(0, 20),
        foreign_cards=ANY, rng_ok=ANY, commitment=ANY)
@message(0x41, "shuffle_complete", "device")
@dataclass(frozen=True)
class ShuffleComplete(Message):
    """The shuffle finished. The controller certifies the shoe from this message."""

    shuffle_id: int = wire(U32, "as in shuffle_started")
    decks: int = wire(U8, "decks shuffled")
    inventory: tuple[int, ...] = wire(u8_array(52, "count of each card, suit-major S H D C, "
                                               "ranks A 2-9 T J Q K"), "the cards shuffled")
    foreign_cards: int = wire(U16, "cards seen that are not of the set (other backs, jokers)")
    rng_ok: bool = wire(BOOL, "the shuffler's randomness self-check passed")
    commitment: bytes = wire(fixed_bytes(32), "SHA-256 of the shuffled order: version 3 "
                                              "over shuffle_id, decks, total, the nonce and "
                                              "the order; versions 1 and 2 without decks "
                                              "and total (below)")


@limits(shuffle_id=ANY, offset=between(0, 519), total=between(1, 520), nonce=ANY,
        cards=ANY)
@message(0x42, "order_chunk", "device")
@dataclass(frozen=True)
class OrderChunk(Message):
    """Part of a shuffled order, sent in answer to request_order (at most 100 cards each)."""

    shuffle_id: int = wire(U32, "the shuffle whose order this is")
    offset: int = wire(U16, "index of the first card of this chunk in the order")
    total: int = wire(U16, "cards in the whole order")
    nonce: bytes = wire(fixed_bytes(16), "the nonce of the commitment")
    cards: tuple[str, ...] = wire(CARDS, "cards, in shuffled order, from offset")


@limits(tag=ANY, inventory=between(0, 20), foreign_cards=ANY)
@message(0x43, "inventory_reply", "device")
@dataclass(frozen=True)
class InventoryReply(Message):
    """The cards now in the shuffler, in answer to inventory."""

    EVENT = False

    tag: int = wire(U8, "the tag of the inventory it answers")
    inventory: tuple[int, ...] = wire(u8_array(52, "as in shuffle_complete"), "counts")
    foreign_cards: int = wire(U16, "cards not of the set")


@limits(tag=ANY, decks=between(1, 10))
@message(0x50, "start_shuffle", "host")
@dataclass(frozen=True)
class StartShuffle(Message):
    """Shuffle this many decks. Answered by command_result, then shuffle_started/complete."""

    tag: int = wire(U8, "echoed in command_result")
    decks: int = wire(U8, "decks to shuffle")

    SHOWN_BY: ClassVar[tuple[type[Message], ...]] = (ShuffleStarted, ShuffleComplete)


@limits(tag=ANY)
@message(0x51, "inventory", "host")
@dataclass(frozen=True)
class Inventory(Message):
    """Count the cards now in the shuffler. Answered by inventory_reply."""

    tag: int = wire(U8, "echoed in inventory_reply")


@limits(tag=ANY, shuffle_id=ANY)
@message(0x52, "request_order", "host")
@dataclass(frozen=True)
class RequestOrder(Message):
    """Send a finished shuffle's order, after its shoe has ended. Answered by order_chunk(s),
    or command_result with result 3 (wrong state) for a shuffle unknown, still shuffling, or
    whose cards are still in the shuffler."""

    tag: int = wire(U8, "echoed in command_result on refusal")
    shuffle_id: int = wire(U32, "the shuffle whose order is wanted")

    def answered_by(self, reply: Message) -> bool:
        return isinstance(reply, OrderChunk) and reply.shuffle_id == self.shuffle_id


SHUFFLER_MESSAGES: tuple[type[Message], ...] = (ShuffleStarted, ShuffleComplete, OrderChunk,
                                                InventoryReply, StartShuffle, Inventory,
                                                RequestOrder)
CATALOGUE = Catalogue("shuffler", COMMON, SHUFFLER_MESSAGES)
FAULTS = ShufflerFault
