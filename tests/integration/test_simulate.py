"""The whole simulated table: devices over real ports, the daemon, a private broker, the
dealer over MQTT. Every round published once, in seq order, valid against the schema."""

from __future__ import annotations

import io
import json
import sqlite3
from importlib.resources import files
from pathlib import Path

import jsonschema

from hil.simulate import simulate

SCHEMA = json.loads((files("daemon.mqtt") / "schemas" / "result.schema.json").read_text())


async def test_simulated_table_publishes_every_round(tmp_path: Path) -> None:
    out = io.StringIO()
    results = await simulate("tiger-buffalo", "P", 8, 15, workdir=tmp_path, speed=50, out=out)
    assert [r["seq"] for r in results] == list(range(1, 16))
    assert len({r["round_id"] for r in results}) == 15
    for r in results:
        jsonschema.validate(r, SCHEMA)
        assert r["status"] == "valid" and "replayed" not in r
    text = out.getvalue()
    assert "15 rounds published (15 valid, 0 void)" in text
    db = sqlite3.connect(tmp_path / "journal.db")
    journalled = db.execute("SELECT count(*) FROM results").fetchone()[0]
    assert journalled == 15
    kinds = [k for (k,) in db.execute("SELECT kind FROM journal ORDER BY id")]
    # The procedure: betting opens, closes, then cards are dealt.
    first = kinds.index("betting_opened")
    assert kinds.index("betting_closed") > first and kinds.index("card") > kinds.index(
        "betting_closed")


async def test_mbs_table_runs_too(tmp_path: Path) -> None:
    results = await simulate("tiger-baccarat", "A", 6, 5, workdir=tmp_path, speed=50,
                             out=io.StringIO())
    assert len(results) == 5
    assert all(b["pays"] in (None, "0.95:1") for r in results for b in r["bets"]
               if b["bet"] == "banker")


async def test_tai_sai_table_runs(tmp_path: Path) -> None:
    results = await simulate("tai-sai-open-cover", "C", 0, 6, workdir=tmp_path, speed=50,
                             out=io.StringIO())
    assert [r["seq"] for r in results] == list(range(1, 7))
    for r in results:
        jsonschema.validate(r, SCHEMA)
        assert r["status"] == "valid" and r["tumbles"] >= 3 and len(r["dice"]) == 3


async def test_insurance_plus_table_runs(tmp_path: Path) -> None:
    results = await simulate("tiger-buffalo-insurance-plus", "C", 8, 12, workdir=tmp_path,
                             speed=50, out=io.StringIO())
    assert [r["seq"] for r in results] == list(range(1, 13))
    for r in results:
        jsonschema.validate(r, SCHEMA)


async def test_consumers_replay_requests_are_no_failed_payloads(tmp_path: Path) -> None:
    """Review of issue 15: while simulate ran, a consumer's replay requests (unsigned, as
    documented) were counted by its view as 'payloads failed verification'."""
    import asyncio  # noqa: PLC0415

    import aiomqtt  # noqa: PLC0415

    from hil.broker import Mosquitto  # noqa: PLC0415

    broker = Mosquitto(tmp_path)
    broker.start()
    out = io.StringIO()
    sent = 0

    async def consumer() -> None:
        nonlocal sent
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            while True:
                await client.publish("tables/sim-1/replay/request", json.dumps(
                    {"id": f"r{sent}", "from_msg_seq": 1, "to_msg_seq": 2,
                     "reply_to": "consumer-1"}), qos=1)
                sent += 1
                await asyncio.sleep(0.2)

    task = asyncio.create_task(consumer())
    try:
        results = await simulate("tiger-buffalo", "P", 8, 5, workdir=tmp_path, speed=50,
                                 broker=("127.0.0.1", broker.port), out=out)
    finally:
        task.cancel()
        broker.cleanup()
    assert len(results) == 5 and sent >= 3
    assert "failed verification" not in out.getvalue(), out.getvalue()
