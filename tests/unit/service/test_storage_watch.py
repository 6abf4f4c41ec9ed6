"""The storage watch (daemon/service/storage.py): a journal that cannot be written stops
the table where it stands; once it can be written again, what happened meanwhile is
journalled and the table is rebuilt from the journal."""

from __future__ import annotations

import asyncio
from pathlib import Path

from daemon.round.effects import Alert
from daemon.service.storage import PROBE_EVERY
from firmware_protocols import tumbler
from tests.unit.service.helpers import tai_sai_service
from tests.wait import until


async def test_a_failed_write_stops_the_table_and_the_probe_rebuilds_it(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    s.begin()
    assert s.apply(s.table.open_betting())
    db = s.journal._db
    db.execute("PRAGMA query_only=1")  # every write fails, as on a full disk
    assert not s.apply([Alert("test", "", "not recorded")])
    assert s.storage_error is not None and "readonly" in s.storage_error
    before = s.table
    # Acted on by nobody while it lasts: counted for the record of the recovery.
    s.board.device_message("tumbler", tumbler.Settled((2, 2, 3), (0, 0, 0), (1, 1, 1), 97))
    assert s.storage.dropped_while_failed == 1
    assert not s.apply([Alert("test", "", "still not recorded")])
    await asyncio.sleep(PROBE_EVERY + 0.5)
    assert s.storage_error is not None  # the probe found it still failing
    db.execute("PRAGMA query_only=0")
    await until(lambda: s.storage_error is None, timeout=PROBE_EVERY * 3)
    [recovered] = [r.body for r in s.journal.records() if r.kind == "journal_recovered"]
    assert recovered["dropped_device_messages"] == 1
    assert s.storage.dropped_while_failed == 0
    assert s.table is not before  # rebuilt from the journal
    assert not [r for r in s.journal.records() if r.body.get("code") == "test"]
    assert s.apply([Alert("test", "", "recorded again")])
    s.journal.close()
