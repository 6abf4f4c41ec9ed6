"""The virtual rig: the daemon's scenarios played against the reference firmware running
on an emulated Cortex-M3 (hil/qemu.py) instead of the Python device simulators.

The physical world stays the simulators' (the cards in the shoe and their order, the cut
card, the dealing faults, the dice a throw shows: hil/shoe.py, hil/tumbler.py), but the
device is the firmware: what a simulator would have sent on its link goes to the
firmware's test port as what its sensors saw, and the firmware sends its own messages on
its own link over the emulated UART. The firmware's state (the gate, the armed light)
comes back as its reports. On the shoe's and the tumbler's rigs the shuffler is the
simulator; on the shuffler's (hil/rigs/qemu-shuffler.json) the shuffler is the firmware,
reached over its emulated UART (serial://), and the shoe the simulator, loaded with the
order the firmware reported on its test port once the daemon has certified it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from daemon.errors import TabledError
from firmware_protocols import shoe as shoe_proto
from firmware_protocols.common import DeviceKind
from firmware_protocols.wire import Message
from hil.device import Identity
from hil.faults import LineFaults
from hil.ports import DevicePort, PtyPort
from hil.qemu import Mcu, build_images
from hil.rig import SimRig
from hil.scenario import Scenario
from hil.shoe import DEFAULT_DECK_SET, ShoeSim
from hil.shuffler import ShufflerSim
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


# What only the simulated shuffler does: the firmware shuffles honest decks or the order
# its test port scripts, and has no foreign-card sensor or failing RNG to report.
SHUFFLER_SIM_ONLY = {
    "foreign": "the shuffler finds foreign cards",
    "not_shuffled": "the shuffler reports its RNG failed",
}
SCRIPT_LINE = 100  # cards per script line: 300 characters, within the firmware's 600


def cannot_run(s: Scenario, device: str) -> list[str]:
    """Why this scenario cannot run on a virtual rig whose firmware is ``device``, each
    by fault name (empty: it can)."""
    game_device = "tumbler" if s.dice else "shoe"
    if device == "shuffler":
        return _shuffler_cannot_run(s)
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


def _shuffler_cannot_run(s: Scenario) -> list[str]:
    if s.dice:
        return [f"{s.game} is played with a tumbler, and this rig's firmware is a shuffler"]
    why = [f"shuffle: {k} ({v})" for k, v in SHUFFLER_SIM_ONLY.items() if s.shuffle.get(k)]
    # A reset or power cut forgets the shuffles (the board keeps only the shoe's count),
    # so the shoe's order could not be revealed, where the simulator keeps it.
    why += [f"round {i + 1}: {f.fault} of the shuffler (the firmware forgets its shuffles)"
            for i, r in enumerate(s.rounds) for f in r.faults
            if f.args.get("device") == "shuffler" and f.fault != "line_noise"]
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


class FirmwareShuffler(ShufflerSim):
    """The cards' side of the shuffler (what the scenario scripts); the firmware is the
    shuffler, and says on its test port the order it certified."""

    def __init__(self, mcu: Mcu) -> None:
        self.mcu = mcu
        # Its shuffle takes 1.5 s of the MCU's time, not the simulators' scaled seconds.
        super().__init__(serial="REF-SF-1", speed=1.0)
        self.identity = Identity(DeviceKind.SHUFFLER, "REF-SHUFFLER", FIRMWARE, "REF-SF-1")

    @property
    def last_order(self) -> list[str]:
        """The order of the newest shuffle the firmware certified: its "order" lines,
        which it writes before it sends shuffle_complete."""
        last: list[str] = []
        cards: list[str] = []
        for r in self.mcu.reports if hasattr(self, "mcu") else []:
            if r.text.startswith("order "):
                cards += r.text.split()[1:]
            elif r.text.startswith("shuffled "):
                last, cards = cards, []
        return last

    @last_order.setter
    def last_order(self, value: list[str]) -> None:
        """The firmware's to say."""

    def script(self, order: list[str]) -> None:
        for i in range(0, len(order), SCRIPT_LINE):
            self.mcu.send("script " + " ".join(order[i:i + SCRIPT_LINE]))

    def take(self) -> None:
        """The newest shuffle's cards leave the shuffler for the shoe: from then on the
        firmware reveals their order when asked (never while they are inside)."""
        self.mcu.send("take")

    def handle(self, msg: Message, now: float) -> None:
        raise SimOnlyError(f"{msg.NAME}: the firmware answers its own commands")

    def reboot(self, now: float) -> None:
        self.mcu.reports.clear()
        self.mcu.reset()


class ShoeFromShuffler(ShoeSim):
    """The simulated shoe, loaded with cards taken out of the firmware's shuffler."""

    def __init__(self, shuffler: FirmwareShuffler, **kw: Any) -> None:
        self.shuffler = shuffler
        super().__init__(**kw)

    def load(self, cards: list[str], now: float, *, deck_set: int = DEFAULT_DECK_SET,
             cut_at: int | None = None, foreign_backs: dict[int, int] | None = None,
             cut_first: bool = False) -> None:
        self.shuffler.take()
        super().load(cards, now, deck_set=deck_set, cut_at=cut_at,
                     foreign_backs=foreign_backs, cut_first=cut_first)


class McuPort(DevicePort):
    """The emulated MCU's UART0 as the daemon sees it. Unplugging it cuts the MCU's power
    (a USB serial adapter and the board behind it go away together); line noise is the
    firmware's to make, on its way out, as the simulators' ports make it."""

    def __init__(self, device: FirmwareShoe | FirmwareShuffler | FirmwareTumbler) -> None:
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


@dataclass
class QemuRig(SimRig):
    """A SimRig whose shoe, shuffler or tumbler is the firmware on an emulated MCU."""

    images: ClassVar[dict[str, Path] | None] = None  # built once by a test, else per run
    firmware: str = ""  # the device the firmware is; "": the game's shoe or tumbler

    async def _start_devices(self) -> None:
        images = self.images or build_images(self.work / "firmware")
        if self.firmware == "shuffler" and not self.dice:
            mcu = Mcu(images["shuffler"], self.work / "shuffler", self.work)
            shuffler = FirmwareShuffler(mcu)
            self.sims["shuffler"] = shuffler
            self.ports["shuffler"] = McuPort(shuffler)
            self.sims["shoe"] = ShoeFromShuffler(shuffler, seed=self.seed,
                                                 protocol_version=self._version("shoe"))
            self.ports["shoe"] = PtyPort(self.sims["shoe"], link=self.work / "shoe")
        elif self.dice:
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

    def devices(self) -> dict[str, str]:
        if self.firmware != "shuffler" or self.dice:
            return super().devices()
        return {name: port.url for name, port in self.ports.items()}

    def mcu(self) -> Mcu:
        port = self.ports["tumbler" if self.dice else self.firmware or "shoe"]
        assert isinstance(port, McuPort)
        return port.mcu

