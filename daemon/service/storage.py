"""A journal that cannot be written (a full disk, an I/O error): the table stops where
it stands and says so by every path that does not need the journal; a probe journals
again every few seconds, and once it can, the table is rebuilt from what was recorded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from daemon.drivers.command_outcome import reason
from daemon.drivers.device import DeviceNotReadyError
from daemon.mqtt.publisher import Publisher
from daemon.round.effects import DeviceCommand
from daemon.security.authority import REFUSED
from daemon.service.snapshot import Snapshot
from daemon.service.state import ServiceState
from daemon.store.journal import JournalError, JournalRecord
from daemon.timestamps import iso
from firmware_protocols import shoe

log = logging.getLogger(__name__)

PROBE_EVERY = 2.0  # s between attempts to journal again


class Rebuilds(Protocol):
    """The service, told that the journal can be written again."""

    def rebuild(self, records: list[JournalRecord]) -> None:
        """The table in memory may be ahead of the journal: make it again from
        ``records`` (records_for_recovery), and resolve the open round."""


class StorageWatch:
    def __init__(self, state: ServiceState, publisher: Publisher, snapshot: Snapshot,
                 owner: Rebuilds) -> None:
        self.state = state
        self.publisher = publisher
        self.snapshot = snapshot
        self.owner = owner
        self.dropped_while_failed = 0  # device messages not acted on, counted
        # Authenticated commands refused while it could not: journalled once it can.
        self.refused_unjournalled: list[dict[str, Any]] = []

    def failed(self, exc: Exception) -> None:
        """Stop the table where it stands, and say so by every path that does not need the
        journal: a direct alert, the log, systemd's STATUS (daemon/system/health.py)."""
        s = self.state
        if s.storage_error is not None:
            return
        s.storage_error = str(exc)
        try:  # what was folded in but rolled back is not in the snapshot either
            self.snapshot.reload()
        except Exception:  # an unreadable file: the rebuild after the probe reloads it
            log.exception("the snapshot cannot be reloaded from the journal")
        log.error("journal unavailable: %s; the table accepts no rounds until it can be "
                  "written again", exc)
        alert = s.out_of_band({"type": "alert", "round_id": None, "at": iso(s.clock()),
                               "code": "journal_unavailable", "clause": "",
                               "detail": f"{exc}; the table accepts no rounds until the "
                                         "journal can be written"})
        s.spawn(self.publisher.publish_now(s.topics["alerts"], alert))
        if "shoe" in s.drivers:  # no card may be drawn that cannot be recorded
            s.spawn(self._send_unrecorded(DeviceCommand("shoe", shoe.LockGate(0, True))))
        s.spawn(self._probe())

    async def _send_unrecorded(self, e: DeviceCommand) -> None:
        try:
            await self.state.drivers[e.device].command(e.message)
        except (DeviceNotReadyError, TimeoutError) as exc:
            log.error("%s to %s not confirmed: %s", e.message.NAME, e.device, reason(exc))

    async def _probe(self, every: float = PROBE_EVERY) -> None:
        s = self.state
        while s.storage_error is not None:
            await asyncio.sleep(every)
            try:
                with s.journal.batch():
                    s.journal.append("journal_recovered", {
                        "error": s.storage_error, "dropped_device_messages":
                        self.dropped_while_failed,
                        "refused_commands": len(self.refused_unjournalled)})
                    # Refused while the disk was full: their ids are journalled now, so
                    # a restart remembers them too (authority.remember_journal).
                    for record in self.refused_unjournalled:
                        s.journal.append(REFUSED, record)
            except JournalError:
                continue
            self.refused_unjournalled.clear()
            log.warning("the journal can be written again; rebuilding the table from it")
            records = s.journal.records_for_recovery()
            s.storage_error = None
            self.dropped_while_failed = 0
            self.owner.rebuild(records)
