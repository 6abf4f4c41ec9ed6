"""What the round core asks the service to do. The core itself does no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from daemon.errors import TabledError
from daemon.results import CorrectionFacts, RoundFacts
from daemon.round.records import Result
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
    """Journal a round's result (or a correction) as ``record``, the table's own record of
    it, and publish it on the results topic as the wire layer (daemon/mqtt/wire/) makes
    it of ``facts``."""

    round_id: str
    facts: RoundFacts | CorrectionFacts
    record: Result


Effect = Record | DeviceCommand | Alert | RoundResult


class CommandRefusedError(TabledError):
    """A command that the table's state does not allow; nothing changed."""
