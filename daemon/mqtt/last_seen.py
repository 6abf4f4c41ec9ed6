"""What the broker last saw from this table: its own retained snapshot, read once at
start, before anything is published (issue 25, Build 1).

The identity file beside the journal (daemon/store/identity.py) catches a journal older
than the file; a backup restored together with its file passes it. The snapshot the
table keeps retained on the broker says how far the journal had gone (``journal_id``,
``as_of_msg_seq``, ``last_result_seq``), signed with the table's own key, so a journal
that is behind it is told apart (identity.behind).

Read on a connection of its own, closed before the table's session opens: the table's
sessions are clean, so it takes nothing from them. No broker, no snapshot, or one that
does not verify: nothing is known, and the start goes on (docs/operations.md says what
is then not detected).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from typing import Any

import aiomqtt

from daemon.mqtt.client import Client
from daemon.mqtt.publisher import BrokerSettings
from daemon.security.signing import Keyring, SignatureError

log = logging.getLogger(__name__)

# After the barrier (below), how long a retained message may still be on its way: NATS
# sends retained messages from a stream, not in the subscription's order.
GRACE = 0.5
TIMEOUT = 10.0  # the whole look, connection included (a loaded board is slow to connect)


async def retained_snapshot(broker: BrokerSettings, topic: str, barrier: str,
                            keyring: Keyring) -> Mapping[str, Any] | None:
    """The retained snapshot on ``topic``, verified with ``keyring``; None when there is
    none, it does not verify, or no broker answers within TIMEOUT. ``barrier``: another
    topic the table may read; its SUBACK comes after the snapshot's retained message
    (a broker sends those as it grants the first subscription)."""
    host, port = broker.targets[0]
    try:
        async with asyncio.timeout(TIMEOUT):
            async with Client(host, port, username=broker.username,
                              password=broker.password, identifier=broker.client_id,
                              tls_context=broker.tls, keepalive=broker.keepalive,
                              timeout=broker.publish_timeout) as client:
                await client.subscribe(topic, qos=1)
                await client.subscribe(barrier, qos=1)
                raw = await _first_retained(client, topic)
    except (aiomqtt.MqttError, TimeoutError, OSError) as exc:
        log.warning("could not read this table's snapshot from %s:%d (%s): a journal "
                    "restored with its identity file cannot be told apart this start",
                    host, port, exc or "timed out")
        return None
    if raw is None:
        return None
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("not a JSON object")
        keyring.verify(body)
    except (ValueError, UnicodeError, RecursionError, TypeError, SignatureError) as exc:
        log.warning("the retained snapshot on %s is not this table's (%s): ignored", topic,
                    exc)
        return None
    return body


async def _first_retained(client: aiomqtt.Client, topic: str) -> bytes | None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(GRACE):
            async for m in client.messages:
                if str(m.topic) == topic and m.retain:
                    p = m.payload
                    return p if isinstance(p, bytes) else str(p or "").encode()
    return None
