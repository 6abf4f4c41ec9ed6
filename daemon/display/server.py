"""`tabled display`: subscribes to the tables' topics, keeps a verified view of each table
(``view.Display``) and serves the page, pushing every change to the browsers by
server-sent events. Standard library HTTP on asyncio, aiomqtt for the broker.

Routes: ``/`` the page, ``/display.js`` and ``/display.css`` its parts (shipped in the
package: nothing is fetched from outside), ``/events`` the event stream, ``/state`` the
whole view as JSON once (for scripts and tests; the page itself never polls it).

The Pit page (docs/pit.md): ``/pit`` and ``/pit.js``, ``/pit/table-of-play`` (the rule
as data, for the page's check of a reconstruction) and ``POST /pit/command``, which
publishes a command the supervisor's security key signed in the browser, byte for byte,
on the table's command topic. The server holds no key: the table verifies the
assertion itself (``daemon/security/passkeys.py``), so a relay that changes a byte gets the
command refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import resource
import secrets
import ssl
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import aiomqtt
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from daemon.display import metrics
from daemon.display.pit import table_of_play
from daemon.display.view import Display
from daemon.security.commands import COMMANDS, MAX_PAYLOAD

log = logging.getLogger(__name__)

STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/display.js": ("display.js", "text/javascript; charset=utf-8"),
          "/display.css": ("display.css", "text/css; charset=utf-8"),
          "/pit": ("pit.html", "text/html; charset=utf-8"),
          "/pit.js": ("pit.js", "text/javascript; charset=utf-8"),
          "/pit.css": ("pit.css", "text/css; charset=utf-8")}
MAX_POST = MAX_PAYLOAD + 1024  # a command, and the table and name it goes to
# Nothing from outside the table's network: the page may load only its own parts.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; "
       # the roads place cells by inline grid positions, written by the page's own script
       "style-src-attr 'unsafe-inline'; connect-src 'self'; "
       "img-src 'self' data:")
COALESCE = 0.05  # seconds: a burst of messages (a catch-up) becomes one push
HEARTBEAT = 15.0  # seconds between SSE comments, so a dead browser is noticed
CLIENT_QUEUE = 64
STATE_KEEP_RESULTS = 2000
REPLAY_RATE = 2.0  # replay requests a second, all tables together
# What the page's own clients may hold (issue 25: 1,100 connections each sending a header
# line every 5 s took all 1,024 descriptors, and the page timed out for everyone).
REQUEST_DEADLINE = 10.0  # seconds for a request's whole head, however it trickles in
MAX_HEADER_LINES = 64
CONNECTIONS_PER_ADDRESS = 32  # one address cannot take the whole cap
STREAMS_PER_ADDRESS = 8  # event streams (open pages) from one address
HEADERS = ("Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
           "Connection: close\r\n")


def connection_cap() -> int:
    """Connections at once: the descriptors this process may open, less room for the
    broker link, the state file and the listening socket; at most 512."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(8, min(512, (soft if soft != resource.RLIM_INFINITY else 1024) - 64))


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class StateFile:
    """The display's own memory across its restarts, so it need not ask the table by
    replay for what it had: every message it accepted, as (topic, payload) lines. Read
    back through ``receive``, so each is verified again; compacted at start to results,
    alerts, retained topics and the events of the current shoe."""

    path: Path

    def load(self) -> list[tuple[str, bytes]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                rec = json.loads(line)
                out.append((str(rec["topic"]), str(rec["payload"]).encode("utf-8")))
        return out

    def compact(self, lines: list[tuple[str, bytes]]) -> None:
        last_shoe = max((i for i, (t, p) in enumerate(lines)
                         if t.endswith("/events") and b'"shoe_loaded"' in p), default=0)
        results = [i for i, (t, _) in enumerate(lines) if t.endswith("/results")]
        old_results = set(results[:-STATE_KEEP_RESULTS])
        keep = [(t, p) for i, (t, p) in enumerate(lines)
                if i not in old_results and (not t.endswith("/events") or i >= last_shoe)]
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for t, p in keep:
                f.write(json.dumps({"topic": t, "payload": p.decode("utf-8")}) + "\n")
        os.replace(tmp, self.path)

    def append(self, topic: str, payload: bytes) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"topic": topic, "payload": payload.decode("utf-8")}) + "\n")


