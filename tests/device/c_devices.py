"""The C reference devices (device/) built and run behind ptys, and what a test reads from
them: for the reference device and outage tests."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

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
