"""Real transports for simulators: a pty (opened by the daemon with pyserial, as it opens
/dev/ttyUSB0) and a TCP socket (``socket://``, also the bridge for the USB backend).

Each port runs its device: bytes in -> device.feed, device output -> faults -> line,
and timers on the event loop's clock. ``unplug``/``replug`` pull and restore the cable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from abc import ABC, abstractmethod
from pathlib import Path

from hil.device import SimDevice
from hil.faults import LineFaults

MAX_TICK = 0.05


class DevicePort(ABC):
    def __init__(self, device: SimDevice, *, faults_out: LineFaults | None = None,
                 faults_in: LineFaults | None = None) -> None:
        self.device = device
        self.faults_out = faults_out
        self.faults_in = faults_in
        self.loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.plugged = False
        self.bytes_in = 0
        self.bytes_out = 0

    @property
    @abstractmethod
    def url(self) -> str:
        """The device URL a daemon opens to reach this port."""

    def now(self) -> float:
        return self.loop.time()

    async def start(self) -> None:
        await self._plug()
        self.device.start(self.now())
        self._task = asyncio.create_task(self._run(), name=f"sim-{type(self).__name__}")
        self._flush()

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.unplug()

    async def _run(self) -> None:
        while True:
            timeout = max(0.0, min(self.device.next_deadline() - self.now(), MAX_TICK))
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that races with its inner future (gh-86296), and stop() would wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            self.device.poll(self.now())
            self._flush()

    def received(self, data: bytes) -> None:
        self.bytes_in += len(data)
        if self.faults_in:
            data = self.faults_in.apply(data)
        self.device.feed(data, self.now())
        self._flush()

    def kick(self) -> None:
        """Call after driving the device (draw a card, press a button) to send at once."""
        self._flush()

    def _flush(self) -> None:
        data = self.device.take_output()
        if not data or not self.plugged:
            return
        if self.faults_out:
            data = self.faults_out.apply(data)
            if self.faults_out.delay:
                self.loop.call_later(self.faults_out.delay, self._send_if_plugged, data)
                return
        self._send_if_plugged(data)

    def _send_if_plugged(self, data: bytes) -> None:
        if self.plugged and data:
            self.bytes_out += len(data)
            self._send(data)

    @abstractmethod
    async def _plug(self) -> None:
        """Put the cable in: create the pty or start listening."""

    @abstractmethod
    def _send(self, data: bytes) -> None:
        """Write bytes to the line."""

    @abstractmethod
    async def unplug(self) -> None:
        """Pull the cable: the daemon sees the device go away."""

    async def replug(self) -> None:
        await self._plug()
        self._wake.set()


class PtyPort(DevicePort):
    """The simulator holds the pty master; the daemon opens the slave (or ``link``, a stable
    symlink to it, as udev gives /dev/tabled/shoe)."""

    def __init__(self, device: SimDevice, link: Path | None = None, **kw: LineFaults | None
                 ) -> None:
        super().__init__(device, **kw)
        self.link = link
        self._master = -1
        self._slave = -1
        self._wbuf = bytearray()
        self.slave_path = ""

    @property
    def url(self) -> str:
        return f"serial://{self.link or self.slave_path}?baud=115200"

    @property
    def path(self) -> str:
        return str(self.link or self.slave_path)

    async def _plug(self) -> None:
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line discipline, until pyserial configures it
        os.set_blocking(self._master, False)
        self.slave_path = os.ttyname(self._slave)
        if self.link is not None:
            tmp = self.link.with_name(self.link.name + ".tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(self.slave_path)
            tmp.replace(self.link)
        self.loop.add_reader(self._master, self._readable)
        self.plugged = True

    def _readable(self) -> None:
        try:
            data = os.read(self._master, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return  # EIO: no one has the slave open; our own slave fd normally prevents it
        if data:
            self.received(data)

    def _send(self, data: bytes) -> None:
        self._wbuf += data
        self._drain()

    def _drain(self) -> None:
        try:
            n = os.write(self._master, self._wbuf)
        except BlockingIOError:
            n = 0
        except OSError:
            self._wbuf.clear()  # the cable is gone; bytes on a dead line are lost
            return
        del self._wbuf[:n]
        if self._wbuf:
            self.loop.add_writer(self._master, self._writable)

    def _writable(self) -> None:
        self.loop.remove_writer(self._master)
        self._drain()

    async def unplug(self) -> None:
        if not self.plugged:
            return
        self.plugged = False
        self.loop.remove_reader(self._master)
        self.loop.remove_writer(self._master)
        self._wbuf.clear()
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()


class TcpPort(DevicePort):
    """A device on 127.0.0.1. Output goes to the newest live connection: a short-lived probe
    (the USB backend checks presence that way) must not take the line from the real client."""

    def __init__(self, device: SimDevice, port: int = 0, **kw: LineFaults | None) -> None:
        super().__init__(device, **kw)
        self.port = port
        self._server: asyncio.Server | None = None
        self._clients: list[asyncio.StreamWriter] = []
        self._readers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    async def _plug(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.plugged = True

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.plugged:
            writer.close()
            return
        self._clients.append(writer)
        task = asyncio.current_task()
        assert task is not None
        self._readers.add(task)
        try:
            while data := await reader.read(65536):
                self.received(data)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._readers.discard(task)
            if writer in self._clients:
                self._clients.remove(writer)
            writer.close()

    def _send(self, data: bytes) -> None:
        for writer in reversed(self._clients):
            if not writer.is_closing():
                writer.write(data)
                return

    async def unplug(self) -> None:
        if not self.plugged:
            return
        self.plugged = False
        if self._server is not None:
            self._server.close()
        for writer in self._clients:
            writer.close()
        self._clients.clear()
        for t in list(self._readers):
            t.cancel()
        if self._server is not None:
            # wait_closed() also waits for connections whose handlers have not run yet
            # (3.11.x/3.12.1+ differ); every connection is already closed above.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await self._server.wait_closed()
