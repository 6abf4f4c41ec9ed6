"""Messages every device speaks (ids 0x01-0x1F). See each device's spec for the whole set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import IntEnum
from typing import Any, TypeVar

from firmware_protocols.wire import BOOL, STR, U8, U16, U32, Message, message, wire

# -- the documented range of every field, in both directions -------------------------------
# Declared once, with @limits beside each message's fields. The controller checks every
# device message against them at the boundary (daemon/drivers/device.py); a value outside
# is a journalled alert with the raw frame, never an exception. A device checks every host
# command against them first and refuses one outside with command_result 2 (bad argument).


@dataclass(frozen=True)
class Limit:
    """The values a field may take: ``lo``-``hi`` (each element, for arrays), or one of
    ``codes``; ``free``: every value its wire type can carry is meaningful."""

    lo: int = 0
    hi: int = 0
    codes: frozenset[str] = frozenset()
    free: bool = False

    def ok(self, value: Any) -> bool:
        if self.free:
            return True
        if self.codes:
            return value in self.codes
        items = value if isinstance(value, tuple) else (value,)
        return all(isinstance(v, int) and self.lo <= v <= self.hi for v in items)

    def describe(self) -> str:
        if self.free:
            return "any"
        if self.codes:
            return "one of " + " ".join(sorted(self.codes))
        return f"{self.lo}-{self.hi}"


def between(lo: int, hi: int) -> Limit:
    return Limit(lo, hi)


def one_of(codes: frozenset[str]) -> Limit:
    return Limit(codes=codes)


ANY = Limit(free=True)
FLAG = between(0, 1)
# A card as the reader reports it: rank then suit, or "??" when it could not read it.
CARD_CODES = frozenset(r + s for r in "A23456789TJQK" for s in "SHDC") | {"??"}
LIMITS: dict[type[Message], dict[str, Limit]] = {}
_M = TypeVar("_M", bound=type[Message])


def limits(**per_field: Limit) -> Callable[[_M], _M]:
    """Declare the range of each field of a device message (every field, or it fails)."""
    def register(cls: _M) -> _M:
        names = {f.name for f in fields(cls)}
        if set(per_field) != names:
            raise ValueError(f"{cls.__name__}: limits for {sorted(per_field)}, fields "
                             f"{sorted(names)}")
        LIMITS[cls] = dict(per_field)
        return cls
    return register


def out_of_range(msg: Message) -> list[str]:
    """Each field of ``msg`` outside its documented range, named with its value."""
    return [f"{msg.NAME}.{name} = {getattr(msg, name)!r} is outside {limit.describe()}"
            for name, limit in LIMITS.get(type(msg), {}).items()
            if not limit.ok(getattr(msg, name))]



class DeviceKind(IntEnum):
    SHOE = 1
    SHUFFLER = 2
    TUMBLER = 3


class DeviceState(IntEnum):
    READY = 0
    BUSY = 1  # shuffling, tumbling
    FAULT = 2
    DOOR_OPEN = 3


class CommandResultCode(IntEnum):
    OK = 0
    UNKNOWN_COMMAND = 1
    BAD_ARGUMENT = 2
    WRONG_STATE = 3
    DEVICE_FAULT = 4
    BUSY = 5


class CommonFault(IntEnum):
    INTERNAL_ERROR = 0x0001
    WATCHDOG_RESET = 0x0002


@limits(tag=ANY)
@message(0x01, "identify", "host")
@dataclass(frozen=True)
class Identify(Message):
    """Ask the device who it is. The device answers with identify_reply carrying the same tag."""

    tag: int = wire(U8, "chosen by the host; echoed in the reply")


@limits(tag=ANY, kind=between(1, 3), model=ANY, firmware=ANY, protocol_version=ANY,
        serial=ANY)
@message(0x02, "identify_reply", "device")
@dataclass(frozen=True)
class IdentifyReply(Message):
    """Who the device is. The host identifies a device before sending any other command."""

    EVENT = False

    tag: int = wire(U8, "the tag of the identify it answers")
    kind: int = wire(U8, "1 shoe, 2 shuffler, 3 tumbler")
    model: str = wire(STR, "vendor model name")
    firmware: str = wire(STR, "firmware version")
    protocol_version: int = wire(U8, "the newest protocol version the firmware speaks "
                                                  "(1, 2 or 3)")
    serial: str = wire(STR, "device serial number")


@limits(uptime_ms=ANY, state=between(0, 3), fault=ANY)
@message(0x03, "heartbeat", "device")
@dataclass(frozen=True)
class Heartbeat(Message):
    """Sent every second while the link is up. Three missed heartbeats mean the device is lost."""

    EVENT = False

    uptime_ms: int = wire(U32, "milliseconds since the device booted (wraps after 49 days)")
    state: int = wire(U8, "0 ready, 1 busy, 2 fault, 3 door open")
    fault: int = wire(U16, "the current fault code, 0 if none")


@limits(tag=ANY)
@message(0x04, "status", "host")
@dataclass(frozen=True)
class Status(Message):
    """Ask for the device state now."""

    tag: int = wire(U8, "echoed in status_reply")


@limits(tag=ANY, state=between(0, 3), fault=ANY, detail=ANY)
@message(0x05, "status_reply", "device")
@dataclass(frozen=True)
class StatusReply(Message):
    """The device state, in answer to status."""

    EVENT = False

    tag: int = wire(U8, "the tag of the status it answers")
    state: int = wire(U8, "0 ready, 1 busy, 2 fault, 3 door open")
    fault: int = wire(U16, "the current fault code, 0 if none")
    detail: str = wire(STR, "free text for the log")


@limits(code=ANY, detail=ANY)
@message(0x06, "fault", "device")
@dataclass(frozen=True)
class Fault(Message):
    """A fault has occurred: 0x0001 internal error, 0x0002 watchdog reset, or the device's own."""

    code: int = wire(U16, "fault code")
    detail: str = wire(STR, "free text for the log")


@limits(code=ANY)
@message(0x07, "fault_cleared", "device")
@dataclass(frozen=True)
class FaultCleared(Message):
    """A fault has cleared."""

    code: int = wire(U16, "the fault code that cleared")


@limits(tag=ANY, result=between(0, 5), detail=ANY)
@message(0x08, "command_result", "device")
@dataclass(frozen=True)
class CommandResult(Message):
    """The outcome of a command that has no reply of its own."""

    EVENT = False

    tag: int = wire(U8, "the tag of the command it answers")
    result: int = wire(U8, "0 ok, 1 unknown command, 2 bad argument, 3 wrong state, "
                           "4 device fault, 5 busy")
    detail: str = wire(STR, "why, when result is not 0")


@limits(open=ANY)
@message(0x09, "door", "device")
@dataclass(frozen=True)
class Door(Message):
    """A door or cover opened or closed (shoe cover, shuffler lid)."""

    open: bool = wire(BOOL, "true when open")


COMMON: tuple[type[Message], ...] = (Identify, IdentifyReply, Heartbeat, Status, StatusReply,
                                     Fault, FaultCleared, CommandResult, Door)
