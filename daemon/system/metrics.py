"""The table's health in the Prometheus exposition format (docs/operations.md, Metrics).

Two kinds of figure, each read from where the fact already is:

- what the service has at any moment (the outbox, the open round and its hold, the
  devices, the broker session, the journal file) is read when Prometheus scrapes, by
  ``TableCollector``, on the event loop, so a scrape sees one consistent table;
- what happens (results, alerts, commands, replays, deliveries) is counted as it
  happens, by ``TableMetrics``, the only place those counts are kept.

Every name carries its unit (``_seconds``, ``_bytes``, ``_messages``) and counters end in
``_total``. Counters start at 0 with the process, as Prometheus expects (``rate()``
reads a restart as a reset).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from daemon import __version__
from daemon.drivers.device import DeviceState
from daemon.store.journal import JournalError

if TYPE_CHECKING:
    from daemon.service import TableService
    from daemon.store.journal import OutboxEntry

# Seconds, from a card's journal entry (written in the read's own transaction) or a
# result's to the broker's acknowledgement: milliseconds on a healthy table, minutes
# across an outage (the outbox keeps them).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                   60.0, 300.0, 1800.0)


class TableMetrics:
    """The table's registry: what happens, counted here; what is, read at scrape."""

    def __init__(self, service: TableService) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        game = service.cfg.game
        self.game = game
        r = self.registry
        self.results = Counter("tabled_results", "Round results journalled for "
                               "publication, by game and status.", ("game", "status"),
                               registry=r)
        self.alerts = Counter("tabled_alerts", "Alerts raised, by code.", ("code",),
                              registry=r)
        self.accepted = Counter("tabled_commands_accepted", "Signed commands carried "
                                "out, by command.", ("command",), registry=r)
        self.refused = Counter("tabled_commands_refused", "Commands from an authenticated "
                               "principal that were refused, by error code.", ("code",),
                               registry=r)
        self.replays_served = Counter("tabled_replay_requests_served", "Replay requests "
                                      "answered with messages.", registry=r)
        self.replays_refused = Counter("tabled_replay_requests_refused", "Replay requests "
                                       "refused, by code (dropped: not answered at all).",
                                       ("code",), registry=r)
        self.card_latency = Histogram("tabled_card_to_publish_seconds", "From a card's "
                                      "journal entry to the broker's acknowledgement of its "
                                      "event.", registry=r, buckets=LATENCY_BUCKETS)
        self.result_latency = Histogram("tabled_result_to_acknowledge_seconds", "From a "
                                        "result's journal entry to the broker's "
                                        "acknowledgement of it.", registry=r,
                                        buckets=LATENCY_BUCKETS)
        r.register(TableCollector(service))
        self._now = service.journal.now
        self._results_topic = service.topics["results"]
        self._events_topic = service.topics["events"]

    def result(self, status: str) -> None:
        self.results.labels(self.game, status).inc()

    def delivered(self, entries: Iterable[OutboxEntry]) -> None:
        """The broker acknowledged these outbox entries (daemon/mqtt/publisher.py)."""
        now = self._now()
        for e in entries:
            if e.topic == self._results_topic:
                self.result_latency.observe(max(0.0, now - e.created_at))
            elif e.topic == self._events_topic and _is_card(e.payload):
                self.card_latency.observe(max(0.0, now - e.created_at))


def _is_card(payload: str) -> bool:
    if '"card"' not in payload:  # most events are not cards: no parse for them
        return False
    try:
        return bool(json.loads(payload).get("event") == "card")
    except (ValueError, AttributeError):
        return False


def _gauge(name: str, doc: str, value: float | None = None,
           labels: Iterable[str] = ()) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, doc, labels=list(labels) or None)
    if value is not None:
        g.add_metric([], value)
    return g


