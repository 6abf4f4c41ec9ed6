"""The outbox through a real Mosquitto: order, PUBACK, outages, restarts, and the will."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from daemon.mqtt.publisher import BrokerSettings, Publisher, Standalone
from daemon.store.journal import WAL_CHECKPOINT_COMMITS, Journal, Publish
from hil.broker import Mosquitto
from tests.wait import until

TOPIC = "tables/t1"


def status(state: str, session: int, started: float, with_at: bool = True
           ) -> Mapping[str, Any]:
    return {"state": state, "session": session, "table": "t1", "started": int(started),
            "at": with_at}


class Subscriber:
    """Collects everything under tables/#; a persistent session survives broker restarts."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.messages: list[tuple[str, dict[str, Any], bool]] = []
        self.task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    async def run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client("127.0.0.1", self.port, identifier="test-sub",
                                          clean_session=False) as c:
                    await c.subscribe("tables/#", qos=1)
                    self.connected.set()
                    async for m in c.messages:
                        self.messages.append((str(m.topic), json.loads(bytes(m.payload)),
                                              bool(m.retain)))
            except aiomqtt.MqttError:
                self.connected.clear()
                await asyncio.sleep(0.1)

    def of(self, topic: str) -> list[dict[str, Any]]:
        return [p for t, p, _ in self.messages if t == topic]


@pytest.fixture
def broker(tmp_path: Path) -> Any:
    b = Mosquitto(tmp_path, persistent=True)
    b.start()
    yield b
    b.cleanup()


@pytest.fixture
async def sub(broker: Mosquitto) -> AsyncIterator[Subscriber]:
    s = Subscriber(broker.port)
    s.task = asyncio.create_task(s.run())
    async with asyncio.timeout(10):
        await s.connected.wait()
    yield s
    s.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await s.task


def make_publisher(journal: Journal, port: int) -> Publisher:
    return Publisher(journal, BrokerSettings(port=port, client_id="tabled-t1",
                                             backoff_initial=0.05, backoff_max=0.5),
                     f"{TOPIC}/status", Standalone(status))


def result(n: int) -> dict[str, Any]:
    return {"status": "valid", "n": n}


async def test_results_are_delivered_in_order_once_acknowledged(tmp_path: Path, broker: Mosquitto,
                                                                sub: Subscriber) -> None:
    journal = Journal(tmp_path / "j.db")
    pub = make_publisher(journal, broker.port)
    task = asyncio.create_task(pub.run())
    for n in range(30):
        journal.record_result(f"r{n}", result(n), f"{TOPIC}/results", record={})
        pub.wake()
    await until(lambda: len(sub.of(f"{TOPIC}/results")) == 30)
    got = sub.of(f"{TOPIC}/results")
    assert [r["seq"] for r in got] == list(range(1, 31))
    assert [r["msg_seq"] for r in got] == list(range(1, 31))
    assert {r["journal_id"] for r in got} == {journal.journal_id}
    assert pub.stats.replayed == 0
    assert journal.pending_count() == 0
    await pub.stop()
    await task
    assert sub.of(f"{TOPIC}/status")[-1]["state"] == "offline"


async def test_broker_outage_loses_nothing_and_keeps_order(tmp_path: Path, broker: Mosquitto,
                                                           sub: Subscriber) -> None:
    journal = Journal(tmp_path / "j.db")
    pub = make_publisher(journal, broker.port)
    task = asyncio.create_task(pub.run())
    journal.record_result("before", result(0), f"{TOPIC}/results", record={})
    pub.wake()
    await until(lambda: len(sub.of(f"{TOPIC}/results")) == 1)
    broker.stop()
    for n in range(1, 51):
        journal.record_result(f"r{n}", result(n), f"{TOPIC}/results", record={})
        pub.wake()
    await until(lambda: pub.stats.errors > 0)
    assert journal.pending_count() == 50
    broker.start()
    await until(lambda: len(sub.of(f"{TOPIC}/results")) >= 51, timeout=30)
    got = sub.of(f"{TOPIC}/results")
    seqs = [r["seq"] for r in got]
    assert sorted(set(seqs)) == list(range(1, 52))  # nothing lost
    assert seqs == sorted(seqs)  # order holds (at-least-once: a re-send may repeat a seq)
    # a copy sent again is the stored message, byte for byte: one body per msg_seq
    by_msg: dict[int, dict[str, Any]] = {}
    for r in got:
        assert by_msg.setdefault(r["msg_seq"], r) == r
    assert pub.stats.replayed >= 50  # they waited through the outage
    kinds = [r.kind for r in journal.records() if r.kind.startswith("mqtt_")]
    assert kinds == ["mqtt_connected", "mqtt_disconnected", "mqtt_connected"]
    await pub.stop()
    await task


