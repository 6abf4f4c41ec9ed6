"""The settlement group's ledger in the floor benchmark: every result its members received,
by table, ``journal_id`` and ``seq``, and the gaps in it recovered from the tables'
journals by replay requests, as an integrator would build it from docs/mqtt.md.

A member's session can lose what the broker had queued for it (a NATS node killed with
the member's session and its consumer on it), so receipt is not trusted to be complete:

- each table's ``seq`` numbers are contiguous per journal; its retained ``snapshot``
  says the newest (``last_result_seq``, ``last_result_msg_seq``), so a gap shows even
  after the last result;
- a result still missing ``GRACE`` seconds after it was first seen missing (a copy sent
  again after a reconnect may just be late) is asked for on
  ``{prefix}/{table}/replay/request`` with ``topics: ["results"]`` and the ``msg_seq``
  range between the results on either side, answered on
  ``{prefix}/{table}/replay/to/settlement``; a ``busy`` answer, or none, is asked again
  after ``RETRY`` seconds; an answer cut at its bound continues from ``next_msg_seq``.

Its own connection moves to the next node when its node goes, like the members'.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiomqtt

GRACE = 3.0  # s a result may be late before it is asked for
RETRY = 4.0  # s before asking a table again
NAME = "settlement"  # reply_to: answers come on {prefix}/{table}/replay/to/settlement


@dataclass
class Arrival:
    stamp: float
    dup: bool
    table: str
    body: dict[str, Any]
    via: str = "live"  # or "replay": an answer to the ledger's replay request


@dataclass
class TableBook:
    journal_id: str | None = None  # the newest journal, as its snapshot or results say
    last_seq: int = 0  # the newest result the table says it has (snapshot)
    last_msg_seq: int | None = None
    have: dict[tuple[str, int], int] = field(default_factory=dict)  # (jid, seq) -> msg_seq
    missing_since: dict[int, float] = field(default_factory=dict)  # seq -> first seen missing
    asked_at: float = float("-inf")

    def take(self, body: dict[str, Any]) -> None:
        jid = str(body.get("journal_id"))
        self.have.setdefault((jid, int(body["seq"])), int(body.get("msg_seq") or 0))
        if self.journal_id is None:
            self.journal_id = jid

    def request(self, now: float) -> dict[str, Any] | None:
        """The replay request for this table's gaps, if one is due."""
        jid = self.journal_id
        if jid is None:
            return None
        have = {s: m for (j, s), m in self.have.items() if j == jid}
        top = max(self.last_seq, max(have, default=0))
        missing = [s for s in range(1, top + 1) if s not in have]
        for s in list(self.missing_since):
            if s not in missing:
                del self.missing_since[s]
        for s in missing:
            self.missing_since.setdefault(s, now)
        due = [s for s in missing if now - self.missing_since[s] >= GRACE]
        if not due or now - self.asked_at < RETRY:
            return None
        self.asked_at = now
        first, last = due[0], due[-1]
        below = [have[s] for s in have if s < first]
        above = [have[s] for s in have if s > last]
        to = min(above) - 1 if above else self.last_msg_seq
        return {"from_msg_seq": max(below) + 1 if below else 1,
                **({"to_msg_seq": to} if to else {}),
                "topics": ["results"], "journal_id": jid}


@dataclass
class Ledger:
    """Takes every arrival (``take``), live from the members or answered to a replay
    request; ``run`` keeps the snapshots and asks for the gaps until cancelled."""

    ports: list[int]
    on_arrival: Callable[[Arrival], None]
    prefix: str = "tables"
    books: dict[str, TableBook] = field(default_factory=dict)
    requests: int = 0
    busy: int = 0
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, a: Arrival) -> None:
        self.books.setdefault(a.table, TableBook()).take(a.body)
        self.on_arrival(a)

    async def run(self) -> None:
        node = 0
        while True:
            try:
                async with aiomqtt.Client("127.0.0.1", self.ports[node],
                                          identifier="settlement-ledger",
                                          keepalive=5) as client:
                    # QoS 0 for the snapshots: only the newest matters. QoS 1 answers.
                    await client.subscribe(f"{self.prefix}/+/snapshot", qos=0)
                    await client.subscribe(f"{self.prefix}/+/replay/to/{NAME}", qos=1)
                    self.connected.set()
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(self._ask(client))
                        async for m in client.messages:
                            payload = m.payload
                            self._heard(str(m.topic), payload if isinstance(payload, bytes)
                                        else str(payload or "").encode())
            except* aiomqtt.MqttError:
                node = (node + 1) % len(self.ports)
                await asyncio.sleep(0.2)

    def _heard(self, topic: str, payload: bytes) -> None:
        parts = topic.split("/")
        table = parts[1]
        with contextlib.suppress(ValueError):
            body = json.loads(payload)
            if not isinstance(body, dict):
                return
            book = self.books.setdefault(table, TableBook())
            if parts[2] == "snapshot":
                if body.get("journal_id") != book.journal_id and book.journal_id is not None:
                    return  # a journal change: out of this benchmark's scope
                book.journal_id = str(body["journal_id"])
                if (body.get("last_result_seq") or 0) >= book.last_seq:
                    book.last_seq = int(body.get("last_result_seq") or 0)
                    book.last_msg_seq = body.get("last_result_msg_seq")
            elif body.get("type") == "result":
                self.take(Arrival(time.time(), False, table, body, via="replay"))
            elif body.get("type") == "replay":
                error = body.get("error")
                if error and error.get("code") == "busy":
                    self.busy += 1  # asked again after RETRY
                elif body.get("next_msg_seq"):
                    book.asked_at = float("-inf")  # cut at its bound: ask the rest now

    async def _ask(self, client: aiomqtt.Client) -> None:
        while True:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            for table, book in self.books.items():
                req = book.request(now)
                if req is None:
                    continue
                self.requests += 1
                body = {"id": f"{NAME}-{self.requests}", "reply_to": NAME, **req}
                await client.publish(f"{self.prefix}/{table}/replay/request",
                                     json.dumps(body), qos=1)
