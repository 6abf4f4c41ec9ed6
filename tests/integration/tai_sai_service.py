"""A Tai Sai table's service on simulated devices, for the tests that drive it through its
handlers."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tai_sai_service(tmp_path: Path) -> Any:
    from daemon.config import parse_config  # noqa: PLC0415
    from daemon.service import TableService  # noqa: PLC0415
    from tests.keys import commands, signing  # noqa: PLC0415

    s = TableService(parse_config({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TB0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands()}))
    s.apply(s.table.open_betting())
    s.apply(s.table.close_betting())
    return s
