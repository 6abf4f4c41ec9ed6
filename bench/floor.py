"""Benchmark: a casino floor. N simulated tables, each daemon its own process, dealing at an
accelerated pace through (a) one Mosquitto and (b) a three-node NATS JetStream cluster on
loopback (its MQTT listeners), with a settlement consumer that scales out; in (b) one node
is SIGKILLed in the middle of the run and restarted.

Run (the README's command): .venv/bin/python -m bench.floor --tables 50 --rounds 10
--consumers 3 [--broker both|mosquitto|nats] [--nats-server BINARY ...] [--no-kill]
[--keep DIR]; (b) runs once with each nats-server given, or each one found (the release
pinned in scripts/nats-server.txt, Debian's 2.9.10).

- every table: simulators on real ports (a pty shoe, the shuffler behind pyusb) and a
  simulated dealer in this process, the daemon in its own (``python -m daemon run``),
  its ``[broker] urls`` all the nodes, rotated so the tables' first choices spread over
  the cluster; its dealer starts on the same node and, like the daemon, moves to the
  next node when its own goes;
- settlement: ``--consumers`` processes (bench/settlement.py) sharing the results: an MQTT
  shared subscription on Mosquitto, partitions by table on NATS (no shared
  subscriptions there); each with a persistent session, moving to the next node when
  its own goes; and the group's ledger (bench/ledger.py), which asks each table's
  journal, by contract v2's replay requests, for any result the members did not get;
- checked at the end against every daemon's journal: each result arrived, live or by
  replay (lost = in a journal, never received either way); copies after the first are
  counted as duplicates by (table, ``journal_id``, ``seq``), and any that is not the
  same sealed message (or flagged ``replayed``/DUP, before contract v2) as unflagged;
- printed: messages/s (every stored message of every table, over the dealing time),
  result latency p50/p99 per table (from the daemon's journal commit to a settlement
  consumer's receipt, wall clock, taken per table and then the median and worst of the
  tables), broker CPU seconds and peak memory, in total and per table, results received
  live and recovered only by replay, and the extrapolation to a floor of 500 tables.

The node killed is the one most daemons are on, with their dealers and a settlement
member. On NATS, beside each result that arrived only by replay: the consumer that was to
deliver it as the cluster reports it (bench/nats_trace.py); and how the tables recovered
(time without a broker, new leaders elected). Writes bench/results/floor.json
(bench/floor_record.py: the latest run per broker, every run's figures, their medians and
ratios), with the machine's load average per run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

from bench.floor_record import RESULTS, record
from bench.ledger import Arrival, Ledger
from bench.nats_trace import elections, leader_changes, trace
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.nats import NatsCluster, nats_binaries, nats_version
from hil.process import DaemonProcess
from hil.rig import SimRig

GAME, LAYOUT, DECKS = "tiger-buffalo", "P", 8


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


@dataclass
class Settlement:
    """The consumer group: its member processes, its ledger (bench/ledger.py: gaps
    recovered by replay requests), and every result received, live or replayed."""

    members: int
    got: list[Arrival] = field(default_factory=list)
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    ledger: Ledger | None = None
    # (member, when, port, session present) of each member's connections
    connects: list[tuple[int, float, int, bool]] = field(default_factory=list)

    async def start(self, ports: list[int], topics: Callable[[int], list[str]]) -> None:
        self.ledger = Ledger(ports, self.got.append)
        self.tasks.append(asyncio.create_task(self.ledger.run()))
        async with asyncio.timeout(60):
            await self.ledger.connected.wait()
        for i in range(self.members):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bench.settlement", f"settlement-{i}",
                ",".join(map(str, rotate(ports, i))), *topics(i), stdout=asyncio.subprocess.PIPE,
                limit=1 << 22)
            self.procs.append(proc)
            ready = asyncio.Event()
            self.tasks.append(asyncio.create_task(self._read(proc, i, ready)))
            async with asyncio.timeout(60):
                await ready.wait()

    async def _read(self, proc: asyncio.subprocess.Process, member: int,
                    ready: asyncio.Event) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            if line == b"ready\n":
                ready.set()
                continue
            if line.startswith(b"#connect\t"):
                _, stamp, port, present = line.split(b"\t")
                self.connects.append((member, float(stamp), int(port),
                                      present.strip() == b"1"))
                continue
            stamp, dup, topic, payload = line.rstrip(b"\n").split(b"\t", 3)
            assert self.ledger is not None
            self.ledger.take(Arrival(float(stamp), dup == b"1", topic.decode().split("/")[1],
                                     json.loads(payload)))

    async def stop(self) -> None:
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            await p.wait()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@dataclass
class FloorTable:
    index: int
    rig: SimRig
    daemon: DaemonProcess
    dealer: SimDealer | None = None
    dealt: int = 0
    stalls: int = 0  # rounds the dealer had to pick up again (a command went unanswered)
    dealer_moves: int = 0  # the dealer's connection lost or refused: moved to another node
    rounds: int = 0  # to deal

    @property
    def table_id(self) -> str:
        return self.rig.table_id

    def journal(self) -> Path:
        return self.rig.work / "journal.db"

    async def deal(self, rounds: int, host: str, ports: list[int]) -> None:
        """Deal ``rounds`` rounds through the cluster's nodes, starting on ``ports[0]``;
        when the dealer's node goes it moves to the next one, as the daemon does, and a
        round interrupted by the broker (the dealer or its daemon moving) is picked up
        again from where the table is, as a dealer would."""
        node = 0
        self.rounds = rounds
        self.dealer = SimDealer(host, ports[node], self.rig.base, self.rig.dealer_key,
                                betting_seconds=0.01, reply_timeout=8.0,
                                **self._devices())
        interrupted = False
        while self.dealt < rounds:
            try:
                async with self.dealer.session():
                    while self.dealt < rounds:
                        # After an interruption the table may be mid-round: pick it up
                        # from the state it reports (idle: a fresh round).
                        async with asyncio.timeout(30):
                            await (self.dealer.resume_round() if interrupted else
                                   self.dealer.deal_round())
                        interrupted = False
                        self.dealt += 1
            except aiomqtt.MqttError:
                # The dealer's own connection went or was refused: the next node.
                interrupted = True
                self.stalls += 1
                self.dealer.forget()
                node = (node + 1) % len(ports)
                self.dealer.port = ports[node]
                self.dealer_moves += 1
                await asyncio.sleep(0.2)
            except (TimeoutError, RuntimeError):
                # Unanswered (its daemon moving): pick the round up again, same node.
                interrupted = True
                self.stalls += 1
                self.dealer.forget()
                await asyncio.sleep(0.5)

    def _devices(self) -> dict[str, Any]:
        devices: dict[str, Any] = dict(self.rig.sims)
        for name, p in self.rig.ports.items():
            if name in ("shoe", "tumbler"):
                devices[f"{name}_port"] = p
        return devices


def journal_results(path: Path) -> tuple[list[tuple[int, float]], int]:
    """(seq, committed at) of every result, and the number of outbox entries."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        results = [(int(s), float(at)) for s, at in db.execute(
            "SELECT r.seq, j.at FROM results r JOIN journal j ON j.id = r.journal_id "
            "ORDER BY r.seq")]
        # Contract v2: every message is stored once, numbered (msg_seq), in `messages`.
        outbox = int(db.execute("SELECT count(*) FROM messages").fetchone()[0])
        return results, outbox
    finally:
        db.close()


