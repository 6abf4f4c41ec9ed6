"""The round core's effects written to a real journal as the service writes them: for the
tests that restore a table from it."""

from __future__ import annotations

import json
from typing import Any

from daemon.mqtt.wire import results_payload
from daemon.round.effects import Alert, Effect, Record, RoundResult
from daemon.store.journal import Journal


def journal_effects(journal: Journal, effects: list[Effect]) -> list[Effect]:
    """What the service writes to the journal for each effect."""
    for e in effects:
        if isinstance(e, Record):
            journal.append(e.kind, e.body, round_id=e.round_id)
        elif isinstance(e, Alert):
            journal.append("alert", {"clause": e.clause, "code": e.code}, round_id=e.round_id)
        elif isinstance(e, RoundResult):
            journal.record_result(e.round_id, results_payload(e.facts), "t/results",
                                  record=e.record.body())
    return effects


def published_results(journal: Journal) -> list[dict[str, Any]]:
    """The results the journal stored to publish, as they go on the wire (the journal's
    own record of a result is the table's: daemon/round/records.py, ``Result``)."""
    return [json.loads(m.payload) for m in
            journal.messages(1, journal.last_msg_seq(), 1 << 30, ("%/results",))]
