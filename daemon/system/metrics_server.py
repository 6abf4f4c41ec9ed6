"""``GET /metrics`` for Prometheus, on the event loop (asyncio), from a registry.

Served on the loop, not by prometheus_client's own threaded server: the figures read at
scrape time (daemon/system/metrics.py) are the service's live state, which only the loop may
touch. One short request per connection, within a deadline, like the display's server;
anything but ``GET /metrics`` is a 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)
DEADLINE = 5.0  # s to read a request line and its headers
MAX_HEADER_LINES = 64


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


async def _respond(writer: asyncio.StreamWriter, code: str, ctype: str, body: bytes) -> None:
    writer.write(f"HTTP/1.1 {code}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}"
                 "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n".encode() + body)
    await writer.drain()


def handler(render: Callable[[], bytes]
            ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(DEADLINE):
                request = await reader.readline()
                for _ in range(MAX_HEADER_LINES):
                    if await reader.readline() in (b"\r\n", b"\n", b""):
                        break
                method, path, *_ = [*request.decode("latin-1").split(), "", ""]
                if method == "GET" and path.split("?", 1)[0] == "/metrics":
                    await _respond(writer, "200 OK", CONTENT_TYPE_LATEST, render())
                else:
                    await _respond(writer, "404 Not Found", "text/plain", b"GET /metrics\n")
        except (TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
    return handle


async def serve(registry: CollectorRegistry, host: str, port: int, *,
                retry: float = 10.0) -> None:
    """Serve until cancelled. An address that cannot be bound (taken, not this machine's)
    does not stop the table: it plays on, and the listener is tried again every
    ``retry`` seconds (the error is logged once)."""
    said = False
    while True:
        try:
            server = await asyncio.start_server(handler(lambda: exposition(registry)),
                                                host, port)
        except OSError as exc:
            if not said:
                log.error("metrics: cannot listen on %s:%d (%s); the table plays on, "
                          "trying again every %g s", host, port, exc.strerror or exc, retry)
                said = True
            await asyncio.sleep(retry)
            continue
        where = server.sockets[0].getsockname()
        log.info("metrics: http://%s:%d/metrics", where[0], where[1])
        async with server:
            await server.serve_forever()