def connections(path: Path) -> list[tuple[float, int]]:
    """(when, port) of each broker connection the daemon made (its mqtt_connected)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return [(float(at), int(json.loads(body)["port"])) for at, body in db.execute(
            "SELECT at, body FROM journal WHERE kind='mqtt_connected' ORDER BY id")]
    finally:
        db.close()


def outages(path: Path) -> list[tuple[float, float | None, str]]:
    """(lost at, connected again at or None, why) of each of the daemon's outages: its
    journal records the first failure of each (mqtt_disconnected) and the connection that
    ends it (mqtt_connected)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        rows = db.execute("SELECT at, kind, body FROM journal WHERE kind IN "
                          "('mqtt_connected', 'mqtt_disconnected') ORDER BY id").fetchall()
    finally:
        db.close()
    out: list[tuple[float, float | None, str]] = []
    for at, kind, body in rows:
        if kind == "mqtt_disconnected":
            out.append((float(at), None, str(json.loads(body).get("reason", ""))[:120]))
        elif out and out[-1][1] is None:
            out[-1] = (out[-1][0], float(at), out[-1][2])
    return out


def recovery(tables: list[FloorTable], got: list[Arrival], kill: float) -> dict[str, Any]:
    """After the kill: how long each table's daemon was without a broker (from its
    journal), the longest, and the worst table's story (its results' latency from
    journal commit to settlement, its outages, what the broker said), seconds from the
    kill."""
    first: dict[tuple[str, int], float] = {}
    for a in got:
        key = (a.table, int(a.body["seq"]))
        first[key] = min(first.get(key, a.stamp), a.stamp)
    per: list[dict[str, Any]] = []
    for t in tables:
        down = [(at, back, why) for at, back, why in outages(t.journal()) if at >= kill - 1]
        lat = [first[(t.table_id, s)] - at for s, at in journal_results(t.journal())[0]
               if (t.table_id, s) in first and at >= kill - 1]
        per.append({"table": t.table_id,
                    "offline_s": round(sum((b or time.time()) - a for a, b, _ in down), 2),
                    "outages": [(round(a - kill, 2), None if b is None else round(b - kill, 2),
                                 why) for a, b, why in down][:6],
                    "max_latency_s": round(max(lat), 2) if lat else None,
                    "results_over_10s": sum(x > 10 for x in lat),
                    "dealer_stalls": t.stalls})
    hit = [p for p in per if p["outages"]]
    offline = sorted(p["offline_s"] for p in hit)
    worst = max(per, key=lambda p: p["max_latency_s"] or 0)
    return {"tables_disrupted": len(hit),
            "offline_s_median": round(statistics.median(offline), 2) if offline else 0,
            "offline_s_max": offline[-1] if offline else 0,
            "results_over_10s": sum(p["results_over_10s"] for p in per),
            "tables_with_a_result_over_10s": sum(p["results_over_10s"] > 0 for p in per),
            "worst_table": worst}


