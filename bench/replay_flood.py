"""Benchmark: a round's latency, and a polite consumer's replays, with and without a
flood of replay requests from another client (issue 25, Build 4).

Run: .venv/bin/python -m bench.replay_flood [--rounds 40] [--rate 4000] [--passes 3]

The daemon runs as its own process against the simulated shoe and shuffler, with a
private Mosquitto on loopback. In each of ``--passes`` passes a dealer deals
``--rounds`` rounds on an idle table; then as many while a flooder (its own process)
sends requests as fast as it can (up to ``--rate`` a second) to a topic the table does
not read (the control: the machine loaded alike, the daemon idle); then as many again
while the flooder sends replay requests under one ``reply_to``, each from
``--from-msg-seq``. A consumer asks for a replay once a second under its own name
during both. A round's latency is open_betting's reply to its result. Dealer and
simulators share the machine's two cores with the daemon, the broker, the flooder and
other work, so each pass's figures are judged against its own idle ones, measured just
before, and against the control; the CPU time per second of each phase of the daemon
and of its replay process (from /proc) is the figure the machine's load disturbs
least. Prints medians, p90, their ratios and CPU per pass; writes
bench/results/replay_flood.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiomqtt

from bench.figures import percentile, save
from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.rig import SimRig

FLOODER = """
import asyncio, json, sys, time
import aiomqtt
async def main(port, topic, rate, first):
    async with aiomqtt.Client("127.0.0.1", port) as c:
        n, began = 0, time.monotonic()
        while True:
            n += 1
            await c.publish(topic, json.dumps({"id": f"f{n}", "reply_to": "flood",
                                              "from_msg_seq": first}), qos=0)
            if n % 1000 == 0:
                print(n, time.monotonic() - began, flush=True)
            ahead = n / rate - (time.monotonic() - began)
            if ahead > 0 or n % 50 == 0:
                await asyncio.sleep(max(ahead, 0))
asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])))
"""


def figures(samples: list[float], cpu: tuple[float, float]) -> dict[str, float]:
    """Latency figures, and the CPU time per second of the phase of the daemon and of
    its replay process (``cpu``)."""
    return {"n": len(samples), "p50_ms": round(statistics.median(samples) * 1e3, 1),
            "p90_ms": round(percentile(samples, 90) * 1e3, 1),
            "max_ms": round(max(samples) * 1e3, 1),
            "daemon_cpu_per_s": round(cpu[0] / sum(samples), 3),
            "replay_cpu_per_s": round(cpu[1] / sum(samples), 3)}


async def polite(port: int, base: str, stop: asyncio.Event) -> tuple[int, int]:
    """A consumer asking once a second: (asked, answered without an error)."""
    asked = answered = 0
    async with aiomqtt.Client("127.0.0.1", port) as c:
        await c.subscribe(f"{base}/replay/to/polite", qos=1)
        while not stop.is_set():
            asked += 1
            rid = f"p{asked}"
            await c.publish(f"{base}/replay/request", json.dumps(
                {"id": rid, "reply_to": "polite", "from_msg_seq": 1, "topics": ["results"]}),
                qos=1)
            began = time.monotonic()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    async for m in c.messages:
                        body = json.loads(bytes(m.payload))
                        if body.get("type") == "replay" and body.get("id") == rid:
                            answered += body["error"] is None
                            break
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
    return asked, answered


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far (/proc): what it spent, whatever
    else loads the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_of(daemon: DaemonProcess) -> tuple[float, float]:
    """CPU seconds so far of the daemon, and of its children (the replay process)."""
    return cpu_seconds(daemon.pid), sum(cpu_seconds(c) for c in daemon.children())


def spent(before: tuple[float, float], daemon: DaemonProcess) -> tuple[float, float]:
    now = cpu_of(daemon)
    return now[0] - before[0], now[1] - before[1]


async def rounds(dealer: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        began = time.monotonic()
        await dealer.deal_round()
        out.append(time.monotonic() - began)
    return out


def ratios(idle: dict[str, float], flooded: dict[str, float]) -> dict[str, float]:
    return {k: round(flooded[f"{k}_ms"] / idle[f"{k}_ms"], 2) for k in ("p50", "p90")}


async def flooded_rounds(dealer: Any, n: int, port: int, topic: str, base: str,
                         rate: float, first: int, daemon: DaemonProcess) -> dict[str, Any]:
    """``n`` rounds under a flood on ``topic`` and beside a polite consumer."""
    flooder = subprocess.Popen([sys.executable, "-c", FLOODER, str(port), topic, str(rate),
                                str(first)],
                               stdout=subprocess.PIPE, text=True)
    sent = (0, 1.0)
    try:
        await asyncio.sleep(2.0)  # the flood under way
        stop = asyncio.Event()
        consumer = asyncio.create_task(polite(port, base, stop))
        cpu = cpu_of(daemon)
        flooded = await rounds(dealer, n)
        cpu = spent(cpu, daemon)
        stop.set()
        asked, answered = await consumer
    finally:
        flooder.kill()
        assert flooder.stdout is not None
        for line in flooder.stdout.read().split("\n"):
            if line.strip():
                count, secs = line.split()
                sent = (int(count), float(secs))
        flooder.wait()
    return {"rounds": flooded, "cpu": cpu, "rate_sent": round(sent[0] / sent[1]),
            "asked": asked,
            "answered": answered}


async def run(n: int, rate: float, first: int, passes: int, pin: bool) -> dict[str, Any]:
    if pin:  # this process, and all it starts: the broker, the flooder, the simulators
        os.sched_setaffinity(0, {1})
    work = Path(tempfile.mkdtemp(prefix="tabled-flood-"))
    broker = Mosquitto(work)
    broker.start()
    rig = SimRig(work, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50.0)
    await rig.start()
    daemon = DaemonProcess(rig.config(), work)
    daemon.start()
    if pin:  # the table's computer: the daemon, and the replay process it starts later
        os.sched_setaffinity(daemon.pid, {0})
    out: list[dict[str, Any]] = []
    try:
        dealer = rig.dealer()
        async with dealer.session():
            await rounds(dealer, 3)  # warm: the shoe shuffled, caches filled
            for _ in range(passes):
                cpu = cpu_of(daemon)
                idle = figures(await rounds(dealer, n), spent(cpu, daemon))
                # The control: the same flood on a topic the table does not read, so
                # the broker, the flooder and the consumer load the machine as much
                # and the daemon does nothing for it.
                c = await flooded_rounds(dealer, n, broker.port, f"{rig.base}/elsewhere",
                                         rig.base, rate, first, daemon)
                control = figures(c["rounds"], c["cpu"])
                await asyncio.sleep(1.0)
                f = await flooded_rounds(dealer, n, broker.port,
                                         f"{rig.base}/replay/request", rig.base, rate, first,
                                         daemon)
                flooded = figures(f["rounds"], f["cpu"])
                out.append({"rounds_idle": idle, "rounds_control": control,
                            "rounds_under_flood": flooded, "ratio": ratios(idle, flooded),
                            "ratio_control": ratios(idle, control),
                            "ratio_flood_to_control": ratios(control, flooded),
                            "flood_rate_sent": f["rate_sent"],
                            "control_rate_sent": c["rate_sent"],
                            "polite_asked": f["asked"], "polite_answered": f["answered"]})
                await asyncio.sleep(1.0)
    finally:
        daemon.stop()
        await rig.stop()
        broker.cleanup()
    return {"flood_rate_asked": rate, "flood_from_msg_seq": first, "pinned": pin,
            "passes": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--rate", type=float, default=4000.0)
    # 1: every flood request served asks for the most the table sends (500 messages);
    # a large number: answers with nothing in them, the cost of the requests alone.
    ap.add_argument("--from-msg-seq", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    # The table's computer apart: the daemon (and its replay process) on CPU 0, the
    # broker, flooder, simulators and dealer, which are other machines on a floor, on 1.
    ap.add_argument("--pin", action="store_true")
    a = ap.parse_args()
    out = asyncio.run(run(a.rounds, a.rate, a.from_msg_seq, a.passes, a.pin))
    print(f"flood from msg_seq {out['flood_from_msg_seq']}, {a.rounds} rounds a phase")
    for n, p in enumerate(out["passes"], 1):
        i, c, f = p["rounds_idle"], p["rounds_control"], p["rounds_under_flood"]
        r, rc, rf = p["ratio"], p["ratio_control"], p["ratio_flood_to_control"]
        print(f"pass {n}: median / p90 / max ms: idle {i['p50_ms']} / {i['p90_ms']} / "
              f"{i['max_ms']}; control {c['p50_ms']} / {c['p90_ms']} / {c['max_ms']}; "
              f"flood {f['p50_ms']} / {f['p90_ms']} / {f['max_ms']}")
        print(f"        ratio to idle (median, p90): flood {r['p50']}, {r['p90']}; control "
              f"{rc['p50']}, {rc['p90']}; flood to control {rf['p50']}, {rf['p90']}; "
              f"{p['flood_rate_sent']} requests/s ({p['control_rate_sent']} control); polite "
              f"consumer {p['polite_answered']} of {p['polite_asked']} answered")
        print(f"        daemon CPU s per s: idle {i['daemon_cpu_per_s']}, control "
              f"{c['daemon_cpu_per_s']}, flood {f['daemon_cpu_per_s']}; its replay "
              f"process: {i['replay_cpu_per_s']}, {c['replay_cpu_per_s']}, "
              f"{f['replay_cpu_per_s']}")
    save("replay_flood", out)


if __name__ == "__main__":
    main()
