"""Issue 25, Build 3: no input can stop a reader. The poison corpus (tests/poison.py) on
every topic a consumer reads, retained and live, through a real Mosquitto, against the
real processes: the daemon (its commands, replay requests and own status), `tabled
display`, `tabled watch` (in a terminal) and `tabled verify` (on a capture taken by
mosquitto_sub). Each must refuse and count, go on, and still take the table's word.

Retained poison sits under other tables' topics (any broker user may publish under
``tables/<own username>/``, and a display or watch without --table reads
``tables/+/#``) and on the table's command topics, where the daemon meets it when it
subscribes; live poison comes on every topic of the table while everything runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pyte

from daemon.security.signing import public_key_text
from hil.broker import Mosquitto, free_port
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.poison import commands, corpus
from tests.terminal import Terminal
from tests.wait import until

SMALL = 1024  # the "10 MB" strings, on the topics where 10 MB is not the point
COLUMNS, ROWS = 100, 45


class Capture:
    """Every message on ``tables/#`` as a subscriber receives it, and the table's own
    (those ``accept`` takes), by topic under the table."""

    def __init__(self, rig: SimRig) -> None:
        self.rig = rig
        self.count = 0
        self.table: dict[str, list[dict[str, Any]]] = {}

    async def run(self, port: int, ready: asyncio.Event) -> None:
        async with aiomqtt.Client("127.0.0.1", port, identifier="poison-capture",
                                  max_queued_incoming_messages=0) as client:
            await client.subscribe("tables/#", qos=1)
            ready.set()
            async for m in client.messages:
                self.count += 1
                raw = m.payload if isinstance(m.payload, bytes) else b""
                topic = str(m.topic)
                if not topic.startswith(f"{self.rig.base}/"):
                    continue
                body = self.genuine(raw)
                if body is not None:
                    self.table.setdefault(topic[len(self.rig.base) + 1:], []).append(body)

    def genuine(self, raw: bytes) -> dict[str, Any] | None:
        """The table's own payload, by the contract's rule written out again here (not
        the code under test): its canonical bytes, signed, naming this table."""
        try:
            body = json.loads(raw)
            self.rig.keyring.verify(body)
        except Exception:  # anything else is poison, which this test sends itself
            return None
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode()
        ok = isinstance(body, dict) and canonical == raw and body.get("table") == \
            self.rig.table_id
        return body if ok else None

    def accepted(self, kind: str) -> list[dict[str, Any]]:
        return self.table.get(kind, [])


async def wait_screen(term: Terminal, cond: Any, timeout: float) -> str:
    """The watch's screen once ``cond`` holds of it, without blocking the loop."""
    text = ""
    try:
        async with asyncio.timeout(timeout):
            while True:
                while term._read(0) and term.output and select_ready(term):
                    pass
                s = pyte.Screen(COLUMNS, ROWS)
                pyte.ByteStream(s).feed(term.output)
                text = "\n".join(s.display)
                if cond(text):
                    return text
                assert term.proc.poll() is None, term.text[-3000:]
                await asyncio.sleep(0.2)
    except TimeoutError:
        raise AssertionError(f"not on the watch's screen:\n{text}") from None


def select_ready(term: Terminal) -> bool:
    return bool(select.select([term.master], [], [], 0)[0])


@contextlib.contextmanager
def mosquitto_sub(port: int, out: Path) -> Iterator[None]:
    """A capture as an operator takes one for `tabled verify`."""
    binary = shutil.which("mosquitto_sub") or "/usr/bin/mosquitto_sub"
    with out.open("wb") as f:
        proc = subprocess.Popen([binary, "-h", "127.0.0.1", "-p", str(port), "-v", "-q", "1",
                                 "-t", "tables/#"], stdout=f, stderr=subprocess.DEVNULL)
        try:
            yield
        finally:
            proc.terminate()
            proc.wait(10)


async def publish(port: int, items: list[tuple[str, bytes]], *, retain: bool = False
                  ) -> None:
    async with aiomqtt.Client("127.0.0.1", port, identifier="poisoner") as client:
        for topic, raw in items:
            await client.publish(topic, raw, qos=1, retain=retain)


def state(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=10) as r:
        data: dict[str, Any] = json.loads(r.read())
    return data


@contextlib.asynccontextmanager
async def table(work: Path) -> AsyncIterator[tuple[SimRig, DaemonProcess, Mosquitto]]:
    broker = Mosquitto(work)
    broker.start()
    rig = SimRig(work, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50.0,
                 seed=3)
    await rig.start()
    daemon = DaemonProcess(rig.config(), work)
    try:
        yield rig, daemon, broker
    finally:
        daemon.kill()
        await rig.stop()
        broker.cleanup()


