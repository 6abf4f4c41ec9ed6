"""The reliability suite's table: simulators on real ports, a private Mosquitto, the
daemon as a separate process, a dealer over MQTT, and an independent subscriber that
records everything published, so a test can check that nothing was lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.wait import until


def outage(stop: Callable[[], object], start: Callable[[], object], *, after: float,
           down: float, times: int = 1) -> Callable[[], Awaitable[None]]:
    """A chaos step, to run beside the play: ``times`` times, ``after`` seconds of play,
    then ``stop`` (a SIGKILL, a broker stopped), ``down`` seconds, and ``start`` again."""
    async def run() -> None:
        for _ in range(times):
            await asyncio.sleep(after)
            stop()
            await asyncio.sleep(down)
            start()
    return run


@dataclass
class Observer:
    """An independent subscriber: every payload the table published, in arrival order."""

    base: str
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, port: int) -> None:
        """Subscribed with a persistent session (QoS 1), reconnecting through outages, as
        a settlement system would be."""
        while True:
            try:
                async with aiomqtt.Client("127.0.0.1", port, identifier="observer",
                                          clean_session=False) as client:
                    await client.subscribe(f"{self.base}/#", qos=1)
                    self.connected.set()
                    async for m in client.messages:
                        raw = m.payload if isinstance(m.payload, bytes) else b"{}"
                        topic = str(m.topic)[len(self.base) + 1:]
                        if not topic.startswith("cmd/"):  # the table's words only
                            self.seen.append((topic, json.loads(raw)))
            except aiomqtt.MqttError:
                self.connected.clear()
                await asyncio.sleep(0.2)

    def of(self, topic: str) -> list[dict[str, Any]]:
        return [b for t, b in self.seen if t == topic]

    async def until(self, cond: Callable[[], bool], timeout: float = 30) -> None:
        await until(cond, timeout)


@dataclass
class Table:
    rig: SimRig
    daemon: DaemonProcess
    broker: Mosquitto
    observer: Observer

    def results_by_seq(self) -> dict[int, dict[str, Any]]:
        """Published results, de-duplicated by seq as the contract tells consumers to."""
        out: dict[int, dict[str, Any]] = {}
        for r in self.observer.of("results"):
            out.setdefault(r["seq"], r)
        return out

    def journal_results(self) -> list[tuple[int, str]]:
        db = sqlite3.connect(self.rig.journal or self.rig.work / "journal.db")
        try:
            return [(int(s), str(r)) for s, r in
                    db.execute("SELECT seq, round_id FROM results ORDER BY seq")]
        finally:
            db.close()


@contextlib.asynccontextmanager
async def sim_table(work: Path, game: str = "tiger-buffalo", layout: str = "P",
                    decks: int | None = 8, *, journal: Path | None = None,
                    speed: float = 50.0, seed: int = 1, persistent_broker: bool = True,
                    env: dict[str, str] | None = None,
                    protocol_versions: dict[str, int] | None = None) -> AsyncIterator[Table]:
    broker = Mosquitto(work, persistent=persistent_broker)
    broker.start()
    rig = SimRig(work, game, layout, decks, ("127.0.0.1", broker.port), speed=speed,
                 seed=seed, journal=journal, protocol_versions=protocol_versions or {})
    await rig.start()
    daemon = DaemonProcess(rig.config(), work, env=env)
    observer = Observer(rig.base)
    listener = asyncio.create_task(observer.run(broker.port))
    table: Table | None = None
    try:
        async with asyncio.timeout(10):
            await observer.connected.wait()
        daemon.start()
        table = Table(rig, daemon, broker, observer)
        yield table
    finally:
        listener.cancel()
        daemon.kill()
        if table is not None and table.daemon is not daemon:
            table.daemon.kill()  # a test that started another daemon leaves none behind
        await rig.stop()
        broker.cleanup()


async def deal(t: Table, rounds: int) -> None:
    """``rounds`` more results published, dealt by the rig's dealer."""
    target = len(t.results_by_seq()) + rounds
    dealer = t.rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
    async with dealer.session():
        while len(t.results_by_seq()) < target:
            await dealer.deal_round()
