"""A minimal host for tests: the shared Endpoint over a real pyserial port or pyusb device.

It runs blocking I/O, so tests call it through asyncio.to_thread while the simulator
runs on the event loop.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import serial
import usb.core

from firmware_protocols.endpoint import Endpoint, EndpointEvent
from firmware_protocols.link import Link
from firmware_protocols.shuffler import EP_IN, EP_OUT
from firmware_protocols.wire import Catalogue, Message

M = TypeVar("M", bound=Message)


class Line(Protocol):
    def write(self, data: bytes) -> None: ...
    def read(self) -> bytes: ...


class SerialLine:
    def __init__(self, url: str) -> None:
        self.port = serial.serial_for_url(url, baudrate=115200, timeout=0.01)

    def write(self, data: bytes) -> None:
        self.port.write(data)

    def read(self) -> bytes:
        return bytes(self.port.read(max(1, self.port.in_waiting)))

    def close(self) -> None:
        self.port.close()


class UsbLine:
    def __init__(self, device: Any) -> None:
        self.device = device

    def write(self, data: bytes) -> None:
        self.device.write(EP_OUT, data, timeout=1000)

    def read(self) -> bytes:
        try:
            return bytes(self.device.read(EP_IN, 512, timeout=10))
        except usb.core.USBTimeoutError:
            return b""


class Host:
    def __init__(self, line: Line, catalogue: Catalogue, *, version: int = 1) -> None:
        self.line = line
        self.endpoint = Endpoint(catalogue,
                                 Link(random.getrandbits(32), version=version))
        self.events: list[EndpointEvent] = []
        self.endpoint.connect(time.monotonic())

    def send(self, message: Message) -> None:
        self.endpoint.send(message, time.monotonic())

    def messages(self, kind: type[M]) -> list[M]:
        return [e for e in self.events if isinstance(e, kind)]

    def run_until(self, done: Callable[[Host], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done(self):
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"gave up; last events: {self.events[-5:]}")
            out = self.endpoint.take_output()
            if out:
                self.line.write(out)
            data = self.line.read()
            if data:
                self.events += self.endpoint.feed(data, time.monotonic())
            self.events += self.endpoint.poll(time.monotonic())
        out = self.endpoint.take_output()  # acknowledge what arrived last
        if out:
            self.line.write(out)