@dataclass
class DisplayServer:
    display: Display
    broker: tuple[str, int]
    tables: Sequence[str] = ()
    client_id: str | None = None  # a persistent MQTT session when given
    state_file: StateFile | None = None
    clients: set[asyncio.Queue[bytes | None]] = field(default_factory=set)
    dirty: set[str] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    broker_state: dict[str, Any] = field(default_factory=lambda: {"connected": False,
                                                                  "error": "connecting"})
    received: int = 0
    replay_requests: int = 0
    tls: ssl.SSLContext | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    _random_name: str = field(default_factory=lambda: f"display-{secrets.token_hex(4)}")
    max_connections: int = field(default_factory=connection_cap)
    connections: Counter[str] = field(default_factory=Counter)  # open, by address
    streams: Counter[str] = field(default_factory=Counter)  # event streams, by address

    def __post_init__(self) -> None:
        self.metrics = metrics.registry(self)
        self._client: aiomqtt.Client | None = None  # while connected: relays the Pit's
        self.relayed = 0

    async def relay(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """``POST /pit/command``: ``{"table", "name", "payload"}``, the payload the text the
        browser signed. Published as it came; what the table says comes on its replies."""
        try:
            req = json.loads(body)
            table, name, payload = req["table"], req["name"], req["payload"]
        except (ValueError, TypeError, KeyError):
            return 400, {"error": "expected {table, name, payload}"}
        if not isinstance(table, str) or table not in self.display.tables or \
                (self.tables and table not in self.tables):
            return 404, {"error": "not a table this display shows"}
        if not isinstance(name, str) or name not in COMMANDS:
            return 400, {"error": "not a command"}
        if not isinstance(payload, str) or len(payload.encode("utf-8")) > MAX_PAYLOAD:
            return 400, {"error": "the payload must be text of at most "
                                  f"{MAX_PAYLOAD} bytes"}
        client = self._client
        if client is None:
            return 503, {"error": "the broker is not connected"}
        await client.publish(f"{self.display.prefix}/{table}/cmd/{name}",
                             payload.encode("utf-8"), qos=1)
        self.relayed += 1
        log.info("relayed %s to %s", name, table)
        return 202, {"relayed": True}

    # ---- the broker side ----

    def topics(self) -> list[str]:
        """Every topic of the tables (replay answers to this display included)."""
        prefix = self.display.prefix
        return [f"{prefix}/{t}/#" for t in self.tables] or [f"{prefix}/+/#"]

    def load_state(self) -> None:
        if self.state_file is None:
            return
        lines = self.state_file.load()
        for topic, payload in lines:
            self.display.receive(topic, payload, now_text())
        self.state_file.compact(lines)
        log.info("display state: %d messages read back from %s", len(lines),
                 self.state_file.path)

    def on_message(self, topic: str, payload: bytes) -> None:
        self.received += 1
        table = self.display.receive(topic, payload, now_text())
        if table is None:
            return
        if table and self.state_file is not None:
            self.state_file.append(topic, payload)
        self.dirty.add(table)
        self.changed.set()

    async def run_mqtt(self) -> None:
        host, port = self.broker
        persistent = self.client_id is not None
        while True:
            try:
                async with aiomqtt.Client(host, port, identifier=self.client_id,
                                          clean_session=not persistent, keepalive=10,
                                          tls_context=self.tls, username=self.username,
                                          password=self.password) as client:
                    for topic in self.topics():
                        await client.subscribe(topic, qos=1)
                    self._client = client
                    self._broker(True, None)
                    replays = asyncio.create_task(self.run_replays(client))
                    try:
                        async for m in client.messages:
                            raw = m.payload if isinstance(m.payload, bytes) else \
                                str(m.payload).encode("utf-8")
                            self.on_message(str(m.topic), raw)
                    finally:
                        self._client = None
                        replays.cancel()
            except aiomqtt.MqttError as exc:
                self._broker(False, str(exc))
                await asyncio.sleep(1.0)

    @property
    def reply_name(self) -> str:
        """Where replay answers come (``replay/to/{name}``): this display's own."""
        name = re.sub(r"[^A-Za-z0-9_-]", "-", self.client_id or "")[:64]
        return name or self._random_name

    async def run_replays(self, client: aiomqtt.Client) -> None:
        """Contract v2: asks each table for what the display lacks (``view.catchup``),
        at most REPLAY_RATE requests a second for all tables together (a table serves
        each requester 1 a second, bursts of 5: docs/mqtt.md, "Replay requests")."""
        loop = asyncio.get_running_loop()
        while True:
            for table, view in list(self.display.tables.items()):
                req = view.catchup.next_request(loop.time())
                if req is None:
                    continue
                req["reply_to"] = self.reply_name
                await client.publish(f"{self.display.prefix}/{table}/replay/request",
                                     json.dumps(req), qos=1)
                self.replay_requests += 1
                log.info("replay request to %s: %s", table, req)
                await asyncio.sleep(1 / REPLAY_RATE)
            await asyncio.sleep(1 / REPLAY_RATE)

    def _broker(self, connected: bool, error: str | None) -> None:
        self.broker_state = {"connected": connected, "error": error, "at": now_text(),
                             "broker": f"{self.broker[0]}:{self.broker[1]}"}
        self.dirty.add("")
        self.changed.set()

    # ---- the browser side ----

    def full_state(self) -> dict[str, Any]:
        return {**self.display.view(), "broker": self.broker_state}

    async def run_pusher(self) -> None:
        while True:
            await self.changed.wait()
            await asyncio.sleep(COALESCE)
            self.changed.clear()
            dirty, self.dirty = self.dirty, set()
            messages = []
            for table in sorted(t for t in dirty if t):
                try:
                    view = self.display.tables[table].view()
                except Exception:  # a bug must not stop every table's page
                    log.exception("the view of table %s failed", table)
                    continue
                messages.append(_sse("table", view))
            if "" in dirty:
                messages.append(_sse("meta", {"refused": self.display.refused_view(),
                                              "broker": self.broker_state}))
            for q in list(self.clients):
                for msg in messages:
                    if q.full():  # a browser that does not read: drop it, it reconnects
                        self.clients.discard(q)
                        while not q.empty():
                            q.get_nowait()
                        q.put_nowait(None)
                        break
                    q.put_nowait(msg)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) else ""
        if sum(self.connections.values()) >= self.max_connections or \
                self.connections[address] >= CONNECTIONS_PER_ADDRESS:
            # Refused at once, so its descriptor is free again at once.
            writer.transport.abort()
            return
        self.connections[address] += 1
        try:
            async with asyncio.timeout(REQUEST_DEADLINE):
                request = await reader.readline()
                length = 0
                for _ in range(MAX_HEADER_LINES):
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    head, _, value = line.decode("latin-1").partition(":")
                    if head.strip().lower() == "content-length" and value.strip().isdigit():
                        length = int(value.strip())
                else:
                    await _respond(writer, 431, "text/plain", b"too many header lines\n")
                    return
                method, path, *_ = [*request.decode("latin-1").split(), "", ""]
                path = path.split("?", 1)[0]
                await self._answer(reader, writer, method, path, length)
            if method in ("GET", "HEAD") and path == "/events":
                if self.streams[address] >= STREAMS_PER_ADDRESS:
                    await asyncio.wait_for(_respond(
                        writer, 429, "text/plain",
                        f"at most {STREAMS_PER_ADDRESS} pages per address\n".encode()),
                        REQUEST_DEADLINE)
                    return
                self.streams[address] += 1
                try:
                    await self._stream(writer)
                finally:
                    self.streams[address] -= 1
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # ValueError: a line longer than the reader's limit
        finally:
            self.connections[address] -= 1
            if not self.connections[address]:
                del self.connections[address]
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      method: str, path: str, length: int) -> None:
        """Every route but the event stream, which is served past the request deadline."""
        if method == "POST" and path == "/pit/command":
            if length > MAX_POST:
                await _respond(writer, 413, "text/plain", b"too large\n")
                return
            code, answer = await self.relay(await reader.readexactly(length))
            await _respond(writer, code, "application/json",
                           json.dumps(answer).encode())
        elif method not in ("GET", "HEAD"):
            await _respond(writer, 405, "text/plain", b"only GET\n")
        elif path == "/pit/table-of-play":
            await _respond(writer, 200, "application/json",
                           json.dumps(table_of_play()).encode())
        elif path == "/events":
            pass  # streamed below, past the deadline
        elif path == "/metrics":  # for Prometheus (daemon/display/metrics.py)
            await _respond(writer, 200, CONTENT_TYPE_LATEST,
                           generate_latest(self.metrics))
        elif path == "/state":
            body = json.dumps(self.full_state()).encode("utf-8")
            await _respond(writer, 200, "application/json", body)
        elif path in STATIC:
            name, ctype = STATIC[path]
            data = (files("daemon.display") / "static" / name).read_bytes()
            await _respond(writer, 200, ctype, data)
        else:
            await _respond(writer, 404, "text/plain", b"not found\n")

    async def _stream(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     + HEADERS.encode() + b"X-Accel-Buffering: no\r\n\r\n")
        q: asyncio.Queue[bytes | None] = asyncio.Queue(CLIENT_QUEUE)
        q.put_nowait(_sse("all", self.full_state()))
        self.clients.add(q)
        try:
            while True:
                try:
                    msg = await asyncio.wait_for(q.get(), HEARTBEAT)
                except TimeoutError:
                    msg = b": alive\n\n"
                if msg is None:
                    return
                writer.write(msg)
                # A browser that stopped reading is dropped, not waited for.
                await asyncio.wait_for(writer.drain(), HEARTBEAT)
        finally:
            self.clients.discard(q)


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def _respond(writer: asyncio.StreamWriter, code: int, ctype: str, body: bytes) -> None:
    reason = {200: "OK", 202: "Accepted", 400: "Bad Request", 404: "Not Found",
              405: "Method Not Allowed", 413: "Content Too Large",
              503: "Service Unavailable",
              429: "Too Many Requests", 431: "Request Header Fields Too Large"}[code]
    writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\n"
                 f"Content-Length: {len(body)}\r\n{HEADERS}"
                 f"Content-Security-Policy: {CSP}\r\n\r\n".encode() + body)
    await writer.drain()


async def serve(display: Display, broker: tuple[str, int], listen: tuple[str, int], *,
                tables: Sequence[str] = (), client_id: str | None = None,
                state_path: Path | None = None, ready: asyncio.Event | None = None,
                tls: ssl.SSLContext | None = None, username: str | None = None,
                password: str | None = None) -> None:
    server = DisplayServer(display, broker, tables, client_id,
                           StateFile(state_path) if state_path else None,
                           tls=tls, username=username, password=password)
    server.load_state()
    http = await asyncio.start_server(server.handle, listen[0], listen[1])
    addr = http.sockets[0].getsockname()
    print(f"tabled display: http://{addr[0]}:{addr[1]}/ (broker {broker[0]}:{broker[1]}, "
          f"{'tables ' + ', '.join(tables) if tables else 'every table'})", flush=True)
    if ready is not None:
        ready.set()
    started = time.monotonic()
    async with http:
        try:
            await asyncio.gather(server.run_mqtt(), server.run_pusher(), http.serve_forever())
        finally:
            log.info("display stopped after %.0f s, %d messages", time.monotonic() - started,
                     server.received)
