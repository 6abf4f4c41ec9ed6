"""Issue 15's acceptance test: a consumer that knows only docs/mqtt.md and the shipped
schemas -- it runs the doc's own code (verify_tabled_payload, Consumer) over a plain MQTT
client -- joins a table mid-shoe and, through SIGKILLs of the daemon, a broker restart
without persistence and a journal change, detects every gap and duplicate, fills the
gaps by replay requests, and ends with every result and the shoe's roads exactly as the
journals have them.

The daemon runs as its own process, against a real Mosquitto (persistence off, so its
restart loses every retained message and session)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import aiomqtt
import jsonschema
from cryptography.hazmat.primitives import serialization

from daemon.security.signing import Signer
from hil.process import to_toml
from tests.journal_file import read_only
from tests.poison import corpus
from tests.reliability.harness import Table, outage, sim_table
from tests.reliability.mqtt_doc import documented
from tests.wait import until

SCHEMAS = {p.name.split(".")[0]: jsonschema.Draft202012Validator(json.loads(p.read_text()))
           for p in (files("daemon.mqtt") / "schemas").iterdir()
           if p.name.endswith(".schema.json")}


class LiveConsumer:
    """The doc's Consumer fed from MQTT: verify, validate, take; ask for every gap."""

    def __init__(self, base: str, port: int, trusted: dict[str, Any]) -> None:
        doc = documented()
        self.c = doc["Consumer"](base.rsplit("/", maxsplit=1)[-1], trusted)
        self.genuine: list[bytes] = []  # the table's results as they came, for forging
        self.base, self.port, self.trusted = base, port, trusted
        self.newest: dict[str, int] = {}  # journal_id -> newest msg_seq known to exist
        self.requests = 0
        self.markers: list[dict[str, Any]] = []
        self.journal_news: list[dict[str, Any]] = []
        self.sessions = 0
        self.shoe_asked: set[tuple[str, str]] = set()
        self.live = self.lost = 0

    async def run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client("127.0.0.1", self.port, identifier="v2-display",
                                          clean_session=True) as client:
                    await client.subscribe(f"{self.base}/#", qos=1)
                    self.sessions += 1
                    filler = asyncio.create_task(self.fill(client))
                    try:
                        async for m in client.messages:
                            self.receive(str(m.topic), m.payload)
                    finally:
                        filler.cancel()
            except aiomqtt.MqttError:
                await asyncio.sleep(0.2)

    def receive(self, topic: str, raw: Any) -> None:
        if "/cmd/" in topic or topic.endswith("/replay/request") or not raw:
            return  # others' requests, and a cleared retained topic
        self.live += "/replay/to/" not in topic
        if "/replay/to/" not in topic and self.live % 7 == 0:
            self.lost += 1  # a message lost on the way: only a replay brings it back
            return
        refused = self.c.refused_total
        p = self.c.receive(topic, bytes(raw))
        if p is None:
            if self.c.refused_total > refused:
                return  # not the table's word; the test checks what was refused
            p, new = json.loads(raw), False  # a duplicate: still numbers what exists
            p.pop("sig")
        else:
            new = True
            if topic.endswith("/results"):
                self.genuine.append(bytes(raw))
        SCHEMAS[p["type"]].validate(json.loads(raw))
        assert p["schema"] == f"tabled/{p['type']}/2"
        jid = p["journal_id"]
        seen = [p.get("msg_seq") or 0]
        if p["type"] == "snapshot":
            seen.append(p["as_of_msg_seq"])
        if p["type"] == "replay":
            self.markers.append(p)
            seen.append(p["last_msg_seq"])
        if p.get("event") == "journal_started" and new:  # a copy sent again is no news
            self.journal_news.append(p)
        self.newest[jid] = max(self.newest.get(jid, 0), *seen)

    async def fill(self, client: aiomqtt.Client) -> None:
        """Twice a second: the current shoe's results once, then any gap."""
        while True:
            await asyncio.sleep(0.5)
            jid, snap = self.c.journal_id, self.c.snapshot
            if jid is None:
                continue
            if snap is not None and snap["journal_id"] == jid and snap["shoe"] and \
                    (jid, snap["shoe"]["shoe_id"]) not in self.shoe_asked:
                self.shoe_asked.add((jid, snap["shoe"]["shoe_id"]))
                await self.ask(client, jid, snap["shoe"]["loaded_msg_seq"],
                               snap["as_of_msg_seq"], ["results"])
                continue
            gaps = self.c.missing(jid, self.newest.get(jid, 0))
            if gaps:
                await self.ask(client, jid, gaps[0][0], gaps[-1][1], None)

    async def ask(self, client: aiomqtt.Client, jid: str, first: int, last: int,
                  topics: list[str] | None) -> None:
        self.requests += 1
        req: dict[str, Any] = {"id": f"r{self.requests}", "reply_to": "v2-display",
                               "from_msg_seq": first, "to_msg_seq": last, "journal_id": jid}
        if topics:
            req["topics"] = topics
        await client.publish(f"{self.base}/replay/request", json.dumps(req), qos=1)


