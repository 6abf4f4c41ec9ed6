"""sd_notify and the watchdog, against a real AF_UNIX datagram socket, with the daemon as
a subprocess: READY only after every device has handshaken, STATUS says what it waits
for, WATCHDOG=1 keeps coming while the loop runs and stops when it is frozen."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from daemon.system.sdnotify import Notifier
from hil.broker import Mosquitto
from hil.ports import PtyPort, TcpPort
from hil.process import DaemonProcess
from tests.integration.bac07 import bac07_config, bac07_ports


class NotifySocket:
    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.setblocking(False)
        self.messages: list[tuple[float, dict[str, str]]] = []

    async def collect(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                async with asyncio.timeout(left):
                    data = await loop.sock_recv(self.sock, 4096)
            except TimeoutError:
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines())
            self.messages.append((time.monotonic(), fields))

    async def wait_for(self, key: str, timeout: float = 20) -> dict[str, str]:
        async with asyncio.timeout(timeout):
            while True:
                for _, m in self.messages:
                    if key in m:
                        return m
                await self.collect(0.2)

    def with_key(self, key: str) -> list[tuple[float, dict[str, str]]]:
        return [(t, m) for t, m in self.messages if key in m]


async def table(tmp_path: Path, watchdog_usec: str
                ) -> tuple[Mosquitto, TcpPort, PtyPort, NotifySocket, DaemonProcess]:
    """A broker, the shuffler plugged in, the shoe's port not yet, and the daemon as
    systemd would start it (not yet started)."""
    broker = Mosquitto(tmp_path)
    broker.start()
    shoe_port, shuffler_port = bac07_ports(tmp_path)
    await shuffler_port.start()
    notify = NotifySocket(str(tmp_path / "notify"))
    daemon = DaemonProcess(bac07_config(tmp_path, broker.port, shuffler_port.port), tmp_path,
                           env={"NOTIFY_SOCKET": str(tmp_path / "notify"),
                                "WATCHDOG_USEC": watchdog_usec})
    return broker, shuffler_port, shoe_port, notify, daemon


async def test_ready_status_and_watchdog(tmp_path: Path) -> None:
    broker, shuffler_port, shoe_port, notify, daemon = await table(tmp_path, "400000")
    daemon.start()
    try:
        # The shoe is not plugged in yet: no READY, a STATUS naming it, the watchdog fed.
        waiting = await notify.wait_for("STATUS")
        assert waiting["STATUS"] == "recovering the journal"
        await notify.collect(2.0)
        assert not notify.with_key("READY")
        statuses = [m["STATUS"] for _, m in notify.with_key("STATUS")]
        assert any(s.startswith("waiting for shoe (") for s in statuses), statuses
        assert len(notify.with_key("WATCHDOG")) >= 5

        await shoe_port.start()  # plugged in: the shoe handshakes, then READY
        ready = await notify.wait_for("READY")
        assert ready["READY"] == "1"
        assert ready["STATUS"].startswith("ready; table bac-07 idle; broker ")

        # A frozen process (what a hung event loop looks like from outside) stops feeding
        # the watchdog; systemd would kill it after WatchdogSec. It resumes on SIGCONT.
        os.kill(daemon.pid, signal.SIGSTOP)
        notify.messages.clear()
        await notify.collect(1.5)
        assert notify.with_key("WATCHDOG") == []
        os.kill(daemon.pid, signal.SIGCONT)
        await notify.collect(1.0)
        assert len(notify.with_key("WATCHDOG")) >= 2

        assert daemon.stop() == 0
        await notify.collect(0.5)
        assert notify.with_key("STOPPING")
    finally:
        daemon.kill()
        await shoe_port.stop()
        await shuffler_port.stop()
        broker.cleanup()


def test_abstract_socket_and_watchdog_pid() -> None:
    name = f"tabled-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind("\0" + name)
    server.settimeout(2)
    try:
        n = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "5000000"})
        assert n.watchdog_interval == 5.0
        assert n.ready("ready; all good")
        assert server.recv(100) == b"READY=1\nSTATUS=ready; all good"
        # The watchdog belongs to another process: this one must not feed it.
        other = Notifier({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "5000000",
                          "WATCHDOG_PID": "1"})
        assert other.watchdog_interval is None
    finally:
        server.close()


def test_outside_systemd_nothing_is_sent() -> None:
    n = Notifier({})
    assert not n.enabled and not n.ready("x") and n.watchdog_interval is None


def test_a_vanished_manager_is_reported_once(caplog: pytest.LogCaptureFixture,
                                             tmp_path: Path) -> None:
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert not n.watchdog() and not n.watchdog()
    assert len([r for r in caplog.records if "sd_notify" in r.message]) == 1


async def test_ready_comes_when_the_table_can_play_not_at_the_next_watchdog_tick(
        tmp_path: Path) -> None:
    # The shipped unit's WatchdogSec=10s makes the watchdog tick every 5 s; READY once
    # waited for that tick (found under a real systemd: scripts/systemd-check.sh).
    broker, shuffler_port, shoe_port, notify, daemon = await table(tmp_path, "10000000")
    await shoe_port.start()  # every device plugged in: the handshakes take well under 1 s
    daemon.start()
    try:
        await notify.wait_for("READY")
        started = notify.with_key("STATUS")[0][0]  # "recovering the journal": health runs
        at = notify.with_key("READY")[0][0]
        assert at - started < 2.5, f"READY {at - started:.1f} s after the health loop began"
        assert daemon.stop() == 0
    finally:
        daemon.kill()
        await shoe_port.stop()
        await shuffler_port.stop()
        broker.cleanup()
