"""Benchmark: the whole table, end to end, against its floor, in one run.

Run: .venv/bin/python -m bench.end_to_end [--rounds 1000] [--idle 60]

The daemon runs as its own process (as systemd runs it), with the simulated shoe on a
pty and the shuffler behind the pyusb backend; a private Mosquitto on loopback; an
independent subscriber in its own process. For latency a dealer draws each card when
the daemon asks for it; for throughput it deals at full speed: it knows the drawing
rules, so it draws while the gate is open without waiting for prompts, as a real
dealer would.

- card latency: from the simulator writing a card's last byte to the subscriber
  receiving its ``card`` event (contract v2: one per card); result latency: from the
  last card's last byte to the subscriber receiving the result;
- the floor, measured in the same run: the card frame's wire time at 115200 baud, plus
  one fsync'd journal commit, plus the same payload published at QoS 1 by a minimal
  paho-mqtt client to the same subscriber;
- throughput (rounds/s), the drain rate of a 10,000-result backlog, the daemon's RSS,
  its idle CPU with heartbeats running, and its start-up time to READY=1;
- payloads and bytes per round: what the journal stored and published, per topic.

Prints a summary; writes bench/results/end_to_end.json. Medians and p99 only: this
machine is noisy, and the dealer, simulators, broker and subscriber share its two cores
with the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion

from bench.figures import percentile, save
from daemon.games.baccarat import deal
from daemon.games.cards import parse_card
from daemon.mqtt.publisher import BrokerSettings, Publisher, Standalone
from daemon.security.signing import Signer
from daemon.store.journal import Journal, Publish
from firmware_protocols import shoe as shoe_proto
from firmware_protocols.framing import Frame, Kind
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.ports import PtyPort
from hil.process import DaemonProcess
from hil.rig import SimRig

BAUD = 115200


def summary(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50_ms": round(statistics.median(samples) * 1e3, 3),
            "p99_ms": round(percentile(samples, 99) * 1e3, 3)}


class Subscriber:
    """The independent consumer: every event and result, stamped on arrival in its own
    process (bench/subscriber.py)."""

    TOPICS = ("tables/sim-1/events", "tables/sim-1/results", "bench/floor/#")

    def __init__(self) -> None:
        # Parsed after the run: the JSON work of this process would compete for the two
        # cores with the daemon, the broker and the subscriber while they are measured.
        self.raw: list[tuple[str, bytes, float]] = []
        self.paced_end = 0  # where the latency run's messages end

    async def run(self, port: int, ready: asyncio.Event) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.subscriber", str(port), *self.TOPICS,
            stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        assert proc.stdout is not None
        try:
            if await proc.stdout.readline() != b"ready\n":
                raise RuntimeError("the subscriber did not start")
            ready.set()
            while line := await proc.stdout.readline():
                stamp, topic, payload = line.rstrip(b"\n").split(b"\t", 2)
                self.raw.append((topic.decode(), payload, float(stamp)))
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


class StampingDealer(SimDealer):
    """Draws when the daemon asks (a card event's next, or next_card), one card at a
    time, and stamps the moment each card's last byte is on the line: for latency, with
    nothing queued behind."""

    writes: list[tuple[int, float]]
    round_ends: list[float]

    async def _draw(self) -> None:
        assert self.shoe and self.shoe_port
        while self.shoe.draw(self.shoe_port.now()) is None:
            await asyncio.sleep(0.0005)
        self.shoe_port.kick()  # the frame is in the pty now
        assert self.shoe.shoe is not None
        self.writes.append((self.shoe.shoe.drawn, time.monotonic()))

    async def stamped_round(self) -> None:
        await self.deal_round()
        self.round_ends.append(self.writes[-1][1])


class FullSpeedDealer(StampingDealer):
    """Draws by the tableau, not by prompt, as fast as the gate allows: for throughput."""

    async def full_speed_round(self) -> None:
        assert self.shoe and self.shoe_port
        # What the last round published and nobody waits for (its card events): dropped,
        # or every _expect of this round scans them (the harness's own cost per round).
        self.forget()
        opened = await self.command("open_betting")
        if not opened["ok"]:
            await self._new_shoe()
            assert (await self.command("open_betting"))["ok"]
        assert (await self.command("close_betting"))["ok"]
        cards: list[Any] = []
        while not deal(cards).complete:
            card = self.shoe.draw(self.shoe_port.now())
            if card is None:  # the gate is still opening
                await asyncio.sleep(0.0005)
                continue
            self.shoe_port.kick()  # writes the frame to the pty now
            assert self.shoe.shoe is not None
            self.writes.append((self.shoe.shoe.drawn, time.monotonic()))
            cards.append(parse_card(card))
        self.round_ends.append(self.writes[-1][1])
        await self._expect(lambda t, b: t == "results")


async def wait_ready(sock: socket.socket, timeout: float) -> float:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        while True:
            data = await loop.sock_recv(sock, 4096)
            if b"READY=1" in data.split(b"\n"):
                return time.monotonic()


def rss_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1])
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fsync_floor(directory: Path, n: int = 300) -> list[float]:
    j = Journal(directory / "floor.db")
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        j.append("card", {"n": i}, publish=(Publish("t/events", {"n": i}),))
        samples.append(time.perf_counter() - t0)
        if i % 10 == 9:  # untimed, as the daemon's are (while betting is open): the
            j.wal_checkpoint()  # floor is one fsync'd commit, not SQLite's checkpoint in one
    j.close()
    return samples


def paho_floor(port: int, sub: Subscriber, payload: str, n: int) -> list[float]:
    """The same payload, published at QoS 1 by a minimal paho client, to our subscriber."""
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-paho")
    client.connect("127.0.0.1", port)
    client.loop_start()
    samples = []
    try:
        for i in range(n):
            topic = f"bench/floor/{i}"
            before = len(sub.raw)
            t0 = time.monotonic()
            client.publish(topic, payload, qos=1).wait_for_publish(5)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                hit = [t for tp, _, t in sub.raw[before:] if tp == topic]
                if hit:
                    samples.append(hit[0] - t0)
                    break
                time.sleep(0.0002)
    finally:
        client.loop_stop()
        client.disconnect()
    return samples


async def drain_rate(work: Path, port: int, n: int = 10_000) -> dict[str, float]:
    """A backlog of ``n`` sealed results, published by the daemon's own Publisher, until
    a consumer in its own process has them all (in this process, the consumer's work
    would be counted as the publisher's: they would share one event loop)."""
    signer = Signer(Ed25519PrivateKey.generate())
    journal = Journal(work / "backlog.db", sealer=signer.seal)  # sealed once, at commit
    for i in range(n):
        journal.record_result(f"r-{i}", {"type": "result", "n": i}, "bench/backlog/results",
                              record={})
    journal.append("end", {}, publish=(Publish("bench/backlog/end", {"end": True}),))
    consumer = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.subscriber", str(port), "bench/backlog/#",
        stdout=asyncio.subprocess.PIPE, limit=1 << 20)
    assert consumer.stdout is not None
    try:
        if await consumer.stdout.readline() != b"ready\n":
            raise RuntimeError("the drain's consumer did not start")
        pub = Publisher(journal, BrokerSettings("127.0.0.1", port, client_id="bench-drain"),
                        "bench/backlog/status",
                        Standalone(lambda s, k, _t, _a: {"state": s, "session": k}),
                        signer=signer)
        t0 = time.perf_counter()
        task = asyncio.create_task(pub.run())
        got = 0
        async with asyncio.timeout(120):
            while line := await consumer.stdout.readline():
                topic = line.split(b"\t", 2)[1]
                got += topic == b"bench/backlog/results"
                if topic == b"bench/backlog/end":
                    break
        seconds = time.perf_counter() - t0
        await pub.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        with contextlib.suppress(ProcessLookupError):
            consumer.kill()
        await consumer.wait()
        journal.close()
    if got != n:
        raise RuntimeError(f"the drain's consumer got {got} of {n} results")
    return {"results": n, "seconds": round(seconds, 3), "per_s": round(n / seconds)}


async def throughput(rig: SimRig, port: int, shoe_port: PtyPort, rounds: int,
                     daemon_pid: int) -> dict[str, float]:
    dealer = FullSpeedDealer("127.0.0.1", port, rig.base, rig.dealer_key, betting_seconds=0,
                             shoe=rig.sims["shoe"], shuffler=rig.sims["shuffler"],
                             shoe_port=shoe_port)
    dealer.writes, dealer.round_ends = [], []
    async with dealer.session():
        t0, c0 = time.monotonic(), cpu_seconds(daemon_pid)
        for _ in range(rounds):
            await dealer.full_speed_round()
        elapsed, cpu = time.monotonic() - t0, cpu_seconds(daemon_pid) - c0
    return {"rounds": rounds, "seconds": round(elapsed, 2),
            "rounds_per_s": round(rounds / elapsed, 1),
            "daemon_cpu_ms_per_round": round(cpu / rounds * 1e3, 2)}


async def latency_figures(sub: Subscriber, dealer: StampingDealer, work: Path, port: int
                          ) -> dict[str, Any]:
    """Latency of the paced run, and its floor measured now, with this run's payloads."""
    out: dict[str, Any] = {}
    paced = [(tp, json.loads(b), t) for tp, b, t in sub.raw[:sub.paced_end]]
    events = [(b, t) for tp, b, t in paced if tp.endswith("/events")
              and b.get("event") in ("card", "card_drawn") and "confidence" in b]
    results = [(b, t) for tp, b, t in paced if tp.endswith("/results")]
    assert len(events) == len(dealer.writes), (len(events), len(dealer.writes))
    card_lat = []
    for (draw_no, t_write), (ev, t_recv) in zip(dealer.writes, events, strict=True):
        assert ev["draw_no"] == draw_no
        card_lat.append(t_recv - t_write)
    result_lat = [t - end for (_, t), end in zip(results, dealer.round_ends, strict=True)]
    # The floor, in the same run, with this run's own payloads.
    frame = Frame(Kind.DATA, 0, 0, shoe_proto.CardDrawn.MSG_ID,
                  shoe_proto.CardDrawn(1, "9H", 99, 0xC0FFEE, False, False).to_bytes())
    wire_s = len(frame.to_bytes()) * 10 / BAUD
    fsync = fsync_floor(work)
    paho_event = await asyncio.to_thread(paho_floor, port, sub,
                                         json.dumps(events[-1][0]), 1000)
    paho_result = await asyncio.to_thread(paho_floor, port, sub,
                                          json.dumps(results[-1][0]), 300)
    floor_card = [wire_s + f + p for f, p in zip(fsync * 4, paho_event, strict=False)]
    floor_result = [wire_s + f + p for f, p in zip(fsync, paho_result, strict=False)]
    out["latency"] = {
        "card_event": summary(card_lat), "result": summary(result_lat),
        "floor_card_event": summary(floor_card), "floor_result": summary(floor_result),
        "floor_parts": {"wire_ms": round(wire_s * 1e3, 3), "fsync": summary(fsync),
                        "paho_event": summary(paho_event),
                        "paho_result": summary(paho_result)},
    }
    lat = out["latency"]
    wire_ms = lat["floor_parts"]["wire_ms"]
    # The pty has no wire time and the floor does: counted on both sides, as a real
    # serial line would add it to the daemon's figures too (issue 15's targets).
    out["ratio_to_floor_with_wire"] = {
        name: round((lat[name]["p99_ms"] + wire_ms) / lat[f"floor_{name}"]["p99_ms"], 2)
        for name in ("card_event", "result")}
    out["ratio_to_floor"] = {
        "card_event_p50": round(lat["card_event"]["p50_ms"] /
                                lat["floor_card_event"]["p50_ms"], 2),
        "card_event_p99": round(lat["card_event"]["p99_ms"] /
                                lat["floor_card_event"]["p99_ms"], 2),
        "result_p50": round(lat["result"]["p50_ms"] / lat["floor_result"]["p50_ms"], 2),
        "result_p99": round(lat["result"]["p99_ms"] / lat["floor_result"]["p99_ms"], 2)}
    return out


def storage(db_path: Path) -> dict[str, Any]:
    """What the table's journal holds per round: payloads (all topics) and their bytes,
    journal records, and the file (with its WAL) on disk."""
    import sqlite3  # noqa: PLC0415

    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rounds = db.execute("SELECT count(*) FROM results").fetchone()[0]
        n, size = db.execute("SELECT count(*), sum(length(payload)) FROM messages"
                             ).fetchone()
        records = db.execute("SELECT sum(length(body)) + 24 * count(*) FROM journal"
                             ).fetchone()[0]
        topics = dict(db.execute(
            "SELECT substr(topic, length('tables/sim-1/') + 1) AS t, count(*) FROM messages "
            "GROUP BY t ORDER BY 2 DESC").fetchall())
    finally:
        db.close()
    files = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*")
                if not p.name.endswith(".identity"))
    return {"rounds": rounds, "payloads_per_round": round(n / rounds, 1),
            "by_topic": {t: round(c / rounds, 2) for t, c in topics.items()},
            "payload_bytes_per_round": round(size / rounds),
            "record_bytes_per_round": round(records / rounds),
            "file_bytes_per_round": round(files / rounds)}


