"""The floor benchmark, bounded: a few tables, each daemon its own process, through one
Mosquitto (a shared subscription) and through the three-node NATS cluster with one node
SIGKILLed mid-run and restarted (its daemons, dealers and settlement member move to the
other nodes). Every result journalled arrives at settlement, live or recovered from the
table's journal by a replay request, and every copy after the first is the same sealed
message. TABLED_SOAK=1 runs more tables and rounds; the full run is
``python -m bench.floor`` (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.floor import floor
from hil.nats import nats_binary
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
    # The node back after 2 s (the bench: 5 s): long enough for every client on it to
    # have moved, since a SIGKILL closes their connections at once.
    r = await floor("nats", tables, rounds, 2, tmp_path, kill=True, log=_log,
                    restart_after=2.0)
    assert r["killed"]["tables_on_it"] >= 1, r
    assert 0 < r["killed"]["rounds_dealt_then"] < tables * rounds, r
    # Each table on the killed node connected again: to another node, or (when the
    # others refused it while the cluster re-elected) to the same one restarted.
    assert r["tables_reconnected"] >= r["killed"]["tables_on_it"], r
    # Their dealers started on the same node; those still dealing moved on too.
    assert r["dealer_moves"] >= min(r["killed"]["dealers_on_it"], 1), r
    # A round whose result the dealer missed while its table moved is dealt again:
    # more results than rounds may be journalled; every one must arrive.
    assert r["rounds_dealt"] == tables * rounds, r
    assert r["results_received"] == r["results_journalled"] >= tables * rounds, r
    assert r["lost"] == 0 and r["unflagged_duplicates"] == 0, r


async def test_settlement_recovers_by_replay_what_no_member_heard(tmp_path: Path) -> None:
    """A settlement group with no member at all: only its ledger, which sees each
    table's snapshot (its last result's seq) and asks the table for the results it is
    missing. Every result arrives, by replay alone."""
    r = await floor("mosquitto", 2, 2, 0, tmp_path, log=_log)
    assert r["results_journalled"] == 4 and r["received_live"] == 0
    assert r["recovered_by_replay"] == r["results_received"] == 4
    assert r["lost"] == 0 and r["unflagged_duplicates"] == 0, r


def test_nats_server_is_found_where_debian_installs_it_off_an_ordinary_users_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/setup.sh dev accepts /usr/sbin/nats-server (Debian's package); the bench
    run by a user without /usr/sbin on PATH must find it there too."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert Path(nats_binary()).is_file()
