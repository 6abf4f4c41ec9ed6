"""The daemon's runtime never imports the simulators (hil/): only the command line, which
composes both, may. Before, daemon/transports.py imported hil.usb_backend for sim= URLs.

And no module imports another that imports it back, directly or through others (issue 27:
hil/operator.py and hil/runner.py did, display/ and watch.py did, the protocol specs and
their vectors did)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from daemon import transports
from daemon.device_url import parse_device_url
from tests.imports import cycles, import_graph, imported_modules, imports_of_test_modules

ROOT = Path(__file__).resolve().parents[2]
COMPOSERS = {"daemon/cli.py"}


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


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph()) == []


def _room(module: str) -> str:
    """A module's folder below a top package (daemon.display), or the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


# The round core reaches the wire through results.py (issue 27, build step 2 undoes it).
KNOWN_ROOM_CYCLES = [["daemon.mqtt", "daemon.results", "daemon.round"]]


def test_no_folder_imports_a_module_that_imports_the_folder_back() -> None:
    rooms: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        rooms.setdefault(_room(module), set()).update(_room(m) for m in imported)
    for room, imported in rooms.items():
        imported.discard(room)
    assert [c for c in cycles(rooms) if c not in KNOWN_ROOM_CYCLES] == []


def test_the_cycle_check_finds_an_indirect_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in helper modules (tests/unit/round/tables.py,
    tests/device/c_devices.py, ...), never in a test_* module another one imports."""
    assert imports_of_test_modules() == {}


def test_a_sim_url_without_a_simulator_installed_is_a_clear_error() -> None:
    url = parse_device_url("usb://1d50:6178?sim=127.0.0.1:9")
    saved = transports._sim_usb_backend
    transports.use_sim_usb_backend(None)
    try:
        with pytest.raises(transports.TransportError, match="no simulator is installed"):
            asyncio.run(transports.open_transport("shuffler", url))
    finally:
        transports.use_sim_usb_backend(saved)
