"""The replay process: replay requests are read and answered here, not in the daemon.

A flood of requests (issue 25: any broker user may publish them) then costs the round
nothing of the daemon's event loop: reading 4,000 requests a second was the larger part
of what slowed a flooded table's rounds (docs/performance.md, "Replay under a flood"),
and the kernel runs this process at a lower priority (``NICE``), so what a flood still
costs comes out of the time the daemon leaves.

The daemon starts it (``supervisor.ReplayProcess``) with ``python -m
daemon.replay.worker`` and writes one line to its stdin: the ``WorkerSpec`` as JSON
(the table's key with it, which is why it is not a command-line argument). It keeps the
pipe open; end of file means the daemon is gone, killed or not, and this process ends.
It reads the journal read-only (SQLite WAL: the daemon writes meanwhile), connects to
the broker as the table's own user (or ``broker.replay_username``) under the client id
``{client_id}-replay``, and says on stdout, one JSON line at a time, whether it is
subscribed, what it has counted, and its log records (the daemon logs them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiomqtt

from daemon.mqtt.broker_config import BrokerConfig
from daemon.mqtt.client import NODELAY, Client, tls_context
from daemon.mqtt.publisher import subscribe
from daemon.replay.server import ReplayServer
from daemon.security.signing import Signer, parse_private_key, private_key_pem
from daemon.store.journal import JournalError, JournalReader

if TYPE_CHECKING:
    from daemon.config import TableConfig

log = logging.getLogger("daemon.replay.worker")  # not __main__: it runs with -m

# The kernel's niceness of this process: under contention it gets about a tenth of
# what the daemon gets (CFS weights 110 against 1024), so a flood is served from the
# time the rounds leave.
NICE = 10
# Seconds between reports of the counts, sent whether they changed or not: the daemon
# takes a process that says nothing for a while for a stuck one (supervisor.SILENT).
REPORT_EVERY = 1.0
BACKOFF = (0.2, 10.0)  # seconds: the first wait after a lost connection, and the longest


@dataclass(frozen=True)
class WorkerSpec:
    """What the replay process needs of the table's config."""

    table_id: str
    base: str  # {prefix}/{table}
    journal: str
    key: str  # the table's Ed25519 private key (PKCS#8 PEM): it signs the markers
    broker: dict[str, Any]  # BrokerConfig's fields
    log_level: str = "INFO"

    @classmethod
    def of(cls, cfg: TableConfig, log_level: str) -> WorkerSpec:
        broker = {k: (str(v) if isinstance(v, Path) else v)
                  for k, v in asdict(cfg.broker).items()}
        return cls(cfg.table_id, f"{cfg.topic_prefix}/{cfg.table_id}",
                   str(cfg.journal_path), private_key_pem(cfg.signer.key).decode("ascii"), broker,
                   log_level)

    def line(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def read(cls, line: bytes) -> WorkerSpec:
        return cls(**json.loads(line))

    @property
    def login_name(self) -> str | None:
        return self.broker_config().replay_login[0]

    def broker_config(self) -> BrokerConfig:
        b = dict(self.broker)
        for k in ("ca_file", "cert_file", "key_file"):
            b[k] = None if b[k] is None else Path(b[k])
        b["nodes"] = tuple(tuple(n) for n in b["nodes"])
        return BrokerConfig(**b)


def report(**fields: Any) -> None:
    try:
        sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the daemon is gone (killed): end, and say nothing more
        os._exit(0)  # nothing to save (the journal is read-only); no traceback at exit


class ToTheDaemon(logging.Handler):
    """Log records go to the daemon (``report(log=...)``), which logs them as its own:
    one log, with the daemon's format and journald priorities, and nothing written
    beside what ``tabled simulate`` shows."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        report(log=[record.levelno, record.name, text])


async def _connection(spec: WorkerSpec, server: ReplayServer, host: str, port: int
                      ) -> None:
    """One connection: subscribed, requests answered, until it drops."""
    b = spec.broker_config()
    username, password = b.replay_login
    client = Client(host, port, username=username, password=password,
                    identifier=f"{b.client_id}-replay", keepalive=15,
                    tls_context=tls_context(b), timeout=5.0, socket_options=NODELAY)

    async def send(topic: str, text: str) -> bool:
        try:
            await client.publish(topic, text, qos=1)
        except aiomqtt.MqttError as exc:
            log.warning("could not answer on %s: %s", topic, exc)
            return False
        return True

    began = time.monotonic()  # CLOCK_MONOTONIC: the daemon's clock too
    async with client:
        # At once, with when the login began: see supervisor._suspect.
        report(connected=True, began=began, at=time.monotonic())
        client.at_once(server.request_topic, server.admit)
        await subscribe(client, server.request_topic)
        server.send = send
        report(subscribed=True)
        try:
            async for _ in client.messages:  # none come: this ends when the link drops
                pass
        finally:
            server.send = _unconnected
            report(subscribed=False)


async def _unconnected(_topic: str, _text: str) -> bool:
    return False


async def _reports(server: ReplayServer) -> None:
    while True:
        await asyncio.sleep(REPORT_EVERY)
        report(served=server.served, refused=dict(server.refused))


async def serve(spec: WorkerSpec, journal: JournalReader) -> None:
    """Answer replay requests until the connection to the daemon (stdin) ends."""
    signer = Signer(parse_private_key(spec.key.encode("ascii"), "the daemon's pipe"))
    server = ReplayServer(spec.base, spec.table_id, journal, _unconnected, signer.seal,
                          time.time)
    targets = spec.broker_config().nodes or ((spec.broker["host"], spec.broker["port"]),)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)

    async def links() -> None:
        node, wait = 0, BACKOFF[0]
        while True:
            host, port = targets[node]
            began = time.monotonic()
            try:
                await _connection(spec, server, host, port)
            except aiomqtt.MqttError as exc:
                log.warning("replay: the broker at %s:%d: %s", host, port, exc)
            if time.monotonic() - began > 30:  # it had held: start again quickly
                wait = BACKOFF[0]
            node = (node + 1) % len(targets)
            await asyncio.sleep(wait)
            wait = min(wait * 2, BACKOFF[1])

    async with asyncio.TaskGroup() as tg:
        work = [tg.create_task(links()), tg.create_task(_reports(server))]
        await stdin.read()  # until end of file: the daemon has gone
        for t in work:
            t.cancel()


def main() -> None:
    # It ends when the daemon does (end of file on stdin), not on a signal to the whole
    # group (systemd's stop, a Ctrl-C on a terminal): the daemon stops it last.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    spec = WorkerSpec.read(sys.stdin.buffer.readline())
    logging.basicConfig(level=spec.log_level, handlers=[ToTheDaemon()])
    with contextlib.suppress(OSError):  # not allowed: run at the daemon's priority
        os.nice(NICE)
    try:
        journal = JournalReader(spec.journal)
    except JournalError as exc:
        log.error("replay: %s", exc)
        sys.exit(1)
    asyncio.run(serve(spec, journal))


if __name__ == "__main__":
    main()
