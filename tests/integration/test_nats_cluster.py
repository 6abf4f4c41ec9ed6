"""The private NATS cluster of hil/nats.py, on each nats-server version found (Debian's
2.9.10 and the release pinned in scripts/nats-server.txt): what ``start`` calls ready
takes an MQTT client at once. The failover, ACL and floor tests, and bench/floor.py,
connect the moment it returns."""

from __future__ import annotations

import time
from pathlib import Path

import aiomqtt
import pytest

from hil.nats import NatsCluster, nats_binaries, nats_version

BINARIES = nats_binaries()


@pytest.mark.parametrize("binary", BINARIES, ids=[nats_version(b) for b in BINARIES])
async def test_a_cluster_called_ready_takes_a_persistent_mqtt_session_at_once(
        tmp_path: Path, binary: str) -> None:
    """NATS 2.15.1 answered /healthz?js-server-only "ok" before its cluster had a
    JetStream meta leader; the first MQTT client then waited 5 s for the lookup of the
    sessions stream, was refused, and only the next attempt (10 s later) got in."""
    cluster = NatsCluster(tmp_path, binary=binary)
    try:
        cluster.start()
        took = []
        for node in cluster.nodes:
            t0 = time.monotonic()
            # Longer than the node's own 5 s for a JetStream lookup: a refusal, not a
            # slow answer, is what fails here.
            async with aiomqtt.Client("127.0.0.1", node.mqtt_port, identifier=f"c-{node.name}",
                                      clean_session=False, timeout=8) as c:
                await c.subscribe("tables/+/results", qos=1)
            took.append(round(time.monotonic() - t0, 2))
    finally:
        cluster.cleanup()
    print(f"{nats_version(binary)}: first session on each node in {took} s")
