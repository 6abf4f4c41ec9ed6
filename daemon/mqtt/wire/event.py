"""What happens at the table, on the wire: ``daemon/mqtt/schemas/event.schema.json``.

An event is a journal record the table published (``card_event.plan`` decides which
records are published, and folds a card's three records into one ``card`` event); its
body's fields are the record's, under the envelope written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.mqtt.envelope import stamp
from daemon.timestamps import iso

TYPE = "event"


def payload(kind: str, body: Mapping[str, Any], round_id: str | None, at: float,
            table: str) -> dict[str, Any]:
    """Event ``kind`` of ``round_id`` (None: of no round) with its ``body``, at ``at``."""
    return stamp({"type": TYPE, "event": kind, "round_id": round_id, "at": iso(at), **body},
                 table)
