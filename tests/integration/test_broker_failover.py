"""Broker failover through real brokers: the node the publisher is on is SIGKILLed while
results stream; the publisher moves to the next node in ``[broker] urls``, drains the
outbox there in order, and publishes its will, status and device states again there.

Two shapes of "next node": two independent Mosquittos (nothing shared: a consumer reads
both) and a three-node NATS JetStream cluster (one namespace: a consumer on a surviving
node sees the whole stream). Either way: every result arrives, and any result that
arrives twice is the same sealed message again (contract v2: same ``journal_id`` and
``msg_seq``, byte for byte), which a consumer drops as a duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from daemon.mqtt.publisher import BrokerSettings, Publisher, Standalone
from daemon.store.journal import Journal
from hil.broker import Mosquitto
from hil.nats import NatsCluster, free_ports

TOPIC = "tables/t1"
DEVICE = (f"{TOPIC}/devices/shoe", {"type": "device", "state": "ready"})
N = 120


def status(state: str, session: int, started: float, at: bool = True) -> Mapping[str, Any]:
    return {"type": "status", "state": state, "session": session, "table": "t1",
            "session_started_at": started}


class Reader:
    """Everything under tables/# on one node, in arrival order, with the MQTT DUP flag
    (the broker's own redelivery: aiomqtt does not show it, so paho, on its own thread);
    a persistent session, reconnecting, as settlement would."""

    def __init__(self, port: int, name: str) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []
        self.dups: list[bool] = []
        self.connected = asyncio.Event()
        loop = asyncio.get_running_loop()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=name,
                                  clean_session=False)
        self.client.reconnect_delay_set(1, 2)

        def on_connect(c: paho.Client, *_: Any) -> None:
            c.subscribe("tables/#", qos=1)

        def on_subscribe(*_: Any) -> None:
            loop.call_soon_threadsafe(self.connected.set)

        def on_message(_c: Any, _u: Any, m: paho.MQTTMessage) -> None:
            self.got.append((m.topic, json.loads(m.payload)))
            self.dups.append(bool(m.dup))

        self.client.on_connect, self.client.on_subscribe = on_connect, on_subscribe
        self.client.on_message = on_message
        self.client.connect_async("127.0.0.1", port, keepalive=2)
        self.client.loop_start()

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()

    def results(self) -> list[dict[str, Any]]:
        return [b for t, b in self.got if t == f"{TOPIC}/results"]

    def results_with_dup(self) -> list[tuple[dict[str, Any], bool]]:
        return [(b, d) for (t, b), d in zip(self.got, self.dups, strict=False)
                if t == f"{TOPIC}/results"]


async def retained(port: int, patience: float = 30) -> dict[str, dict[str, Any]]:
    """What a consumer that connects now is told: the retained messages, by topic. A NATS
    node answers with none while its cluster re-elects the leader of the retained-message
    stream (seen for seconds after a node was killed), so ask again until the
    status is there or ``patience`` runs out."""
    out: dict[str, dict[str, Any]] = {}
    async with asyncio.timeout(patience):
        while f"{TOPIC}/status" not in out:
            with contextlib.suppress(aiomqtt.MqttError):
                async with aiomqtt.Client("127.0.0.1", port, identifier="late-reader") as c:
                    # QoS 0: in NATS a QoS 1 subscription is a JetStream consumer,
                    # which cannot be made while the cluster re-elects its leaders.
                    await c.subscribe("tables/#", qos=0)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(1.0):
                            async for m in c.messages:
                                out[str(m.topic)] = json.loads(bytes(m.payload))
    return out


@contextlib.asynccontextmanager
async def readers(ports: list[int]) -> AsyncIterator[list[Reader]]:
    rs = [Reader(p, f"reader-{i}") for i, p in enumerate(ports)]
    try:
        async with asyncio.timeout(20):
            for r in rs:
                await r.connected.wait()
        yield rs
    finally:
        for r in rs:
            r.close()


async def stream(journal: Journal, publisher: Publisher, n: int, every: float,
                 first: int = 0) -> None:
    for i in range(first, first + n):
        journal.record_result(f"r-{i}", {"type": "result", "i": i},
                              f"{TOPIC}/results", record={})
        publisher.wake()
        await asyncio.sleep(every)


def check_delivery(copies: list[tuple[dict[str, Any], bool]], n: int) -> None:
    """None lost; a second copy of a result is always recognisable as one: the same
    sealed message (same ``msg_seq``, identical) when the daemon sent it again, or the
    MQTT DUP flag when the broker did (QoS 1 is at least
    once on the broker's side too: a cluster that lost the node holding a subscriber's
    consumer redelivers what that node had not recorded as acknowledged)."""
    first: dict[int, dict[str, Any]] = {}
    unflagged = []
    for r, dup in copies:
        if r["seq"] in first and not (r == first[r["seq"]] or dup):
            unflagged.append(r["seq"])
        first.setdefault(r["seq"], r)
    seen = set(first)
    assert seen == set(range(1, n + 1)), f"lost: {sorted(set(range(1, n + 1)) - seen)}"
    assert not unflagged, f"duplicates not flagged: {unflagged}"


def statuses(got: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int]]:
    """(state, session) of each status seen, in order (the times differ per session)."""
    return [(b["state"], b["session"]) for t, b in got if t == f"{TOPIC}/status"]


def first_arrivals(copies: list[dict[str, Any]]) -> list[int]:
    out: list[int] = []
    for r in copies:
        if r["seq"] not in out:
            out.append(r["seq"])
    return out


def publisher_for(journal: Journal, ports: list[int]) -> Publisher:
    return Publisher(journal, BrokerSettings("127.0.0.1", ports[0], client_id="tabled-t1",
                                             keepalive=2, publish_timeout=2.0,
                                             backoff_initial=0.1,
                                             nodes=tuple(("127.0.0.1", p) for p in ports)),
                     f"{TOPIC}/status", Standalone(status, [DEVICE]))


async def run_until(pub: Publisher, readers_: list[Reader], n: int) -> None:
    async with asyncio.timeout(60):
        while {r["seq"] for x in readers_ for r in x.results()} != set(range(1, n + 1)):
            await asyncio.sleep(0.05)
    del pub


async def test_failover_to_a_second_mosquitto_drains_the_outbox_there_in_order(
        tmp_path: Path) -> None:
    a, b = Mosquitto(tmp_path), Mosquitto(tmp_path)
    a.start()
    b.start()
    journal = Journal(tmp_path / "journal.db")
    pub = publisher_for(journal, [a.port, b.port])
    try:
        async with readers([a.port, b.port]) as (on_a, on_b):
            task = asyncio.create_task(pub.run())
            feeder = asyncio.create_task(stream(journal, pub, N, 0.01))
            async with asyncio.timeout(30):
                while len(on_a.results()) < N // 3:
                    await asyncio.sleep(0.01)
            assert a.proc is not None
            a.proc.kill()  # mid-stream, no goodbye
            a.proc.wait()
            await feeder
            await run_until(pub, [on_a, on_b], N)
            assert pub.stats.node == f"127.0.0.1:{b.port}" and pub.stats.failovers >= 1
            check_delivery(on_a.results_with_dup() + on_b.results_with_dup(), N)
            # On the new node the outbox drained oldest first, up to the last result,
            # picking up where node A's acknowledgements stopped (no gap between them).
            order = first_arrivals(on_b.results())
            assert order == list(range(order[0], N + 1))
            assert order[0] <= max(r["seq"] for r in on_a.results()) + 1
            # The retained state is on the new node: online, this session, the devices.
            held = await retained(b.port)
            sessions = [s for t, s in on_a.got if t == f"{TOPIC}/status"]
            assert held[f"{TOPIC}/status"]["state"] == "online"
            assert held[f"{TOPIC}/status"]["session"] > sessions[0]["session"]
            assert held[DEVICE[0]] == DEVICE[1]
            await pub.stop()
            await asyncio.wait_for(task, 10)
            assert (await retained(b.port))[f"{TOPIC}/status"]["state"] == "offline"
    finally:
        a.cleanup()
        b.cleanup()


async def test_a_dead_first_node_at_start_is_passed_over_and_failover_wraps_around(
        tmp_path: Path) -> None:
    a, b = Mosquitto(tmp_path), Mosquitto(tmp_path)
    b.start()  # a is down when the daemon starts
    journal = Journal(tmp_path / "journal.db")
    pub = publisher_for(journal, [a.port, b.port])
    try:
        task = asyncio.create_task(pub.run())
        async with readers([b.port]) as (on_b,):
            await stream(journal, pub, 10, 0)
            await run_until(pub, [on_b], 10)
        assert pub.stats.node == f"127.0.0.1:{b.port}"
        a.start()
        assert b.proc is not None
        b.proc.kill()
        b.proc.wait()
        async with readers([a.port]) as (on_a,):
            await stream(journal, pub, 10, 0, first=10)
            async with asyncio.timeout(30):
                while {r["seq"] for r in on_a.results()} < set(range(11, 21)):
                    await asyncio.sleep(0.05)
            assert first_arrivals(on_a.results())[-10:] == list(range(11, 21))
        assert pub.stats.node == f"127.0.0.1:{a.port}"
        assert (await retained(a.port))[f"{TOPIC}/status"]["state"] == "online"
        await pub.stop()
        await asyncio.wait_for(task, 10)
    finally:
        a.cleanup()
        b.cleanup()


async def test_failover_within_a_nats_cluster_loses_nothing(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path)
    cluster.start()
    ports = [n.mqtt_port for n in cluster.nodes]
    journal = Journal(tmp_path / "journal.db")
    pub = publisher_for(journal, ports)
    try:
        # Settlement reads on the third node; the publisher starts on the first.
        async with readers([ports[2]]) as (reader,):
            task = asyncio.create_task(pub.run())
            feeder = asyncio.create_task(stream(journal, pub, N, 0.01))
            async with asyncio.timeout(30):
                while len(reader.results()) < N // 3:
                    await asyncio.sleep(0.01)
            cluster.kill_node(0)
            await feeder
            await run_until(pub, [reader], N)
            # Node 2, or node 3 when node 2 refused it while the cluster re-elected
            # its JetStream leaders (seen here: the MQTT layer needs them).
            assert pub.stats.node != f"127.0.0.1:{ports[0]}" and pub.stats.failovers >= 1
            check_delivery(reader.results_with_dup(), N)
            order = first_arrivals(reader.results())
            assert order == sorted(order), "results arrived out of order across failover"
            held = await retained(ports[2])
            assert held[f"{TOPIC}/status"]["state"] == "online"
            assert held[DEVICE[0]] == DEVICE[1]
            # The killed node comes back and the cluster takes it in; nothing changes.
            cluster.start_node(0)
            assert (await retained(ports[0]))[f"{TOPIC}/status"]["state"] == "online"
            await pub.stop()
            await asyncio.wait_for(task, 10)
            assert (await retained(ports[2]))[f"{TOPIC}/status"]["state"] == "offline"
    finally:
        cluster.cleanup()


async def test_a_late_will_of_an_earlier_session_does_not_leave_the_table_offline(
        tmp_path: Path) -> None:
    """After a failover, a node publishes the will of a connection that ended uncleanly
    after the new session's birth (seen with the NATS cluster: a connection attempt that
    timed out). The retained status must end as this session's "online" again."""
    broker = Mosquitto(tmp_path)
    broker.start()
    journal = Journal(tmp_path / "journal.db")
    pub = publisher_for(journal, [broker.port])
    try:
        task = asyncio.create_task(pub.run())
        now = await retained(broker.port)
        session = now[f"{TOPIC}/status"]["session"]
        # A real will, from a real unclean end: a client with the table's previous
        # session's will, killed by closing its socket without DISCONNECT.
        ghost = aiomqtt.Client("127.0.0.1", broker.port, identifier="ghost", will=aiomqtt.Will(
            f"{TOPIC}/status", json.dumps(status("offline", session - 1, 0.0, at=False)), qos=1,
            retain=True))
        async with readers([broker.port]) as (reader,):
            await ghost.__aenter__()
            ghost._client.socket().close()  # type: ignore[union-attr]
            async with asyncio.timeout(15):
                while ("offline", session - 1) not in statuses(reader.got):
                    await asyncio.sleep(0.05)
                # ... and after it, the birth again.
                while statuses(reader.got)[-1:] != [("online", session)]:
                    await asyncio.sleep(0.05)
        now_status = (await retained(broker.port))[f"{TOPIC}/status"]
        assert (now_status["state"], now_status["session"]) == ("online", session)
        await pub.stop()
        await asyncio.wait_for(task, 10)
    finally:
        broker.cleanup()



