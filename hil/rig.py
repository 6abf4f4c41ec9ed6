"""A simulated table rig: the device simulators on their real ports, the keys, and the
daemon config that points at them. ``tabled simulate`` runs the daemon in-process on it;
the reliability suite and ``tabled hil run`` run the daemon as a separate process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.drivers.transports import use_sim_usb_backend
from daemon.games import get_game
from daemon.round.kinds import table_kind
from daemon.security.signing import Keyring, private_key_pem, public_key_text
from firmware_protocols.framing import PROTOCOL_VERSION
from hil.dealer import SimDealer
from hil.ports import DevicePort, PtyPort, TcpPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.tumbler import TumblerSim
from hil.usb_backend import sim_backend

TABLE_ID = "sim-1"


@dataclass
class SimRig:
    work: Path
    game: str
    layout: str
    decks: int | None
    broker: tuple[str, int]
    speed: float = 20.0
    seed: int = field(default_factory=lambda: int(time.time()))
    journal: Path | None = None
    table_key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    dealer_key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    protocol_versions: dict[str, int] = field(default_factory=dict)  # a wrong one, to test
    # More [table] settings, as a scenario gives them (e.g. insurance = false, IP 4.2.2).
    table_settings: dict[str, Any] = field(default_factory=dict)
    # More config sections, as a scenario gives them (e.g. [dice_watch] with a small window).
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    table_id: str = TABLE_ID
    sims: dict[str, Any] = field(default_factory=dict)
    ports: dict[str, DevicePort] = field(default_factory=dict)

    @property
    def dice(self) -> bool:
        return table_kind(get_game(self.game)).dice

    @property
    def base(self) -> str:
        return f"tables/{self.table_id}"

    @property
    def keyring(self) -> Keyring:
        return Keyring.of([self.table_key.public_key()])

    async def start(self) -> None:
        use_sim_usb_backend(sim_backend)  # the shuffler's sim= URL, in this process too
        await self._start_devices()
        key_file = self.work / "signing.pem"
        key_file.write_bytes(private_key_pem(self.table_key))
        key_file.chmod(0o600)

    async def _start_devices(self) -> None:
        """The devices on their ports (hil/qemu_rig.py puts firmware in their place)."""
        if self.dice:
            self.sims["tumbler"] = TumblerSim(speed=self.speed, seed=self.seed,
                                              protocol_version=self._version("tumbler"))
            self.ports["tumbler"] = PtyPort(self.sims["tumbler"], link=self.work / "tumbler")
        else:
            self._start_shuffler()
            self.sims["shoe"] = ShoeSim(seed=self.seed, protocol_version=self._version("shoe"))
            self.ports["shoe"] = PtyPort(self.sims["shoe"], link=self.work / "shoe")
        for p in self.ports.values():
            await p.start()

    def _start_shuffler(self) -> None:
        self.sims["shuffler"] = ShufflerSim(speed=self.speed, seed=self.seed,
                                            protocol_version=self._version("shuffler"))
        self.ports["shuffler"] = TcpPort(self.sims["shuffler"])

    def _version(self, device: str) -> int:
        return self.protocol_versions.get(device, PROTOCOL_VERSION)

    async def stop(self) -> None:
        for p in self.ports.values():
            await p.stop()

    def devices(self) -> dict[str, str]:
        if self.dice:
            return {"tumbler": f"serial://{self.work / 'tumbler'}?baud=115200"}
        shuffler = self.ports["shuffler"]
        assert isinstance(shuffler, TcpPort)
        return {"shoe": f"serial://{self.work / 'shoe'}?baud=115200",
                "shuffler": f"usb://1d50:6178?serial=SF0001&sim=127.0.0.1:{shuffler.port}"}

    def config(self) -> dict[str, Any]:
        table: dict[str, Any] = {"id": self.table_id, "game": self.game, "layout": self.layout,
                                 **self.table_settings}
        if not self.dice:
            table["decks"] = self.decks
        return {
            **self.sections,
            "table": table,
            "devices": {**self.devices(), "serials": {n: s.identity.serial
                                                      for n, s in self.sims.items()}},
            "broker": {"url": f"mqtt://{self.broker[0]}:{self.broker[1]}",
                       "allow_plaintext_remote": True},
            "journal": {"path": str(self.journal or self.work / "journal.db")},
            "signing": {"key_file": str(self.work / "signing.pem")},
            "commands": {"principals": {"sim-dealer": {
                "key": public_key_text(self.dealer_key.public_key())}}},
        }

    def dealer(self, **kw: Any) -> SimDealer:
        devices = {k: v for k, v in self.sims.items()}
        for name, port in self.ports.items():
            if name in ("shoe", "tumbler"):
                devices[f"{name}_port"] = port
        return SimDealer(self.broker[0], self.broker[1], self.base, self.dealer_key,
                         **devices, **kw)