def after_the_kill(out: dict[str, Any], tables: list[FloorTable], settlement: Settlement,
                   cluster: NatsCluster | None) -> None:
    """Why each replayed result was not received live, and how the tables recovered."""
    out["why_replayed"] = explain(out, tables, settlement, cluster)
    out["recovery"] = recovery(tables, settlement.got, out["killed"]["wall"])
    if cluster is not None:
        # What the nodes logged of the worst table's daemon (its client id).
        logs = {n.name: n.log for n in cluster.nodes}
        worst = out["recovery"]["worst_table"]
        worst["broker_log"] = leader_changes(logs, f'"tabled-{worst["table"]}"',
                                             out["killed"]["wall"])[:30]
        out["recovery"]["elected_s"] = elections(logs, out["killed"]["wall"])


def _same_message(first: Arrival, again: Arrival) -> bool:
    """Contract v2: a copy sent again is the same stored message (same ``msg_seq``, same
    bytes), which a consumer de-duplicates without a flag. Under v1 (no ``msg_seq``) only
    ``replayed`` or the DUP flag say it."""
    return "msg_seq" in again.body and again.body == first.body


def check(tables: list[FloorTable], got: list[Arrival], ledger: Ledger | None = None
          ) -> dict[str, Any]:
    """Every journalled result received, live or by replay; copies after the first
    de-duplicable (the same sealed message); latencies of the live ones."""
    seen: dict[tuple[str, Any, int], Arrival] = {}
    live: set[tuple[str, Any, int]] = set()
    unflagged = duplicates = 0
    for a in got:
        key = (a.table, a.body.get("journal_id"), int(a.body["seq"]))
        if a.via == "live":
            live.add(key)
        if key in seen:
            duplicates += 1
            if not (a.body.get("replayed") or a.dup or _same_message(seen[key], a)):
                unflagged += 1
            continue
        seen[key] = a
    # Each table here has one journal: its results are looked up by table and seq.
    first = {(k[0], k[2]): a for k, a in seen.items()}
    lost = 0
    lost_keys: list[str] = []
    outbox = 0
    expected = 0
    p50s: list[float] = []
    p99s: list[float] = []
    for t in tables:
        results, n_outbox = journal_results(t.journal())
        outbox += n_outbox
        expected += len(results)
        lat = []
        for s, at in results:
            hit = first.get((t.table_id, s))
            if hit is None:
                lost += 1
                lost_keys.append(f"{t.table_id}#{s}")
                continue
            lat.append(hit.stamp - at)
        if lat:
            p50s.append(statistics.median(lat))
            p99s.append(pct(lat, 99))
    return {"results_journalled": expected, "results_received": len(seen),
            "received_live": len(live), "recovered_by_replay": len(set(seen) - live),
            "recovered_results": sorted(f"{k[0]}#{k[2]}" for k in set(seen) - live)[:50],
            "replay_requests": ledger.requests if ledger else 0,
            "replay_busy": ledger.busy if ledger else 0,
            "copies_received": len(got), "duplicates": duplicates,
            "unflagged_duplicates": unflagged, "lost": lost, "lost_results": lost_keys[:50],
            "outbox_entries": outbox,
            # Reconnected at all (to another node, or to the same one back again),
            # and moved to another node.
            "tables_reconnected": sum(len(connections(t.journal())) > 1 for t in tables),
            "tables_moved": sum(len({p for _, p in connections(t.journal())}) > 1
                                for t in tables),
            "latency_ms": {
                "p50_median_of_tables": round(statistics.median(p50s) * 1e3, 2) if p50s else None,
                "p99_median_of_tables": round(statistics.median(p99s) * 1e3, 2) if p99s else None,
                "p99_worst_table": round(max(p99s) * 1e3, 2) if p99s else None}}


