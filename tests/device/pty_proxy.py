"""A serial line between the daemon and a device's pty that can be cut one way, the other,
or both (the issue 24 outage): it opens the device's pty as the daemon would, offers its
own pty (through ``link``) to the daemon, and copies bytes each way unless that direction
is cut. Bytes written into a cut direction are lost, as on a dead wire."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import tty
from pathlib import Path

# The cuts, by the direction(s) they kill: host-to-device, device-to-host, both.
CUTS = ("to_device_cut", "to_host_cut", "both")


class PtyProxy:
    def __init__(self, device: Path, link: Path) -> None:
        self.device, self.link = device, link
        self.to_device_cut = False  # host-to-device dead
        self.to_host_cut = False  # device-to-host dead
        # A cut that starts at a byte of the device's output rather than at a moment a test
        # can await: (cut, the size of the read that starts the count, bytes then let
        # through). A test waiting on the device's stdout would come too late for a burst.
        self._armed: tuple[str, int, int] | None = None
        self._counting = False
        self.cut_at: float | None = None  # when the newest cut started (monotonic)
        self.dropped = {"to_device_cut": 0, "to_host_cut": 0}  # bytes lost, each way
        self._fds: list[int] = []

    def cut(self, which: str) -> None:
        assert which in CUTS, which
        self.to_device_cut = which in ("to_device_cut", "both")
        self.to_host_cut = which in ("to_host_cut", "both")
        self.cut_at = time.monotonic()

    def mend(self) -> None:
        self.to_device_cut = self.to_host_cut = False

    def cut_after(self, which: str, start_at: int, after: int) -> None:
        """Cut ``which`` once the device has sent a read of at least ``start_at`` bytes
        (a large frame: an order chunk, not a heartbeat) and ``after`` more bytes, counted
        from that read's first, have passed; the cut may fall inside a frame."""
        assert which in CUTS and after >= 0, (which, after)
        self._armed, self._counting = (which, start_at, after), False

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._dev = os.open(self.device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self._dev)
        self._master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(self._master, False)
        self._fds = [self._dev, self._master, slave]  # slave kept open: no EIO on reconnects
        tmp = self.link.with_name(self.link.name + ".tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(os.ttyname(slave))
        tmp.replace(self.link)
        loop.add_reader(self._dev, self._copy, self._dev, self._master, "to_host_cut")
        loop.add_reader(self._master, self._copy, self._master, self._dev, "to_device_cut")

    def _copy(self, src: int, dst: int, side: str) -> None:
        try:
            data = os.read(src, 65536)
        except OSError:
            return
        if side == "to_host_cut" and self._armed is not None:
            which, start_at, after = self._armed
            self._counting = self._counting or len(data) >= start_at
            if self._counting:
                if len(data) < after:
                    self._armed = (which, start_at, after - len(data))
                else:  # the cut falls in this read: what went before it still passes
                    self._pass(dst, data[:after], side)
                    data, self._armed = data[after:], None
                    self.cut(which)
        self._pass(dst, data, side)

    def _pass(self, dst: int, data: bytes, side: str) -> None:
        if getattr(self, side):
            self.dropped[side] += len(data)
            return
        if data:
            with contextlib.suppress(OSError):  # a full line drops bytes, as a wire would
                os.write(dst, data)

    def stop(self) -> None:
        loop = asyncio.get_running_loop()
        for fd in self._fds[:2]:
            loop.remove_reader(fd)
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
