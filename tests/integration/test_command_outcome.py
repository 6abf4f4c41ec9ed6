"""A command whose answer was lost is never reported failed (issue #24, Build 3): the
service asks the device its state (status), sends the table's idempotent state again
(the gate) when the device answers, says "outcome unknown" when it does not, and every
alert carries its reason. Over real ptys, with the device-to-host direction cut."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from daemon.config import parse_config
from daemon.round.effects import DeviceCommand
from daemon.service import TableService
from firmware_protocols import shoe
from firmware_protocols.wire import Message
from hil.faults import LineFaults
from hil.ports import PtyPort
from hil.shoe import ShoeSim
from tests.keys import commands, signing
from tests.wait import until


@contextlib.asynccontextmanager
async def shoe_service(tmp_path: Path, **timeouts: float
                       ) -> AsyncIterator[tuple[TableService, ShoeSim, PtyPort, LineFaults,
                                                list[Message]]]:
    sim = ShoeSim()
    got: list[Message] = []
    handle = sim.handle

    def seen(msg: Message, now: float) -> None:
        got.append(msg)
        handle(msg, now)

    sim.handle = seen  # type: ignore[method-assign]
    cut = LineFaults()
    port = PtyPort(sim, link=tmp_path / "shoe", faults_out=cut)
    await port.start()
    cfg = parse_config({
        "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        # The shuffler is configured (the game needs one) but never started here.
        "devices": {"shoe": f"serial://{tmp_path / 'shoe'}?baud=115200",
                    "shuffler": "socket://127.0.0.1:9",
                    "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands(),
    })
    service = TableService(cfg)
    driver = service.drivers["shoe"]
    driver.backoff_initial, driver.backoff_max = 0.05, 0.3
    for k, v in timeouts.items():
        setattr(driver, k, v)
    task = asyncio.create_task(driver.run())
    try:
        await driver.wait_ready(5)
        # The gate state the service sends a device that has just connected, answered.
        await until(lambda: any(isinstance(m, shoe.LockGate) for m in got))
        await asyncio.sleep(0.3)
        yield service, sim, port, cut, got
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await port.stop()


def alerts(service: TableService) -> list[dict[str, Any]]:
    return [r.body for r in service.journal.records() if r.kind == "alert"]


async def test_a_lock_gate_whose_answer_was_lost_is_never_reported_failed(
        tmp_path: Path) -> None:
    """Device-to-host dead past the heartbeat timeout: the gate locked, the answer and the
    status query were lost. Before: `device_command_failed "lock_gate to shoe failed: "`."""
    async with shoe_service(tmp_path, command_timeout=1.0, heartbeat_timeout=1.5) as (
            service, sim, _, cut, got):
        driver = service.drivers["shoe"]
        sim.gate_locked = False
        cut.drop_rate = 1.0
        await service.effects.device_command(DeviceCommand("shoe", shoe.LockGate(0, True)))
        assert sim.gate_locked  # it ran
        [alert] = alerts(service)
        assert alert["code"] == "device_command_outcome_unknown", alert
        assert "lock_gate to shoe: outcome unknown" in alert["detail"]
        assert "TimeoutError: no answer to lock_gate" in alert["detail"]  # what was waited for
        assert "status" in alert["detail"]
        # Back on the line: the device is identified again and told the gate state again.
        sent = sum(isinstance(m, shoe.LockGate) for m in got)
        cut.drop_rate = 0.0
        await until(lambda: driver.ready, timeout=10)
        await until(lambda: sum(isinstance(m, shoe.LockGate) for m in got) > sent)
        assert [m for m in got if isinstance(m, shoe.LockGate)][-1].locked  # no deal: locked
        assert not [a for a in alerts(service) if a["code"] == "device_command_failed"]


async def test_a_lock_gate_answer_late_is_confirmed_by_status_and_the_gate_sent_again(
        tmp_path: Path) -> None:
    """Device-to-host dead just past the command timeout, not the heartbeat's: the status
    query is answered, the gate state is sent again and accepted: no alert at all."""
    async with shoe_service(tmp_path, command_timeout=2.0, heartbeat_timeout=10.0) as (
            service, sim, _, cut, got):
        before = sum(isinstance(m, shoe.LockGate) for m in got)
        cut.drop_rate = 1.0
        command = asyncio.create_task(
            service.effects.device_command(DeviceCommand("shoe", shoe.LockGate(0, True))))
        await asyncio.sleep(2.3)  # the command timed out; the status query is waiting
        cut.drop_rate = 0.0
        await command
        assert sim.gate_locked
        assert alerts(service) == []
        # Sent, then sent again as the state wanted now, and that answer arrived.
        assert sum(isinstance(m, shoe.LockGate) for m in got) == before + 2


async def test_a_command_not_sent_says_why(tmp_path: Path) -> None:
    async with shoe_service(tmp_path) as (service, _, port, _cut, _got):
        await port.unplug()
        driver = service.drivers["shoe"]
        await until(lambda: not driver.ready)
        driver.wait_ready = _not_ready  # type: ignore[method-assign]
        await service.effects.device_command(DeviceCommand("shoe", shoe.LockGate(0, True)))
        [alert] = alerts(service)
        assert alert["code"] == "device_command_failed"
        assert alert["detail"].startswith("lock_gate to shoe not sent: ")
        assert not alert["detail"].endswith(": ")
        await port.replug()


async def _not_ready(timeout: float | None = None) -> None:
    raise TimeoutError  # as asyncio.timeout raises it: with no text
