"""A journal holding a record this release cannot read stops the table's start with the
journal's error (daemon/service.py ``run``), never with a table rebuilt around a hole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.config import parse_config
from daemon.service import TableService
from daemon.store.journal import Journal, JournalError
from tests.keys import commands, signing


def _service(path: Path) -> TableService:
    return TableService(parse_config({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
        "journal": {"path": str(path)},
        "signing": signing(), "commands": commands()}))


@pytest.mark.parametrize(("kind", "body", "says"), [
    ("betting_openned", {}, "unknown kind 'betting_openned'"),
    ("tumble", {"n": 1}, "a tumble record this release cannot read"),
])
async def test_a_record_this_release_cannot_read_stops_the_start(
        tmp_path: Path, kind: str, body: dict[str, Any], says: str) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    journal.append("betting_opened", {}, round_id="r1")
    journal.append(kind, body, round_id="r1")
    journal.close()
    service = _service(path)
    try:
        with pytest.raises(JournalError, match=says):
            await service.run()
        assert service.table.round is not None  # folded up to the record it cannot read
    finally:
        service.journal.close()


def _journalled_literals() -> set[str]:
    """The kinds the daemon's source journals by name (``journal.append("kind", ...)``)."""
    import ast  # noqa: PLC0415

    root = Path(__file__).resolve().parents[2] / "daemon"
    out = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f, first = node.func, node.args[0]
            if isinstance(f, ast.Attribute) and f.attr == "append" and \
                    "journal" in ast.unparse(f.value) and isinstance(first, ast.Constant):
                out.add(str(first.value))
    return out


def test_every_kind_the_service_journals_is_one_a_restart_reads() -> None:
    from daemon.round import records  # noqa: PLC0415
    from daemon.security import authority  # noqa: PLC0415

    kinds = _journalled_literals() | {authority.ACCEPTED, authority.REFUSED}
    assert len(kinds) >= 8
    assert kinds - records.SERVICE - set(records.KINDS) == set(), \
        "declare it in daemon/round/records.py SERVICE, or a restart refuses the journal"
