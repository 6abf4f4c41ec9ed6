"""``tabled display``'s own health for Prometheus: its pages, what it verified and
refused, and how far its catch-up (replay requests, contract v2) has got. Read at each
scrape from the server and its views, on the event loop; served at ``/metrics`` on the
display's own listener (docs/display.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from daemon.display.server import DisplayServer


def registry(server: DisplayServer) -> CollectorRegistry:
    r = CollectorRegistry(auto_describe=False)
    r.register(DisplayCollector(server))
    return r


class DisplayCollector(Collector):
    def __init__(self, server: DisplayServer) -> None:
        self.server = server

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        s, d = self.server, self.server.display
        yield GaugeMetricFamily("tabled_display_clients", "Pages following the live "
                                "stream (/events).", value=len(s.clients))
        yield GaugeMetricFamily("tabled_display_connections", "Open HTTP connections.",
                                value=sum(s.connections.values()))
        yield GaugeMetricFamily("tabled_display_broker_connected", "1 while the broker "
                                "session is up.", value=1 if s.broker_state.get("connected")
                                else 0)
        yield CounterMetricFamily("tabled_display_messages_received", "Broker messages "
                                  "received.", value=s.received)
        yield CounterMetricFamily("tabled_display_payloads_verified", "Payloads whose "
                                  "signature verified with a trusted table key.",
                                  value=d.verified)
        yield CounterMetricFamily("tabled_display_payloads_refused", "Payloads refused "
                                  "(bad signature, unknown key, malformed).",
                                  value=d.refused_total)
        yield CounterMetricFamily("tabled_display_replay_requests", "Replay requests sent "
                                  "to the tables.", value=s.replay_requests)
        families: dict[str, CounterMetricFamily | GaugeMetricFamily] = {
            "replayed": CounterMetricFamily("tabled_display_replayed", "New messages "
                                            "that came in replay answers.", labels=["table"]),
            "duplicates": CounterMetricFamily("tabled_display_duplicates", "Messages "
                                              "received again and ignored.",
                                              labels=["table"]),
            "missing": GaugeMetricFamily("tabled_display_catchup_missing_messages",
                                         "Messages known to exist and not yet received.",
                                         labels=["table"]),
            "lost": GaugeMetricFamily("tabled_display_catchup_lost_messages", "Messages "
                                      "the table can no longer replay (pruned).",
                                      labels=["table"]),
        }
        for table, view in sorted(d.tables.items()):
            values = {"replayed": view.fetched, "duplicates": view.duplicates,
                      "missing": sum(b - a + 1 for a, b in view.catchup.gaps()),
                      "lost": view.catchup.lost()}
            for key, family in families.items():
                family.add_metric([table], values[key])
        yield from families.values()
