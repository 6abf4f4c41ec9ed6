"""Benchmark: two timings a consumer must allow for (docs/mqtt.md, "Catch-up"), with
`tabled simulate` playing against a private Mosquitto on loopback (issue 26).

Run: .venv/bin/python -m bench.consumer_timing [--game G] [--rounds 400]

- Snapshots before their messages: a subscriber to ``tables/sim-1/#`` counts the
  retained snapshots that reached it before some of the messages they cover (a
  numbered message of the same journal, at or below ``as_of_msg_seq``, arriving after
  the snapshot), and the most such messages behind one snapshot.
- Replay answers: once a second, from 8 s in, a replay request for the first messages
  (``from_msg_seq`` 1: a full answer of up to 500); the time from the request to its
  marker, and how many got no marker within 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiomqtt

from hil.broker import Mosquitto

BASE = "tables/sim-1"
WAIT = 3.0  # s a request waits for its marker (what docs/mqtt.md advises)


def early_snapshots(seen: list[tuple[str, dict[str, Any]]]) -> tuple[int, int, int]:
    """(snapshots, those before some message they cover, most messages behind one)."""
    snaps = early = worst = 0
    for i, (topic, body) in enumerate(seen):
        if not topic.endswith("/snapshot"):
            continue
        snaps += 1
        behind = sum(1 for t, b in seen[i + 1:] if "/replay/" not in t
                     and type(b.get("msg_seq")) is int
                     and b.get("journal_id") == body.get("journal_id")
                     and b["msg_seq"] <= body["as_of_msg_seq"])
        early += behind > 0
        worst = max(worst, behind)
    return snaps, early, worst


async def ask(client: aiomqtt.Client, n: int, answers: asyncio.Queue[dict[str, Any]]
              ) -> tuple[float, int] | None:
    t0 = time.monotonic()
    await client.publish(f"{BASE}/replay/request", json.dumps(
        {"id": f"q{n}", "reply_to": "timing", "from_msg_seq": 1}), qos=1)
    try:
        async with asyncio.timeout(WAIT):
            while True:
                marker = await answers.get()
                if marker.get("id") == f"q{n}":
                    return time.monotonic() - t0, int(marker["count"])
    except TimeoutError:
        return None


async def run(game: str, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="tabled-bench-"))
    broker = Mosquitto(work)
    broker.start()
    seen: list[tuple[str, dict[str, Any]]] = []
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.subscribe(f"{BASE}/#", qos=1)

            async def listen() -> None:
                async for m in client.messages:
                    body = json.loads(m.payload if isinstance(m.payload, bytes) else b"{}")
                    if str(m.topic) == f"{BASE}/replay/to/timing":
                        if body.get("type") == "replay":
                            answers.put_nowait(body)
                    elif not str(m.topic).endswith("/replay/request"):
                        seen.append((str(m.topic), body))

            listener = asyncio.create_task(listen())
            sim = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "daemon", "simulate", "--game", game, "--rounds",
                str(rounds), "--speed", "50", "--broker", f"mqtt://127.0.0.1:{broker.port}",
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
            await asyncio.sleep(8)
            timings, unanswered, n = [], 0, 0
            while sim.returncode is None:
                n += 1
                got = await ask(client, n, answers)
                if got is None:
                    unanswered += 1
                else:
                    timings.append(got)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(sim.wait(), 1.0)
            await asyncio.sleep(1)
            listener.cancel()
    finally:
        broker.cleanup()
    snaps, early, worst = early_snapshots(seen)
    print(f"{game}, {rounds} rounds: {early} of {snaps} snapshots came before up to {worst} "
          f"of the messages they cover")
    if timings:
        ms = sorted(t * 1000 for t, _ in timings)
        print(f"replay: {len(timings)} answered ({min(c for _, c in timings)}-"
              f"{max(c for _, c in timings)} messages), {unanswered} without a marker in "
              f"{WAIT:g} s; to the marker median {statistics.median(ms):.0f} ms, "
              f"max {ms[-1]:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--game", default="tiger-buffalo")
    ap.add_argument("--rounds", type=int, default=400)
    args = ap.parse_args()
    asyncio.run(run(args.game, args.rounds))


if __name__ == "__main__":
    main()
