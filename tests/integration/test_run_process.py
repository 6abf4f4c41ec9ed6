"""`tabled run` as a process, the way systemd starts it: simulators on real ports, a
private broker, retained status and devices, commands answered, SIGTERM handled."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt

from daemon.security.signing import public_key_text
from hil.broker import Mosquitto
from tests.integration.bac07 import bac07_ports
from tests.keys import STRANGER_KEY, SUPERVISOR_KEY, TABLE_KEY_FILE, TABLE_KEYRING, signed
from tests.wait import until


async def test_tabled_run_process(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    shoe_port, shuffler_port = bac07_ports(tmp_path)
    await shoe_port.start()
    await shuffler_port.start()
    cfg = tmp_path / "table.toml"
    cfg.write_text(f"""
[table]
id = "bac-07"
game = "tiger-buffalo"
layout = "P"
decks = 8
[devices]
shoe = "serial://{tmp_path / 'shoe'}?baud=115200"
shuffler = "usb://1d50:6178?serial=SF0001&sim=127.0.0.1:{shuffler_port.port}"
serials = {{ shoe = "SH0001", shuffler = "SF0001" }}
[broker]
url = "mqtt://127.0.0.1:{broker.port}"
[journal]
path = "{tmp_path / 'journal.db'}"
[signing]
key_file = "{TABLE_KEY_FILE}"
[commands.principals.pit-boss]
key = "{public_key_text(SUPERVISOR_KEY.public_key())}"
""", encoding="utf-8")
    seen: dict[str, list[dict[str, Any]]] = {}
    proc = subprocess.Popen([sys.executable, "-m", "daemon", "run", "--config", str(cfg)],
                            stderr=subprocess.PIPE, text=True)
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.subscribe("tables/bac-07/#", qos=1)

            async def listen() -> None:
                async for m in client.messages:
                    raw = m.payload if isinstance(m.payload, bytes) else b"{}"
                    seen.setdefault(str(m.topic).split("bac-07/")[1], []).append(json.loads(raw))

            listener = asyncio.create_task(listen())

            def ready(name: str) -> bool:
                return any(d["state"] == "ready" for d in seen.get(f"devices/{name}", []))

            await until(lambda: any(s["state"] == "online" for s in seen.get("status", [])))
            await until(lambda: ready("shoe") and ready("shuffler"))
            await client.publish("tables/bac-07/cmd/close_betting",
                                 signed("bac-07", "close_betting", "x1",
                                        round_id="bac-07-none"), qos=1)
            await client.publish("tables/bac-07/cmd/launch", '{"id": "x2"}', qos=1)
            await client.publish("tables/bac-07/cmd/open_betting",
                                 signed("bac-07", "open_betting", "x3", key=STRANGER_KEY), qos=1)
            await until(lambda: len(seen.get("replies", [])) >= 3)
            replies = {r["id"]: r for r in seen["replies"]}
            assert replies["x1"]["error"]["code"] == "wrong_state"
            assert replies["x2"]["error"]["code"] == "unknown_command"
            assert replies["x3"]["error"]["code"] == "denied"
            assert "signed by an unknown key" in replies["x3"]["error"]["message"]
            await until(lambda: any(a["code"] == "command_denied"
                                    for a in seen.get("alerts", [])))
            proc.send_signal(signal.SIGTERM)
            await until(lambda: seen["status"][-1]["state"] == "offline")
            listener.cancel()
        assert await asyncio.to_thread(proc.wait, 10) == 0
        assert proc.stderr is not None
        lines = [json.loads(line) for line in proc.stderr.read().splitlines() if line.strip()]
        assert any(line.get("event", "").startswith("shoe ready") for line in lines)
        assert all("timestamp" in line and "level" in line for line in lines)
        for topic, payloads in seen.items():
            for p in payloads if not topic.startswith("cmd/") else ():
                TABLE_KEYRING.verify(p)
    finally:
        if proc.poll() is None:
            proc.kill()
        await shoe_port.stop()
        await shuffler_port.stop()
        broker.cleanup()


def test_bad_config_stops_with_the_reason(tmp_path: Path) -> None:
    cfg = tmp_path / "table.toml"
    cfg.write_text('[table]\nid = "t"\ngame = "poker"\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "daemon", "run", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert "table.game: unknown game 'poker'" in proc.stderr
