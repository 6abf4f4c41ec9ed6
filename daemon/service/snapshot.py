"""The table's retained snapshot: what a consumer that saw every message knows
(daemon/mqtt/snapshot.py), folded from each message as the journal stores it and kept
with the journal; published at most every SNAPSHOT_EVERY while things change, and as of
the last words at a clean stop."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from daemon.mqtt import wire
from daemon.mqtt.publisher import Publisher
from daemon.mqtt.snapshot import TableView
from daemon.service.state import ServiceState

SNAPSHOT_EVERY = 0.2  # s: the retained snapshot follows the table at most this often


class Snapshot:
    """The journal's ``MessageWatch`` (daemon/store/journal.py): it folds every stored
    message inside the transaction that stores it."""

    def __init__(self, state: ServiceState, publisher: Publisher) -> None:
        self.state = state
        self.publisher = publisher
        self.view = TableView.loads(state.journal.get_meta("snapshot"))
        self.due = False

    def message_stored(self, topic: str, payload: dict[str, Any]) -> None:
        """Every stored message, inside its transaction: the snapshot moves with it."""
        self.view.fold(payload)
        self.state.journal.stage_meta("snapshot", self.view.dumps)  # once, at the commit
        self.due = True

    def reload(self) -> None:
        """As the journal has it: what was folded in but rolled back is gone again."""
        self.view = TableView.loads(self.state.journal.get_meta("snapshot"))

    def last_state(self) -> list[tuple[str, Mapping[str, Any]]]:
        """A clean stop: the snapshot as of the last words, whether or not the timer of
        ``keep`` has come round (a retained snapshot one result behind otherwise)."""
        if self.state.storage_error is not None:
            return []
        self.due = False
        return [(self.state.topics["snapshot"], self.payload())]

    def payload(self) -> dict[str, Any]:
        s = self.state
        return wire.snapshot.payload(self.view, s.table.state, s.clock(),
                                     s.journal.first_msg_seq(), s.cfg.table_id,
                                     s.journal.journal_id)

    async def keep(self, every: float = SNAPSHOT_EVERY) -> None:
        """The retained snapshot, at most every ``every`` seconds while things change."""
        while True:
            await asyncio.sleep(every)
            if self.due and self.state.storage_error is None:
                self.due = False
                await self.publisher.publish_now(self.state.topics["snapshot"],
                                                 self.payload(), retain=True)
