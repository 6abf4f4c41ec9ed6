"""The C reference devices (device/) built and run behind ptys, the daemon's process that
plays on them, and what a test reads from them: for the reference device and outage tests."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from daemon.security.signing import private_key_pem
from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.reliability.harness import Observer
from tests.wait import until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("device-build")
    done = subprocess.run(["bash", str(ROOT / "device" / "build.sh"), str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # warnings are errors (-Werror)
    return out


class CDevice:
    """The emulator process: commands on stdin, what happened on stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line.decode().strip())

    async def do(self, *commands: str) -> None:
        assert self.proc.stdin is not None
        for c in commands:
            self.proc.stdin.write(c.encode() + b"\n")
        await self.proc.stdin.drain()

    def count(self, prefix: str) -> int:
        return sum(line.startswith(prefix) for line in self.lines)

    async def saw(self, prefix: str, count: int = 1, timeout: float = 20) -> None:
        await until(lambda: self.count(prefix) >= count, timeout)


@contextlib.asynccontextmanager
async def emulator(built: Path, kind: str, link: Path, *args: str) -> AsyncIterator[CDevice]:
    proc = await asyncio.create_subprocess_exec(
        str(built / "emulator"), kind, str(link), *args, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE)
    device = CDevice(proc)
    try:
        await device.saw("pty ")
        yield device
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        device._reader.cancel()


@dataclass
class Table:
    """The daemon as its own process, and an observer of what it publishes."""

    rig: SimRig
    daemon: DaemonProcess
    observer: Observer

    def events(self, name: str) -> list[dict[str, Any]]:
        return [b for b in self.observer.of("events") if b.get("event") == name]

    def ready(self, device: str) -> bool:
        return any(d["state"] == "ready" for d in self.observer.of(f"devices/{device}"))

    def failed_commands(self) -> list[dict[str, Any]]:
        return [a for a in self.observer.of("alerts")
                if "device_command_failed" in str(a.get("event", a.get("code", "")))
                or "failed" in str(a.get("detail", ""))]


@contextlib.asynccontextmanager
async def table(tmp_path: Path, rig_class: type[SimRig], game: str, side: str,
                decks: int | None, serials: dict[str, str]) -> AsyncIterator[Table]:
    """The daemon's configuration (its devices pinned by serial, as on a table), a broker
    and an independent observer; the caller starts the daemon once its devices are up.
    The daemon must still be running at the end."""
    broker = Mosquitto(tmp_path)
    broker.start()
    rig = rig_class(tmp_path, game, side, decks, ("127.0.0.1", broker.port))
    key_file = tmp_path / "signing.pem"
    key_file.write_bytes(private_key_pem(rig.table_key))
    key_file.chmod(0o600)
    config = rig.config()
    config["devices"]["serials"] = serials
    daemon = DaemonProcess(config, tmp_path)
    observer = Observer(rig.base)
    listener = asyncio.create_task(observer.run(broker.port))
    try:
        yield Table(rig, daemon, observer)
        assert daemon.running()
    finally:
        daemon.stop()
        listener.cancel()
        broker.cleanup()


def results_at_least(observer: Observer, n: int) -> Callable[[], bool]:
    return lambda: len(observer.of("results")) >= n


def sent_events(dev: CDevice) -> list[tuple[int, int, str]]:
    """(ORIGIN, NUM, name) of every event the emulator's link took, in order."""
    out, origin = [], 0
    for line in dev.lines:
        word, *rest = line.split()
        if word == "origin":
            origin = int(rest[0])
        elif word == "sent":
            out.append((origin, int(rest[0]), rest[1]))
    return out


class CShufflerRig(SimRig):
    """Baccarat with no simulator: the C shuffler and the C shoe behind ptys, the shuffler
    on a serial line (real shufflers offer one besides USB)."""

    def devices(self) -> dict[str, str]:
        return {name: f"serial://{self.work / name}?baud=115200" for name in ("shoe", "shuffler")}


async def deal_one_round(observer: Observer, shoe_dev: CDevice, n: int) -> None:
    """Draw, at the dealer's pace, until the round's result is out (the gate locks after
    the last card, so a draw too many is refused by the shoe, not dealt)."""
    while len(observer.of("results")) < n:
        drew = sum(line.startswith("drew ") for line in shoe_dev.lines)
        await shoe_dev.do("draw")
        with contextlib.suppress(TimeoutError):  # the gate still locked: draw again
            await shoe_dev.saw("drew ", drew + 1, timeout=1)
        await asyncio.sleep(0.2)  # the daemon takes the card before the next is drawn
