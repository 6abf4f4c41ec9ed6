"""Issue 25, Build 4: the shipped broker configs bound a message's size, so that no
client can hand the table (or any consumer) a payload the contract never sends. v2's
configs set no limit: a replay request of 250 MB reached the daemon.

The largest payload of the contract is a command (4 KiB at most, ``MAX_PAYLOAD``) or a
result (about 1.5 KB); the limit, 64 KiB, leaves room for growth and none for abuse."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path

import aiomqtt

from daemon.security.commands import MAX_PAYLOAD
from hil.broker import Mosquitto
from hil.nats import NatsCluster

ROOT = Path(__file__).resolve().parents[2]
MOSQUITTO = ROOT / "systemd" / "mosquitto" / "mosquitto.conf.example"
NATS = ROOT / "systemd" / "nats" / "authorization.conf.example"
LIMIT = 64 * 1024


def shipped_setting(path: Path, key: str) -> str:
    """The line that sets ``key`` in a shipped config, exactly as shipped."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines()
             if re.match(rf"\s*{key}\b", ln)]
    assert len(lines) == 1, f"{path.name} must set {key} once: {lines}"
    return lines[0].strip()


async def delivered(port: int, topic: str, sizes: list[int],
                    logins: tuple[tuple[str, str], tuple[str, str]] | None = None
                    ) -> list[int]:
    """Publish one payload of each size; the sizes a subscriber got. ``logins``: the
    subscriber's and the publisher's (username, password)."""
    (su, sp), (pu, pp) = logins or ((None, None), (None, None))
    got: list[int] = []
    async with aiomqtt.Client("127.0.0.1", port, username=su, password=sp,
                              identifier="limits-sub") as sub:
        await sub.subscribe(topic, qos=1)
        for size in sizes:
            with contextlib.suppress(aiomqtt.MqttError):  # a broker may cut the sender
                async with aiomqtt.Client("127.0.0.1", port, username=pu, password=pp,
                                          identifier="limits-pub") as pub:
                    await pub.publish(topic, b"x" * size, qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                async for m in sub.messages:
                    got.append(len(bytes(m.payload)))
    return got


# Over the limit, and under each broker's own default (Mosquitto 256 MB, NATS 1 MB), so
# that only the shipped setting can stop it.
OVER = 512 * 1024


async def test_issue_25_build_4_the_shipped_mosquitto_config_bounds_a_message(
        tmp_path: Path) -> None:
    setting = shipped_setting(MOSQUITTO, "max_packet_size")
    assert int(setting.split()[1]) == LIMIT
    broker = Mosquitto(tmp_path, extra_conf=setting + "\n")
    broker.start()
    try:
        got = await delivered(broker.port, "tables/t1/replay/request",
                              [MAX_PAYLOAD, OVER, 1024])
    finally:
        broker.cleanup()
    assert got == [MAX_PAYLOAD, 1024]


async def test_issue_25_build_4_the_shipped_nats_config_bounds_a_message(
        tmp_path: Path) -> None:
    """The server applies it (its INFO says so to every NATS client). Over MQTT, nats-server
    2.9.10 does not enforce ``max_payload``: a 2 MB publish was delivered (measured with
    ``delivered`` above), so there the daemon's own checks (1 KiB for a replay request,
    read before it is parsed; 4 KiB for a command) are the wall (docs/operations.md)."""
    assert str(LIMIT) in shipped_setting(NATS, "max_payload")
    cluster = NatsCluster(tmp_path, size=1, extra_conf=NATS.read_text(encoding="utf-8"))
    try:
        cluster.start()
        reader, writer = await asyncio.open_connection("127.0.0.1",
                                                       cluster.nodes[0].client_port)
        info = json.loads((await reader.readline()).decode().removeprefix("INFO "))
        writer.close()
    finally:
        cluster.cleanup()
    assert info["max_payload"] == LIMIT
