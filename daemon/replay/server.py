"""Replay requests (docs/mqtt.md, "Catching up"): admitted within a budget, answered one
at a time with the stored bytes, each answer closed by a marker.

It runs in the replay process (``worker``), not the daemon's: it needs only the
journal's stored messages (read-only), a way to publish and the table's key for the
marker."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol

from daemon.mqtt import replay
from daemon.mqtt.envelope import out_of_band
from daemon.security.signing import signable
from daemon.store.journal import OutboxEntry
from daemon.timestamps import iso

log = logging.getLogger(__name__)

# Publish a text as it is (QoS 1, waiting for the broker's PUBACK); False: no connection.
Send = Callable[[str, str], Awaitable[bool]]


class StoredMessages(Protocol):
    """What the server reads of the journal (daemon/store/journal.py, read-only)."""

    @property
    def journal_id(self) -> str: ...

    def last_msg_seq(self) -> int: ...

    def first_msg_seq(self) -> int: ...

    def messages(self, first: int, last: int, limit: int,
                 topics: tuple[str, ...] = ...) -> list[OutboxEntry]: ...


class ReplayServer:
    def __init__(self, base: str, table_id: str, journal: StoredMessages, send: Send,
                 seal: Callable[[Mapping[str, Any]], str], clock: Callable[[], float]
                 ) -> None:
        self.base = base
        self.table_id = table_id
        self.journal = journal
        self.send = send
        self.seal = seal
        self.clock = clock
        self.request_topic = f"{base}/replay/request"
        self._replays = replay.Fair()
        self._replay_turn = asyncio.Lock()
        self._replays_waiting = 0  # admitted, not yet answered: at most MAX_WAITING
        self._busy = replay.Bucket(1.0, 1.0)
        self._tasks: set[asyncio.Task[None]] = set()
        self.served = 0
        self.refused: Counter[str] = Counter()  # by code; "dropped": not answered at all

    def admit(self, payload: bytes) -> None:
        """Size, then the requester's name, then its share of the budget, all before any
        task is made: a flood costs a length check and a 1 KiB parse each."""
        head = replay.head_of(payload)
        if head is None:  # too large, not JSON, or nowhere to answer
            self.refused["dropped"] += 1
            return
        answer = f"{self.base}/replay/to/{head.reply_to}"
        journal = self.journal
        kept = None if self._replays_waiting >= replay.MAX_WAITING else \
            self._replays.take(head.reply_to, lambda: head.most(journal.last_msg_seq()))
        if kept is not None:
            self._replays_waiting += 1
            self._spawn(self._serve_replay(answer, payload, head.reply_to, kept))
        elif self._busy.take():
            self.refused["busy"] += 1
            self._spawn(self._replay_marker(answer, payload, error=(
                "busy", f"at most {replay.PER_RATE:g} replay requests and "
                f"{replay.PER_MESSAGE_RATE:g} messages a second for one requester, "
                f"{replay.RATE:g} and {replay.MESSAGE_RATE:g} for all; try again")))
        else:
            self.refused["dropped"] += 1

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_replay(self, answer: str, payload: bytes, reply_to: str, kept: int
                            ) -> None:
        sent = 0
        try:
            sent = await self._answer_replay(answer, payload)
        except Exception:  # a defect: said and counted, never a silent task's death
            log.exception("answering a replay request failed")
            self.refused["failed"] += 1
        finally:
            self._replays_waiting -= 1
            # Admission set aside the most it could send (replay.Fair): the rest back.
            self._replays.give_back(reply_to, kept - sent)

    async def _answer_replay(self, answer: str, payload: bytes) -> int:
        """Answer one request; returns how many stored messages it sent."""
        journal = self.journal
        try:
            req = replay.parse(payload)
        except replay.ReplayError as exc:
            self.refused[exc.code] += 1
            await self._replay_marker(answer, payload, error=(exc.code, str(exc)))
            return 0
        if req.journal_id is not None and req.journal_id != journal.journal_id:
            self.refused["other_journal"] += 1
            await self._replay_marker(answer, payload, error=(
                "other_journal", f"this table's journal is {journal.journal_id}, not "
                f"{req.journal_id}: its msg_seq numbers mean other messages"))
            return 0
        newest = journal.last_msg_seq()
        last = newest if req.last is None else min(req.last, newest)
        base = f"{self.base}/"
        patterns = tuple(base + ("devices/%" if t == "devices" else t) for t in req.topics)
        first = max(req.first, journal.first_msg_seq())  # older: pruned, or not ours
        found = journal.messages(first, last, replay.MAX_MESSAGES, patterns)
        size, sent = 0, 0
        for row in found:
            size += len(row.payload)
            if sent and size > replay.MAX_BYTES:
                break
            sent += 1
        rows = found[:sent]
        # More to come: some left out for their bytes, or as many as an answer holds
        # found and the range not covered (500 that end it are the whole range).
        cut = sent < len(found) or (
            len(found) == replay.MAX_MESSAGES and found[-1].id < last)
        for n, row in enumerate(rows):  # the stored bytes; paho keeps their order
            # One replayed message at a time, waiting for its PUBACK, taken per message
            # in turn (the lock is first come, first served), so answers interleave: a
            # short one is not kept behind a flooder's 500 (bench/replay_flood.py).
            async with self._replay_turn:
                if not await self.send(answer, row.payload):
                    return n  # no connection: the requester asks again
        covered = rows[-1].id if cut else last
        self.served += 1
        await self._replay_marker(answer, payload, req=req, count=len(rows),
                                  covered=covered, more=cut)
        return len(rows)

    async def _replay_marker(self, topic: str, payload: bytes, *,
                             req: replay.ReplayRequest | None = None,
                             error: tuple[str, str] | None = None, count: int = 0,
                             covered: int | None = None, more: bool = False) -> None:
        journal = self.journal
        try:
            rid = json.loads(payload).get("id")
        except (ValueError, RecursionError, AttributeError):  # any bytes are data
            rid = None
        echo = isinstance(rid, str) and len(rid) <= 64 and signable(rid)
        await self.send(topic, self.seal(out_of_band({
            "type": "replay", "id": rid if echo else None,
            "from_msg_seq": None if req is None else req.first, "to_msg_seq": covered,
            "count": count, "next_msg_seq": None if not more or covered is None
            else covered + 1, "first_available": journal.first_msg_seq(),
            "last_msg_seq": journal.last_msg_seq(), "at": iso(self.clock()),
            "error": None if error is None else {"code": error[0], "message": error[1]}},
            self.table_id, journal.journal_id)))
