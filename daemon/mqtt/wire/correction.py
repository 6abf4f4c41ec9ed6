"""The Pit's correction of a published round on the wire:
``daemon/mqtt/schemas/correction.schema.json``.

A new message on ``results`` naming the round it voids (``corrects``), with its own
``seq``; the original stays in the journal. Its ``void_reason`` and ``bets`` are a
result's (``result.py``).
"""

from __future__ import annotations

from typing import Any

from daemon.mqtt.envelope import schema_id
from daemon.mqtt.wire.result import bets, void_reason
from daemon.results import CorrectionFacts
from daemon.timestamps import iso

TYPE = "correction"
SCHEMA_ID = schema_id(TYPE)


def payload(facts: CorrectionFacts) -> dict[str, Any]:
    return {
        "type": TYPE, "schema": SCHEMA_ID, "table": facts.table, "game": facts.game.id,
        "layout": facts.layout, "corrects": facts.corrects, "status": facts.status,
        "void_reason": void_reason(facts.reason), "by": facts.by, "bets": bets(facts.bets),
        "settled_at": iso(facts.settled_at),
    }
