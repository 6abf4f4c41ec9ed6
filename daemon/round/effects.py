"""What the round core asks the service to do. The core itself does no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from daemon.errors import TabledError
from daemon.results import CorrectionFacts, RoundFacts
from firmware_protocols.wire import Message


@dataclass(frozen=True)
class Record:
    """Journal this event and publish it on the events topic."""

    kind: str
    body: dict[str, Any] = field(default_factory=dict)
    round_id: str | None = None


@dataclass(frozen=True)
class DeviceCommand:
    device: str  # "shoe" | "shuffler" | "tumbler"
    message: Message


@dataclass(frozen=True)
class Alert:
    """An irregularity the pit must see (alerts topic)."""

    code: str
    clause: str
    detail: str
    round_id: str | None = None


@dataclass(frozen=True)
class RoundResult:
    """Journal and publish a round's result (or a correction) on the results topic; the
    wire layer (daemon/mqtt/wire/) writes its payload."""

    round_id: str
    facts: RoundFacts | CorrectionFacts


Effect = Record | DeviceCommand | Alert | RoundResult


class CommandRefusedError(TabledError):
    """A command that the table's state does not allow; nothing changed."""
