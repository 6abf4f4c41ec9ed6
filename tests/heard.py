"""A device driver's listener for tests of the driver alone: it keeps what it is told."""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon.drivers.device import DeviceStatus, Unattended
from firmware_protocols.wire import Message


@dataclass
class Heard(Unattended):
    messages: list[Message] = field(default_factory=list)
    states: list[str] = field(default_factory=list)  # "state:detail", as they came
    problems: list[str] = field(default_factory=list)
    rejected: list[tuple[Message, str]] = field(default_factory=list)
    impostors: list[str] = field(default_factory=list)

    def device_message(self, device: str, message: Message) -> None:
        self.messages.append(message)

    def device_status(self, status: DeviceStatus) -> None:
        self.states.append(f"{status.state.value}:{status.detail}")

    def device_problem(self, device: str, detail: str) -> None:
        self.problems.append(detail)

    def device_rejected(self, device: str, message: Message, detail: str) -> None:
        self.rejected.append((message, detail))

    def device_impostor(self, device: str, detail: str) -> None:
        self.impostors.append(detail)
