"""Crashes: the daemon process is killed with SIGKILL at random points while a dealer
plays on, and restarted as systemd would restart it.

Checks, from the journal and from an independent subscriber:
- every result recorded is published; exactly one result per round_id;
- seq has no gaps;
- every round open at a kill is resolved by the technical-interruption clause
  (continued under 5.4.1, or void under 5.4.2).
Figures printed: rounds, kills, interrupted rounds, how each was resolved.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sqlite3
import time
from pathlib import Path

import pytest

from tests.journal_file import read_only
from tests.reliability.harness import Table, sim_table
from tests.soak import scale

INTERRUPTION = {"5.4.1", "5.4.2"}
RESULTS = scale(20, 220)  # results to reach, through...
KILLS = scale(8, 80)  # ...this many SIGKILLs
# The whole test's bound: a stall fails with what it reached, not a CI timeout. Generous:
# under load a restart alone (a new Python process) can take seconds.
BOUND = scale(300, 1800)
RECORDS_BETWEEN_KILLS = (1, 45)  # a round journals about 15 records: kills land anywhere


def journal_records(path: Path) -> int:
    """How many records the journal holds now (0 before the daemon has made it)."""
    try:
        with read_only(path) as db:
            return int(db.execute("SELECT count(*) FROM journal").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.soak
async def test_sigkill_at_random_points(tmp_path: Path) -> None:
    """Kills are spaced by the journal's progress, not by the clock: after each (re)start
    the daemon journals a random 1-45 records, then a short random pause lands the kill
    between or inside writes. On a loaded machine a clock-spaced killer could kill each
    restart before it did anything, and the test never ended."""
    rng = random.Random(2026)
    kills = 0
    journal = tmp_path / "journal.db"
    async with sim_table(tmp_path, speed=100) as t:
        started = time.monotonic()
        try:
            async with asyncio.timeout(BOUND):
                kills = await play_through_kills(t, rng, journal)
                records = t.journal_results()
                while not set(t.results_by_seq()) >= {s for s, _ in records}:
                    await asyncio.sleep(0.05)  # every result recorded is published
        except TimeoutError:
            pytest.fail(f"crash suite: not done within {BOUND}s: {len(t.results_by_seq())} "
                        f"of {RESULTS} results published, {t.daemon.starts - 1} of {KILLS} "
                        f"kills, {journal_records(journal)} journal records; daemon log "
                        f"tail:\n{t.daemon.log()[-2000:]}")
        elapsed = time.monotonic() - started

    assert kills == KILLS
    published = t.results_by_seq()
    seqs = [s for s, _ in records]
    assert seqs == list(range(1, len(seqs) + 1)), "seq has a gap in the journal"
    assert sorted(published) == seqs, "a recorded result was not published"
    ids = [rid for _, rid in records]
    assert len(ids) == len(set(ids)), "two results for one round"
    for r in published.values():
        t.rig.keyring.verify(r)

    # Every round open at a kill: resolved by 5.4 (continued or void).
    db = sqlite3.connect(tmp_path / "journal.db")
    rows = [(k, rid, json.loads(b)) for k, rid, b in
            db.execute("SELECT kind, round_id, body FROM journal ORDER BY id")]
    db.close()
    open_round: str | None = None
    interrupted: list[str] = []
    for kind, rid, _ in rows:
        if kind == "betting_opened":
            open_round = rid
        elif kind == "result" and rid == open_round:
            open_round = None
        elif kind == "started" and open_round is not None:
            interrupted.append(open_round)
    resolutions: dict[str, set[str]] = {}
    for kind, rid, body in rows:
        if rid in interrupted and kind == "alert" and body["clause"] in INTERRUPTION:
            resolutions.setdefault(rid, set()).add(body["clause"])
    assert interrupted, f"none of {kills} kills fell inside a round"
    unresolved = [rid for rid in interrupted if rid not in resolutions]
    assert not unresolved, f"interrupted rounds without a 5.4 resolution: {unresolved}"
    voids = {r["round_id"]: r["void_reason"]["clause"] for r in published.values()
             if r["status"] == "void"}
    for rid, clauses in resolutions.items():
        if "5.4.2" in clauses:  # voided: its one result says so
            assert voids.get(rid) == "5.4.2", f"{rid} was voided without a 5.4.2 result"
    print(f"\ncrash suite: {len(seqs)} results in {elapsed:.0f}s, {kills} SIGKILLs, "
          f"{len(interrupted)} rounds interrupted: "
          f"{sum('5.4.1' in c for c in resolutions.values())} continued (5.4.1), "
          f"{sum('5.4.2' in c for c in resolutions.values())} void (5.4.2); "
          f"{len(voids)} void results in all; duplicates delivered: "
          f"{len(t.observer.of('results')) - len(published)}")


async def play_through_kills(t: Table, rng: random.Random, journal: Path) -> int:
    """A dealer plays on while the daemon is SIGKILLed ``KILLS`` times and restarted as
    systemd would restart it, until ``RESULTS`` results are published and the last round
    has drained; returns the number of kills."""
    dealer = t.rig.dealer(reply_timeout=3.0, betting_seconds=0.01)
    kills = 0

    async def killer() -> None:
        nonlocal kills
        while kills < KILLS:
            mark = journal_records(journal)
            wanted = rng.randint(*RECORDS_BETWEEN_KILLS)
            while journal_records(journal) < mark + wanted:  # progress, however slow
                await asyncio.sleep(0.02)
            await asyncio.sleep(rng.uniform(0.0, 0.05))
            t.daemon.kill()
            kills += 1
            await asyncio.sleep(rng.uniform(0.0, 0.3))  # systemd's RestartSec, roughly
            t.daemon.start()

    async with dealer.session():
        chaos = asyncio.create_task(killer())
        try:
            while len(t.results_by_seq()) < RESULTS or not chaos.done():
                try:
                    async with asyncio.timeout(15):
                        await dealer.resume_round()
                except (TimeoutError, RuntimeError):
                    dealer.forget()  # the daemon died under us: pick up where it is
            await chaos
        finally:
            chaos.cancel()
        # Let the last restart settle and drain.
        await t.observer.until(t.daemon.running)
        with contextlib.suppress(TimeoutError, RuntimeError):
            async with asyncio.timeout(20):
                await dealer.resume_round()
    return kills