async def run(rounds: int, idle: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tabled-bench-"))
    broker = Mosquitto(work)
    broker.start()
    rig = SimRig(work, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=1000)
    await rig.start()
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(work / "notify"))
    notify.setblocking(False)
    daemon = DaemonProcess(rig.config(), work, log_level="WARNING",
                           env={"NOTIFY_SOCKET": str(work / "notify")})
    sub = Subscriber()
    sub_ready = asyncio.Event()
    sub_task = asyncio.create_task(sub.run(broker.port, sub_ready))
    await sub_ready.wait()
    out: dict[str, Any] = {}
    try:
        started = time.monotonic()
        daemon.start()
        out["ready_s"] = round(await wait_ready(notify, 30) - started, 3)
        shoe_port = rig.ports["shoe"]
        assert isinstance(shoe_port, PtyPort)
        dealer = StampingDealer("127.0.0.1", broker.port, rig.base, rig.dealer_key,
                                betting_seconds=0, shoe=rig.sims["shoe"],
                                shuffler=rig.sims["shuffler"], shoe_port=shoe_port)
        dealer.writes, dealer.round_ends = [], []
        async with dealer.session():
            for _ in range(rounds):
                await dealer.stamped_round()
        await asyncio.sleep(0.5)
        sub.paced_end = len(sub.raw)
        out["throughput"] = await throughput(rig, broker.port, shoe_port, rounds // 2,
                                         daemon.pid)
        out["rss_kib_after_run"] = rss_kib(daemon.pid)
        out.update(await latency_figures(sub, dealer, work, broker.port))
        # Idle: devices connected, heartbeats running, no rounds.
        c0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        await asyncio.sleep(idle)
        out["idle_cpu_percent"] = round(100 * (cpu_seconds(daemon.pid) - c0) /
                                        (time.monotonic() - t0), 3)
        out["idle_seconds"] = idle
        out["rss_kib_idle"] = rss_kib(daemon.pid)
        out["backlog_drain"] = await drain_rate(work, broker.port)
        out["storage"] = storage(work / "journal.db")
    finally:
        daemon.stop()
        sub_task.cancel()
        await rig.stop()
        broker.cleanup()
        notify.close()
        # The journal and the broker's files are this run's only: about 10 MB a run.
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    load_before = os.getloadavg()
    out = asyncio.run(run(args.rounds, args.idle))
    # Others' work on the machine moves every figure: say how busy it was.
    out["load_average"] = {"before": [round(x, 2) for x in load_before],
                           "after": [round(x, 2) for x in os.getloadavg()]}
    out["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                      "kernel": platform.release()}
    lat = out["latency"]
    print(f"load average (1, 5, 15 min) before {out['load_average']['before']}, after "
          f"{out['load_average']['after']} on {os.cpu_count()} CPUs")
    print(f"READY after {out['ready_s']} s")
    print(f"throughput: {out['throughput']['rounds_per_s']} rounds/s at full speed "
          f"({out['throughput']['rounds']} rounds in {out['throughput']['seconds']} s; daemon "
          f"CPU {out['throughput']['daemon_cpu_ms_per_round']} ms a round)")
    for name in ("card_event", "result"):
        mine, floor = lat[name], lat[f"floor_{name}"]
        print(f"{name:10} p50 {mine['p50_ms']:7.3f} ms  p99 {mine['p99_ms']:7.3f} ms   floor "
              f"p50 {floor['p50_ms']:7.3f} p99 {floor['p99_ms']:7.3f}   ratio p50 "
              f"{out['ratio_to_floor'][name + '_p50']}x "
              f"p99 {out['ratio_to_floor'][name + '_p99']}x")
    print(f"floor parts: {lat['floor_parts']}")
    print(f"RSS after run {out['rss_kib_after_run']} KiB; idle {out['rss_kib_idle']} KiB")
    print(f"idle CPU {out['idle_cpu_percent']}% over {args.idle:.0f} s")
    d = out["backlog_drain"]
    print(f"backlog: {d['results']} drained in {d['seconds']} s ({d['per_s']}/s)")
    st = out["storage"]
    print(f"per round: {st['payloads_per_round']} payloads ({st['by_topic']}), "
          f"{st['payload_bytes_per_round']} B published, {st['record_bytes_per_round']} B "
          f"of records, {st['file_bytes_per_round']} B of journal file "
          f"(over {st['rounds']} rounds)")
    print("targets (issue 15), measured in this run:")
    for line in targets(out):
        print("  " + line)
    save("end_to_end", out)


def targets(out: dict[str, Any]) -> list[str]:
    """Each target with this run's figure and its ratio to the target."""
    wire = out["ratio_to_floor_with_wire"]
    rows = [(f"{name} p99 / floor p99 (wire time on both sides)", wire[name], "<=", 2.0)
            for name in ("card_event", "result")]
    rows.append(("throughput at full speed, rounds/s", out["throughput"]["rounds_per_s"],
                 ">=", 100.0))
    rows.append(("10,000-result backlog drained, s", out["backlog_drain"]["seconds"], "<=",
                 2.0))
    return [f"{name}: {value} (target {op} {target:g}; {value / target:.2f}x the target): "
            f"{'met' if (value <= target if op == '<=' else value >= target) else 'MISSED'}"
            for name, value, op, target in rows]

if __name__ == "__main__":
    main()