def explain(out: dict[str, Any], tables: list[FloorTable], settlement: Settlement,
            cluster: NatsCluster | None = None) -> list[dict[str, Any]]:
    """For each result that arrived only by replay, what happened around it: when it
    was committed and acknowledged relative to the kill, where its table's daemon and its
    settlement member were connected (and whether the node still had the member's
    session), times in seconds from the kill; on NATS, what the cluster says of the
    consumer that was to deliver it (trace_at_the_broker)."""
    kill = out["killed"]["wall"]
    by_id = {t.table_id: t for t in tables}
    notes = []
    for name in out["recovered_results"][:10]:
        table_id, seq = name.rsplit("#", 1)
        t = by_id[table_id]
        committed = dict(journal_results(t.journal())[0])[int(seq)]
        member = t.index % settlement.members
        notes.append({
            "result": name, "committed_s": round(committed - kill, 2),
            "daemon_connects": [(round(at - kill, 2), port)
                                for at, port in connections(t.journal())],
            "member": member, "member_connects": [
                (round(at - kill, 2), port, present)
                for m, at, port, present in settlement.connects if m == member]})
    if cluster is not None:
        trace_at_the_broker(cluster, out, notes)
    return notes


def rotate(items: list[Any], i: int) -> list[Any]:
    """The list starting at its (i mod n)th item: the tables' first choices spread over
    the nodes."""
    return items[i % len(items):] + items[:i % len(items)]


async def start_tables(work: Path, n: int, urls: list[str]) -> list[FloorTable]:
    tables = []
    for i in range(n):
        tw = work / f"t{i:03d}"
        tw.mkdir()
        rig = SimRig(tw, GAME, LAYOUT, DECKS, ("127.0.0.1", 0), speed=1000,
                     table_id=f"floor-{i:03d}")
        await rig.start()
        cfg = rig.config()
        cfg["broker"] = {"urls": rotate(urls, i), "allow_plaintext_remote": True}
        tables.append(FloorTable(i, rig, DaemonProcess(cfg, tw, log_level="WARNING")))
    for t in tables:
        t.daemon.start()
    return tables