async def test_issue_25_3_the_poison_corpus_stops_no_reader(tmp_path: Path) -> None:
    async with table(tmp_path) as (rig, daemon, broker):
        pub = tmp_path / "table.pub"
        pub.write_text(public_key_text(rig.table_key.public_key()) + "\n", encoding="ascii")
        base = rig.base
        poison, small = corpus(rig.table_key, rig.table_id), \
            corpus(rig.table_key, rig.table_id, big=SMALL)
        cmd_poison = commands(rig.dealer_key) + poison

        # Retained, before any reader starts: under other tables' topics, one topic per
        # payload (a topic keeps one retained message), and on the table's commands.
        retained = [(f"tables/evil-{i}/{kind}", raw) for i, (_, raw) in enumerate(poison)
                    for kind in ("status",)]
        retained += [(f"tables/evil-{i}/{kind}", raw) for i, (_, raw) in enumerate(small)
                     for kind in ("snapshot", "devices/shoe", "results")]
        retained += [(f"{base}/cmd/poison{i}", raw) for i, (_, raw) in enumerate(cmd_poison)]
        retained += [(f"{base}/replay/request", small[0][1])]
        await publish(broker.port, retained, retain=True)

        capture, ready = Capture(rig), asyncio.Event()
        capturing = asyncio.create_task(capture.run(broker.port, ready))
        await asyncio.wait_for(ready.wait(), 10)
        web = free_port()
        display = subprocess.Popen(
            [sys.executable, "-m", "daemon", "display", "--broker",
             f"mqtt://127.0.0.1:{broker.port}", "--listen", f"127.0.0.1:{web}",
             "--key", str(pub)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        watch = Terminal([sys.executable, "-m", "daemon", "watch", "--broker",
                          f"mqtt://127.0.0.1:{broker.port}", "--key", str(pub)],
                         columns=COLUMNS, rows=ROWS)
        try:
            with mosquitto_sub(broker.port, tmp_path / "capture.txt"):
                daemon.start()
                await until(lambda: any(s.get("state") == "online" for s in
                                        capture.accepted("status")), 60)
                # The retained command topics cleared (empty: data too), so that the
                # dealer's own subscription meets no poison of ours.
                await publish(broker.port, [(t, b"") for t, _ in retained
                                            if t.startswith(base)], retain=True)

                # Live: every topic of the table a consumer reads, and the daemon's.
                live = [(f"{base}/results", raw) for _, raw in poison]
                live += [(f"{base}/{kind}", raw) for _, raw in small
                         for kind in ("status", "snapshot", "events", "alerts", "replies",
                                      "devices/shoe", "replay/to/someone")]
                live += [(f"{base}/cmd/open_betting", raw) for _, raw in cmd_poison]
                live += [(f"{base}/replay/request", raw) for _, raw in small]
                await publish(broker.port, live)

                # The table still deals, and answers a well-formed replay request.
                dealer = rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
                async with dealer.session():
                    for _ in range(2):
                        await dealer.deal_round()
                await publish(broker.port, [(f"{base}/replay/request", json.dumps(
                    {"id": "ok-1", "reply_to": "auditor", "from_msg_seq": 1}).encode())])
                await until(lambda: any(m.get("id") == "ok-1" for m in
                                        capture.accepted("replay/to/auditor")), 30)
                results = capture.accepted("results")
                assert len(results) >= 2

                # The display: alive, both rounds shown, every poison counted.
                await until(lambda: len(state(web)["tables"].get(rig.table_id, {})
                                        .get("last_results", [])) >= 2, 30)
                assert display.poll() is None
                seen = state(web)
                assert set(seen["tables"]) == {rig.table_id}
                table_topics = len(live) - len(cmd_poison) - len(small)
                assert seen["refused"]["total"] >= len(retained) - len(cmd_poison) - 1 \
                    + table_topics
                assert all(len(r["reason"]) < 600 and r["reason"].isascii()
                           for r in seen["refused"]["last"])

                # The watch: alive, the rounds shown, the poison counted.
                text = await wait_screen(watch, lambda t: "payloads REJECTED" in t
                                         and "#2 " in t, 60)
                assert "evil" not in text.split("last:", 1)[-1].split("\n", 2)[-1]

            # The daemon: alive, no traceback, and the forgery was alerted (the slot
            # was once taken by an alert it then failed to store).
            assert daemon.running()
            log = daemon.log()
            assert "Traceback" not in log and "never retrieved" not in log, log[-3000:]
            denied = [a for a in capture.accepted("alerts")
                      if a.get("code") == "command_denied"]
            assert denied, [a.get("code") for a in capture.accepted("alerts")]

            # tabled verify on what mosquitto_sub captured: every line judged, no
            # traceback; the table's own payloads verify.
            run = subprocess.run([sys.executable, "-m", "daemon", "verify", "--key",
                                  str(pub), str(tmp_path / "capture.txt")],
                                 capture_output=True, timeout=300, check=False)
            out, err = run.stdout.decode(), run.stderr.decode()
            assert "Traceback" not in err, err[-3000:]
            assert run.returncode == 1
            ok = [line for line in out.splitlines() if line.startswith("ok ")]
            assert sum(f"({base}/results): result seq" in line for line in ok) >= 2
            rejected = out.count("\nREJECTED ") + out.startswith("REJECTED ")
            # Each poison on a table's topic (commands and replay requests are skipped)
            assert rejected >= len(retained) - len(cmd_poison) - 1 + table_topics
        finally:
            capturing.cancel()
            if display.poll() is None:
                display.terminate()
            display.wait(10)
            if watch.proc.poll() is None:
                watch.stop()
