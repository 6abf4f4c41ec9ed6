"""The backlog in the retained status, through `tabled run` as its own process and a real
Mosquitto (issue 26): a table dealing normally, and one back from a broker restart, ends
with a status at 0, as docs/mqtt.md promises."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiomqtt

from hil.broker import Mosquitto
from hil.process import DaemonProcess
from tests.integration.bac07 import bac07_config, bac07_ports
from tests.wait import until


async def test_the_backlog_ends_at_0_at_start_and_after_a_broker_restart(
        tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    shoe_port, shuffler_port = bac07_ports(tmp_path)
    await shoe_port.start()
    await shuffler_port.start()
    daemon = DaemonProcess(bac07_config(tmp_path, broker.port, shuffler_port.port), tmp_path)
    statuses: list[dict[str, Any]] = []

    async def listen(stop: asyncio.Event) -> None:
        """The retained status as a consumer sees it, across the broker's restart."""
        while not stop.is_set():
            try:
                async with aiomqtt.Client("127.0.0.1", broker.port) as c:
                    await c.subscribe("tables/bac-07/status", qos=1)
                    async for m in c.messages:
                        statuses.append(json.loads(bytes(m.payload)))
            except aiomqtt.MqttError:
                await asyncio.sleep(0.1)

    def shown() -> int | None:
        online = [s for s in statuses if s["state"] == "online"]
        return online[-1]["backlog"]["messages"] if online else None

    stop = asyncio.Event()
    listener = asyncio.create_task(listen(stop))
    try:
        daemon.start()
        await until(lambda: shown() is not None)
        births = len(statuses)
        # Nothing waits once the devices' first states are out: within a few seconds
        # the status must say so.
        await asyncio.sleep(3.5)
        at_start = shown()
        # A broker restart: the table's messages of the outage wait in its outbox.
        broker.stop()
        await shuffler_port.stop()  # the shuffler goes away meanwhile: news to send
        await asyncio.sleep(1.0)
        broker = Mosquitto(tmp_path, port=broker.port)
        broker.start()
        await until(lambda: len(statuses) > births and shown() is not None, 30)
        await asyncio.sleep(3.5)
        after_restart = shown()
        assert daemon.stop() == 0
    finally:
        stop.set()
        listener.cancel()
        daemon.kill()
        await shoe_port.stop()
        await shuffler_port.stop()
        broker.cleanup()
    assert at_start == 0, f"at start the status still says {at_start} messages: {statuses}"
    assert after_restart == 0, f"after the restart it says {after_restart}: {statuses}"
