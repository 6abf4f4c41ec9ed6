"""Per-table permissions on the NATS cluster, as systemd/nats/authorization.conf.example
sets them (docs/operations.md, "A floor of tables"): a table is heard on its own topics
only, hears only its own commands, and settlement reads results but not commands."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from hil.nats import NatsCluster
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.journal_file import read_only

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "systemd" / "nats" / "authorization.conf.example"


def granted(codes: tuple[int, ...] | list[ReasonCode]) -> bool:
    return all((c.value if isinstance(c, ReasonCode) else c) < 0x80 for c in codes)


async def test_each_table_is_confined_to_its_topics_on_the_cluster(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path, extra_conf=EXAMPLE.read_text(encoding="utf-8"))
    ports = [n.mqtt_port for n in cluster.nodes]
    got: list[tuple[str, bytes]] = []
    try:
        cluster.start()  # inside: a node that fails to start is stopped with the others
        async with aiomqtt.Client("127.0.0.1", ports[0], username="settlement",
                                  password="example-settlement", identifier="settle") as s, \
                aiomqtt.Client("127.0.0.1", ports[1], username="bac-07",
                               password="example-bac-07", identifier="tabled-bac-07") as t:
            assert granted(await s.subscribe("tables/+/results", qos=1))
            assert not granted(await s.subscribe("tables/+/cmd/+", qos=1))
            # Its own replay answers, not another consumer's.
            assert granted(await s.subscribe("tables/+/replay/to/settlement", qos=1))
            assert not granted(await s.subscribe("tables/+/replay/to/display-7", qos=1))
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


# The table's permissions as shipped before contract v2's replay requests: the table may
# not subscribe to its replay/request topic.
WITHOUT_REPLAY = """
authorization { users = [
    {user: "bac-07", password: "example-bac-07", permissions: {
        publish: ["tables.bac-07.>"],
        subscribe: ["tables.bac-07.cmd.*", "tables.bac-07.status", "$MQTT.sub.>"]}}
    {user: "settlement", password: "example-settlement", permissions: {
        publish: ["tables.*.replay.request"],
        subscribe: ["tables.*.status", "tables.*.replay.to.settlement", "$MQTT.sub.>"]}}
] }
"""
# And permissions that forgot the table's commands.
WITHOUT_COMMANDS = WITHOUT_REPLAY.replace('"tables.bac-07.cmd.*", ',
                                          '"tables.bac-07.replay.request", ')


@contextlib.asynccontextmanager
async def table_on_nats(work: Path, permissions: str) -> AsyncIterator[
        tuple[NatsCluster, SimRig, DaemonProcess]]:
    """The daemon of table bac-07, its own process with its simulated devices, logging
    in to a one-node NATS (JetStream, MQTT) as the table, under ``permissions``."""
    cluster = NatsCluster(work, size=1, extra_conf=permissions)
    rig = SimRig(work, "tai-sai-open-cover", "E", None, ("127.0.0.1", 0), speed=50,
                 table_id="bac-07")
    (work / "mqtt-password").write_text("example-bac-07\n", encoding="utf-8")
    daemon: DaemonProcess | None = None
    try:
        cluster.start()
        await rig.start()
        config = rig.config()
        config["broker"] = {"urls": cluster.urls, "username": "bac-07",
                            "password_file": str(work / "mqtt-password"),
                            "allow_plaintext_remote": True}
        daemon = DaemonProcess(config, work, log_level="INFO")
        daemon.start()
        yield cluster, rig, daemon
    finally:
        if daemon is not None:
            daemon.kill()
        await rig.stop()
        cluster.cleanup()


def journal(rig: SimRig) -> list[tuple[str, dict[str, Any]]]:
    with read_only(rig.work / "journal.db", timeout=10) as db:
        return [(k, json.loads(b)) for k, b in db.execute(
            "SELECT kind, body FROM journal ORDER BY id")]


async def statuses(port: int, seconds: float) -> list[str]:
    """The table's status as settlement sees it for ``seconds``: retained, then live."""
    seen: list[str] = []
    async with aiomqtt.Client("127.0.0.1", port, username="settlement",
                              password="example-settlement", identifier="watch") as c:
        await c.subscribe("tables/bac-07/status", qos=0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                async for m in c.messages:
                    seen.append(json.loads(bytes(m.payload))["state"])
    return seen


async def test_a_table_refused_a_subscription_never_sits_connected_but_deaf(
        tmp_path: Path) -> None:
    """SUBACK 0x80 on the daemon's subscription to its commands (denied by the broker's
    permissions) fails the connection: the table never says "online" on a connection it
    cannot hear on, and says why."""
    async with table_on_nats(tmp_path, WITHOUT_COMMANDS) as (cluster, rig, daemon):
        async with asyncio.timeout(60):
            while not (rig.work / "journal.db").exists() or not any(
                    k == "mqtt_disconnected" for k, _ in journal(rig)):
                await asyncio.sleep(0.2)
        # Several attempts later, still never connected, never online.
        seen = await statuses(cluster.nodes[0].mqtt_port, 3.0)
        records = journal(rig)
        assert daemon.running()
    lost = [b["reason"] for k, b in records if k == "mqtt_disconnected"]
    assert "refused the subscription to tables/bac-07/cmd/+" in lost[0], lost
    assert not [b for k, b in records if k == "mqtt_connected"]
    assert "online" not in seen, seen
    assert "refused the subscription" in daemon.log()


async def test_a_replay_process_refused_its_subscription_leaves_the_table_online(
        tmp_path: Path) -> None:
    """Replay requests are heard by the replay process (daemon/replay/), on a connection
    of its own: a broker that refuses it their topic costs consumers their catch-up, not
    the table its rounds. The table comes online (after waiting a bounded time for the
    replay process), and the log says why replays go unanswered."""
    async with table_on_nats(tmp_path, WITHOUT_REPLAY) as (cluster, _rig, daemon):
        async with asyncio.timeout(60):
            while "online" not in await statuses(cluster.nodes[0].mqtt_port, 1.0):
                pass
        assert daemon.running()
        async with asyncio.timeout(20):
            while "refused the subscription to tables/bac-07/replay/request" not in \
                    daemon.log():
                await asyncio.sleep(0.2)


async def test_a_table_under_the_shipped_permissions_comes_online_and_answers_replays(
        tmp_path: Path) -> None:
    async with table_on_nats(tmp_path, EXAMPLE.read_text(encoding="utf-8")) as (
            cluster, _rig, daemon):
        port = cluster.nodes[0].mqtt_port
        async with asyncio.timeout(60):
            while "online" not in await statuses(port, 1.0):
                pass
        async with aiomqtt.Client("127.0.0.1", port, username="settlement",
                                  password="example-settlement", identifier="settle") as s:
            assert granted(await s.subscribe("tables/bac-07/replay/to/settlement", qos=1))
            await s.publish("tables/bac-07/replay/request", json.dumps(
                {"id": "r1", "reply_to": "settlement", "from_msg_seq": 1}), qos=1)
            async with asyncio.timeout(20):
                async for m in s.messages:
                    body = json.loads(bytes(m.payload))
                    if body.get("type") == "replay":
                        break
        assert daemon.running()
    assert body["id"] == "r1" and body["error"] is None and body["count"] >= 1, body
