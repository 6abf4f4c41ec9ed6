"""The daemon's MQTT client: aiomqtt's, but a packet is written as soon as it is queued.

aiomqtt runs paho on the event loop. When paho has a packet to write it says so
(``on_socket_register_write``), and aiomqtt answers by registering the socket as a
writer through ``call_soon_threadsafe``: the packet leaves two loop iterations later,
after everything else that is ready by then, such as a device read and its commit
(docs/performance.md, "Issue 15's targets met"). On the loop's own
thread this client writes at once instead, as paho itself does when it has no external
loop; only what the socket does not take (its buffer full) waits for the writer, as
before. From another thread (paho's connect runs in an executor), or from inside one of
paho's callbacks, nothing changes.

And a broker that closes the connection before its CONNACK fails the connect at once:
aiomqtt ignores a disconnect until it is connected, so such a refusal was seen only at
the connect timeout (a NATS node refusing while its session stream has no leader).

It reads up to READ_AT_ONCE packets each time the socket wakes its reader: paho's
``loop_read`` reads one, so a flood of small messages (replay requests, issue 25) cost
a loop iteration each, and what waited behind them (a command, a PUBACK) that many.

And a connection that dropped while nobody read its messages (during a subscribe or a
publish, which then time out) leaves aiomqtt's disconnect future with an exception that
leaving the context does not retrieve: asyncio then logs "Future exception was never
retrieved ... MqttCodeError" when it is collected (issue 26, seen in simulate during a
broker outage). Leaving the context retrieves it: by then the caller has its own error.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
from collections.abc import Callable
from types import TracebackType
from typing import Any

import aiomqtt
import paho.mqtt.client as paho

from daemon.mqtt.broker_config import BrokerConfig

# The socket options of every MQTT client here (the publisher's, the HIL dealer's): paho
# leaves Nagle on, so a small reply waits for the broker's delayed ACK (a command's round
# trip fell from 88 ms to 2.5 ms: `.venv/bin/python -m bench.end_to_end`, docs/performance.md).
NODELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)
# Packets read per wake-up of the socket's reader: paho's loop_read reads one (it
# ignores its max_packets), so a flood of small packets cost a loop iteration each.
READ_AT_ONCE = 64

log = logging.getLogger(__name__)


def _handle_at_once(handler: Callable[[bytes], None], _client: paho.Client, _userdata: Any,
                    message: paho.MQTTMessage) -> None:
    """One message of an ``at_once`` topic, inside paho's read: an exception here would
    end the connection, and a retained one is never acted on (docs/mqtt.md)."""
    if message.retain:
        log.warning("ignored a retained message on %.100s", message.topic)
        return
    try:
        handler(bytes(message.payload))
    except Exception:  # a handler bug must not drop the broker connection
        log.exception("handling a message on %.100s failed", message.topic)


def tls_context(b: BrokerConfig) -> ssl.SSLContext | None:
    """mqtts://: verify the broker (system CAs or ca_file); present a client certificate
    when cert_file/key_file are given."""
    if not b.tls:
        return None
    ctx = ssl.create_default_context(cafile=str(b.ca_file) if b.ca_file else None)
    if b.cert_file is not None:
        ctx.load_cert_chain(str(b.cert_file), str(b.key_file) if b.key_file else None)
    return ctx


class Client(aiomqtt.Client):
    def _on_disconnect(self, client: paho.Client, userdata: Any, flags: Any,
                       reason_code: Any, properties: Any = None) -> None:
        if not self._connected.done():
            self._connected.set_exception(aiomqtt.MqttError(
                f"the broker closed the connection before its CONNACK ({reason_code})"))
            return
        super()._on_disconnect(client, userdata, flags, reason_code, properties)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            await super().__aexit__(exc_type, exc, tb)
        finally:
            gone = self._disconnected
            if gone.done() and not gone.cancelled():
                gone.exception()  # retrieved: the connection's end is known here

    def at_once(self, topic: str, handler: Callable[[bytes], None]) -> None:
        """Hand ``topic``'s messages to ``handler`` as paho reads them, ahead of the
        message queue and without a task: for what may come in a flood (replay requests,
        issue 25). Call it before subscribing."""
        self._client.message_callback_add(topic, functools.partial(_handle_at_once, handler))

    def _on_socket_open(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        """aiomqtt's, with a reader that takes up to READ_AT_ONCE packets a wake-up."""

        def read() -> None:
            try:
                for _ in range(READ_AT_ONCE):
                    if client._sock is None:
                        return
                    rc = client._packet_read()
                    if rc == paho.MQTT_ERR_AGAIN:
                        return
                    if rc > 0:
                        client._loop_rc_handle(rc)
                        return
                # More may be waiting: a plain socket stays readable, and wakes this
                # again; TLS may hold decrypted bytes the socket no longer shows.
                pending = getattr(client._sock, "pending", None)
                if pending is not None and pending() > 0:
                    self._loop.call_soon(read)
            except Exception as exc:  # as aiomqtt's reader does: the connection broke
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)

        def misc() -> None:
            self._misc_task = self._loop.create_task(self._misc_loop())

        # Called from paho's connect, in an executor thread: onto the loop.
        self._loop.call_soon_threadsafe(self._loop.add_reader, sock.fileno(), read)
        self._loop.call_soon_threadsafe(misc)

    def _on_socket_register_write(self, client: paho.Client, userdata: Any,
                                  sock: Any) -> None:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:  # paho's connect, in an executor thread
            on_loop = False
        # Never from inside one of paho's callbacks (it holds this lock, and writing may
        # call on_publish, which takes it again): paho's own rule for writing directly.
        if on_loop and client._in_callback_mutex.acquire(blocking=False):
            client._in_callback_mutex.release()
            try:
                client.loop_write()  # paho unregisters the write itself once it is all out
            except Exception as exc:  # as aiomqtt's writer does: the connection broke
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)
                return
            if not client.want_write() or client.socket() is None:
                return  # all written; or the connection broke, paho closed it and said so
        super()._on_socket_register_write(client, userdata, sock)