async def test_the_wait_between_attempts_grows_once_per_round_of_the_nodes(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Every node refusing at once (as NATS nodes do while a lost node's session stream
    elects a leader, now that a refusal is seen at once): the table tries each node,
    then each again after twice the wait, and so on. Before, the wait doubled at every
    attempt after the first round, so a few fast refusals made the table sleep 10 s
    (backoff_max) between attempts, past the election it was waiting out."""
    ports = free_ports(3)  # nothing listens: each connect is refused at once
    journal = Journal(tmp_path / "journal.db")
    pub = Publisher(journal, BrokerSettings("127.0.0.1", ports[0], client_id="tabled-t1",
                                            keepalive=2, publish_timeout=2.0,
                                            backoff_initial=0.1, backoff_max=10.0,
                                            nodes=tuple(("127.0.0.1", p) for p in ports)),
                    f"{TOPIC}/status", Standalone(status, [DEVICE]))
    caplog.set_level(logging.WARNING, logger="daemon.mqtt.publisher")

    def waits() -> list[float]:
        # The warning's last argument is the wait before the next attempt.
        return [float(str(r.args[-1])) for r in caplog.records  # type: ignore[index]
                if r.name == "daemon.mqtt.publisher" and "lost or refused" in r.msg]

    task = asyncio.create_task(pub.run())
    try:
        async with asyncio.timeout(8):
            while len(waits()) < 9:
                await asyncio.sleep(0.05)
    finally:
        await pub.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert waits()[:9] == [0.1] * 3 + [0.2] * 3 + [0.4] * 3, waits()
