"""A pyusb backend that presents the simulated shuffler as a USB device.

``usb.core.find(backend=SimUsbBackend(...))`` and the device's read/write calls run
pyusb's real code path unchanged; only the bottom, where libusb would move bytes, is
replaced: bulk OUT bytes go to the simulator and bulk IN bytes come from it, over a
loopback TCP connection to the simulator's TcpPort. That works whether the daemon runs
in the test's process or as a subprocess.
"""

from __future__ import annotations

import array
import contextlib
import errno
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import usb.backend
import usb.core

from daemon.drivers.device_url import UsbUrl
from firmware_protocols.shuffler import EP_IN, EP_OUT, USB_PID, USB_VID

LANGID_EN_US = 0x0409
MAX_PACKET = 64


@dataclass
class _Desc:
    fields: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None


class SimUsbBackend(usb.backend.IBackend):  # type: ignore[misc]
    def __init__(self, host: str, port: int, *, vid: int = USB_VID, pid: int = USB_PID,
                 serial: str = "SF0001", bus: int = 1, address: int = 7) -> None:
        self.addr = (host, port)
        self.vid, self.pid, self.serial = vid, pid, serial
        self.bus, self.address = bus, address
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._configuration = 0
        self._strings = {1: "tabled HIL", 2: "SIM-SHUFFLER", 3: serial}

    # -- enumeration: present while the simulator's port accepts connections -------------

    def _reachable(self) -> bool:
        if self._sock is not None:
            return True
        try:
            with socket.create_connection(self.addr, timeout=0.5):
                pass
        except OSError:
            return False
        return True

    def enumerate_devices(self) -> list[str]:
        return ["sim-shuffler"] if self._reachable() else []

    def get_device_descriptor(self, dev: str) -> _Desc:
        return _Desc({
            "bLength": 18, "bDescriptorType": 1, "bcdUSB": 0x0200, "bDeviceClass": 0xFF,
            "bDeviceSubClass": 0, "bDeviceProtocol": 0, "bMaxPacketSize0": 64,
            "idVendor": self.vid, "idProduct": self.pid, "bcdDevice": 0x0100,
            "iManufacturer": 1, "iProduct": 2, "iSerialNumber": 3, "bNumConfigurations": 1,
            "address": self.address, "bus": self.bus, "port_number": 1, "port_numbers": (1,),
            "speed": 2,
        })

    def get_configuration_descriptor(self, dev: str, config: int) -> _Desc:
        return _Desc({"bLength": 9, "bDescriptorType": 2, "wTotalLength": 32,
                      "bNumInterfaces": 1, "bConfigurationValue": 1, "iConfiguration": 0,
                      "bmAttributes": 0x80, "bMaxPower": 50, "extra_descriptors": []})

    def get_interface_descriptor(self, dev: str, intf: int, alt: int, config: int) -> _Desc:
        return _Desc({"bLength": 9, "bDescriptorType": 4, "bInterfaceNumber": 0,
                      "bAlternateSetting": 0, "bNumEndpoints": 2, "bInterfaceClass": 0xFF,
                      "bInterfaceSubClass": 0, "bInterfaceProtocol": 0, "iInterface": 0,
                      "extra_descriptors": []})

    def get_endpoint_descriptor(self, dev: str, ep: int, intf: int, alt: int,
                                config: int) -> _Desc:
        address = (EP_OUT, EP_IN)[ep]
        return _Desc({"bLength": 7, "bDescriptorType": 5, "bEndpointAddress": address,
                      "bmAttributes": 0x02, "wMaxPacketSize": MAX_PACKET, "bInterval": 0,
                      "bRefresh": 0, "bSynchAddress": 0, "extra_descriptors": []})

    # -- the device handle --------------------------------------------------------------

    def open_device(self, dev: str) -> str:
        try:
            sock = socket.create_connection(self.addr, timeout=2.0)
        except OSError as exc:
            raise usb.core.USBError("No such device (it may have been disconnected)",
                                    errno.ENODEV, errno.ENODEV) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        return dev

    def close_device(self, dev_handle: str) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    def set_configuration(self, dev_handle: str, config_value: int) -> None:
        self._configuration = config_value

    def get_configuration(self, dev_handle: str) -> int:
        return self._configuration

    def set_interface_altsetting(self, dev_handle: str, intf: int, altsetting: int) -> None:
        pass

    def claim_interface(self, dev_handle: str, intf: int) -> None:
        pass

    def release_interface(self, dev_handle: str, intf: int) -> None:
        pass

    def is_kernel_driver_active(self, dev_handle: str, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: str, intf: int) -> None:
        pass

    def clear_halt(self, dev_handle: str, ep: int) -> None:
        pass

    def ctrl_transfer(self, dev_handle: str, bm_request_type: int, b_request: int,
                      w_value: int, w_index: int, data: Any, timeout: int) -> int:
        # Only GET_DESCRIPTOR(STRING), which pyusb uses for serial_number and product.
        if bm_request_type != 0x80 or b_request != 6 or w_value >> 8 != 3:
            raise usb.core.USBError("Pipe error", errno.EPIPE, errno.EPIPE)
        index = w_value & 0xFF
        if index == 0:
            raw = bytes((4, 3)) + LANGID_EN_US.to_bytes(2, "little")
        else:
            text = self._strings.get(index, "").encode("utf-16-le")
            raw = bytes((2 + len(text), 3)) + text
        n = min(len(raw), len(data))
        data[:n] = array.array("B", raw[:n])
        return n

    def _gone(self, exc: OSError | None = None) -> usb.core.USBError:
        self.close_device("")
        return usb.core.USBError("No such device (it may have been disconnected)",
                                 errno.ENODEV, errno.ENODEV)

    def bulk_write(self, dev_handle: str, ep: int, intf: int, data: array.array[int],
                   timeout: int) -> int:
        if self._sock is None:
            raise self._gone()
        try:
            self._sock.settimeout(timeout / 1000 if timeout else None)
            self._sock.sendall(data.tobytes())
        except TimeoutError:
            raise usb.core.USBTimeoutError("Operation timed out", errno.ETIMEDOUT,
                                           errno.ETIMEDOUT) from None
        except OSError as exc:
            raise self._gone(exc) from None
        return len(data)

    def bulk_read(self, dev_handle: str, ep: int, intf: int, buff: array.array[int],
                  timeout: int) -> int:
        if self._sock is None:
            raise self._gone()
        try:
            self._sock.settimeout(timeout / 1000 if timeout else None)
            chunk = self._sock.recv(len(buff))
        except TimeoutError:
            raise usb.core.USBTimeoutError("Operation timed out", errno.ETIMEDOUT,
                                           errno.ETIMEDOUT) from None
        except OSError as exc:
            raise self._gone(exc) from None
        if not chunk:
            raise self._gone()
        buff[:len(chunk)] = array.array("B", chunk)
        return len(chunk)


def sim_backend(url: UsbUrl) -> SimUsbBackend:
    """The backend for a ``usb://...?sim=host:port`` URL (daemon.drivers.transports calls it once
    installed with ``use_sim_usb_backend``)."""
    assert url.sim is not None
    return SimUsbBackend(url.sim[0], url.sim[1], vid=url.vid, pid=url.pid,
                         serial=url.serial or "SF0001")
