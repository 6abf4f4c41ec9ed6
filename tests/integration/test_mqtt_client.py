"""The daemon's MQTT client (daemon/mqtt/client.py) through a real Mosquitto: a publish
is on the wire when it is queued, not once the event loop has run whatever else was
ready; and what the socket cannot take at once still all arrives, in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from daemon.mqtt.client import READ_AT_ONCE, Client
from hil.broker import Mosquitto
from tests.wait import until


class ThreadSubscriber:
    """A paho subscriber on its own thread: it receives while the test's loop is blocked."""

    def __init__(self, port: int, topic: str) -> None:
        self.got: list[bytes] = []
        self.first = threading.Event()
        self.subscribed = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"sub-{id(self)}")
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *_: self.subscribed.set()
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(topic, qos=1)
        self.client.loop_start()
        assert self.subscribed.wait(5), "the subscriber did not subscribe"

    def _on_message(self, _c: object, _u: object, m: paho.MQTTMessage) -> None:
        self.got.append(bytes(m.payload))
        self.first.set()

    def stop(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


async def test_a_publish_is_on_the_wire_before_the_loop_does_anything_else(
        broker: Mosquitto) -> None:
    sub = ThreadSubscriber(broker.port, "t/prompt")
    try:
        async with Client("127.0.0.1", broker.port, identifier="prompt") as client:
            publish = asyncio.create_task(client.publish("t/prompt", b"now", qos=1))
            await asyncio.sleep(0)  # the publish's first step: paho queues its packet
            # The loop is now busy (a device read and its commit, in the daemon): the
            # message must reach the subscriber all the same. aiomqtt's own client only
            # registers a writer here, and sends once the loop runs again.
            blocked_at = time.monotonic()
            arrived = sub.first.wait(2.0)  # blocks this loop's thread
            assert arrived, "the message waited for the event loop to be free"
            assert time.monotonic() - blocked_at < 1.0
            await publish  # and its PUBACK is taken as before
    finally:
        sub.stop()
    assert sub.got == [b"now"]


async def test_what_the_socket_cannot_take_at_once_all_arrives_in_order(
        broker: Mosquitto, monkeypatch: pytest.MonkeyPatch) -> None:
    """A send buffer of 4 KB and 100 KB messages: every write is partial, the rest waits
    for the socket to be writable (aiomqtt's writer, as before), and nothing is lost or
    reordered."""
    sub = ThreadSubscriber(broker.port, "t/burst")
    payloads = [f"{n:05d}".encode() * 20_000 for n in range(64)]  # 100 KB each
    writers: list[int] = []  # times the rest was left to aiomqtt's writer
    aiomqtts = aiomqtt.Client._on_socket_register_write

    def counted(self: aiomqtt.Client, *args: Any) -> None:
        writers.append(1)
        aiomqtts(self, *args)

    try:
        async with Client("127.0.0.1", broker.port, identifier="burst",
                          max_inflight_messages=64,
                          socket_options=((socket.SOL_SOCKET, socket.SO_SNDBUF, 4096),)
                          ) as client:
            # Counted from here: paho's connect, from an executor thread, always uses it.
            monkeypatch.setattr(aiomqtt.Client, "_on_socket_register_write", counted)
            await asyncio.wait_for(asyncio.gather(
                *(client.publish("t/burst", p, qos=1) for p in payloads)), 30)
        deadline = time.monotonic() + 30
        while len(sub.got) < len(payloads) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        sub.stop()
    assert sub.got == payloads
    assert writers  # the socket did not take it all at once: the fallback was used


async def test_a_connection_that_broke_as_a_publish_was_written_ends_cleanly(
        broker: Mosquitto, caplog: pytest.LogCaptureFixture) -> None:
    """The broker is gone and the write fails (EPIPE): paho closes the socket and reports
    the loss; the client neither hands the closed socket to the event loop (a writer on
    file descriptor -1, an error in asyncio's log) nor hangs."""
    caplog.set_level(logging.WARNING)
    with contextlib.suppress(aiomqtt.MqttError):
        async with Client("127.0.0.1", broker.port, identifier="broken", timeout=2) as client:
            broker.stop()
            time.sleep(0.1)  # the broker's FIN is in; the loop has not seen it yet
            sends = [asyncio.create_task(client.publish("t/gone", b"x", qos=1))
                     for _ in range(3)]
            done, _ = await asyncio.wait(sends, timeout=10)
            assert len(done) == 3, "a publish hung on a broken connection"
            assert all(isinstance(t.exception(), aiomqtt.MqttError) for t in done)
    assert not [r for r in caplog.records if r.name == "asyncio"], \
        [r.getMessage() for r in caplog.records if r.name == "asyncio"]


async def test_a_broker_closing_before_its_connack_is_seen_at_once_not_at_the_timeout(
        ) -> None:
    """A NATS node refuses a client by closing the socket without a CONNACK (after its
    own JetStream timeout, while its session stream has no leader: bench/floor.py's
    node loss). aiomqtt ignores a disconnect before CONNACK, so the daemon waited out its
    5 s connect timeout before trying the next node, once per node, after the broker had
    already said no."""

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(64)  # the CONNECT
        await asyncio.sleep(0.2)
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    t0 = time.monotonic()
    try:
        with pytest.raises(aiomqtt.MqttError, match="closed the connection"):
            async with Client("127.0.0.1", port, identifier="refused", timeout=5):
                pass
    finally:
        server.close()
        await server.wait_closed()
    assert time.monotonic() - t0 < 2, time.monotonic() - t0


async def test_a_burst_is_read_many_packets_a_wake_up_and_all_in_order(
        broker: Mosquitto) -> None:
    """paho's loop_read reads one packet a call, whatever its max_packets says, so a
    flood of small messages (replay requests, issue 25) cost a loop iteration each,
    and whatever the table waited for behind them (a command, a PUBACK) came that many
    iterations later. The client reads up to READ_AT_ONCE a wake-up."""
    got: list[bytes] = []
    async with Client("127.0.0.1", broker.port, identifier="reader") as client:
        await client.subscribe("t/many", qos=0)
        pub = paho.Client(CallbackAPIVersion.VERSION2, client_id="many-publisher")
        pub.connect("127.0.0.1", broker.port)
        pub.loop_start()
        try:
            for n in range(300):
                pub.publish("t/many", f"{n:04d}".encode(), qos=0)
            time.sleep(1.0)  # this loop blocked: the burst waits in the socket
            await asyncio.sleep(0)  # the loop polls: the reader is scheduled
            await asyncio.sleep(0)  # and has run once
            assert len(client.messages) >= READ_AT_ONCE  # one wake-up, many packets
            async with asyncio.timeout(10):
                async for m in client.messages:
                    got.append(m.payload if isinstance(m.payload, bytes) else b"")
                    if len(got) == 300:
                        break
        finally:
            pub.loop_stop()
            pub.disconnect()
    assert got == [f"{n:04d}".encode() for n in range(300)]


@pytest.mark.parametrize("call", ["subscribe", "publish"])
async def test_issue_26_a_connection_lost_mid_call_leaves_no_unretrieved_exception(
        broker: Mosquitto, call: str) -> None:
    """The broker goes while a subscribe or a publish waits for its acknowledgement and
    nobody reads the client's messages (the publisher's subscriptions before its watcher
    starts; the simulated dealer's before its listener): the call times out, and aiomqtt's
    own client left its disconnect future's MqttCodeError unretrieved, which asyncio logs
    as "Future exception was never retrieved" whenever the client is collected (seen in
    simulate, issue 26). Asyncio's own flag for that report is checked, not the garbage
    collector's timing (aiomqtt's housekeeping task keeps a client a while)."""
    assert broker.proc is not None
    pid = broker.proc.pid
    client = Client("127.0.0.1", broker.port, identifier="lost", timeout=1.0)
    with pytest.raises(aiomqtt.MqttError, match="Operation timed out"):
        async with client:
            await client.subscribe("t/first", qos=1)
            os.kill(pid, signal.SIGSTOP)  # no acknowledgement from here on
            waiting = asyncio.create_task(
                client.subscribe("t/second", qos=1) if call == "subscribe"
                else client.publish("t/x", b"x", qos=1))
            await asyncio.sleep(0.2)
            os.kill(pid, signal.SIGKILL)  # the connection reset while the call waits
            await until(client._disconnected.done)
            await waiting
    lost = client._disconnected
    # Asyncio's flag, set by set_exception and cleared by retrieving it: while it is set,
    # collecting the future logs "Future exception was never retrieved".
    assert not lost._log_traceback
    assert isinstance(lost.exception(), aiomqtt.MqttCodeError)  # the drop it saw
