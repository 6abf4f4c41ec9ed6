"""Layers: the daemon's runtime never imports the simulators (hil/): only the command line,
which composes both, may (before, daemon/drivers/transports.py imported hil.usb_backend for
sim= URLs); and the I/O-free core loads no I/O module through any chain of imports.

And no module imports another that imports it back, directly or through others (issue 27:
hil/operator.py and hil/runner.py did, display/ and watch.py did, the protocol specs and
their vectors did)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from daemon.drivers import transports
from daemon.drivers.device_url import parse_device_url
from tests.imports import (
    FORBIDDEN,
    cycles,
    import_graph,
    imported_modules,
    imports_of_test_modules,
)

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


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert cycles(import_graph()) == []


def _room(module: str) -> str:
    """A module's folder below a top package (daemon.display), or the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def test_no_folder_imports_a_module_that_imports_the_folder_back() -> None:
    rooms: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        rooms.setdefault(_room(module), set()).update(_room(m) for m in imported)
    for room, imported in rooms.items():
        imported.discard(room)
    assert cycles(rooms) == []


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


# -- the I/O-free core, over every chain of imports -------------------------------------
# firmware_protocols/, daemon/games/ and daemon/round/ do no I/O (docs/architecture.md).
# tests/unit/protocols/test_sans_io.py checks what each of their files imports itself;
# this checks what importing them loads, through any chain of the project's modules: the
# round core once reached daemon.mqtt.envelope through daemon.results, which a check of
# direct imports passed.
CORE = ("firmware_protocols", "daemon.games", "daemon.round")
IO_MODULES = ("daemon.store", "daemon.mqtt", "daemon.drivers", "daemon.service",
              "daemon.drivers.transports")
PROJECT = ("daemon", "firmware_protocols", "hil")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_graph() -> dict[str, set[str]]:
    """Each module of the project -> the modules importing it loads first-hand: what it
    names, each package on the way to them (their __init__ runs), and a ``from pkg import
    name`` that names a submodule."""
    files = {_module_name(p): p for top in PROJECT for p in (ROOT / top).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = set(imported_modules(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                named |= {f"{node.module}.{a.name}" for a in node.names
                          if f"{node.module}.{a.name}" in files}
        loads = set()
        for m in named | {name}:
            parts = m.split(".")
            loads |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        graph[name] = loads - {name}
    return graph


def io_chains(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each module of the core that loads an I/O module, with one chain that does."""
    def is_io(m: str) -> bool:
        return m.split(".", maxsplit=1)[0] in FORBIDDEN or m.startswith(IO_MODULES)

    out: dict[str, list[str]] = {}
    for start in sorted(m for m in graph if m.startswith(CORE)):
        paths, queue = {start: [start]}, [start]
        while queue:
            m = queue.pop(0)
            if is_io(m):
                out[start] = paths[m]
                break
            for n in sorted(graph.get(m, ())):
                if n not in paths:
                    paths[n] = [*paths[m], n]
                    if n in graph or is_io(n):
                        queue.append(n)
    return out


def test_the_core_reaches_no_io_module_through_any_chain() -> None:
    assert io_chains(load_graph()) == {}


def test_the_chain_guard_catches_the_round_core_reaching_mqtt_through_results() -> None:
    """What results.py imported until the wire layer (daemon/mqtt/wire/): the guard sees the
    chain a check of direct imports let through."""
    graph = load_graph()
    graph["daemon.results"] = graph["daemon.results"] | {"daemon.mqtt",
                                                         "daemon.mqtt.envelope"}
    chains = io_chains(graph)
    assert chains["daemon.round.baccarat"][-2:] == ["daemon.results", "daemon.mqtt"]
    assert {"daemon.round.lifecycle", "daemon.round.tai_sai"} <= set(chains)