async def wait_online(tables: list[FloorTable], port: int, timeout: float) -> float:
    """Until every table's retained status says online; returns the seconds it took."""
    t0 = time.monotonic()
    online: set[str] = set()
    async with aiomqtt.Client("127.0.0.1", port, identifier="floor-watch") as c:
        await c.subscribe("tables/+/status", qos=0)
        async with asyncio.timeout(timeout):
            async for m in c.messages:
                body = json.loads(bytes(m.payload))
                if body.get("state") == "online":
                    online.add(str(m.topic).split("/")[1])
                if len(online) >= len(tables):
                    break
    return time.monotonic() - t0


async def kill_mid_run(cluster: NatsCluster, tables: list[FloorTable], total: int,
                       cpu0: dict[int, float], t0: float, log: Callable[[str], None],
                       restart_after: float = 5.0) -> dict[str, Any]:
    """When half the rounds are dealt, SIGKILL the node that the most daemons are on
    (their dealers and a settlement member are on it too); restart it ``restart_after``
    seconds later (5 by default)."""
    async with asyncio.timeout(600):
        while sum(t.dealt for t in tables) < total // 2:
            await asyncio.sleep(0.1)
    on: dict[int, int] = {}
    for t in tables:
        if conns := connections(t.journal()):
            on[conns[-1][1]] = on.get(conns[-1][1], 0) + 1
    victim = max(range(len(cluster.nodes)),
                 key=lambda i: on.get(cluster.nodes[i].mqtt_port, 0))
    pid = cluster.nodes[victim].pid
    assert pid is not None
    # Dealers still dealing through it (the others finished, or moved earlier).
    dealers = sum(1 for t in tables if t.dealer is not None and t.dealt < t.rounds
                  and t.dealer.port == cluster.nodes[victim].mqtt_port)
    cpu0.pop(pid, None)  # its CPU until now is lost with it; the others' is counted
    cluster.kill_node(victim)
    killed: dict[str, Any] = {"node": cluster.nodes[victim].name, "wall": time.time(),
                              "port": cluster.nodes[victim].mqtt_port,
                              "at_s": round(time.monotonic() - t0, 1),
                              "tables_on_it": on.get(cluster.nodes[victim].mqtt_port, 0),
                              "dealers_on_it": dealers,
                              "rounds_dealt_then": sum(t.dealt for t in tables)}
    log(f"nats: SIGKILLed node {killed['node']} ({killed['tables_on_it']} tables on it) at "
        f"{killed['at_s']} s ({killed['rounds_dealt_then']} rounds dealt)")
    await asyncio.sleep(restart_after)
    # In a thread: the node takes seconds to catch up with the cluster (a minute and
    # more on a loaded machine), and the tables, dealers and ledger in this loop must
    # go on meanwhile.
    try:
        await asyncio.to_thread(cluster.start_node, victim, 300)
    except RuntimeError as exc:  # the run goes on with two nodes; the figures say so
        killed["restart_error"] = str(exc)[:300]
        log(f"nats: node {killed['node']} did not come back: {exc}")
        return killed
    killed["restarted_at_s"] = round(time.monotonic() - t0, 1)
    log(f"nats: node {killed['node']} back (healthy) at {killed['restarted_at_s']} s")
    return killed


def trace_at_the_broker(cluster: NatsCluster, out: dict[str, Any],
                        notes: list[dict[str, Any]]) -> None:
    """Beside each result settlement got only by replay: the JetStream consumer that was
    to deliver it (its state, its leader changes), and whether the cluster still stores
    it (bench/nats_trace.py)."""
    logs = {n.name: n.log for n in cluster.nodes}
    for note in notes:
        table = note["result"].rsplit("#", 1)[0]
        for node in cluster.running():
            try:
                note["broker"] = trace(node.client_port, logs, f"tables/{table}/results",
                                       out["killed"]["wall"])
                break
            except (OSError, ValueError, KeyError) as exc:
                note["broker"] = {"error": f"{node.name}: {exc}"}