def forgeries(key: Any, genuine: bytes) -> dict[str, bytes]:
    """What a broker user can make of a genuine result (issue 26)."""
    body = json.loads(genuine)
    other = {k: v for k, v in body.items() if k != "sig"}
    other.update(table="other-table", journal_id="0" * 16, seq=1, msg_seq=1)
    return {
        "another table's genuine result": Signer(key).seal(other).encode(),
        "a duplicate key in front": genuine.replace(b"{", b'{"winner":"player",', 1),
        "keys re-ordered": json.dumps(dict(reversed(body.items())), separators=(",", ":"),
                                      ensure_ascii=False).encode(),
        "whitespace added": json.dumps(body, sort_keys=True, ensure_ascii=False).encode(),
    }


def truth(db_path: Path) -> tuple[str, int, list[dict[str, Any]]]:
    """A journal file's id, last msg_seq and results as published (the stored messages:
    the journal's own result record is the table's, daemon/round/records.py), read
    directly."""
    with read_only(db_path) as db:
        jid = db.execute("SELECT value FROM meta WHERE key='journal_id'").fetchone()[0]
        last = db.execute("SELECT seq FROM sqlite_sequence WHERE name='messages'").fetchone()[0]
        results = [json.loads(b) for (b,) in db.execute(
            "SELECT payload FROM messages WHERE topic LIKE '%/results' ORDER BY msg_seq")]
    return str(jid), int(last), results


def winners(results: list[dict[str, Any]], shoe_id: str) -> list[str]:
    return [r["winner"] for r in sorted(results, key=lambda r: r["seq"])
            if r["shoe_id"] == shoe_id and r["status"] == "valid"]


async def deal(t: Table, rounds: int, chaos: Callable[[], Any] | None = None) -> None:
    """Deal ``rounds`` more results, reconnecting the dealer through whatever ``chaos``
    (run once, concurrently) does to the daemon or the broker."""
    dealer = t.rig.dealer(reply_timeout=3.0, betting_seconds=0.01)
    db = t.rig.work / "journal.db"
    async with asyncio.timeout(20):
        while True:  # the daemon makes its journal
            with contextlib.suppress(sqlite3.Error, TypeError):
                start = len(truth(db)[2])
                break
            await asyncio.sleep(0.1)
    task = asyncio.create_task(chaos()) if chaos else None
    while len(truth(db)[2]) < start + rounds or (task and not task.done()):
        try:
            async with dealer.session():
                while len(truth(db)[2]) < start + rounds or (task and not task.done()):
                    async with asyncio.timeout(15):
                        await dealer.resume_round()
        except (aiomqtt.MqttError, TimeoutError, RuntimeError):
            dealer.forget()
            await asyncio.sleep(0.3)
    if task:
        await task


async def caught_up(consumer: LiveConsumer, db: Path, timeout: float = 120) -> None:
    async with asyncio.timeout(timeout):
        while True:
            jid, last, _ = truth(db)
            if consumer.c.journal_id == jid and not consumer.c.missing(jid, last) and \
                    consumer.newest.get(jid, 0) >= last:
                return
            await asyncio.sleep(0.2)


