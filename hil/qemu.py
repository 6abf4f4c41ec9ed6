"""An emulated microcontroller: QEMU's ``lm3s6965evb`` (a Cortex-M3) running a reference
firmware image (device/board/lm3s6965/). Its UART0 is a pty, which the daemon opens as it
opens /dev/ttyUSB0 (through ``link``, a symlink, as udev gives /dev/tabled/shoe); its
UART1 is the test port, a Unix socket carrying the sensors' lines in and the firmware's
reports out; QEMU's monitor resets the MCU, and killing QEMU cuts its power. Both ways of
the test port are written, timed, to ``<link>.test-port.log`` in the work directory, beside
the daemon's log: what the firmware did, for a run that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from daemon.errors import ToolError
from hil.errors import EmulatorStoppedError, ToolFailedError

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "device" / "board" / "lm3s6965" / "build.sh"
# device/board/lm3s6965/lm3s6965.ld puts the boot record first in SRAM (and asserts it).
BOOT_SEED_ADDRESS = 0x20000000
PTY_LINE = re.compile(rb"char device redirected to (\S+) \(label line\)")


class QemuMissingError(ToolError, RuntimeError):
    """QEMU or the Arm toolchain is not installed (scripts/setup.sh dev installs them)."""


def missing_tools() -> list[str]:
    """The Debian packages the virtual rig needs and this machine lacks."""
    tools = {"qemu-system-arm": "qemu-system-arm", "arm-none-eabi-gcc": "gcc-arm-none-eabi"}
    return [pkg for tool, pkg in tools.items() if shutil.which(tool) is None]


def build_images(out: Path) -> dict[str, Path]:
    """Builds the shoe's, the shuffler's and the tumbler's images into ``out``; returns
    them by device."""
    if missing := missing_tools():
        raise QemuMissingError(f"missing: {', '.join(missing)} (apt-get install "
                               f"{' '.join(missing)} libnewlib-arm-none-eabi)")
    done = subprocess.run(["bash", str(BUILD), str(out)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise ToolFailedError(f"the firmware did not build:\n{done.stdout}{done.stderr}")
    return {name: out / f"{name}.elf" for name in ("shoe", "shuffler", "tumbler")}


@dataclass
class Report:
    """A line the firmware wrote on its test port, and when it arrived (loop time)."""

    text: str
    at: float


class Mcu:
    """One QEMU process at a time: ``start`` powers it on (a cold boot, a new seed),
    ``reset`` presses its reset, ``kill`` cuts its power."""

    def __init__(self, image: Path, link: Path, work: Path) -> None:
        self.image = image
        self.link = link
        self.work = work
        self.reports: list[Report] = []
        self.pty = ""
        self.starts = 0
        self.log_path = work / f"{link.name}.test-port.log"
        self._proc: asyncio.subprocess.Process | None = None
        self._test: asyncio.StreamWriter | None = None
        self._monitor: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def pid(self) -> int:
        """QEMU's process (a test starves it, as a loaded host does, with SIGSTOP)."""
        if self._proc is None:
            raise EmulatorStoppedError("the emulated MCU is not running")
        return self._proc.pid

    async def start(self) -> None:
        self.starts += 1
        self.reports.clear()  # a cold boot: nothing it said before holds
        test = self.work / f"{self.link.name}.test"
        monitor = self.work / f"{self.link.name}.monitor"
        for p in (test, monitor):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        # QEMU is deterministic: without a seed every cold boot would have one boot id.
        seed = secrets.randbits(32)
        self._proc = await asyncio.create_subprocess_exec(
            "qemu-system-arm", "-M", "lm3s6965evb", "-kernel", str(self.image),
            "-display", "none", "-nodefaults",
            "-chardev", "pty,id=line", "-serial", "chardev:line",
            # wait=on: the MCU starts once the test port is connected, so no report is lost
            "-chardev", f"socket,id=test,path={test},server=on,wait=on",
            "-serial", "chardev:test",
            "-monitor", f"unix:{monitor},server=on,wait=off",
            "-device", f"loader,addr={BOOT_SEED_ADDRESS:#x},data={seed},data-len=4",
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert self._proc.stdout is not None
        async with asyncio.timeout(20):
            while not (m := PTY_LINE.search(await self._proc.stdout.readline() or b"EOF")):
                if self._proc.returncode is not None or self._proc.stdout.at_eof():
                    raise ToolFailedError(f"QEMU did not start ({self.image})")
            self.pty = m.group(1).decode()
            tmp = self.link.with_name(self.link.name + ".tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(self.pty)
            tmp.replace(self.link)
            reader, self._test = await _connect(test)
            mon_reader, self._monitor = await _connect(monitor)
        self._tasks = [asyncio.create_task(self._read(reader)),
                       asyncio.create_task(self._drain(mon_reader)),
                       asyncio.create_task(self._drain(self._proc.stdout))]

    async def _read(self, reader: asyncio.StreamReader) -> None:
        loop = asyncio.get_running_loop()
        while line := await reader.readline():
            self.reports.append(Report(line.decode(errors="replace").strip(), loop.time()))
            self._log("<", self.reports[-1].text)

    def _log(self, way: str, text: str) -> None:
        with self.log_path.open("a", encoding="utf-8") as f:
            f.write(f"{datetime.now(UTC):%H:%M:%S.%f} {way} {text}\n")

    async def _drain(self, reader: asyncio.StreamReader) -> None:
        while await reader.read(4096):
            pass  # the monitor's prompts, QEMU's own messages: nobody reads them

    def send(self, line: str) -> None:
        """A sensor line to the firmware (written at once; the socket keeps order)."""
        if self._test is None:
            raise EmulatorStoppedError("the emulated MCU is not running")
        self._test.write(line.encode() + b"\n")
        self._log(">", line)

    def reset(self) -> None:
        """The MCU's reset: SRAM keeps its contents, the firmware boots again."""
        if self._monitor is None:
            raise EmulatorStoppedError("the emulated MCU is not running")
        self._monitor.write(b"system_reset\n")

    async def kill(self) -> None:
        """Power off: QEMU killed, the pty gone (the daemon sees its device vanish)."""
        for t in self._tasks:
            t.cancel()
        self._tasks = []
        for w in (self._test, self._monitor):
            if w is not None:
                w.close()
        self._test = self._monitor = None
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()
        self._proc = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.link)

    def saw(self, prefix: str) -> list[str]:
        return [r.text for r in self.reports if r.text.startswith(prefix)]

    async def until(self, prefix: str, count: int = 1, timeout: float = 20.0) -> str:
        """The ``count``-th report that starts with ``prefix``, once it has arrived."""
        async with asyncio.timeout(timeout):
            while len(found := self.saw(prefix)) < count:
                await asyncio.sleep(0.01)
        return found[count - 1]


async def _connect(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """QEMU's Unix socket: its file appears when QEMU binds it, a moment before QEMU
    listens on it, so a refusal in between means "not yet" (seen on a loaded machine)."""
    while True:
        try:
            return await asyncio.open_unix_connection(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            await asyncio.sleep(0.02)
