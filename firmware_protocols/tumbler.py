"""The dice tumbler (RS-232 serial). Spec: tumbler.md."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from firmware_protocols.common import ANY, COMMON, FLAG, between, limits
from firmware_protocols.wire import (
    BOOL,
    U8,
    Catalogue,
    Message,
    message,
    u8_array,
    u16_array,
    wire,
)

# Tai Sai 3.8: "The dice must rest flat". The firmware sets a die's flat flag when its tilt
# is at most this many tenths of a degree; the controller also checks the tilt itself.
FLAT_TILT_LIMIT_DECIDEG = 50


class TumblerFault(IntEnum):
    MOTOR = 0x0301
    DOME_OPEN = 0x0302
    CAMERA = 0x0303
    DICE_UNREADABLE = 0x0304


@limits(source=between(1, 2), armed=ANY)
@message(0x60, "activated", "device")
@dataclass(frozen=True)
class Activated(Message):
    """The tumbler started (dealer button or tumble command)."""

    source: int = wire(U8, "1 dealer button, 2 tumble command")
    armed: bool = wire(BOOL, "whether the tumbler was armed when activated")


@limits(count=between(1, 255))
@message(0x61, "tumble", "device")
@dataclass(frozen=True)
class Tumble(Message):
    """One tumble of the dome completed."""

    count: int = wire(U8, "tumbles since activation, 1, 2, 3, ...")


@limits(dice=between(0, 6), tilt=between(0, 900), flat=FLAG, confidence=between(0, 100))
@message(0x62, "settled", "device")
@dataclass(frozen=True)
class Settled(Message):
    """The dice came to rest and were read."""

    dice: tuple[int, ...] = wire(u8_array(3, "three values 1-6, 0 if unreadable"), "the dice")
    tilt: tuple[int, ...] = wire(u16_array(3, "tilt of each die from flat, in tenths of a "
                                              "degree"), "per-die tilt")
    flat: tuple[int, ...] = wire(u8_array(3, "1 if the die rests flat, else 0"), "flat flags")
    confidence: int = wire(U8, "recognition confidence, percent (0-100)")


@limits(tag=ANY, armed=ANY)
@message(0x70, "arm", "host")
@dataclass(frozen=True)
class Arm(Message):
    """Arm (allow activation) or disarm. Answered by command_result."""

    tag: int = wire(U8, "echoed in command_result")
    armed: bool = wire(BOOL, "true to arm")


@limits(tag=ANY)
@message(0x71, "tumble_now", "host")
@dataclass(frozen=True)
class TumbleNow(Message):
    """Activate the tumbler (it must be armed). Answered by command_result, then activated."""

    tag: int = wire(U8, "echoed in command_result")


TUMBLER_MESSAGES: tuple[type[Message], ...] = (Activated, Tumble, Settled, Arm, TumbleNow)
CATALOGUE = Catalogue("tumbler", COMMON, TUMBLER_MESSAGES)
FAULTS = TumblerFault
