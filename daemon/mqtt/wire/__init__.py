"""The wire layer: what the round core decides, as contract v2 publishes it.

One module per contract schema (``daemon/mqtt/schemas/``): each names its schema's
fields, its ``type`` and ``schema``, and writes its moments as ISO timestamps
(``daemon/timestamps.py``); nothing else in the daemon builds those payloads. The round
core (``daemon/round/``, ``daemon/results.py``) hands over typed facts and names no
wire field; the service journals and publishes what these modules make of them.

- ``result.py``: a round's result (``result.schema.json``);
- ``correction.py``: the Pit's correction of a published round (``correction.schema.json``);
- ``event.py``: what happens at the table, one event per card (``event.schema.json``);
- ``snapshot.py``: the retained snapshot (``snapshot.schema.json``).

The envelope every payload shares (``journal_id``, ``msg_seq``, ``sig``) is added later,
by the journal and the publisher (``daemon/mqtt/envelope.py``).
"""

from __future__ import annotations

from typing import Any

from daemon.mqtt.wire import correction, event, result, snapshot
from daemon.results import CorrectionFacts, RoundFacts

__all__ = ["correction", "event", "result", "results_payload", "snapshot"]


def results_payload(facts: RoundFacts | CorrectionFacts) -> dict[str, Any]:
    """What goes on the ``results`` topic for a RoundResult: a result or a correction."""
    if isinstance(facts, CorrectionFacts):
        return correction.payload(facts)
    return result.payload(facts)
