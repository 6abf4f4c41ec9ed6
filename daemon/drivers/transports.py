"""The one place that opens device ports.

serial:// through pyserial-asyncio-fast, socket:// through asyncio, usb:// through pyusb
in dedicated threads bridged to the loop. Every transport reads and writes bytes and
raises TransportError, naming the device and the cause, when the device goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import serial_asyncio_fast
import usb.core
import usb.util

from daemon.drivers.device_url import DeviceUrl, SerialUrl, SocketUrl, UsbUrl
from daemon.errors import DeviceError
from firmware_protocols.shuffler import EP_IN, EP_OUT

USB_READ_TIMEOUT_MS = 1000  # only bounds how long close() waits for the reader thread
USB_WRITE_TIMEOUT_MS = 1000


class TransportError(DeviceError, ConnectionError):
    """The device went away (unplugged, powered off, port closed)."""


class Transport(Protocol):
    name: str

    async def read(self) -> bytes: ...
    async def write(self, data: bytes) -> None: ...
    async def close(self) -> None: ...


class StreamTransport:
    """serial:// and socket://: an asyncio stream pair."""

    def __init__(self, name: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.name = name
        self._reader = reader
        self._writer = writer

    async def read(self) -> bytes:
        try:
            data = await self._reader.read(4096)
        except OSError as exc:  # pyserial raises SerialException or a bare OSError (EIO)
            raise TransportError(f"{self.name}: read failed: {exc}") from exc
        if not data:
            raise TransportError(f"{self.name}: the port closed")
        return data

    async def write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
            await self._writer.drain()
        except OSError as exc:
            raise TransportError(f"{self.name}: write failed: {exc}") from exc

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await self._writer.wait_closed()


class UsbTransport:
    """pyusb is blocking: one thread reads the bulk IN endpoint, one executor thread writes."""

    def __init__(self, name: str, device: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.name = name
        self._device = device
        self._loop = loop
        self._queue: asyncio.Queue[bytes | Exception] = asyncio.Queue()
        self._stop = threading.Event()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix=f"{name}-usb-write")
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-usb-read",
                                        daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data = bytes(self._device.read(EP_IN, 512, USB_READ_TIMEOUT_MS))
            except usb.core.USBTimeoutError:
                continue
            except (usb.core.USBError, OSError) as exc:
                if not self._stop.is_set():
                    self._loop.call_soon_threadsafe(self._queue.put_nowait, exc)
                return
            if data:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, data)

    async def read(self) -> bytes:
        item = await self._queue.get()
        if isinstance(item, Exception):
            raise TransportError(f"{self.name}: USB read failed: {item}") from item
        return item

    async def write(self, data: bytes) -> None:
        try:
            await self._loop.run_in_executor(self._writer, self._device.write, EP_OUT, data,
                                             USB_WRITE_TIMEOUT_MS)
        except (usb.core.USBError, OSError) as exc:
            raise TransportError(f"{self.name}: USB write failed: {exc}") from exc

    async def close(self) -> None:
        self._stop.set()
        await asyncio.to_thread(self._reader.join, 2 * USB_READ_TIMEOUT_MS / 1000)
        self._writer.shutdown(wait=False)
        with contextlib.suppress(usb.core.USBError, OSError):
            usb.util.dispose_resources(self._device)


# A pyusb backend for usb:// URLs that name a simulator (sim=host:port). The daemon's
# runtime knows no simulator: the command line, which composes the daemon with the HIL
# simulators, installs one (hil/usb_backend.py), and so does a rig started in-process.
UsbBackendFactory = Callable[[UsbUrl], Any]
_sim_usb_backend: UsbBackendFactory | None = None


def use_sim_usb_backend(factory: UsbBackendFactory | None) -> None:
    global _sim_usb_backend  # noqa: PLW0603 - one process-wide setting, made at composition
    _sim_usb_backend = factory


def _open_usb(name: str, url: UsbUrl) -> Any:
    backend = None
    if url.sim is not None:
        if _sim_usb_backend is None:
            raise TransportError(f"{name}: {url} names a simulated USB device (sim=), but no "
                                 f"simulator is installed in this process; run it through "
                                 f"the 'tabled' command line or a HIL rig")
        backend = _sim_usb_backend(url)
    match: dict[str, Any] = {"idVendor": url.vid, "idProduct": url.pid}
    try:
        devices = list(usb.core.find(find_all=True, backend=backend, **match))
    except usb.core.NoBackendError as exc:
        raise TransportError(f"{name}: no USB backend (is libusb installed?)") from exc
    if url.serial is not None:
        devices = [d for d in devices if _serial_of(d) == url.serial]
    if not devices:
        wanted = f"{url.vid:04x}:{url.pid:04x}" + (f" serial {url.serial}" if url.serial else "")
        raise TransportError(f"{name}: no USB device {wanted}")
    device = devices[0]
    try:
        if device.is_kernel_driver_active(0):
            device.detach_kernel_driver(0)
        device.set_configuration()
        usb.util.claim_interface(device, 0)
    except (usb.core.USBError, NotImplementedError) as exc:  # backends without kernel drivers
        raise TransportError(f"{name}: cannot claim the USB interface: {exc}") from exc
    return device


def _serial_of(device: Any) -> str | None:
    try:
        return str(device.serial_number)
    except (usb.core.USBError, ValueError):
        return None


async def open_transport(name: str, url: DeviceUrl) -> Transport:
    """Open a device's port; raises TransportError saying why it could not."""
    try:
        if isinstance(url, SerialUrl):
            reader, writer = await serial_asyncio_fast.open_serial_connection(
                url=url.path, baudrate=url.baud)
            return StreamTransport(name, reader, writer)
        if isinstance(url, SocketUrl):
            reader, writer = await asyncio.open_connection(url.host, url.port)
            return StreamTransport(name, reader, writer)
        device = await asyncio.to_thread(_open_usb, name, url)
        return UsbTransport(name, device, asyncio.get_running_loop())
    except TransportError:
        raise
    except OSError as exc:
        raise TransportError(f"{name}: cannot open {url}: {exc}") from exc
