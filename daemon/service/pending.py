"""A device command whose work the table waits for (one with ``SHOWN_BY``: start_shuffle),
kept in the journal's meta from the transaction that decided it until the device shows it
carried it out (an event of ``SHOWN_BY``, in that event's transaction) or its outcome is
settled (effects.py). A restart that finds one asks the device its state and sends the
command again if the device never took it (command_outcome.recover): before, a daemon
restarted while a shuffle was asked for forgot it, and the table waited for a shuffle
that never came (issue 24)."""

from __future__ import annotations

from daemon.errors import TabledError
from firmware_protocols.wire import Catalogue, Message, MessageError

PREFIX = "command_pending:"  # the journal's meta key per device; "" once settled


def owed_key(device: str) -> str:
    return PREFIX + device


def dump_command(message: Message) -> str:
    """The command as the journal keeps it: its message id and payload, in hex."""
    return f"{message.MSG_ID:02x}:{message.to_bytes().hex()}"


class UnreadableCommandError(TabledError, ValueError):
    """A command kept as owed that this release cannot read back."""


def load_command(catalogue: Catalogue, text: str | None) -> Message | None:
    """The command kept, or None (none, or settled). One that cannot be read (another
    release's, a damaged file) raises: forgotten silently, the table would wait for work
    nobody asked the device for, the very fault this module is here to prevent."""
    if not text:
        return None
    msg_id, _, payload = text.partition(":")
    try:
        return catalogue.decode(int(msg_id, 16), bytes.fromhex(payload))
    except (ValueError, MessageError) as exc:
        raise UnreadableCommandError(f"the command kept as owed ({text[:80]!r}) cannot "
                                     f"be read: {exc}") from exc
