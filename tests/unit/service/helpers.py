"""A table service on a real journal, its devices at a port nothing answers on."""

from __future__ import annotations

from pathlib import Path

from daemon.config import parse_config
from daemon.service import TableService
from tests.keys import commands, signing


def tai_sai_service(tmp_path: Path) -> TableService:
    return TableService(parse_config({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TB0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands()}))
