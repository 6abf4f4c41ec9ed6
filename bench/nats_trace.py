"""What a NATS cluster says about a result that settlement did not get live: the state of
the JetStream consumer that carries a table's results to its settlement member (NATS makes
one per QoS 1 MQTT subscription, filtered on ``$MQTT.msgs.<subject>``), whether the
message is still in ``$MQTT_msgs`` (an interest-retention stream: a message is removed
once every consumer interested in it has acknowledged it), and that consumer's leader
changes from the nodes' logs.

Spoken in the NATS client protocol over a plain socket (JetStream API requests), so the
floor bench needs no NATS client library. Loopback only; every call is bounded.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MSGS = "$MQTT_msgs"  # the stream NATS keeps MQTT QoS 1 messages in
PREFIX = "$MQTT.msgs."


class JsApi:
    """A connection to one node's NATS port, for JetStream API requests."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self._line()  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true}'
                          b"\r\nSUB _trace.r 1\r\nPING\r\n")
        while self._line() != b"PONG":
            pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("the node closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("the node closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def request(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body).encode()
        self.sock.sendall(f"PUB {subject} _trace.r {len(payload)}\r\n".encode() + payload
                          + b"\r\n")
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"MSG "):
                return dict(json.loads(self._take(int(line.split()[-1]))))
            elif line.startswith(b"HMSG "):
                parts = line.split()
                raw = self._take(int(parts[-1]))
                head, data = raw[:int(parts[-2])], raw[int(parts[-2]):]
                if data:
                    return dict(json.loads(data))
                return {"error": {"description": head.decode(errors="replace").strip()}}
            elif line.startswith(b"-ERR"):
                raise OSError(line.decode(errors="replace"))


def consumers(api: JsApi) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        page = api.request(f"$JS.API.CONSUMER.LIST.{MSGS}", {"offset": len(out)})
        got = page.get("consumers") or []
        out.extend(got)
        if not got or len(out) >= int(page.get("total", 0)):
            return out


def stored(api: JsApi, subject: str, limit: int = 50) -> list[dict[str, Any]]:
    """The messages still in the stream on ``subject`` (the NATS form), oldest first."""
    out: list[dict[str, Any]] = []
    seq = 1
    while len(out) < limit:
        r = api.request(f"$JS.API.STREAM.MSG.GET.{MSGS}",
                        {"seq": seq, "next_by_subj": subject})
        msg = r.get("message")
        if not msg:
            return out
        body: dict[str, Any] = {}
        with contextlib.suppress(ValueError):
            body = json.loads(base64.b64decode(msg.get("data") or ""))
        out.append({"stream_seq": msg["seq"], "result_seq": body.get("seq")})
        seq = int(msg["seq"]) + 1
    return out


LOG_TIME = re.compile(rb"^\[\d+\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) ")


def leader_changes(logs: dict[str, Path], durable: str, since: float) -> list[list[Any]]:
    """[seconds after ``since``, node, what] for each log line naming ``durable`` (a
    consumer: new leader elected, leadership stepped down, catch-up, errors; or a
    client id)."""
    out: list[list[Any]] = []
    needle = durable.encode()
    for name, path in logs.items():
        if not path.exists():
            continue
        for line in path.read_bytes().splitlines():
            if needle not in line:
                continue
            m = LOG_TIME.match(line)
            if m is None:
                continue
            at = datetime.strptime(m.group(1).decode(), "%Y/%m/%d %H:%M:%S.%f").replace(
                tzinfo=UTC).timestamp()
            what = line[m.end():].decode(errors="replace")
            out.append([round(at - since, 2), name, what[:200]])
    return sorted(out)


def trace(port: int, logs: dict[str, Path], subject: str, since: float) -> dict[str, Any]:
    """The consumers filtered on a table's results ``subject`` (MQTT form), their state,
    leader changes (seconds after ``since``), and what of the subject is still stored."""
    nats_subject = PREFIX + subject.replace("/", ".")
    api = JsApi(port)
    try:
        found = [c for c in consumers(api)
                 if c.get("config", {}).get("filter_subject") == nats_subject]
        remaining = stored(api, nats_subject)
    finally:
        api.close()
    return {"subject": nats_subject, "still_stored": remaining, "consumers": [{
        "name": c["name"],
        "delivered": c.get("delivered"), "ack_floor": c.get("ack_floor"),
        "num_ack_pending": c.get("num_ack_pending"),
        "num_redelivered": c.get("num_redelivered"), "num_pending": c.get("num_pending"),
        "leader_now": (c.get("cluster") or {}).get("leader"),
        "log": leader_changes(logs, c["name"], since)[:20]} for c in found]}


ELECTED = re.compile(r"new stream leader for '\$G > (\S+)'|(new JetStream cluster metadata "
                     r"leader|new metadata leader)")


def elections(logs: dict[str, Path], since: float) -> dict[str, float]:
    """Seconds from ``since`` to the first leader elected after it for each of the MQTT
    streams (``$MQTT_sess``: every connect loads its session there; ``$MQTT_msgs``: every
    QoS 1 message) and for the JetStream meta group, as the nodes logged it: the lost
    node's groups are leaderless until then. A group that elected none after ``since`` is
    absent (one may also change leader later, while the restarted node catches up)."""
    first: dict[str, float] = {}
    for path in logs.values():
        if not path.exists():
            continue
        for line in path.read_bytes().splitlines():
            m = LOG_TIME.match(line)
            e = ELECTED.search(line.decode(errors="replace")) if m else None
            if m is None or e is None:
                continue
            at = datetime.strptime(m.group(1).decode(), "%Y/%m/%d %H:%M:%S.%f").replace(
                tzinfo=UTC).timestamp() - since
            name = e.group(1) or "meta"
            if at > 0 and (name not in first or at < first[name]):
                first[name] = round(at, 2)
    return first
