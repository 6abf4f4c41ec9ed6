"""The service is its parts, wired in one place (issue 27): the wiring stays small, and
no part reaches back into it or into the package that re-exports it."""

from __future__ import annotations

import ast
from pathlib import Path

from daemon.service.pending import owed_key
from tests.unit.service.helpers import tai_sai_service

ROOT = Path(__file__).resolve().parents[3]
SERVICE = ROOT / "daemon" / "service"


def imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_the_wiring_is_under_350_lines() -> None:
    lines = (SERVICE / "table.py").read_text(encoding="utf-8").count("\n")
    assert lines < 350, f"daemon/service/table.py has {lines} lines: a part belongs apart"


def test_no_part_imports_the_wiring() -> None:
    for path in sorted(SERVICE.glob("*.py")):
        if path.name in ("__init__.py", "table.py"):
            continue
        wrong = imports(path) & {"daemon.service", "daemon.service.table"}
        assert not wrong, f"{path.name} imports {sorted(wrong)}"


def test_the_lower_layers_do_not_import_the_service() -> None:
    """The publisher, the device driver and the journal call the service through the
    protocols they declare (Upstream, DeviceListener, MessageWatch), never by name."""
    for rel in ("daemon/mqtt/publisher.py", "daemon/drivers/device.py",
                "daemon/store/journal.py"):
        found = {m for m in imports(ROOT / rel) if m.startswith("daemon.service")}
        assert not found, f"{rel} imports {sorted(found)}"


async def test_an_owed_command_that_cannot_be_read_back_is_alerted_not_forgotten(
        tmp_path: Path) -> None:
    """pending.py: a command kept as owed across a restart, unreadable by this release
    (another release's, a damaged file), was dropped in silence; the table then waited for
    work nobody had asked the device for. Now the restart journals an alert naming it."""
    first = tai_sai_service(tmp_path)
    first.journal.set_meta(owed_key("tumbler"), "7f:zz")
    first.journal.close()
    again = tai_sai_service(tmp_path)
    again.begin()
    [alert] = [r.body for r in again.journal.records() if r.kind == "alert"]
    assert alert["code"] == "device_command_outcome_unknown", alert
    assert "tumbler: the command kept as owed ('7f:zz') cannot be read" in alert["detail"]
    assert "tumbler" not in again.effects.pending
