"""Baccarat table bac-07 for the tests that run the daemon as its own process, the way
systemd starts it: the shoe's simulator on a pty, the shuffler's over USB (simulated on a
TCP port), and the configuration that names them, pinned by serial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hil.ports import PtyPort, TcpPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from tests.keys import commands, signing


def bac07_ports(tmp_path: Path) -> tuple[PtyPort, TcpPort]:
    """The shoe's port (its pty linked at tmp_path/shoe) and the shuffler's, not started:
    a device is plugged in when its port starts."""
    return PtyPort(ShoeSim(), link=tmp_path / "shoe"), TcpPort(ShufflerSim())


def bac07_config(tmp_path: Path, broker: int, shuffler: int) -> dict[str, Any]:
    """The table on the broker's and the shuffler's ports, its journal in ``tmp_path``."""
    return {
        "table": {"id": "bac-07", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        "devices": {"shoe": f"serial://{tmp_path / 'shoe'}?baud=115200",
                    "shuffler": f"usb://1d50:6178?serial=SF0001&sim=127.0.0.1:{shuffler}",
                    "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "broker": {"url": f"mqtt://127.0.0.1:{broker}"},
        "journal": {"path": str(tmp_path / "journal.db")},
        "signing": signing(), "commands": commands(),
    }
