"""The virtual rig: the daemon's scenarios played against the reference firmware running
on an emulated Cortex-M3 (hil/qemu.py) instead of the Python device simulators.

The physical world stays the simulators' (the cards in the shoe and their order, the cut
card, the dealing faults, the dice a throw shows: hil/shoe.py, hil/tumbler.py), but the
device is the firmware: what a simulator would have sent on its link goes to the
firmware's test port as what its sensors saw, and the firmware sends its own messages on
its own link over the emulated UART. The firmware's state (the gate, the armed light)
comes back as its reports. The shuffler stays a simulator: it has no serial transport.
"""

from __future__ import annotations

from pathlib import Path

from daemon.errors import TabledError
from firmware_protocols import shoe as shoe_proto
from firmware_protocols.common import DeviceKind
from firmware_protocols.wire import Message
from hil.device import Identity
from hil.faults import LineFaults
from hil.ports import DevicePort
from hil.qemu import Mcu, build_images
from hil.rig import SimRig
from hil.scenario import Scenario
from hil.shoe import ShoeSim
from hil.tumbler import Throw, TumblerSim

FIRMWARE = "c99-1.0-m3"  # device/firmware/firmware.c

# Faults only a simulator can inject: they make a device break its own protocol or
# firmware (re-send a read, lose one, miscount its tumbles, ignore or not answer an Arm),
# which the reference firmware does not do. A scenario with one cannot run on this rig.
SIM_ONLY_FAULTS = {
    "repeat_draw": "the shoe re-sends a draw it has already sent",
    "lost_read": "a read lost after the link has taken it",
    "tumble_count": "the tumbler reports its tumbles in one message",
    "device_count": "the tumbler miscounts its own tumbles",
    "arm_unconfirmed": "the tumbler obeys an Arm without answering it",
    "arm_lost": "the tumbler never hears an Arm",
    "no_activation": "the tumbler tumbles without announcing it",
    "flat_flag": "the tumbler reports a flat flag its tilt does not give",
}


class SimOnlyError(TabledError, RuntimeError):
    """The scenario asks for something only a simulator does."""


def cannot_run(s: Scenario, device: str) -> list[str]:
    """Why this scenario cannot run on a virtual rig whose firmware is ``device``, each
    by fault name (empty: it can)."""
    game_device = "tumbler" if s.dice else "shoe"
    if device != game_device:
        return [f"{s.game} is played with a {game_device}, and this rig's firmware is a "
                f"{device}"]
    why = [f"round {i + 1}: {f.fault} ({SIM_ONLY_FAULTS[f.fault]})"
           for i, r in enumerate(s.rounds) for f in r.faults if f.fault in SIM_ONLY_FAULTS]
    if device == "shoe" and any(f.fault == "unplug" for r in s.rounds for f in r.faults):
        # The emulated UART cannot be detached from a running MCU (QEMU's PL011 does not
        # hot-swap its backend), so unplugging cuts the MCU's power, and a power cut loses
        # the shoe's count, which this board keeps across a reset only.
        why.append("unplug (on this rig a power cut: the shoe's count is kept across a "
                   "reset, not a power cut)")
    return why


class FirmwareShoe(ShoeSim):
    """The shoe's physical side; the firmware is the device."""

    def __init__(self, mcu: Mcu) -> None:
        self.mcu = mcu
        self._gate_override: bool | None = None
        super().__init__(serial="REF-SH-1")
        self.identity = Identity(DeviceKind.SHOE, "REF-SHOE", FIRMWARE, "REF-SH-1")
        self.refused: list[str] = []  # cards the firmware refused at a gate it had shut

    @property
    def firmware_gate(self) -> bool:
        """Locked, as the firmware last reported (it boots locked)."""
        said = self.mcu.saw("gate ")
        return not said or said[-1] != "gate 0"

    @property
    def gate_locked(self) -> bool:
        # The dealer pulls a card past a shut gate by opening it for one draw (a forced
        # draw): that is the physical gate's, the firmware still thinks it shut.
        return self.firmware_gate if self._gate_override is None else self._gate_override

    @gate_locked.setter
    def gate_locked(self, value: bool) -> None:
        if not hasattr(self, "mcu"):
            return
        self._gate_override = None if value == self.firmware_gate else value

    def emit(self, message: Message, now: float) -> None:
        if isinstance(message, shoe_proto.CardDrawn):
            forced = int(self.firmware_gate and self._gate_override is False)
            self.mcu.send(f"card {message.card} {message.confidence} {message.deck_set:x} "
                          f"{int(message.double_draw)} {int(message.face_up)} {forced}")
        elif isinstance(message, shoe_proto.ShoeLoaded):
            self.mcu.send(f"loaded {message.cards} {message.deck_set:x}")
        elif isinstance(message, shoe_proto.CutCard):
            self.mcu.send("cut")
        elif isinstance(message, shoe_proto.ShoeEmpty):
            self.mcu.send("empty")
        elif isinstance(message, shoe_proto.DealerButton):
            self.mcu.send("button")
        else:
            raise SimOnlyError(f"{message.NAME}: the reference firmware has no such sensor")

    def resend(self, draw_no: int, now: float) -> None:
        raise SimOnlyError("repeat_draw: " + SIM_ONLY_FAULTS["repeat_draw"])

    def reboot(self, now: float) -> None:
        """The MCU's reset button: the firmware boots again, its gate locked."""
        self.mcu.reports.clear()  # what it said before the reset no longer holds
        self.mcu.reset()
        self._gate_override = None
        self.on_reboot()


