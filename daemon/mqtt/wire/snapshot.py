"""The retained snapshot on the wire: ``daemon/mqtt/schemas/snapshot.schema.json``.

What a consumer that had seen every message would know (``daemon/mqtt/snapshot.py``
folds it from the published payloads), with the table's state and the oldest message
still stored. Not in the journal: ``msg_seq`` is null (``envelope.out_of_band``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from daemon.mqtt.envelope import out_of_band
from daemon.mqtt.snapshot import TableView
from daemon.timestamps import iso

TYPE = "snapshot"


def body(view: TableView, state: str) -> dict[str, Any]:
    """The snapshot's own fields (the service adds when, and what is stored)."""
    shoe = None
    if view.shoe is not None:
        shoe = {**asdict(view.shoe), "left": max(view.shoe.cards - view.shoe.dealt, 0)}
    return {"type": TYPE, "state": state, "as_of_msg_seq": view.as_of_msg_seq,
            "shoe": shoe, "round": None if view.round is None else asdict(view.round),
            "last_result_seq": view.last_result_seq,
            "last_result_msg_seq": view.last_result_msg_seq}


def payload(view: TableView, state: str, at: float, first_msg_seq: int, table: str,
            journal_id: str) -> dict[str, Any]:
    """The snapshot of ``view`` with the table in ``state`` at ``at``."""
    return out_of_band({**body(view, state), "at": iso(at), "first_msg_seq": first_msg_seq},
                       table, journal_id)
