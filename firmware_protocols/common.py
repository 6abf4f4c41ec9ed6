"""Messages every device speaks (ids 0x01-0x1F). See each device's spec for the whole set."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from firmware_protocols.wire import BOOL, STR, U8, U16, U32, Message, message, wire


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


@message(0x01, "identify", "host")
@dataclass(frozen=True)
class Identify(Message):
    """Ask the device who it is. The device answers with identify_reply carrying the same tag."""

    tag: int = wire(U8, "chosen by the host; echoed in the reply")


@message(0x02, "identify_reply", "device")
@dataclass(frozen=True)
class IdentifyReply(Message):
    """Who the device is. The host checks protocol_version before sending any other command."""

    tag: int = wire(U8, "the tag of the identify it answers")
    kind: int = wire(U8, "1 shoe, 2 shuffler, 3 tumbler")
    model: str = wire(STR, "vendor model name")
    firmware: str = wire(STR, "firmware version")
    protocol_version: int = wire(U8, "protocol version the firmware implements (1)")
    serial: str = wire(STR, "device serial number")


@message(0x03, "heartbeat", "device")
@dataclass(frozen=True)
class Heartbeat(Message):
    """Sent every second while the link is up. Three missed heartbeats mean the device is lost."""

    uptime_ms: int = wire(U32, "milliseconds since the device booted (wraps after 49 days)")
    state: int = wire(U8, "0 ready, 1 busy, 2 fault, 3 door open")
    fault: int = wire(U16, "the current fault code, 0 if none")


@message(0x04, "status", "host")
@dataclass(frozen=True)
class Status(Message):
    """Ask for the device state now."""

    tag: int = wire(U8, "echoed in status_reply")


@message(0x05, "status_reply", "device")
@dataclass(frozen=True)
class StatusReply(Message):
    """The device state, in answer to status."""

    tag: int = wire(U8, "the tag of the status it answers")
    state: int = wire(U8, "0 ready, 1 busy, 2 fault, 3 door open")
    fault: int = wire(U16, "the current fault code, 0 if none")
    detail: str = wire(STR, "free text for the log")


@message(0x06, "fault", "device")
@dataclass(frozen=True)
class Fault(Message):
    """A fault has occurred: 0x0001 internal error, 0x0002 watchdog reset, or the device's own."""

    code: int = wire(U16, "fault code")
    detail: str = wire(STR, "free text for the log")


@message(0x07, "fault_cleared", "device")
@dataclass(frozen=True)
class FaultCleared(Message):
    """A fault has cleared."""

    code: int = wire(U16, "the fault code that cleared")


@message(0x08, "command_result", "device")
@dataclass(frozen=True)
class CommandResult(Message):
    """The outcome of a command that has no reply of its own."""

    tag: int = wire(U8, "the tag of the command it answers")
    result: int = wire(U8, "0 ok, 1 unknown command, 2 bad argument, 3 wrong state, "
                           "4 device fault, 5 busy")
    detail: str = wire(STR, "why, when result is not 0")


@message(0x09, "door", "device")
@dataclass(frozen=True)
class Door(Message):
    """A door or cover opened or closed (shoe cover, shuffler lid)."""

    open: bool = wire(BOOL, "true when open")


COMMON: tuple[type[Message], ...] = (Identify, IdentifyReply, Heartbeat, Status, StatusReply,
                                     Fault, FaultCleared, CommandResult, Door)