def keep_consumer_states(cluster: NatsCluster, work: Path) -> None:
    """Each running node's JetStream view at the end (streams, consumers: delivered,
    acknowledged floor, pending, redelivered), in ``work`` for --keep: what the cluster
    believes it delivered and had acknowledged, beside what settlement received."""
    for node in cluster.running():
        url = (f"http://127.0.0.1:{node.http_port}/jsz?accounts=true&streams=true"
               "&consumers=true&config=true")
        with contextlib.suppress(OSError, ValueError), \
                urllib.request.urlopen(url, timeout=10) as r:
            (work / f"jsz-{node.name}.json").write_bytes(r.read())


def broker_pids(mosquitto: Mosquitto | None, cluster: NatsCluster | None) -> list[int]:
    if mosquitto is not None and mosquitto.proc is not None:
        return [mosquitto.proc.pid]
    return [pid for node in cluster.nodes if (pid := node.pid)] if cluster else []


async def start_settlement(settlement: Settlement, kind: str, ports: list[int], n: int
                           ) -> str:
    if kind == "mosquitto":
        await settlement.start(ports, lambda i: ["$share/settlement/tables/+/results"])
        return "MQTT shared subscription $share/settlement/tables/+/results"
    members = settlement.members
    await settlement.start(ports, lambda i: [
        f"tables/floor-{j:03d}/results" for j in range(n) if j % members == i])
    return "partitions by table (NATS 2.9 has no MQTT shared subscriptions)"


def start_broker(mosquitto: Mosquitto | None, cluster: NatsCluster | None) -> list[int]:
    """The broker's MQTT ports: one Mosquitto's, or every node's of the cluster."""
    if mosquitto is not None:
        mosquitto.start()
        return [mosquitto.port]
    assert cluster is not None
    cluster.start()
    return [node.mqtt_port for node in cluster.nodes]


async def settle(settlement: Settlement, tables: list[FloorTable]) -> None:
    """Until every journalled result is in (outboxes drained, settlement caught up), or
    two minutes: what never came is counted as lost."""
    expected = {(t.table_id, s) for t in tables for s, _ in journal_results(t.journal())[0]}
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(120):
            while not expected <= {(a.table, int(a.body["seq"])) for a in settlement.got}:
                await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # late duplicates, if any, are counted too