async def test_pending_results_are_replayed_after_a_restart(tmp_path: Path, broker: Mosquitto,
                                                            sub: Subscriber) -> None:
    journal = Journal(tmp_path / "j.db")
    for n in range(10):  # recorded while no publisher ran (a crash before publishing)
        journal.record_result(f"r{n}", result(n), f"{TOPIC}/results", record={})
    journal.close()
    journal = Journal(tmp_path / "j.db")
    pub = make_publisher(journal, broker.port)
    task = asyncio.create_task(pub.run())
    await until(lambda: len(sub.of(f"{TOPIC}/results")) == 10)
    assert pub.stats.replayed == 10
    await pub.stop()
    await task


PUBLISHER_SCRIPT = """
import asyncio, sys
sys.path.insert(0, {root!r})
from daemon.store.journal import Journal, Publish
from daemon.mqtt.publisher import Publisher, BrokerSettings, Standalone
j = Journal({db!r})
p = Publisher(j, BrokerSettings(port={port}, client_id="tabled-t1", keepalive=2),
              "tables/t1/status", Standalone(lambda s, n, t, a: {{
                  "state": s, "session": n, "started": int(t), "with_at": a}}))
asyncio.run(p.run())
"""


async def test_sigkill_leaves_an_offline_will_with_the_same_session(tmp_path: Path,
                                                                    broker: Mosquitto,
                                                                    sub: Subscriber) -> None:
    root = str(Path(__file__).resolve().parents[2])
    script = PUBLISHER_SCRIPT.format(root=root, db=str(tmp_path / "j.db"), port=broker.port)
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        await until(lambda: any(s["state"] == "online" for s in sub.of(f"{TOPIC}/status")))
        online = [s for s in sub.of(f"{TOPIC}/status") if s["state"] == "online"][-1]
        os.kill(proc.pid, signal.SIGKILL)
        await until(lambda: sub.of(f"{TOPIC}/status")[-1]["state"] == "offline")
        will = sub.of(f"{TOPIC}/status")[-1]
        assert will["session"] == online["session"]
        # the will says when its session started; its own time is the broker's to know
        assert will["started"] == online["started"] and will["with_at"] is False
    finally:
        proc.kill()
        proc.wait()


async def test_session_counts_sessions_not_failed_connection_attempts(
        tmp_path: Path, broker: Mosquitto, sub: Subscriber) -> None:
    journal = Journal(tmp_path / "j.db")
    broker.stop()
    pub = make_publisher(journal, broker.port)
    task = asyncio.create_task(pub.run())
    await until(lambda: pub.stats.errors >= 3)  # three refused attempts
    broker.start()
    await until(lambda: any(s["state"] == "online" for s in sub.of(f"{TOPIC}/status")))
    assert [s["session"] for s in sub.of(f"{TOPIC}/status")] == [1]
    await pub.stop()
    await task
    assert journal.next_session() == 2


async def test_a_stop_followed_at_once_by_a_cancel_still_leaves_offline(
        tmp_path: Path, broker: Mosquitto, sub: Subscriber) -> None:
    """What tabled simulate does: stop(), then cancel the task. v1 cancelled before the
    "offline" went out, leaving "online" retained."""
    journal = Journal(tmp_path / "j.db")
    pub = make_publisher(journal, broker.port)
    task = asyncio.create_task(pub.run())
    await until(lambda: pub.stats.connected)
    await pub.stop()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await until(lambda: bool(sub.of(f"{TOPIC}/status")) and
                sub.of(f"{TOPIC}/status")[-1]["state"] == "offline", timeout=5)


async def test_a_due_checkpoint_waits_for_a_quiet_table_and_an_empty_outbox(
        tmp_path: Path, broker: Mosquitto, sub: Subscriber) -> None:
    """Never inside a card's or a result's commit (docs/architecture.md): once due, the
    publisher checkpoints the journal when it has sent everything and the table says it
    is quiet (betting open), and not before."""
    journal = Journal(tmp_path / "j.db")
    waiting_then: list[int] = []
    checkpoint = journal.wal_checkpoint

    def watched() -> None:
        waiting_then.append(journal.pending_count())
        checkpoint()

    journal.wal_checkpoint = watched  # type: ignore[method-assign]
    pub = make_publisher(journal, broker.port)
    assert isinstance(pub.upstream, Standalone)
    pub.upstream.taking_bets = False
    task = asyncio.create_task(pub.run())
    for n in range(WAL_CHECKPOINT_COMMITS):
        journal.append("card", {"n": n}, publish=(Publish(f"{TOPIC}/events", {"n": n}),))
        pub.wake()
    await until(lambda: len(sub.of(f"{TOPIC}/events")) == WAL_CHECKPOINT_COMMITS)
    assert journal.wal_checkpoint_due
    await asyncio.sleep(0.3)
    assert waiting_then == []  # due, all sent, but the table is dealing
    pub.upstream.taking_bets = True  # betting opens: its reply is the next message
    journal.append("reply", {}, publish=(Publish(f"{TOPIC}/replies", {"ok": True}),))
    pub.wake()
    await until(lambda: waiting_then != [])
    assert waiting_then == [0] and not journal.wal_checkpoint_due
    assert len(sub.of(f"{TOPIC}/replies")) == 1
    await pub.stop()
    await task
