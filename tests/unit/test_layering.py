"""The daemon's runtime never imports the simulators (hil/): only the command line, which
composes both, may. Before, daemon/drivers/transports.py imported hil.usb_backend for sim= URLs."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from daemon.drivers import transports
from daemon.drivers.device_url import parse_device_url
from tests.unit.protocols.test_sans_io import imported_modules

ROOT = Path(__file__).resolve().parents[2]
COMPOSERS = {"daemon/cli/main.py"}


def _imports(path: Path) -> set[str]:
    return imported_modules(ast.parse(path.read_text(encoding="utf-8")))


def test_nothing_in_the_daemon_but_the_command_line_imports_hil() -> None:
    offenders = {}
    for path in sorted((ROOT / "daemon").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        hil = {n for n in _imports(path) if n == "hil" or n.startswith("hil.")}
        if hil and rel not in COMPOSERS:
            offenders[rel] = sorted(hil)
    assert offenders == {}


def test_a_sim_url_without_a_simulator_installed_is_a_clear_error() -> None:
    url = parse_device_url("usb://1d50:6178?sim=127.0.0.1:9")
    saved = transports._sim_usb_backend
    transports.use_sim_usb_backend(None)
    try:
        with pytest.raises(transports.TransportError, match="no simulator is installed"):
            asyncio.run(transports.open_transport("shuffler", url))
    finally:
        transports.use_sim_usb_backend(saved)
