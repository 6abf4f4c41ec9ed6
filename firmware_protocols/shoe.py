"""The card-reading dealing shoe (RS-232 or USB-CDC serial). Spec: shoe.md."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from firmware_protocols.common import ANY, CARD_CODES, COMMON, between, limits, one_of
from firmware_protocols.wire import (
    BOOL,
    CARD,
    U8,
    U16,
    U32,
    U64,
    Catalogue,
    Message,
    message,
    wire,
)

MAX_DRAW_NO = 520  # ten decks: the most cards a shoe can hold


class ShoeFault(IntEnum):
    READER_FAILURE = 0x0101
    CARD_JAM = 0x0102
    TAMPER = 0x0103
    UNREADABLE_CARD = 0x0104


@limits(draw_no=between(1, MAX_DRAW_NO), card=one_of(CARD_CODES), confidence=between(0, 100),
        deck_set=ANY, double_draw=ANY, face_up=ANY)
@message(0x20, "card_drawn", "device")
@dataclass(frozen=True)
class CardDrawn(Message):
    """A card left the shoe past the reader."""

    draw_no: int = wire(U16, "1 for the first card after shoe_loaded, then counting up")
    card: str = wire(CARD, "the card read, e.g. 'TD'; '??' if unreadable")
    confidence: int = wire(U8, "reader confidence, percent (0-100)")
    deck_set: int = wire(U32, "deck-set id read from the card back")
    double_draw: bool = wire(BOOL, "the double-draw sensor saw two cards leave together")
    face_up: bool = wire(BOOL, "the card left the shoe face up")


@limits(cards=between(1, MAX_DRAW_NO), deck_set=ANY)
@message(0x21, "shoe_loaded", "device")
@dataclass(frozen=True)
class ShoeLoaded(Message):
    """A new shoe of cards was loaded and the gate closed."""

    cards: int = wire(U16, "cards counted in the shoe")
    deck_set: int = wire(U32, "deck-set id read from the card backs")


@limits(draw_no=between(0, MAX_DRAW_NO))
@message(0x22, "cut_card", "device")
@dataclass(frozen=True)
class CutCard(Message):
    """The cut card reached the gate (MBS 3.22: finish the round, then end the shoe)."""

    draw_no: int = wire(U16, "cards drawn before the cut card")


@limits(draw_no=between(0, MAX_DRAW_NO))
@message(0x23, "shoe_empty", "device")
@dataclass(frozen=True)
class ShoeEmpty(Message):
    """No cards remain."""

    draw_no: int = wire(U16, "cards drawn in this shoe")


@limits(button=between(1, 2))
@message(0x24, "dealer_button", "device")
@dataclass(frozen=True)
class DealerButton(Message):
    """The dealer pressed a button on the shoe."""

    button: int = wire(U8, "1 primary, 2 secondary")


@limits(sensor=between(1, 3))
@message(0x25, "tamper", "device")
@dataclass(frozen=True)
class Tamper(Message):
    """A tamper sensor tripped."""

    sensor: int = wire(U8, "1 cover, 2 reader window, 3 mounting")


@limits(locked=ANY)
@message(0x26, "gate", "device")
@dataclass(frozen=True)
class Gate(Message):
    """The card gate locked or unlocked (after lock_gate, or by the dealer key)."""

    locked: bool = wire(BOOL, "true when locked")


@limits(tag=ANY, locked=ANY)
@message(0x30, "lock_gate", "host")
@dataclass(frozen=True)
class LockGate(Message):
    """Lock or unlock the card gate. Answered by command_result, then a gate event."""

    tag: int = wire(U8, "echoed in command_result")
    locked: bool = wire(BOOL, "true to lock")


@limits(tag=ANY, unix_ms=ANY)
@message(0x31, "set_clock", "host")
@dataclass(frozen=True)
class SetClock(Message):
    """Set the device clock. Answered by command_result."""

    tag: int = wire(U8, "echoed in command_result")
    unix_ms: int = wire(U64, "milliseconds since 1970-01-01 UTC")


SHOE_MESSAGES: tuple[type[Message], ...] = (CardDrawn, ShoeLoaded, CutCard, ShoeEmpty,
                                            DealerButton, Tamper, Gate, LockGate, SetClock)
CATALOGUE = Catalogue("shoe", COMMON, SHOE_MESSAGES)
FAULTS = ShoeFault
