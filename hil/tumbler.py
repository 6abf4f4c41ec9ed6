"""A simulated dice tumbler: armed by the controller, activated by button or command,
tumbles, then settles on scripted dice (or random ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocols import tumbler as proto
from firmware_protocols.common import CommandResultCode, DeviceKind, DeviceState
from firmware_protocols.framing import PROTOCOL_VERSION
from firmware_protocols.wire import Message
from hil.device import Identity, SimDevice

TUMBLE_SECONDS = 0.4
SETTLE_SECONDS = 0.8


@dataclass(frozen=True)
class Throw:
    dice: tuple[int, int, int]
    tumbles: int = 3
    tilt: tuple[int, int, int] = (0, 0, 0)  # tenths of a degree
    # A fault: the tumbles are reported in one Tumble message with this count.
    reported_count: int | None = None
    # A fault: each tumble its own message, but the last one numbered this (a miscount).
    last_count: int | None = None
    confidence: int = 97  # the camera's confidence in its read of the dice, percent
    # Faults: no Activated message before the tumbles (Tai Sai 3.7); flat flags reported
    # as given instead of as the tilts say (e.g. a flag of 2, out of range).
    announced: bool = True
    flat_flags: tuple[int, int, int] | None = None

    @property
    def flat(self) -> tuple[int, int, int]:
        if self.flat_flags is not None:
            return self.flat_flags
        limit = proto.FLAT_TILT_LIMIT_DECIDEG
        return (int(self.tilt[0] <= limit), int(self.tilt[1] <= limit),
                int(self.tilt[2] <= limit))


class TumblerSim(SimDevice):
    def __init__(self, *, serial: str = "TM0001", seed: int = 0, speed: float = 1.0,
                 protocol_version: int = PROTOCOL_VERSION) -> None:
        super().__init__(proto.CATALOGUE,
                         Identity(DeviceKind.TUMBLER, "SIM-TUMBLER", "1.0.0", serial),
                         seed=seed, speed=speed, protocol_version=protocol_version)
        self.armed = False
        self.scripted: list[Throw] = []
        # Faults: the next Arm (on) is obeyed but never answered (a lost reply); or never
        # heard at all (a lost command: the tumbler stays disarmed, and says nothing).
        self.silent_arms = 0
        self.deaf_arms = 0
        # A loaded die, for throws not scripted: (position 0-2, face, probability).
        self.loaded: tuple[int, int, float] | None = None

    def script(self, throw: Throw) -> None:
        self.scripted.append(throw)

    def handle(self, msg: Message, now: float) -> None:
        if isinstance(msg, proto.Arm):
            if msg.armed and self.deaf_arms:
                self.deaf_arms -= 1
                return
            self.armed = msg.armed
            if msg.armed and self.silent_arms:
                self.silent_arms -= 1
                return
            self.reply(msg.tag, now)
        elif isinstance(msg, proto.TumbleNow):
            if not self.armed:
                self.reply(msg.tag, now, CommandResultCode.WRONG_STATE, "not armed")
            elif self.state is not DeviceState.READY:
                self.reply(msg.tag, now, CommandResultCode.BUSY, "tumbling or faulted")
            else:
                self.reply(msg.tag, now)
                self._activate(2, now)
        else:
            super().handle(msg, now)

    def press_button(self, now: float) -> None:
        """The dealer's button. It works even when disarmed, as on real hardware; the
        controller sees ``armed=False`` and voids the round (Tai Sai 5.5.3)."""
        if self.state is DeviceState.READY:
            self._activate(1, now)

    def _activate(self, source: int, now: float) -> None:
        throw = self.scripted.pop(0) if self.scripted else Throw(self._random_dice())
        if throw.announced:
            self.emit(proto.Activated(source, self.armed), now)
        self.armed = False  # one activation per arming
        self.state = DeviceState.BUSY
        if throw.reported_count is not None:
            self.after(TUMBLE_SECONDS * max(1, throw.tumbles),
                       self._tumble_event(throw.reported_count), now)
        else:
            for n in range(1, throw.tumbles + 1):
                told = throw.last_count if n == throw.tumbles and \
                    throw.last_count is not None else n
                self.after(TUMBLE_SECONDS * n, self._tumble_event(told), now)

        def settle(at: float) -> None:
            self.state = DeviceState.READY
            self.emit(proto.Settled(throw.dice, throw.tilt, throw.flat, throw.confidence), at)

        self.after(TUMBLE_SECONDS * throw.tumbles + SETTLE_SECONDS, settle, now)

    def _random_dice(self) -> tuple[int, int, int]:
        dice = [self.rng.randint(1, 6) for _ in range(3)]
        if self.loaded is not None:
            die, face, p = self.loaded
            # The loaded face with probability p, else one of the other five evenly.
            dice[die] = face if self.rng.random() < p else self.rng.choice(
                [f for f in range(1, 7) if f != face])
        return dice[0], dice[1], dice[2]

    def _tumble_event(self, n: int) -> Callable[[float], None]:
        def emit(at: float) -> None:
            self.emit(proto.Tumble(n), at)
        return emit

    def open_dome(self, now: float) -> None:
        self.raise_fault(proto.TumblerFault.DOME_OPEN, "dome open", now)

    def on_reboot(self) -> None:
        self.armed = False
