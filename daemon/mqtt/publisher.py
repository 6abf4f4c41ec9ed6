"""Publishes the outbox to the broker: QoS 1, in order, up to ``WINDOW`` entries in flight.

aiomqtt drops unacknowledged publishes when a connection ends, so tabled never relies
on it to keep anything: an outbox entry is marked delivered only after ``publish``
returns, which for QoS 1 is when the broker's PUBACK arrived. Whatever was not
acknowledged is sent again after a reconnect or a restart (at least once): the stored
bytes, sealed once at commit, so a copy is identical and consumers de-duplicate by
``msg_seq``.

Each session has a counter from the journal (like Sparkplug's bdSeq), used up only
when a connection is made. The retained status is "online" with that counter (birth),
and the will is "offline" with the same counter and the time the session started, so a
late will is told apart from the current session. A clean stop sends what is queued,
then "offline", and waits (bounded) for the broker to take it.

Failover: ``BrokerSettings.nodes`` lists every node of a cluster in order. A lost or
refused connection moves to the next node at once (a dead node is not waited for); only
when every node in turn has failed does the wait between attempts grow. There is no
fail-back while connected. Each connection is a new session wherever it lands: its own
will, the birth and the device states published retained again on that node, then the
outbox from its oldest pending entry, so a cluster or a set of independent brokers sees
the same ordered stream: what may have been seen before is sent again as the same stored
bytes, which consumers de-duplicate by ``msg_seq``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from daemon.mqtt.client import NODELAY, Client
from daemon.security.signing import Signer
from daemon.store.journal import Backlog, Journal, JournalError, OutboxEntry
from daemon.timestamps import iso

log = logging.getLogger(__name__)


async def subscribe(client: aiomqtt.Client, topic: str) -> None:
    """Subscribe, and fail the connection if the broker refused: a NATS node refuses a
    QoS 1 subscription (SUBACK 0x80) while its cluster re-elects leaders, and a daemon
    that went on would be deaf to commands on that connection."""
    granted = await client.subscribe(topic, qos=1)
    if any((g.value if isinstance(g, ReasonCode) else g) >= 0x80 for g in granted):
        raise aiomqtt.MqttError(f"the broker refused the subscription to {topic}")


class _InFlightIsIntended(logging.Filter):
    """aiomqtt warns whenever more than ten publishes are pending; here that is the
    design (a window in flight), and the warning per call costs more than the publish."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pending publish calls" not in record.getMessage()


AIOMQTT_LOG = logging.getLogger("tabled.aiomqtt")
AIOMQTT_LOG.addFilter(_InFlightIsIntended())

WINDOW = 64  # outbox entries in flight (paho's limit too), marked delivered per transaction
# The status says how far the outbox is behind (its ``backlog``). A message counts as
# waiting once it has been stored this long: a table dealing normally has a message or
# two in flight at any moment, which is not news. The status is published again when
# the count waiting changes, at most this often: during a drain, once a second.
BACKLOG_EVERY = 1.0


@dataclass(frozen=True)
class BrokerSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password: str | None = None
    tls: ssl.SSLContext | None = None
    client_id: str = "tabled"
    keepalive: int = 15
    publish_timeout: float = 5.0
    backoff_initial: float = 0.2
    backoff_max: float = 10.0
    nodes: tuple[tuple[str, int], ...] = ()  # failover order; empty: (host, port) alone

    @property
    def targets(self) -> tuple[tuple[str, int], ...]:
        return self.nodes or ((self.host, self.port),)


@dataclass
class PublisherStats:
    delivered: int = 0
    replayed: int = 0
    connects: int = 0
    errors: int = 0
    last_error: str = ""
    connected: bool = False
    node: str = ""  # host:port of the current (or last tried) node
    failovers: int = 0  # moves to another node after a lost or refused connection


