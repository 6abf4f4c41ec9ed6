"""Retained state after the table stops (issue 15): what a consumer that connects later
reads must agree with itself -- the table offline, its devices offline, nothing else."""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import aiomqtt

from hil.broker import Mosquitto
from hil.simulate import simulate
from tests.integration.retained import retained


async def test_simulate_leaves_the_table_and_its_devices_offline(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        await simulate("tiger-buffalo", "P", 8, 3, workdir=tmp_path, speed=50,
                       broker=("127.0.0.1", broker.port), out=io.StringIO())
        left = await retained(broker.port, "tables/sim-1/#")
    finally:
        broker.cleanup()
    status = left.pop("tables/sim-1/status")
    snapshot = left.pop("tables/sim-1/snapshot")
    assert snapshot["journal_id"] == status["journal_id"] and snapshot["msg_seq"] is None
    assert status["state"] == "offline" and status["at"] is not None  # a clean stop
    assert set(left) == {"tables/sim-1/devices/shoe", "tables/sim-1/devices/shuffler"}
    assert {d["state"] for d in left.values()} == {"offline"}
    assert len({d["msg_seq"] for d in left.values()}) == 2
    for payload in [status, *left.values()]:
        assert payload["journal_id"] == status["journal_id"]
        assert payload["table"] == "sim-1"


async def test_a_device_no_longer_configured_is_cleared_once(tmp_path: Path) -> None:
    """v1 left a removed device's topic retained forever (signed with an old key)."""
    from daemon.config import parse_config  # noqa: PLC0415
    from daemon.service import TableService  # noqa: PLC0415
    from daemon.store.journal import Publish  # noqa: PLC0415
    from tests.keys import commands, signing  # noqa: PLC0415

    broker = Mosquitto(tmp_path, persistent=True)
    broker.start()
    try:
        cfg = parse_config({
            "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
            "devices": {"shoe": "socket://127.0.0.1:9", "shuffler": "socket://127.0.0.1:9",
                        "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
            "broker": {"url": f"mqtt://127.0.0.1:{broker.port}"},
            "journal": {"path": str(tmp_path / "j.db")},
            "signing": signing(), "commands": commands()})
        s = TableService(cfg)
        # This table once had a tumbler, and its state is retained at the broker.
        s.journal.append("device", {}, publish=(Publish(
            "tables/t1/devices/tumbler", {"type": "device", "name": "tumbler"},
            retain=True),))
        s.journal.mark_delivered(1)  # long ago
        async with aiomqtt.Client("127.0.0.1", broker.port) as c:
            await c.publish("tables/t1/devices/tumbler", b'{"old": 1}', qos=1, retain=True)
        task = asyncio.create_task(s.publisher.run())
        async with asyncio.timeout(10):
            while not s.publisher.stats.connected or s.journal.pending_count():
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        left = await retained(broker.port, "tables/t1/devices/#")
        assert "tables/t1/devices/tumbler" not in left
        assert s.cleared() == []  # done: not cleared again on every connection
        await s.publisher.stop()
        await task
    finally:
        broker.cleanup()


async def test_the_retained_snapshot_is_current_after_a_clean_stop(tmp_path: Path) -> None:
    """Issue 15 review: the snapshot went out at most every 0.2 s and a clean stop did not
    send one still due, so the retained snapshot showed the last round still open. Through
    `tabled simulate`, its own process, against a real Mosquitto; Tai Sai ends each round
    on the dice, so the last result is the last thing the table does before it stops."""
    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        for run, rounds in enumerate((3, 4)):  # the second run: a table with history
            done = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "daemon", "simulate", "--game", "tai-sai-open-cover",
                "--table", "T", "--rounds", str(rounds), "--speed", "50",
                "--broker", f"mqtt://127.0.0.1:{broker.port}", cwd=tmp_path,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            _, err = await asyncio.wait_for(done.communicate(), 120)
            assert done.returncode == 0, err.decode()
            left = await retained(broker.port, "tables/T/#")
            status, snapshot = left["tables/T/status"], left["tables/T/snapshot"]
            tumbler = left["tables/T/devices/tumbler"]
            assert status["state"] == "offline" and tumbler["state"] == "offline"
            assert snapshot["journal_id"] == status["journal_id"] == tumbler["journal_id"]
            # Nothing numbered came after the snapshot: the tumbler's "offline" is the
            # table's last numbered message, and the snapshot is as of it.
            assert snapshot["as_of_msg_seq"] == tumbler["msg_seq"], (run, snapshot)
            assert snapshot["round"] is None and snapshot["state"] == "idle", snapshot
            assert snapshot["last_result_seq"] == rounds, snapshot  # each run a new journal
    finally:
        broker.cleanup()