async def test_a_v2_consumer_detects_every_gap_and_duplicate_and_rebuilds_the_shoe(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path, speed=100, persistent_broker=False) as t:
        db = t.rig.work / "journal.db"
        raw = t.rig.table_key.public_key().public_bytes(serialization.Encoding.Raw,
                                                        serialization.PublicFormat.Raw)
        trusted = {documented()["kid_of"](raw): t.rig.table_key.public_key()}
        await deal(t, 6)  # the shoe is under way before the display exists
        consumer = LiveConsumer(t.rig.base, t.broker.port, trusted)
        listener = asyncio.create_task(consumer.run())
        try:
            await deal(t, 6, outage(t.daemon.kill, t.daemon.start, after=0.8, down=0.2,
                                    times=2))
            await caught_up(consumer, db)
            # Issue 26: a genuine result of another table on this table's topic, and
            # this table's own genuine result made non-canonical, then the poison
            # corpus: each refused and counted, none booked, and the consumer goes on.
            forged = forgeries(t.rig.table_key, consumer.genuine[-1])
            poison = [raw for _, raw in corpus(t.rig.table_key, "sim-1", big=1024)]
            async with aiomqtt.Client("127.0.0.1", t.broker.port) as client:
                for raw in [*forged.values(), *poison]:
                    for _ in range(2):  # twice: the consumer drops every 7th on purpose
                        await client.publish(f"{t.rig.base}/results", raw, qos=1)
            await until(lambda: consumer.c.refused_total >= len(forged) + len(poison), 30)
            joined = consumer.c.snapshot
            assert joined is not None and joined["shoe"] is not None
            shoe_a = joined["shoe"]["shoe_id"]

            # persistence off: a restart loses every retained message and session
            await deal(t, 5, outage(t.broker.stop, t.broker.start, after=0.5, down=1.0))
            await caught_up(consumer, db)
            old_id, old_last, old_results = truth(db)

            # A journal change: the operator replaces the journal and says so.
            assert t.daemon.stop() == 0
            for suffix in ("", "-wal", "-shm"):
                src = tmp_path / f"journal.db{suffix}"
                if src.exists():
                    shutil.move(src, tmp_path / f"old-journal.db{suffix}")
            cfg = t.rig.config()
            cfg["journal"]["accept_new"] = "the SD card was replaced (test)"
            t.daemon.config_path.write_text(to_toml(cfg), encoding="utf-8")
            t.daemon.start()

            await deal(t, 5, outage(t.daemon.kill, t.daemon.start, after=1.5, down=0.2))
            await caught_up(consumer, db)
            new_id, new_last, new_results = truth(db)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    c = consumer.c
    reasons = [why for _, why in c.refused]
    assert any("signed for table 'other-table', published on 'tables/sim-1/results'" in why
               for why in reasons), reasons
    assert sum("not the canonical bytes" in why for why in reasons) >= 3, reasons
    assert ("0" * 16, 1) not in c.results and all(
        r["table"] == "sim-1" for r in c.results.values())
    # Every message of both journals, from the snapshot the display joined at: no gap.
    assert new_id != old_id
    assert c.missing(old_id, old_last) == [], "a gap in the old journal was not filled"
    assert c.missing(new_id, new_last) == [], "a gap in the new journal was not filled"
    # The journal change was announced and followed.
    assert c.journal_id == new_id
    assert [n["previous_journal_id"] for n in consumer.journal_news] == [old_id]
    # Every result since the display joined, once, keyed by (journal_id, seq).
    first = joined["shoe"]["first_result_seq"]
    want = {(old_id, r["seq"]) for r in old_results if r["seq"] >= first} | \
        {(new_id, r["seq"]) for r in new_results}
    assert want <= set(c.results)
    for (jid, seq), r in c.results.items():
        same = [x for x in (old_results if jid == old_id else new_results) if x["seq"] == seq]
        assert [r["round_id"]] == [x["round_id"] for x in same]
    # Roads: the shoe it joined mid-way, whole, and the new journal's shoe.
    assert c.bead_plate(shoe_a) == winners(old_results, shoe_a)
    assert len(c.bead_plate(shoe_a)) >= 6 + 6  # including the rounds before it joined
    shoe_b = new_results[-1]["shoe_id"]
    assert c.bead_plate(shoe_b) == winners(new_results, shoe_b)
    assert sum(len(col) for col in c.big_road(shoe_b)) == \
        sum(w != "tie" for w in winners(new_results, shoe_b))
    assert consumer.lost > 20 and c.duplicates > 0
    print(f"\nv2 consumer: {len(c.results)} results over 2 journals; "
          f"{c.duplicates} duplicates dropped; {consumer.lost} of {consumer.live} live "
          f"messages dropped on purpose, all recovered by {consumer.requests} replay requests, "
          f"{len(consumer.markers)} answers; {consumer.sessions} MQTT sessions; "
          f"{t.daemon.starts} daemon starts")
