"""What the round core asks the service to do. The core itself does no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from daemon.errors import TabledError
from daemon.results import CorrectionFacts, RoundFacts
from daemon.round.records import CardDealt, CardDrawn, NextCard, Result
from firmware_protocols.wire import Message


@dataclass(frozen=True)
class CardEvent:
    """The one event published for a card placed in a hand (contract v2), as the table
    that places it decides: the draw as the shoe reported it (None: a card carried from
    an earlier deal, whose draw was published as it came), the card as placed, and the
    card the rules require next (None: the deal is complete, or waits for something
    else: insurance, the Pit). The draw's and the next card's own records are journalled
    as well, and published in this event only."""

    dealt: CardDealt
    drawn: CardDrawn | None = None
    next: NextCard | None = None


# A record published on the events topic as it is recorded: its kind and body.
AS_RECORDED: Final = "as recorded"
# What a record publishes: itself as recorded, a card's one event, or nothing (None).
Publishes = CardEvent | Literal["as recorded"] | None


@dataclass(frozen=True)
class Record:
    """Journal this record and publish what the table decided for it on the events
    topic (``event``): the record as recorded; a card's one event; or nothing (None: a
    card's event carries it). Two records are the same record whatever is published."""

    kind: str
    body: dict[str, Any] = field(default_factory=dict)
    round_id: str | None = None
    event: Publishes = field(default=AS_RECORDED, compare=False)


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