async def floor(kind: str, n: int, rounds: int, consumers: int, work: Path,
                kill: bool = True, log: Callable[[str], None] = print,
                restart_after: float = 5.0, nats_server: str | None = None,
                nats_mqtt: str = ""
                ) -> dict[str, Any]:
    load_before = os.getloadavg()
    mosquitto = Mosquitto(work) if kind == "mosquitto" else None
    cluster = NatsCluster(work, binary=nats_server, mqtt_conf=nats_mqtt) \
        if kind == "nats" else None
    settlement = Settlement(consumers)
    tables: list[FloorTable] = []
    out: dict[str, Any] = {"broker": kind, "tables": n, "rounds_per_table": rounds,
                           "consumers": consumers}
    if cluster is not None:
        out["broker_version"] = cluster.version
        out["broker_binary"] = cluster.binary
    try:
        ports = start_broker(mosquitto, cluster)
        urls = [f"mqtt://127.0.0.1:{p}" for p in ports]
        out["sharing"] = await start_settlement(settlement, kind, ports, n)
        tables = await start_tables(work, n, urls)
        out["start_s"] = round(await wait_online(tables, ports[0], 60 + 3 * n), 1)
        log(f"{kind}: {n} tables online in {out['start_s']} s")
        cpu0 = {pid: cpu_seconds(pid) for pid in broker_pids(mosquitto, cluster)}
        t0 = time.monotonic()
        # Each dealer starts on its table's first node and moves on as its daemon does.
        dealing = [asyncio.create_task(t.deal(rounds, "127.0.0.1", rotate(ports, t.index)))
                   for t in tables]
        if cluster is not None and kill:
            out["killed"] = await kill_mid_run(cluster, tables, n * rounds, cpu0, t0, log,
                                               restart_after)
        try:
            async with asyncio.timeout(120 + 10 * rounds + 3 * n):
                await asyncio.gather(*dealing)
        except TimeoutError:
            log(f"{kind}: dealing stopped by its time limit: "
                f"{sum(t.dealt for t in tables)} of {n * rounds} rounds dealt")
        deal_s = time.monotonic() - t0
        broker_cpu = sum(cpu_seconds(pid) - c for pid, c in cpu0.items()
                         if Path(f"/proc/{pid}").exists())
        broker_kib = sum(peak_kib(pid) for pid in broker_pids(mosquitto, cluster))
        await settle(settlement, tables)
        for t in tables:
            t.daemon.stop()
        out.update(check(tables, settlement.got, settlement.ledger))
        if "killed" in out:
            after_the_kill(out, tables, settlement, cluster)
        out.update(figures(out, deal_s, broker_cpu, broker_kib, n))
        out["stalled_rounds"] = sum(t.stalls for t in tables)
        out["dealer_moves"] = sum(t.dealer_moves for t in tables)
        out["rounds_dealt"] = sum(t.dealt for t in tables)
        out["load_avg_1m"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
        return out
    finally:
        for t in tables:
            t.daemon.stop()
            await t.rig.stop()
        await settlement.stop()
        if mosquitto is not None:
            mosquitto.cleanup()
        if cluster is not None:
            keep_consumer_states(cluster, work)
            cluster.cleanup()


FLOOR = 500  # tables in the extrapolation
ROUNDS_PER_HOUR = 60  # a real baccarat table: about a round a minute


def figures(out: dict[str, Any], deal_s: float, broker_cpu: float, broker_kib: int,
            n: int) -> dict[str, Any]:
    per_message_us = 1e6 * broker_cpu / max(out["outbox_entries"], 1)
    per_round = out["outbox_entries"] / max(out["results_journalled"], 1)
    # A floor of FLOOR tables at a real pace: the broker CPU per message a table
    # publishes, and the memory per table, measured here, times the floor's rates.
    floor_messages = FLOOR * ROUNDS_PER_HOUR * per_round / 3600
    return {"deal_s": round(deal_s, 1),
            "messages_per_s": round(out["outbox_entries"] / deal_s, 1),
            "results_per_s": round(out["results_journalled"] / deal_s, 1),
            "broker_cpu_s": round(broker_cpu, 2),
            "broker_cpu_percent_of_a_core": round(100 * broker_cpu / deal_s, 1),
            "broker_cpu_ms_per_table_per_s": round(1e3 * broker_cpu / deal_s / n, 3),
            # The figure that scales: broker CPU per message a table publishes (commands,
            # deliveries to the dealers and settlement, sessions and retained state
            # included), whatever the dealing pace.
            "broker_cpu_us_per_message": round(per_message_us, 1),
            "messages_per_round": round(per_round, 1),
            "broker_peak_rss_mib": round(broker_kib / 1024, 1),
            "broker_peak_rss_mib_per_table": round(broker_kib / 1024 / n, 2),
            f"extrapolated_{FLOOR}_tables": {
                "rounds_per_hour_per_table": ROUNDS_PER_HOUR,
                "messages_per_s": round(floor_messages, 1),
                "broker_cpu_percent_of_a_core": round(floor_messages * per_message_us / 1e4,
                                                      1),
                "broker_rss_mib": round(broker_kib / 1024 / n * FLOOR)}}


def show(r: dict[str, Any]) -> str:
    lat = r["latency_ms"]
    kill = (f"; node {r['killed']['node']} ({r['killed']['tables_on_it']} tables on it) "
            f"killed at {r['killed']['at_s']} s, back at "
            f"{r['killed'].get('restarted_at_s', 'never')} s" if "killed" in r else "")
    x = r[f"extrapolated_{FLOOR}_tables"]
    return (f"{r['broker']} {r.get('broker_version', '')}: {r['tables']} tables x "
            f"{r['rounds_per_table']} rounds in "
            f"{r['deal_s']} s{kill}; load average {r['load_avg_1m'][0]} -> "
            f"{r['load_avg_1m'][1]}\n"
            f"  {r['messages_per_s']} messages/s, {r['results_per_s']} results/s; result "
            f"latency p50 {lat['p50_median_of_tables']} ms, p99 {lat['p99_median_of_tables']}"
            f" ms (median table), {lat['p99_worst_table']} ms (worst table)\n"
            f"  broker: {r['broker_cpu_percent_of_a_core']}% of a core "
            f"({r['broker_cpu_ms_per_table_per_s']} ms CPU/s per table, "
            f"{r['broker_cpu_us_per_message']} us per message), peak RSS "
            f"{r['broker_peak_rss_mib']} MiB ({r['broker_peak_rss_mib_per_table']} MiB per "
            f"table)\n"
            f"  results: {r['results_journalled']} journalled, {r['results_received']} "
            f"received ({r['received_live']} live, {r['recovered_by_replay']} only by "
            f"replay; {r['replay_requests']} replay requests), {r['lost']} lost; "
            f"{r['duplicates']} duplicates by (table, journal_id, seq), de-duplicable: "
            f"{r['unflagged_duplicates']} not the same sealed message (unflagged)\n"
            f"  {r['tables_reconnected']} tables reconnected, {r['tables_moved']} to another "
            f"node; {r['dealer_moves']} dealer moves to another node; "
            f"{r['stalled_rounds']} rounds picked up again\n"
            f"  {FLOOR} tables at {x['rounds_per_hour_per_table']} rounds an hour: "
            f"{x['messages_per_s']} messages/s, broker {x['broker_cpu_percent_of_a_core']}% "
            f"of a core, {x['broker_rss_mib']} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--broker", choices=("mosquitto", "nats", "both"), default="both")
    ap.add_argument("--no-kill", action="store_true", help="(b) without killing a node")
    ap.add_argument("--nats-server", action="append", metavar="BINARY",
                    help="(b) with this nats-server (repeat for several versions, one run "
                         "each); default: each one found (the pinned release in .venv, "
                         "Debian's /usr/sbin/nats-server)")
    ap.add_argument("--nats-mqtt", default="", metavar="SETTINGS",
                    help='(b) added to each node\'s mqtt block, e.g. \'js_api_timeout: "2s"\' '
                         "(NATS 2.10 and later); the run is named after them too")
    ap.add_argument("--keep", type=Path, help="keep the journals and logs in this directory")
    args = ap.parse_args()
    # The clients on the node the bench kills leave aiomqtt's and asyncio's complaints
    # about their dropped sockets on stderr; what matters is in the figures.
    for name in ("mqtt", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    kinds = ("mosquitto", "nats") if args.broker == "both" else (args.broker,)
    # Each run's name: "mosquitto", or "nats-<version>" for each nats-server.
    plan: list[tuple[str, str, str | None]] = []
    for kind in kinds:
        if kind == "mosquitto":
            plan.append((kind, kind, None))
            continue
        for binary in args.nats_server or nats_binaries():
            plan.append((f"nats-{nats_version(binary)}"
                         + (f" {args.nats_mqtt}" if args.nats_mqtt else ""), kind, binary))
    runs = {}
    for name, kind, binary in plan:
        folder = re.sub(r"[^A-Za-z0-9._-]+", "-", name)  # the name may hold NATS settings
        with tempfile.TemporaryDirectory(prefix=f"tabled-floor-{folder}-") as d:
            work = Path(d)
            if args.keep:
                work = args.keep / folder
                work.mkdir(parents=True)
            runs[name] = asyncio.run(floor(kind, args.tables, args.rounds, args.consumers,
                                           work, kill=not args.no_kill, nats_server=binary,
                                           nats_mqtt=args.nats_mqtt))
        print(show(runs[name]), flush=True)
    for r in runs.values():
        r["command"] = " ".join(["python -m bench.floor", *sys.argv[1:]])
        r["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    # Runs of other brokers or versions already recorded stay, and every run's figures
    # join the history the comparison's medians are taken over (bench/floor_record.py).
    earlier = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    result = record(earlier, runs, {
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "note": "shared with other work: see load_avg_1m per run"})
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    bad = [k for k, r in runs.items() if r["lost"] or r["unflagged_duplicates"]]
    if bad:
        print(f"FAILED: lost or unflagged duplicate results on {', '.join(bad)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
