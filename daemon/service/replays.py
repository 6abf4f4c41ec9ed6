"""Replay requests (docs/mqtt.md, "Catching up"): admitted within a budget, answered one
at a time with the stored bytes, each answer closed by a marker."""

from __future__ import annotations

import asyncio
import json

from daemon.mqtt import replay
from daemon.mqtt.publisher import Publisher
from daemon.security.signing import signable
from daemon.service.state import ServiceState
from daemon.system.metrics import TableMetrics
from daemon.timestamps import iso


class ReplayServer:
    def __init__(self, state: ServiceState, publisher: Publisher, metrics: TableMetrics
                 ) -> None:
        self.state = state
        self.publisher = publisher
        self.metrics = metrics
        self.request_topic = f"{state.base}/replay/request"
        self._replays = replay.Fair()
        self._replay_turn = asyncio.Lock()
        self._replays_waiting = 0  # admitted, not yet answered: at most MAX_WAITING
        self._busy = replay.Bucket(1.0, 1.0)
        self.replays_dropped = 0

    def admit(self, payload: bytes) -> None:
        """Size, then the requester's name, then its share of the budget, all before any
        task is made: a flood costs the table a length check and a 1 KiB parse each."""
        head = replay.head_of(payload)
        if head is None:  # too large, not JSON, or nowhere to answer
            self.replays_dropped += 1
            self.metrics.replays_refused.labels("dropped").inc()
            return
        answer = f"{self.state.base}/replay/to/{head.reply_to}"
        journal = self.state.journal
        kept = None if self._replays_waiting >= replay.MAX_WAITING else \
            self._replays.take(head.reply_to, lambda: head.most(journal.last_msg_seq()))
        if kept is not None:
            self._replays_waiting += 1
            self.state.spawn(self._serve_replay(answer, payload, head.reply_to, kept))
        elif self._busy.take():
            self.metrics.replays_refused.labels("busy").inc()
            self.state.spawn(self._replay_marker(answer, payload, error=(
                "busy", f"at most {replay.PER_RATE:g} replay requests and "
                f"{replay.PER_MESSAGE_RATE:g} messages a second for one requester, "
                f"{replay.RATE:g} and {replay.MESSAGE_RATE:g} for all; try again")))
        else:
            self.replays_dropped += 1
            self.metrics.replays_refused.labels("dropped").inc()

    async def _serve_replay(self, answer: str, payload: bytes, reply_to: str, kept: int
                            ) -> None:
        sent = 0
        try:
            sent = await self._answer_replay(answer, payload)
        finally:
            self._replays_waiting -= 1
            # Admission set aside the most it could send (replay.Fair): the rest back.
            self._replays.give_back(reply_to, kept - sent)

    async def _answer_replay(self, answer: str, payload: bytes) -> int:
        """Answer one request; returns how many stored messages it sent."""
        journal = self.state.journal
        try:
            req = replay.parse(payload)
        except replay.ReplayError as exc:
            self.metrics.replays_refused.labels(exc.code).inc()
            await self._replay_marker(answer, payload, error=(exc.code, str(exc)))
            return 0
        if req.journal_id is not None and req.journal_id != journal.journal_id:
            self.metrics.replays_refused.labels("other_journal").inc()
            await self._replay_marker(answer, payload, error=(
                "other_journal", f"this table's journal is {journal.journal_id}, not "
                f"{req.journal_id}: its msg_seq numbers mean other messages"))
            return 0
        newest = journal.last_msg_seq()
        last = newest if req.last is None else min(req.last, newest)
        base = f"{self.state.base}/"
        patterns = tuple(base + ("devices/%" if t == "devices" else t) for t in req.topics)
        first = max(req.first, journal.first_msg_seq())  # older: pruned, or not ours
        rows = journal.messages(first, last, replay.MAX_MESSAGES, patterns)
        size, sent = 0, 0
        for row in rows:
            size += len(row.payload)
            if sent and size > replay.MAX_BYTES:
                break
            sent += 1
        rows = rows[:sent]
        cut = len(rows) == replay.MAX_MESSAGES or size > replay.MAX_BYTES
        for n, row in enumerate(rows):  # the stored bytes; paho keeps their order
            # One replayed message at a time, waiting for its PUBACK: replays hold at
            # most one of the connection's in-flight slots, and the table's own messages
            # (the outbox) the rest (side by side they filled them all, and a round's
            # result waited behind megabytes of replays). Taken per message, in turn
            # (the lock is first come, first served), so answers interleave: a short one
            # is not kept behind a flooder's 500 (bench/replay_flood.py).
            async with self._replay_turn:
                if not await self.publisher.publish_now(answer, row.payload):
                    return n  # no connection: the requester asks again
        covered = rows[-1].id if cut else last
        self.metrics.replays_served.inc()
        await self._replay_marker(answer, payload, req=req, count=len(rows),
                                  covered=covered, more=cut)
        return len(rows)

    async def _replay_marker(self, topic: str, payload: bytes, *,
                             req: replay.ReplayRequest | None = None,
                             error: tuple[str, str] | None = None, count: int = 0,
                             covered: int | None = None, more: bool = False) -> None:
        journal = self.state.journal
        try:
            rid = json.loads(payload).get("id")
        except (ValueError, RecursionError, AttributeError):  # any bytes are data
            rid = None
        echo = isinstance(rid, str) and len(rid) <= 64 and signable(rid)
        await self.publisher.publish_now(topic, self.state.out_of_band({
            "type": "replay", "id": rid if echo else None,
            "from_msg_seq": None if req is None else req.first, "to_msg_seq": covered,
            "count": count, "next_msg_seq": None if not more or covered is None
            else covered + 1, "first_available": journal.first_msg_seq(),
            "last_msg_seq": journal.last_msg_seq(), "at": iso(self.state.clock()),
            "error": None if error is None else {"code": error[0], "message": error[1]}}))
