"""Issue 15: device states flapped (22 retained messages in 6 s while a shoe was
unplugged) and could arrive out of order. Now: numbered like every message, shown once
settled, ready at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from daemon.config import parse_config
from daemon.drivers.device import DeviceState, DeviceStatus
from daemon.service import DEVICE_DEBOUNCE, TableService
from tests.keys import commands, signing


def service(tmp_path: Path) -> TableService:
    return TableService(parse_config({
        "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        "devices": {"shoe": "socket://127.0.0.1:9", "shuffler": "socket://127.0.0.1:9",
                        "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands()}))


def shown(s: TableService) -> list[tuple[int, str]]:
    return [(p["msg_seq"], p["state"]) for p in
            (json.loads(e.payload) for e in s.journal.pending(10**6))
            if p["type"] == "device" and p["name"] == "shoe"]


async def test_an_unplugged_shoe_shows_lost_once_and_ready_at_once(tmp_path: Path) -> None:
    s = service(tmp_path)
    st = DeviceStatus("shoe", "socket://127.0.0.1:9", DeviceState.READY, sessions=1)
    s.board.device_status(st)
    retries = [DeviceState.LOST, DeviceState.CONNECTING, DeviceState.HANDSHAKING] * 8
    for n, state in enumerate(retries):  # 24 changes in 0.24 s, then more over 1.5 s
        st.state, st.detail = state, f"retry {n}"
        s.board.device_status(st)
        await asyncio.sleep(0.01 if n < 12 else 0.12)
    st.state = DeviceState.LOST
    s.board.device_status(st)
    await asyncio.sleep(DEVICE_DEBOUNCE + 0.2)
    st.state, st.sessions = DeviceState.READY, 2
    s.board.device_status(st)
    states = shown(s)
    assert [state for _, state in states] == ["ready", "lost", "ready"]
    assert [n for n, _ in states] == sorted(n for n, _ in states)


async def test_a_quick_reboot_still_shows_as_a_new_session(tmp_path: Path) -> None:
    s = service(tmp_path)
    st = DeviceStatus("shoe", "socket://127.0.0.1:9", DeviceState.READY, sessions=1)
    s.board.device_status(st)
    st.state = DeviceState.LOST
    s.board.device_status(st)
    await asyncio.sleep(0.1)
    st.state, st.sessions = DeviceState.READY, 2
    s.board.device_status(st)
    await asyncio.sleep(DEVICE_DEBOUNCE + 0.1)
    assert [state for _, state in shown(s)] == ["ready", "ready"]
