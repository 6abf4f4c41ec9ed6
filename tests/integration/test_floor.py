"""The floor benchmark, bounded: a few tables, each daemon its own process, through one
Mosquitto (a shared subscription) and through the three-node NATS cluster with one node
SIGKILLed mid-run and restarted. Every result journalled arrives, and every copy after
the first is flagged. TABLED_SOAK=1 runs more tables and rounds; the full run is
``python -m bench.floor`` (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.floor import floor
from tests.soak import scale


def _log(line: str) -> None:
    print(line)


@pytest.mark.soak
async def test_floor_through_one_mosquitto_with_shared_subscription(tmp_path: Path) -> None:
    tables, rounds = scale(3, 20), scale(3, 10)
    r = await floor("mosquitto", tables, rounds, 2, tmp_path, log=_log)
    assert r["rounds_dealt"] == tables * rounds
    assert r["results_received"] == r["results_journalled"] == tables * rounds
    assert r["lost"] == 0 and r["unflagged_duplicates"] == 0, r


@pytest.mark.soak
async def test_floor_through_a_nats_cluster_losing_a_node_mid_run(tmp_path: Path) -> None:
    tables, rounds = scale(3, 20), scale(6, 10)
    r = await floor("nats", tables, rounds, 2, tmp_path, kill=True, log=_log)
    assert r["killed"]["node"] in ("n2", "n3") and r["killed"]["tables_on_it"] >= 1
    assert 0 < r["killed"]["rounds_dealt_then"] < tables * rounds
    # Each table on the killed node connected again: to another node, or (when the
    # others refused it while the cluster re-elected) to the same one restarted.
    assert r["tables_reconnected"] >= r["killed"]["tables_on_it"]
    # A round whose result the dealer missed while its table moved is dealt again:
    # more results than rounds may be journalled; every one must arrive.
    assert r["rounds_dealt"] == tables * rounds
    assert r["results_received"] == r["results_journalled"] >= tables * rounds
    assert r["lost"] == 0 and r["unflagged_duplicates"] == 0, r
