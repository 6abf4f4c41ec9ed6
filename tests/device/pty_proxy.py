"""A serial line between the daemon and a device's pty that can be cut one way, the other,
or both (the issue 24 outage): it opens the device's pty as the daemon would, offers its
own pty (through ``link``) to the daemon, and copies bytes each way unless that direction
is cut. Bytes written into a cut direction are lost, as on a dead wire."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from pathlib import Path


class PtyProxy:
    def __init__(self, device: Path, link: Path) -> None:
        self.device, self.link = device, link
        self.to_device_cut = False  # host-to-device dead
        self.to_host_cut = False  # device-to-host dead
        # Cut host-to-device the moment the device sends a read of at least this many
        # bytes (a large frame: a cut that lands while a burst of them is unacknowledged,
        # which a test waiting on the device's stdout would reach too late); None: never.
        self.cut_to_device_at: int | None = None
        self._fds: list[int] = []

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

    def _copy(self, src: int, dst: int, cut: str) -> None:
        try:
            data = os.read(src, 65536)
        except OSError:
            return
        if data and not getattr(self, cut):
            with contextlib.suppress(OSError):  # a full line drops bytes, as a wire would
                os.write(dst, data)
        at = self.cut_to_device_at
        if cut == "to_host_cut" and at is not None and len(data) >= at:
            self.to_device_cut, self.cut_to_device_at = True, None

    def stop(self) -> None:
        loop = asyncio.get_running_loop()
        for fd in self._fds[:2]:
            loop.remove_reader(fd)
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
