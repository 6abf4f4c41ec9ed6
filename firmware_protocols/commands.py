"""What a device answers at once to a command it will not carry out (the spec's "Commands
a device does not carry out"): the rule the simulators, the C device and the vectors
share. Sans-I/O."""

from __future__ import annotations

from firmware_protocols import common
from firmware_protocols.common import CommandResultCode, out_of_range
from firmware_protocols.examples import DEVICE_MESSAGES, device_of
from firmware_protocols.wire import Message, MessageError


def host_commands() -> tuple[type[Message], ...]:
    """Every host command of every device's spec, by id. Each starts with its tag."""
    every = (*common.COMMON, *(m for ms in DEVICE_MESSAGES.values() for m in ms))
    return tuple(sorted((m for m in every if m.SENDER == "host"), key=lambda m: m.MSG_ID))


def refusal(device: str, msg_id: int, payload: bytes) -> CommandResultCode | None:
    """The result a ``device`` (shoe, shuffler, tumbler) answers a DATA message with before
    anything of its own state counts: 1 for another device's command, 2 for a command
    with a value outside its values; None for a message it drops unanswered (no command
    of any spec, or one it cannot decode). ValueError: a command of its own, in range,
    which the device judges by its state."""
    cls = next((c for c in host_commands() if msg_id == c.MSG_ID), None)
    if cls is None:
        return None
    try:
        msg = cls.from_bytes(payload)
    except MessageError:
        return None
    if device_of(cls) not in ("common", device):
        return CommandResultCode.UNKNOWN_COMMAND
    if out_of_range(msg):
        return CommandResultCode.BAD_ARGUMENT
    raise ValueError(f"{msg.NAME} is the {device}'s own command, in range")
