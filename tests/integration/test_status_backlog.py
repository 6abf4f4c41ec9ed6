"""The status says how far the outbox is behind (``backlog``), through a real Mosquitto:
at the birth after an outage, counting down as it drains, 0 once drained, and never a
status per message while the table deals normally. Read by `tabled watch`'s model and
the display's view from the signed payloads as they arrived."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiomqtt
import jsonschema

from daemon.consumers.watch import TableState, Watcher
from daemon.display.view import Display
from daemon.mqtt.envelope import out_of_band
from daemon.mqtt.publisher import BACKLOG_EVERY, BrokerSettings, Publisher, Standalone
from daemon.security.signing import Keyring, Signer
from daemon.store.journal import Journal, Publish
from daemon.timestamps import iso
from hil.broker import Mosquitto
from tests.keys import TABLE_KEY

TOPIC = "tables/t1"
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "daemon" / "mqtt" / "schemas" /
                     "status.schema.json").read_text())


async def test_the_status_counts_the_backlog_down_to_none_and_stays_quiet(
        tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    journal = Journal(tmp_path / "j.db", clock=lambda: now[0], sealer=Signer(TABLE_KEY).seal)
    n = 3000
    for i in range(n):  # stored while the broker was away
        journal.record_result(f"r-{i}", {"type": "result", "n": i}, f"{TOPIC}/results", record={})
    now[0] += 60  # a minute ago

    def status(state: str, session: int, started: float, with_at: bool) -> Mapping[str, Any]:
        return out_of_band({"type": "status", "state": state, "session": session,
                            "session_started_at": iso(started),
                            "at": iso(now[0]) if with_at else None, "game": "g",
                            "layout": "P", "version": "test"}, "t1", journal.journal_id)

    broker = Mosquitto(tmp_path)
    broker.start()
    statuses: list[dict[str, Any]] = []
    watcher = Watcher(Keyring.of([TABLE_KEY.public_key()]))
    display = Display(Keyring.of([TABLE_KEY.public_key()]))
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port, identifier="consumer") as c:
            await c.subscribe(f"{TOPIC}/#", qos=1)

            async def consume() -> None:
                async for m in c.messages:
                    assert isinstance(m.payload, bytes)
                    watcher.feed(str(m.topic), m.payload)
                    display.receive(str(m.topic), m.payload, "2026-11-26T14:00:00Z")
                    if str(m.topic).endswith("/status"):
                        statuses.append(json.loads(m.payload))

            listener = asyncio.create_task(consume())
            # The drain is slowed to one window at a time, so its countdown is seen.
            pub = Publisher(journal, BrokerSettings("127.0.0.1", broker.port,
                                                    client_id="t1"),
                            f"{TOPIC}/status", Standalone(status),
                            signer=Signer(TABLE_KEY))
            window = pub._publish_window

            async def slow(client: aiomqtt.Client, entries: list[Any]) -> None:
                await window(client, entries)
                await asyncio.sleep(0.05)

            pub._publish_window = slow  # type: ignore[method-assign,assignment]
            task = asyncio.create_task(pub.run())
            async with asyncio.timeout(60):
                while journal.pending_count() or not statuses or \
                        statuses[-1]["backlog"]["messages"]:
                    await asyncio.sleep(0.05)
            drained = len(statuses)
            # Dealing normally: a message every 50 ms, each delivered at once: no news.
            for i in range(40):
                journal.append("e", {}, publish=(Publish(f"{TOPIC}/events", {"i": i}),))
                pub.wake()
                await asyncio.sleep(0.05)
            await asyncio.sleep(BACKLOG_EVERY * 1.5)
            quiet = len(statuses) - drained
            await pub.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            listener.cancel()
    finally:
        broker.cleanup()

    online = [s for s in statuses if s["state"] == "online"]
    for s in statuses:
        jsonschema.validate(s, SCHEMA)
    birth = online[0]["backlog"]
    assert birth["messages"] == n and birth["oldest_msg_seq"] == 1
    assert birth["oldest_at"] == iso(now[0] - 60)  # when the first of them was stored
    counts = [s["backlog"]["messages"] for s in online]
    assert counts == sorted(counts, reverse=True), counts  # counting down
    assert len(counts) >= 3 and 0 < counts[1] < n, counts  # seen midway, once a second
    assert counts[-1] == 0
    assert quiet == 0, f"{quiet} status messages while dealing normally"
    assert statuses[-1]["state"] == "offline" and statuses[-1]["backlog"]["messages"] == 0
    shown = display.tables["t1"].view()
    assert shown["backlog"]["messages"] == 0
    assert shown["backlog_text"] == watcher.tables["t1"].backlog_line()
    assert shown["backlog_text"].startswith("outbox backlog: none")


def test_watch_and_display_say_what_the_status_says() -> None:
    waiting = {"type": "status", "state": "online", "at": "2026-11-26T14:00:05.000Z",
               "backlog": {"messages": 12, "oldest_msg_seq": 345,
                           "oldest_at": "2026-11-26T14:00:01.000Z"}}
    table = TableState("t1")
    table.apply("status", waiting)
    line = table.backlog_line()
    assert line == ("outbox backlog: 12 messages not yet published, oldest msg_seq 345 "
                    "stored 14:00:01 (as of 14:00:05)")
    table.apply("status", {"type": "status", "state": "offline", "at": None})  # the will
    assert table.backlog_line() == ("outbox backlog: unknown (the table is offline: its "
                                    "will cannot know)")
    table.apply("status", {"type": "status", "state": "online", "at": "x"})  # an old table
    assert table.backlog_line() == "outbox backlog: unknown (not published by this table)"
