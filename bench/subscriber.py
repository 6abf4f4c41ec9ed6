"""The benchmark's independent subscriber, as its own process: it stamps each message on
arrival (CLOCK_MONOTONIC, which every process on the machine shares) and writes
``stamp<TAB>topic<TAB>payload`` lines to stdout. In the benchmark's own process, it
would wait behind the dealer and the simulators, and their work would count as the
daemon's latency.

Run by bench/end_to_end.py: ``python -m bench.subscriber PORT TOPIC...``.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion


def main() -> None:
    port, topics = int(sys.argv[1]), sys.argv[2:]
    out = sys.stdout.buffer

    def on_message(_c: Any, _u: Any, m: paho.MQTTMessage) -> None:
        stamp = time.monotonic()
        out.write(f"{stamp!r}\t{m.topic}\t".encode() + m.payload.replace(b"\n", b" ") + b"\n")
        out.flush()

    def on_subscribe(*_: Any) -> None:
        out.write(b"ready\n")
        out.flush()

    # One id per process: two subscribers with one id take the connection from each
    # other (the drain's consumer runs beside the latency subscriber).
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{os.getpid()}")
    client.on_message = on_message
    client.on_subscribe = on_subscribe
    client.connect("127.0.0.1", port)
    sock = client.socket()
    if isinstance(sock, socket.socket):  # acknowledgements not held back by Nagle
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.subscribe([(t, 1) for t in topics])
    client.loop_forever()


if __name__ == "__main__":
    main()
