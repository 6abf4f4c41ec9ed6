"""Device URLs, as written in the table config:

    serial:///dev/tabled/shoe?baud=115200
    usb://1d50:6178?serial=SF0001          (sim=127.0.0.1:PORT: the HIL pyusb backend)
    socket://127.0.0.1:7001
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from daemon.errors import InputError

BAUD_RATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)


class DeviceUrlError(InputError, ValueError):
    pass


@dataclass(frozen=True)
class SerialUrl:
    path: str
    baud: int = 115200

    def __str__(self) -> str:
        return f"serial://{self.path}?baud={self.baud}"


@dataclass(frozen=True)
class UsbUrl:
    vid: int
    pid: int
    serial: str | None = None
    sim: tuple[str, int] | None = None  # HIL: the simulator's TCP bridge

    def __str__(self) -> str:
        q = [f"serial={self.serial}"] if self.serial else []
        q += [f"sim={self.sim[0]}:{self.sim[1]}"] if self.sim else []
        return f"usb://{self.vid:04x}:{self.pid:04x}" + ("?" + "&".join(q) if q else "")


@dataclass(frozen=True)
class SocketUrl:
    host: str
    port: int

    def __str__(self) -> str:
        return f"socket://{self.host}:{self.port}"


DeviceUrl = SerialUrl | UsbUrl | SocketUrl


def _one(query: dict[str, list[str]], key: str, url: str) -> str | None:
    values = query.pop(key, None)
    if values is None:
        return None
    if len(values) != 1 or not values[0]:
        raise DeviceUrlError(f"{url!r}: give '{key}' exactly once, with a value")
    return values[0]


def _hostport(text: str, url: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DeviceUrlError(f"{url!r}: expected host:port, got {text!r}")
    return host, int(port)


def parse_device_url(url: str) -> DeviceUrl:
    if not isinstance(url, str):
        raise DeviceUrlError(f"a device URL must be a string, got {type(url).__name__}")
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    if parts.scheme == "serial":
        path = parts.netloc + parts.path
        if not url.startswith("serial://"):
            raise DeviceUrlError(f"{url!r}: write serial://{path}{'?' if parts.query else ''}"
                                 f"{parts.query} (serial:// and then the absolute path)")
        if not path.startswith("/"):
            raise DeviceUrlError(f"{url!r}: serial URLs name an absolute device path, "
                                 "e.g. serial:///dev/tabled/shoe?baud=115200")
        baud_text = _one(query, "baud", url) or "115200"
        if not baud_text.isdigit() or int(baud_text) not in BAUD_RATES:
            raise DeviceUrlError(f"{url!r}: baud {baud_text} is not one of "
                                 f"{', '.join(map(str, BAUD_RATES))}")
        result: DeviceUrl = SerialUrl(path, int(baud_text))
    elif parts.scheme == "usb":
        vid, sep, pid = parts.netloc.partition(":")
        try:
            ids = (int(vid, 16), int(pid, 16))
        except ValueError:
            ids = (-1, -1)
        if not sep or len(vid) != 4 or len(pid) != 4 or min(ids) < 0:
            raise DeviceUrlError(f"{url!r}: USB URLs are usb://VID:PID with four hex digits "
                                 "each, e.g. usb://1d50:6178")
        sim = _one(query, "sim", url)
        result = UsbUrl(ids[0], ids[1], _one(query, "serial", url),
                        _hostport(sim, url) if sim else None)
    elif parts.scheme == "socket":
        result = SocketUrl(*_hostport(parts.netloc, url))
    else:
        raise DeviceUrlError(f"{url!r}: the scheme must be serial://, usb:// or socket://")
    if query:
        raise DeviceUrlError(f"{url!r}: unknown option(s) {', '.join(sorted(query))}")
    return result
