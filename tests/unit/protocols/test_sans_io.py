"""firmware_protocols/, daemon/games/ and daemon/round/ stay free of I/O: no asyncio,
serial, usb, sockets, clocks, random numbers or files; the round core gets its clock and
its round ids from the service."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.imports import FORBIDDEN, imported_modules

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = (ROOT / "firmware_protocols", ROOT / "daemon" / "games", ROOT / "daemon" / "round")
SOURCES = sorted(p for pkg in PACKAGES for p in pkg.glob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_io_imports(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN, f"{path.name} imports {sorted(imported & FORBIDDEN)}"
    # Nor anything of the daemon that does I/O (the store, MQTT, drivers, the service).
    io = {m for m in imported_modules(tree) if m.startswith(("daemon.store", "daemon.mqtt",
                                                               "daemon.drivers",
                                                               "daemon.service",
                                                               "daemon.drivers.transports"))}
    assert not io, f"{path.name} imports {sorted(io)}"


def test_no_open_calls() -> None:
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id in {"open", "print", "input"}]
        assert not calls, f"{path.name} calls {[c.func.id for c in calls]}"  # type: ignore[attr-defined]