class TableCollector(Collector):
    """What the service has now, read at each scrape (on the event loop)."""

    def __init__(self, service: TableService) -> None:
        self.s = service
        self._hold: tuple[str, float] | None = None  # (hold_id, when it was first held)

    def describe(self) -> list[Metric]:
        return []  # read at scrape time: nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        s = self.s
        now = s.journal.now()
        info = GaugeMetricFamily("tabled_info", "The table: 1, with its identity as labels.",
                                 labels=["table", "game", "layout", "version"])
        info.add_metric([s.cfg.table_id, s.cfg.game, s.cfg.layout, __version__], 1)
        yield info
        yield from self._round(now)
        yield from self._outbox(now)
        yield from self._mqtt()
        yield from self._devices()
        yield from self._journal(now)
        unauth = CounterMetricFamily("tabled_commands_unauthenticated", "Commands that did "
                                     "not authenticate (counted, never journalled), by "
                                     "error code.", labels=["code"])
        for code, n in sorted(s.untrusted.counts.items()):
            unauth.add_metric([code], n)
        yield unauth

    def _round(self, now: float) -> Iterator[Metric]:
        s = self.s
        state = GaugeMetricFamily("tabled_table_state", "The table's state machine: 1 for "
                                  "the state it is in.", labels=["state"])
        state.add_metric([s.table.state], 1)
        yield state
        rnd = s.table.round
        yield _gauge("tabled_round_open_seconds", "Age of the open round (0: none).",
                     0.0 if rnd is None else max(0.0, now - rnd.opened_at))
        held = rnd is not None and rnd.held is not None
        yield _gauge("tabled_holds_waiting", "Results held for the Pit, waiting for its "
                     "answer.", 1.0 if held else 0.0)
        age = 0.0
        if held and rnd is not None and rnd.hold_id is not None:
            age = max(0.0, now - self._held_since(rnd.round_id, rnd.hold_id, now))
        yield _gauge("tabled_hold_age_seconds", "How long the oldest hold has waited for "
                     "the Pit (0: nothing held).", age)

    def _held_since(self, round_id: str, hold_id: str, now: float) -> float:
        """When this hold was first journalled: a restart announces it again, and its age
        must not start over."""
        if self._hold is None or self._hold[0] != hold_id:
            try:
                at = min((r.at for r in self.s.journal.records(round_id)
                          if r.kind == "result_held" and r.body.get("hold_id") == hold_id),
                         default=now)
            except (JournalError, sqlite3.Error):  # unreadable now: from this scrape on
                return now
            self._hold = (hold_id, at)
        return self._hold[1]

    def _outbox(self, now: float) -> Iterator[Metric]:
        try:
            b = self.s.journal.backlog()
        except JournalError:  # a journal that cannot be read: the other figures still count
            return
        yield _gauge("tabled_outbox_backlog_messages", "Messages journalled and not yet "
                     "acknowledged by the broker.", b.messages)
        yield _gauge("tabled_outbox_oldest_age_seconds", "Age of the oldest message not "
                     "yet acknowledged (0: none).",
                     0.0 if b.oldest_at is None else max(0.0, now - b.oldest_at))

    def _mqtt(self) -> Iterator[Metric]:
        st = self.s.publisher.stats
        yield _gauge("tabled_mqtt_connected", "1 while a broker session is up.",
                     1.0 if st.connected else 0.0)
        for name, doc, value in (
                ("tabled_mqtt_sessions", "Broker sessions established.", st.connects),
                ("tabled_mqtt_failovers", "Moves to another broker node after a lost or "
                 "refused connection.", st.failovers),
                ("tabled_mqtt_delivered", "Outbox messages acknowledged by the broker.",
                 st.delivered),
                ("tabled_mqtt_resent", "Outbox messages sent again after an outage or a "
                 "restart.", st.replayed),
                ("tabled_mqtt_errors", "Broker connections that failed or were lost.",
                 st.errors)):
            yield CounterMetricFamily(name, doc, value=value)
        replays = self.s.replays
        yield _gauge("tabled_replay_server_up", "1 while the replay process hears replay "
                     "requests.", 1.0 if replays.subscribed.is_set() else 0.0)
        yield CounterMetricFamily("tabled_replay_server_restarts", "Starts of the replay "
                                  "process after it ended.", value=replays.restarts)

    def _devices(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("tabled_device_up", "1 while the device is identified and "
                               "ready.", labels=["device"])
        state = GaugeMetricFamily("tabled_device_state", "1 for the state each device is "
                                  "in.", labels=["device", "state"])
        counters: dict[str, CounterMetricFamily] = {
            key: CounterMetricFamily(name, doc, labels=["device"]) for key, name, doc in (
                ("sessions", "tabled_device_sessions", "Device sessions that completed "
                 "the handshake."),
                ("decode_errors", "tabled_device_decode_errors", "Frames that did not "
                 "decode (line noise, a foreign version)."),
                ("retransmitted", "tabled_device_link_retransmits", "Frames the host "
                 "sent again."),
                ("naks_sent", "tabled_device_link_naks_sent", "NAKs the host sent."),
                ("naks_received", "tabled_device_link_naks_received", "NAKs the device "
                 "sent."),
                ("failures", "tabled_device_link_failures", "Device sessions that ended "
                 "(a failed link, a lost port, a device that stopped answering)."))}
        for name, d in sorted(self.s.drivers.items()):
            up.add_metric([name], 1.0 if d.ready else 0.0)
            for st in DeviceState:
                state.add_metric([name, st.value], 1.0 if d.status.state is st else 0.0)
            link = d.link_totals()
            values: dict[str, Any] = {
                "sessions": d.status.sessions, "decode_errors": d.status.decode_errors,
                "retransmitted": link.retransmitted, "naks_sent": link.naks_sent,
                "naks_received": link.naks_received, "failures": d.sessions_ended}
            for key, family in counters.items():
                family.add_metric([name], values[key])
        yield up
        yield state
        yield from counters.values()

    def _journal(self, now: float) -> Iterator[Metric]:
        s = self.s
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):  # no WAL between checkpoints
                size += os.stat(f"{s.cfg.journal_path}{suffix}").st_size
        yield _gauge("tabled_journal_size_bytes", "The journal's database and its "
                     "write-ahead log, on disk.", size)
        yield _gauge("tabled_journal_writable", "0 while the journal cannot be written "
                     "(no round advances).", 1.0 if s.storage_error is None else 0.0)
        try:
            last = s.journal.last_checkpoint_at()
        except (JournalError, sqlite3.Error):  # unreadable: the figures above still count
            return
        if last is not None:  # the service makes one as it starts (TableService.retain)
            yield _gauge("tabled_journal_checkpoint_age_seconds", "Age of the latest "
                         "table checkpoint (a restart folds the records since).",
                         max(0.0, now - last))