class Upstream(Protocol):
    """The table the publisher works for: the upper layer whose methods it calls (as
    bellows' ASH layer calls its EZSP protocol object). Each is called on the event loop
    and must not block; the table is daemon/service/table.py, a bench or a test of the
    outbox alone uses ``Standalone``."""

    def status(self, state: str, session: int, started: float, with_at: bool
               ) -> Mapping[str, Any]:
        """The status payload: ``state`` of session ``session``, begun at ``started``;
        ``with_at``: stamped with the time (not the will's, sent who knows when)."""

    def retained(self) -> list[tuple[str, str | Mapping[str, Any]]]:
        """Republished on connect: a stored (sealed) text, or a payload to sign."""

    def cleared(self) -> list[str]:
        """Retained topics to empty on connect."""

    def was_cleared(self, topic: str) -> None:
        """The broker has ``topic`` emptied."""

    def last_state(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Retained state sent after the last words, before "offline": the snapshot."""

    async def message(self, topic: str, payload: bytes) -> None:
        """A live (not retained) message on one of ``subscriptions``: commands in."""

    def journal_failed(self, exc: JournalError) -> None:
        """The outbox cannot be read or marked; the publisher retries."""

    async def heard(self) -> None:
        """Returns when what the first "online" promises besides commands is heard (the
        replay process subscribed), or when it has waited long enough."""

    def session_lost(self, reason: str) -> None:
        """An established session ended."""

    def stopping(self) -> None:
        """A clean stop: queue the last words (devices offline)."""

    def quiet(self) -> bool:
        """The table is taking bets: no card or throw comes until betting closes, the
        moment for a due WAL checkpoint of the journal (docs/architecture.md)."""

    def delivered(self, entries: list[OutboxEntry]) -> None:
        """The broker acknowledged these outbox entries (their latency:
        daemon/system/metrics.py)."""


@dataclass
class Standalone:
    """An upstream with a status alone, for the outbox published for its own sake (a
    bench, a test of the publisher): ``keep`` republished on connect, nothing heard,
    nothing cleared, quiet while ``taking_bets``."""

    status_of: Callable[[str, int, float, bool], Mapping[str, Any]]
    keep: list[tuple[str, str | Mapping[str, Any]]] = field(default_factory=list)
    taking_bets: bool = True

    def status(self, state: str, session: int, started: float, with_at: bool
               ) -> Mapping[str, Any]:
        return self.status_of(state, session, started, with_at)

    def retained(self) -> list[tuple[str, str | Mapping[str, Any]]]:
        return list(self.keep)

    def cleared(self) -> list[str]:
        return []

    def was_cleared(self, topic: str) -> None:
        pass

    def last_state(self) -> list[tuple[str, Mapping[str, Any]]]:
        return []

    async def message(self, topic: str, payload: bytes) -> None:
        pass

    def journal_failed(self, exc: JournalError) -> None:
        pass

    async def heard(self) -> None:
        pass

    def session_lost(self, reason: str) -> None:
        pass

    def stopping(self) -> None:
        pass

    def quiet(self) -> bool:
        return self.taking_bets

    def delivered(self, entries: list[OutboxEntry]) -> None:
        pass


@dataclass
class Publisher:
    journal: Journal
    broker: BrokerSettings
    status_topic: str
    upstream: Upstream
    subscriptions: tuple[str, ...] = ()
    signer: Signer | None = None  # signs what is not in the journal: status, will, news
    stats: PublisherStats = field(default_factory=PublisherStats)

    def __post_init__(self) -> None:
        self._wake = asyncio.Event()
        self._stopping = False
        self._stopped = asyncio.Event()
        self._ran = False
        # Outbox ids at or below this mark lived through a restart or an outage.
        self._replay_upto = self.journal.max_outbox_id(pending_only=True)
        self._disrupted = False
        self._client: aiomqtt.Client | None = None
        self._node = 0  # index into broker.targets
        self._held: asyncio.Queue[bytes] = asyncio.Queue()  # our retained status, read back
        self._backlog_shown = 0  # the backlog (messages waiting) the last status said
        self._backlog_checked = 0.0  # monotonic

    async def publish_now(self, topic: str, body: Mapping[str, Any] | str, *,
                          retain: bool = False) -> bool:
        """Publish at once, bypassing the outbox: for what the journal does not number
        (news while it has failed, the snapshot, replay answers). A text is sent as it
        is (a stored message); a payload is signed. Best effort: False when there is no
        connection."""
        client = self._client
        if client is None:
            return False
        try:
            await client.publish(topic, body if isinstance(body, str) else self._wire(body),
                                 qos=1, retain=retain)
        except aiomqtt.MqttError as exc:
            log.warning("could not publish to %s directly: %s", topic, exc)
            return False
        return True

    def wake(self) -> None:
        """New outbox entries exist."""
        self._wake.set()

    async def stop(self, timeout: float = 3.0) -> None:
        """Send what is queued, publish a clean "offline" and disconnect (a kill leaves
        that to the will). Returns when the broker has the "offline", or after
        ``timeout`` (no connection: the will, or the next start, says it)."""
        if not self._stopping:
            with contextlib.suppress(JournalError):
                self.upstream.stopping()
        self._stopping = True
        self._wake.set()
        if self._ran and self.stats.connected:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._stopped.wait()

    async def run(self) -> None:
        self._ran = True
        try:
            await self._run()
        finally:
            self._stopped.set()

    async def _run(self) -> None:
        backoff = self.broker.backoff_initial
        failed_in_a_row = 0
        while not self._stopping:
            session = self.journal.next_session()
            try:
                await self._session(session)
                backoff = self.broker.backoff_initial
                failed_in_a_row = 0
            except* aiomqtt.MqttError as group:
                exc = group.exceptions[0]
                if self.stats.connected:
                    self.upstream.session_lost(str(exc))
                if not self._disrupted:  # journal the loss once, not every retry
                    with contextlib.suppress(JournalError):
                        self.journal.append("mqtt_disconnected", {"reason": str(exc)})
                self._disrupted = True
                self.stats.errors += 1
                self.stats.last_error = str(exc)
                self.stats.connected = False
                failed_in_a_row += 1
                targets = self.broker.targets
                if len(targets) > 1:
                    self._node = (self._node + 1) % len(targets)
                    self.stats.failovers += 1
                log.warning("mqtt connection to %s lost or refused: %s; next %s:%d in %.1fs",
                            self.stats.node, exc, *targets[self._node], backoff)
            if not self._stopping and self._disrupted:
                await asyncio.sleep(backoff)
                # Grow the wait once per round of the nodes, each tried and failed: a
                # growth at every attempt made a few quick refusals (a cluster electing
                # leaders after losing a node) a 10 s sleep past the election.
                if failed_in_a_row % len(self.broker.targets) == 0:
                    backoff = min(backoff * 2, self.broker.backoff_max)

    def _wire(self, body: Mapping[str, Any]) -> str:
        if self.signer is not None:
            return self.signer.seal(body)
        return json.dumps(dict(body), separators=(",", ":"), sort_keys=True)

    def _payload(self, state: str, session: int, started: float, at: bool = True) -> str:
        body = dict(self.upstream.status(state, session, started, at))
        # The will has none: it is made at connect and sent who knows when; nor has a
        # status while the journal cannot be read.
        backlog = self._backlog() if at else None
        if backlog is not None:
            if state == "online" and not self._waiting(backlog):
                # In flight, not behind: the count the news is judged by (_backlog_news)
                # is the count published, so its change to 0 is seen (issue 26). A clean
                # stop's "offline" says everything left unsent: none of it goes now.
                backlog = Backlog(0, None, None)
            self._backlog_shown = backlog.messages
            body["backlog"] = {"messages": backlog.messages,
                               "oldest_msg_seq": backlog.oldest_msg_seq,
                               "oldest_at": iso(backlog.oldest_at)}
        return self._wire(body)

    def _backlog(self) -> Backlog | None:
        try:
            return self.journal.backlog()
        except JournalError:
            return None

    def _waiting(self, b: Backlog) -> int:
        """The backlog as news: 0 while the oldest message is younger than BACKLOG_EVERY."""
        if b.oldest_at is None or self.journal.now() - b.oldest_at < BACKLOG_EVERY:
            return 0
        return b.messages

    async def _backlog_news(self, client: aiomqtt.Client, session: int, started: float
                            ) -> None:
        """Publish the status again if the outbox's backlog changed (debounced: see
        BACKLOG_EVERY): after an outage it counts down as the outbox drains, and ends
        at 0 once it is drained; a table dealing normally never sends one."""
        now = time.monotonic()
        if now - self._backlog_checked < BACKLOG_EVERY:
            return
        self._backlog_checked = now
        backlog = self._backlog()
        if backlog is not None and self._waiting(backlog) != self._backlog_shown:
            await client.publish(self.status_topic, self._payload("online", session, started),
                                 qos=1, retain=True)

    async def _session(self, session: int) -> None:
        b = self.broker
        host, port = b.targets[self._node]
        self.stats.node = f"{host}:{port}"
        started = time.time()
        # The will's time is when the broker sends it, which nobody here knows: null.
        will = aiomqtt.Will(self.status_topic, self._payload("offline", session, started,
                                                             at=False), qos=1, retain=True)
        client = Client(
            host, port, username=b.username, password=b.password, identifier=b.client_id,
            will=will, keepalive=b.keepalive, tls_context=b.tls, timeout=b.publish_timeout,
            socket_options=NODELAY, logger=AIOMQTT_LOG, max_inflight_messages=WINDOW)
        async with client:
            # Subscribe before the birth: "online" then means commands are heard.
            for topic in self.subscriptions:
                await subscribe(client, topic)
            # And to our own status, to see a late will (below).
            await subscribe(client, self.status_topic)
            self._client = client
            with contextlib.suppress(JournalError):  # the storage alarm says it elsewhere
                self.journal.session_started(session)
            try:
                await self._run_session(client, session, started)
            finally:
                self._client = None

    async def _run_session(self, client: aiomqtt.Client, session: int, started: float
                           ) -> None:
        async with asyncio.TaskGroup() as tg:
            # aiomqtt's publish() does not notice a dropped connection until its timeout;
            # the message iterator does, at once. When the watcher raises, the TaskGroup
            # cancels the publishing side, and the outbox keeps what was not acknowledged.
            watcher = tg.create_task(self._watch(client, session, started))
            checker = tg.create_task(self._confirm_retained(client, session, started))
            await self._publish_session(client, session, started)
            watcher.cancel()
            checker.cancel()

    async def _watch(self, client: aiomqtt.Client, session: int, started: float) -> None:
        async for message in client.messages:
            payload = message.payload
            raw = payload if isinstance(payload, bytes) else str(payload or "").encode()
            if str(message.topic) == self.status_topic:
                if message.retain:
                    self._held.put_nowait(raw)
                else:
                    await self._late_will(client, session, started, raw)
                continue
            if message.retain:
                # Stored by the broker, delivered at every (re)subscription: a command is
                # given once, live, so a retained one is never acted on (issue 12).
                log.warning("ignored a retained message on %.100s", message.topic)
                continue
            try:
                await self.upstream.message(str(message.topic), raw)
            except Exception:  # a handler bug must not drop the broker connection
                log.exception("handling a message on %s failed", message.topic)

    async def _late_will(self, client: aiomqtt.Client, session: int, started: float,
                         raw: bytes) -> None:
        """An "offline" of an earlier session arrived after this session's birth and
        replaced it as the retained status. After a failover this happens: a node that
        saw an earlier connection end uncleanly (one that timed out while connecting, or
        whose node dropped it) publishes that session's will late, and a cluster routes
        it everywhere. The birth is published again, so the retained status stays true."""
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # any bytes are data (issue 25)
            return
        if not isinstance(body, dict) or body.get("state") != "offline" or \
                body.get("session") == session or self._stopping:
            return
        log.warning("a late will of session %s replaced the status of session %d; "
                    "publishing the birth again", body.get("session"), session)
        await client.publish(self.status_topic, self._payload("online", session, started),
                             qos=1, retain=True)

    async def _confirm_retained(self, client: aiomqtt.Client, session: int, started: float
                                ) -> None:
        """Read the retained status back (subscribing again returns it) until it is this
        session's birth; publish the birth and the device states again while it is not.
        A NATS node acknowledges a retained message it then fails to store while the
        cluster re-elects the leader of its retained-message stream (seen after a node
        was killed: "unable to store retained message"), and a late will (above) may be
        missed while the connection is busy."""
        for delay in (1.0, 2.0, 4.0, 8.0, 16.0):
            await asyncio.sleep(delay)
            while not self._held.empty():
                self._held.get_nowait()
            try:
                await client.unsubscribe(self.status_topic)
                await subscribe(client, self.status_topic)
            except aiomqtt.MqttError as exc:
                # Best effort: a slow or refusing broker must not end a working session
                # (a lost connection is the watcher's to notice).
                log.info("could not read the retained status back: %s", exc)
                return
            try:
                async with asyncio.timeout(2.0):
                    body = json.loads(await self._held.get())
            except (TimeoutError, ValueError, RecursionError):  # any bytes are data
                body = None
            if isinstance(body, dict) and body.get("state") == "online" and \
                    body.get("session") == session:
                return
            log.warning("the retained status is %.200r, not session %d's birth; publishing "
                        "the birth and device states again", body, session)
            await self._birth(client, session, started)

    async def _birth(self, client: aiomqtt.Client, session: int, started: float) -> None:
        await client.publish(self.status_topic, self._payload("online", session, started),
                             qos=1, retain=True)
        for topic in self.upstream.cleared():  # an empty retained message deletes the retained one
            await client.publish(topic, b"", qos=1, retain=True)
            with contextlib.suppress(JournalError):
                self.upstream.was_cleared(topic)
        # A broker restarted without persistence lost what was retained: send again the
        # latest stored message of each retained topic, unless a newer one is queued.
        for topic, payload in self.upstream.retained():
            await client.publish(topic, payload if isinstance(payload, str)
                                 else self._wire(payload), qos=1, retain=True)

    async def _publish_session(self, client: aiomqtt.Client, session: int, started: float
                               ) -> None:
        with contextlib.suppress(JournalError):
            host, port = self.broker.targets[self._node]
            self.journal.append("mqtt_connected", {"session": session,
                                                   "host": host, "port": port})
        if self._disrupted:
            self._replay_upto = self.journal.max_outbox_id()
            self._disrupted = False
        self.stats.connects += 1
        self.stats.connected = True
        if self.stats.connects == 1:  # at the start only: after an outage the outbox
            await self.upstream.heard()  # must not wait for the replay process's link
        await self._birth(client, session, started)
        while not self._stopping:
            try:
                await self._drain(client, session, started, to_end=False)
                if self._stopping:
                    break
                self._wake.clear()
                if self.journal.pending_count():
                    continue
                if self.journal.wal_checkpoint_due and self.upstream.quiet():
                    self.journal.wal_checkpoint()  # nothing waits on it, nor will for a while
            except JournalError as exc:
                # Unreadable, or a delivery cannot be marked: what is pending stays pending
                # and is sent again later (at least once), so wait and retry.
                log.error("outbox: %s; retrying in 1 s", exc)
                self.upstream.journal_failed(exc)
                await asyncio.sleep(1.0)
                continue
            await self._backlog_news(client, session, started)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BACKLOG_EVERY):
                    await self._wake.wait()
        with contextlib.suppress(JournalError):  # the last words, queued by upstream.stopping()
            async with asyncio.timeout(self.broker.publish_timeout):
                await self._drain(client, session, started)
            for topic, body in self.upstream.last_state():  # as of everything just drained
                await client.publish(topic, self._wire(body), qos=1, retain=True)
        await client.publish(self.status_topic, self._payload("offline", session, started),
                             qos=1, retain=True)
        self.stats.connected = False

    async def _drain(self, client: aiomqtt.Client, session: int, started: float,
                     to_end: bool = True) -> None:
        """Send the outbox; ``to_end``: until a read finds nothing, else until a read
        that was not full has been sent (the session's loop asks pending_count() then)."""
        last = 0
        while True:
            batch = self.journal.pending(limit=WINDOW * 8, after=last)
            if not batch:
                return
            for i in range(0, len(batch), WINDOW):
                await self._publish_window(client, batch[i:i + WINDOW])
                last = batch[min(i + WINDOW, len(batch)) - 1].id
            await self._backlog_news(client, session, started)
            if not to_end and len(batch) < WINDOW * 8:
                # One query fewer per wake (most wakes at full dealer speed bring one
                # commit's few messages).
                return

    async def _publish_window(self, client: aiomqtt.Client, window: list[OutboxEntry]
                              ) -> None:
        """Up to WINDOW publishes in flight, then one transaction (one fsync) marks the
        acknowledged ones delivered. paho writes them in call order on one connection,
        the broker keeps that order (MQTT 3.1.1 4.6) and acknowledges in order, so the
        acknowledged ones are always a prefix of the window: a connection lost midway
        leaves a suffix to send again, and order still holds. (A window against one at a
        time, measured with its command: docs/performance.md, "Found and fixed by this
        benchmark".)"""
        outcomes = await asyncio.gather(
            *(client.publish(e.topic, self._outgoing(e), qos=e.qos, retain=e.retain)
              for e in window), return_exceptions=True)
        acked: list[int] = []
        for e, outcome in zip(window, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                break
            acked.append(e.id)
        if acked:
            self.journal.mark_delivered(*acked)
            self.stats.delivered += len(acked)
            self.upstream.delivered(window[:len(acked)])
        if len(acked) < len(window):
            failed = window[len(acked)]
            with contextlib.suppress(JournalError):
                self.journal.mark_attempt(failed.id)
            error = outcomes[len(acked)]
            if isinstance(error, aiomqtt.MqttError):
                raise error
            raise aiomqtt.MqttError(f"publish failed: {error!r}")

    def _outgoing(self, entry: OutboxEntry) -> str:
        if entry.id <= self._replay_upto or entry.attempts:
            self.stats.replayed += 1  # sent again: the same bytes, the same msg_seq
        return entry.payload
