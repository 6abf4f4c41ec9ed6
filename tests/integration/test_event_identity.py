"""Protocol v3 through the table service (issue 24): each device event is taken once,
across the daemon's own restarts, and a gap in a device's numbers is a lost event the
round core hears of (the throw held for the Pit, Tai Sai 5.14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from daemon.drivers.seen import META_PREFIX
from firmware_protocols import tumbler
from firmware_protocols.common import Heartbeat
from firmware_protocols.link import Stamp
from firmware_protocols.wire import Message
from tests.integration.tai_sai_service import tai_sai_service

BOOT = 0xB0075EED


def deliver(s: Any, m: Message, number: int) -> None:
    """What the driver does with a version 3 message: its stamp set while it is handed on."""
    driver = s.drivers["tumbler"]
    driver.stamp = Stamp(BOOT, number)
    try:
        s.board.device_message("tumbler", m)
    finally:
        driver.stamp = None


def kinds(s: Any) -> list[str]:
    return [r.kind for r in s.journal.records()]


async def test_an_event_replayed_after_the_daemon_restarts_is_dropped(tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    deliver(s, tumbler.Activated(1, True), 1)
    deliver(s, tumbler.Tumble(1), 2)
    assert s.journal.get_meta(META_PREFIX + "tumbler") == f"{BOOT}:2"  # with its records
    before = kinds(s)
    s.journal.close()
    again = tai_sai_service(tmp_path)  # a restart (it opens and closes betting: records)
    opened = len(kinds(again)) - len(before)
    # The tumbler did not know its last events had arrived: it sends them again.
    deliver(again, tumbler.Activated(1, True), 1)
    deliver(again, tumbler.Tumble(1), 2)
    assert len(kinds(again)) == len(before) + opened
    assert again.board.events_repeated == 2
    deliver(again, tumbler.Tumble(2), 3)  # and the next one is taken
    assert kinds(again)[-1] == "tumble"


async def test_a_gap_in_the_numbers_holds_the_throw_for_the_pit(tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    deliver(s, tumbler.Activated(1, True), 1)
    deliver(s, tumbler.Settled((2, 3, 4), (0, 0, 0), (1, 1, 1), 97), 5)  # 2-4 lost
    alerts = [r.body for r in s.journal.records() if r.kind == "alert"]
    assert alerts[0]["code"] == "device_events_lost" and "2-4" in alerts[0]["detail"]
    assert any(r.kind == "throw_held" for r in s.journal.records())
    assert not [r for r in s.journal.records() if r.kind == "result"]


async def test_a_heartbeat_that_names_an_event_never_received_is_a_loss(tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    deliver(s, tumbler.Activated(1, True), 1)
    s.drivers["tumbler"].stamp = Stamp(BOOT, 3)
    s.board.device_message("tumbler", Heartbeat(1000, 1, 0))  # it sent events 2 and 3
    [lost] = [r.body for r in s.journal.records() if r.kind == "alert"
              if r.body["code"] == "device_events_lost"]
    assert "2-3" in lost["detail"]
    assert s.journal.get_meta(META_PREFIX + "tumbler") == f"{BOOT}:3"
