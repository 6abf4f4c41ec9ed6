"""firmware_protocols/ stays free of I/O: no asyncio, serial, usb, sockets, clocks or files."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "firmware_protocols"
FORBIDDEN = {"asyncio", "serial", "serial_asyncio_fast", "usb", "socket", "time", "os",
             "threading", "select", "selectors", "subprocess", "io", "pathlib", "datetime",
             "random"}


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_io_imports(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN, f"{path.name} imports {sorted(imported & FORBIDDEN)}"


def test_no_open_calls() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id in {"open", "print", "input"}]
        assert not calls, f"{path.name} calls {[c.func.id for c in calls]}"  # type: ignore[attr-defined]
