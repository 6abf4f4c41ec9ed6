"""Per-table permissions on the NATS cluster, as systemd/nats/authorization.conf.example
sets them (docs/operations.md, "A floor of tables"): a table is heard on its own topics
only, hears only its own commands, and settlement reads results but not commands."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from hil.nats import NatsCluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "systemd" / "nats" / "authorization.conf.example"


def granted(codes: tuple[int, ...] | list[ReasonCode]) -> bool:
    return all((c.value if isinstance(c, ReasonCode) else c) < 0x80 for c in codes)


async def test_each_table_is_confined_to_its_topics_on_the_cluster(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path, extra_conf=EXAMPLE.read_text(encoding="utf-8"))
    cluster.start()
    ports = [n.mqtt_port for n in cluster.nodes]
    got: list[tuple[str, bytes]] = []
    try:
        async with aiomqtt.Client("127.0.0.1", ports[0], username="settlement",
                                  password="example-settlement", identifier="settle") as s, \
                aiomqtt.Client("127.0.0.1", ports[1], username="bac-07",
                               password="example-bac-07", identifier="tabled-bac-07") as t:
            assert granted(await s.subscribe("tables/+/results", qos=1))
            assert not granted(await s.subscribe("tables/+/cmd/+", qos=1))
            assert granted(await t.subscribe("tables/bac-07/cmd/+", qos=1))
            # the daemon reads its own status back; a refusal would fail its connection
            assert granted(await t.subscribe("tables/bac-07/status", qos=1))
            assert not granted(await t.subscribe("tables/bac-08/cmd/+", qos=1))
            await t.publish("tables/bac-08/results", b"forged", qos=1)  # acked, dropped
            await t.publish("tables/bac-07/results", b"own", qos=1)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(3):
                    async for m in s.messages:
                        got.append((str(m.topic), bytes(m.payload)))
    finally:
        cluster.cleanup()
    assert got == [("tables/bac-07/results", b"own")]
