"""The watchdog is fed only while every device link makes progress."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import pytest

from daemon.config import parse_config
from daemon.service import TableService
from daemon.system.health import Health
from daemon.system.sdnotify import Notifier
from tests.keys import commands, signing


async def test_a_stuck_device_link_starves_the_watchdog(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    service = TableService(parse_config({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands()}))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(tmp_path / "notify"))
    server.setblocking(False)
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "100000"})
    health = Health(service, notifier, link_stall=30)

    async def run_for(seconds: float) -> list[bytes]:
        task = asyncio.create_task(health.run())
        await asyncio.sleep(seconds)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        out = []
        with contextlib.suppress(BlockingIOError):
            while True:
                out.append(server.recv(4096))
        return out

    assert b"WATCHDOG=1" in await run_for(0.3)
    loop = asyncio.get_running_loop()
    service.drivers["tumbler"].progress_at = loop.time() - 31
    sent = await run_for(0.3)
    assert b"WATCHDOG=1" not in sent
    assert "not feeding the watchdog: device link stuck: tumbler for 31s" in caplog.text
    server.close()