class FirmwareTumbler(TumblerSim):
    """The dice and the button; the firmware is the tumbler."""

    def __init__(self, mcu: Mcu) -> None:
        self.mcu = mcu
        super().__init__(serial="REF-TM-1")
        self.identity = Identity(DeviceKind.TUMBLER, "REF-TUMBLER", FIRMWARE, "REF-TM-1")

    @property
    def armed(self) -> bool:
        said = self.mcu.saw("armed ")
        return bool(said) and said[-1] == "armed 1"

    @armed.setter
    def armed(self, value: bool) -> None:
        """The firmware's to say (it reports every change)."""

    def press_button(self, now: float) -> None:
        throw = self.scripted.pop(0) if self.scripted else Throw(self._random_dice())
        if throw.tumbles != 3 or throw.reported_count is not None or throw.last_count \
                is not None or not throw.announced or throw.flat_flags is not None:
            raise SimOnlyError(f"{throw}: the reference firmware tumbles three times and "
                               "reports what it reads")
        d, t = throw.dice, throw.tilt
        self.mcu.send(f"throw {d[0]} {d[1]} {d[2]} {t[0]} {t[1]} {t[2]} {throw.confidence}")
        self.mcu.send("button")

    def emit(self, message: Message, now: float) -> None:
        raise SimOnlyError(f"{message.NAME}: the firmware sends its own messages")

    def reboot(self, now: float) -> None:
        self.mcu.reports.clear()
        self.mcu.reset()


class McuPort(DevicePort):
    """The emulated MCU's UART0 as the daemon sees it. Unplugging it cuts the MCU's power
    (a USB serial adapter and the board behind it go away together); line noise is the
    firmware's to make, on its way out, as the simulators' ports make it."""

    def __init__(self, device: FirmwareShoe | FirmwareTumbler) -> None:
        self.mcu = device.mcu
        super().__init__(device)

    @property
    def url(self) -> str:
        return f"serial://{self.mcu.link}?baud=115200"

    @property
    def path(self) -> str:
        return str(self.mcu.link)

    @property
    def faults_out(self) -> LineFaults | None:
        return self._noise

    @faults_out.setter
    def faults_out(self, faults: LineFaults | None) -> None:
        self._noise = faults
        if not hasattr(self, "mcu") or not self.mcu.running:
            return
        if faults is not None and (faults.drop_rate or faults.dup_rate or faults.delay
                                   or faults.truncate_rate):
            raise SimOnlyError("the firmware's line makes bit errors only")
        self.mcu.send(f"noise {round((faults.bit_error_rate if faults else 0) * 1e6)}")

    async def start(self) -> None:
        await self.mcu.start()
        self.plugged = True

    async def stop(self) -> None:
        await self.unplug()

    def kick(self) -> None:
        """Nothing to flush: a sensor line goes to the firmware when it is written."""

    async def _plug(self) -> None:
        await self.mcu.start()

    def _send(self, data: bytes) -> None:
        raise SimOnlyError("the firmware writes its own line")

    async def unplug(self) -> None:
        self.plugged = False
        await self.mcu.kill()

    async def replug(self) -> None:
        await self._plug()
        self.plugged = True


class QemuRig(SimRig):
    """A SimRig whose shoe or tumbler is the firmware on an emulated MCU."""

    images: dict[str, Path] | None = None

    async def _start_devices(self) -> None:
        images = self.images or build_images(self.work / "firmware")
        if self.dice:
            mcu = Mcu(images["tumbler"], self.work / "tumbler", self.work)
            self.sims["tumbler"] = FirmwareTumbler(mcu)
            self.ports["tumbler"] = McuPort(self.sims["tumbler"])
        else:
            self._start_shuffler()
            mcu = Mcu(images["shoe"], self.work / "shoe", self.work)
            self.sims["shoe"] = FirmwareShoe(mcu)
            self.ports["shoe"] = McuPort(self.sims["shoe"])
        for p in self.ports.values():
            await p.start()

    def mcu(self) -> Mcu:
        port = self.ports["tumbler" if self.dice else "shoe"]
        assert isinstance(port, McuPort)
        return port.mcu

