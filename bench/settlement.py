"""A settlement consumer of the floor benchmark, as its own process: one member of a group
that shares the floor's results between its members.

How the results are shared depends on the broker: on Mosquitto the members subscribe to
one MQTT shared subscription (``$share/settlement/tables/+/results``) and the broker hands
each result to one of them; NATS Server 2.9 has no MQTT shared subscriptions (it takes
``$share/...`` as a plain topic), so there each member subscribes to its own partition of
the tables (``tables/<id>/results`` for every table with index % members == member).

Each member keeps a persistent session (QoS 1, clean_session false) and, when its node
goes, moves to the next one in the list, as the daemon does. It writes one line per
message to stdout: ``stamp<TAB>dup<TAB>topic<TAB>payload``, the stamp in wall-clock
seconds (the daemon's journal stamps its results with the same clock), dup the MQTT DUP
flag (the broker sending it again).

Run by bench/floor.py: ``python -m bench.settlement CLIENT_ID PORT[,PORT...] TOPIC...``.
"""

from __future__ import annotations

import socket
import sys
import time
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion


def main() -> None:
    client_id, ports, topics = sys.argv[1], [int(p) for p in sys.argv[2].split(",")], \
        sys.argv[3:]
    out = sys.stdout.buffer

    def on_message(_c: Any, _u: Any, m: paho.MQTTMessage) -> None:
        stamp = time.time()
        out.write(f"{stamp!r}\t{int(m.dup)}\t{m.topic}\t".encode()
                  + m.payload.replace(b"\n", b" ") + b"\n")
        out.flush()

    subscribed = False

    def on_subscribe(*_: Any) -> None:
        nonlocal subscribed
        if not subscribed:
            out.write(b"ready\n")
            out.flush()
            subscribed = True

    def on_connect(c: paho.Client, _u: Any, flags: Any, *_: Any) -> None:
        # Where this member is, and whether the node still had its session: the floor
        # bench names them beside any result that had to be replayed.
        out.write(f"#connect\t{time.time()!r}\t{ports[node]}\t"
                  f"{int(flags.session_present)}\n".encode())
        out.flush()
        c.subscribe([(t, 1) for t in topics])

    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                         clean_session=False)
    client.on_message, client.on_subscribe, client.on_connect = (on_message, on_subscribe,
                                                                 on_connect)
    node = 0
    while True:
        try:
            client.connect("127.0.0.1", ports[node], keepalive=5)
            sock = client.socket()
            if isinstance(sock, socket.socket):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while client.loop(timeout=1.0) == paho.MQTT_ERR_SUCCESS:
                pass
        except OSError:
            pass
        node = (node + 1) % len(ports)  # this node went: the next one
        time.sleep(0.2)


if __name__ == "__main__":
    main()
