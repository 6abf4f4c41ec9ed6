"""Storage: the journal's disk fills up mid-shoe (a real tmpfs, a real ENOSPC).

The daemon stops accepting rounds, says so by a direct alert and in its replies, keeps
running, and loses nothing it recorded. When space returns it rebuilds the table from
the journal, resolves the interrupted round by the technical-interruption clause, and
play goes on with no gap in seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.authority import sign_command
from daemon.security.signing import private_key_pem
from daemon.store.journal import Journal, Publish
from hil.dealer import SimDealer
from hil.process import to_toml
from tests.reliability.harness import sim_table

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                                reason="needs root to mount a small tmpfs")


@contextlib.contextmanager
def small_disk(path: Path, size: str = "16m") -> Iterator[Path]:
    path.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    # Made while there is room: the journal may fill the disk before the test does, and
    # then not even an empty file could be created to fill it with.
    (path / "filler").touch()
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    # Unbuffered: a buffered file keeps what the full disk refused and raises ENOSPC
    # again when it is closed (seen in CI), after the disk was already full.
    with open(filler, "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


async def test_disk_full_stops_rounds_alerts_and_recovers(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        async with sim_table(tmp_path, journal=disk / "journal.db") as t:
            dealer = t.rig.dealer()
            async with dealer.session():
                for _ in range(3):
                    await dealer.deal_round()
                # The disk fills while the next round is open. What the journal already
                # has room for is still written (its log is written over from the start
                # after a checkpoint, docs/architecture.md), so commands that change
                # nothing but are journalled, with their replies, go on until the log
                # needs a page the disk does not have.
                opened = await dealer.command("open_betting")
                assert opened["ok"]
                filler = fill(disk)
                for _ in range(5000):
                    answer = await dealer.command("open_betting")  # refused: already open
                    assert answer["ok"] is False
                    if answer["error"]["code"] == "storage_failed":
                        break
                assert answer["error"]["code"] == "storage_failed"
                assert answer["round_id"] == opened["round_id"]  # still open, not lost
                await t.observer.until(lambda: any(
                    a["code"] == "journal_unavailable" for a in t.observer.of("alerts")))
                again = await dealer.command("open_betting")
                assert again["error"]["code"] == "storage_failed"  # still refused, not lost
                assert t.daemon.running()

                filler.unlink()  # space again: the table rebuilds from its journal
                await t.observer.until(lambda: len(t.results_by_seq()) >= 4)
                interrupted = t.results_by_seq()[4]
                assert interrupted["status"] == "void"
                assert interrupted["void_reason"]["clause"] == "5.4.2"
                dealer.forget()
                for _ in range(3):
                    await dealer.deal_round()
                await asyncio.sleep(0.5)
        assert t.daemon.starts == 1 and "journal unavailable" in t.daemon.log()
        published = t.results_by_seq()
        journal = t.journal_results()
        assert [s for s, _ in journal] == list(range(1, len(journal) + 1)) == sorted(published)
        assert {r["round_id"] for r in published.values()} == {rid for _, rid in journal}
        for r in published.values():
            t.rig.keyring.verify(r)


def started_records(journal: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT count(*) FROM journal WHERE kind='started'")
                       .fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def said(path: Path, text: str) -> bool:
    return text in path.read_text(encoding="utf-8")


def has_started(journal: Path, times: int) -> bool:
    return started_records(journal) == times


def wait_for(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_issue_25_build_6_a_full_disk_at_start_is_waited_out_not_given_up(
        tmp_path: Path) -> None:
    """Issue 12 made a full disk at start exit 1 (not 2) so that systemd would retry; but
    it exited in 0.4 s, and with RestartSec=2s the unit's start limit (20 in 300 s) gave
    up on the table after about 50 s, however soon space came back. Now the daemon waits
    for room itself, saying so, and starts once space is freed: no exit, no restart, so
    no start limit. Both a first start (no journal yet) and a restart (a journal there)."""
    cfg = tmp_path / "table.toml"
    key = tmp_path / "signing.pem"
    key.write_bytes(private_key_pem(Ed25519PrivateKey.generate()))
    with small_disk(tmp_path / "disk", size="4m") as disk:
        journal = disk / "journal.db"
        cfg.write_text(to_toml({
            "table": {"id": "t1", "game": "tai-sai-open-cover", "layout": "E"},
            "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
            "journal": {"path": str(journal)},
            "signing": {"key_file": str(key)}}), encoding="utf-8")
        for start in (1, 2):
            filler = fill(disk)
            err = tmp_path / f"stderr-{start}"
            with open(err, "w", encoding="utf-8") as out:
                proc = subprocess.Popen([sys.executable, "-m", "daemon", "run", "--config",
                                         str(cfg)], stderr=out)
            try:
                assert wait_for(functools.partial(said, err, "waiting to start"), 30), \
                    err.read_text()
                time.sleep(3)  # v2 had exited 1 in 0.4 s
                assert proc.poll() is None, err.read_text()
                assert "is full" in err.read_text()
                if start == 1:  # (a journal on a full disk cannot even be read then)
                    assert started_records(journal) == 0
                filler.unlink()  # space again: it starts by itself (it looks every 10 s;
                # a loaded machine stretches that)
                assert wait_for(functools.partial(has_started, journal, start), 60), \
                    err.read_text()
                assert proc.poll() is None, err.read_text()
            finally:
                proc.terminate()
                proc.wait(15)


def test_a_wal_checkpoint_on_a_full_disk_fails_with_a_warning_and_loses_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The journal's WAL checkpoint (daemon/store/journal.py) copies the log into the
    file, which must grow: on a full disk it fails. The log keeps everything, the daemon
    goes on (a warning, no exception), and the next one, once there is room, does it."""
    with small_disk(tmp_path / "disk") as disk:
        j = Journal(disk / "journal.db")
        j._db.execute("PRAGMA wal_autocheckpoint=0")  # everything in the log until now
        for n in range(200):
            j.append("e", {"n": n, "pad": "x" * 3000}, publish=(Publish("t", {"n": n}),))
        filler = fill(disk)
        with caplog.at_level(logging.WARNING, logger="daemon.store.journal"):
            j.wal_checkpoint()
        assert any("journal WAL checkpoint failed" in r.getMessage() for r in caplog.records)
        assert [r.body["n"] for r in j.records()] == list(range(200))
        filler.unlink()
        j.wal_checkpoint()
        j.close()
        again = Journal(disk / "journal.db")
        assert [r.body["n"] for r in again.records()] == list(range(200))
        assert len(again.pending(limit=1000)) == 200


async def send_raw(dealer: SimDealer, name: str, body: dict[str, Any],
                   timeout: float = 30.0) -> dict[str, Any]:
    """Publish these exact bytes as a command and wait for the reply to its id: what an
    attacker who captured a signed command, or a tool that re-sends, does."""
    assert dealer._client is not None
    await dealer._client.publish(f"{dealer.base}/cmd/{name}", json.dumps(body), qos=1)
    return await dealer._expect(lambda t, b: t == "replies" and b.get("id") == body["id"],
                                timeout)


async def until_storage_fails(dealer: SimDealer) -> None:
    """Commands that are journalled (``status``) until one is refused for the disk."""
    for _ in range(5000):
        answer = await dealer.command("status")
        if answer["ok"] is False and answer["error"]["code"] == "storage_failed":
            return
    raise AssertionError("the journal never failed")


async def until_storage_recovers(dealer: SimDealer) -> None:
    async with asyncio.timeout(30):
        while not (await dealer.command("status"))["ok"]:
            await asyncio.sleep(0.5)


async def test_issue_25_build_2_a_command_refused_for_storage_never_runs_later(
        tmp_path: Path) -> None:
    """v2 answered ``storage_failed`` before it authenticated, so the command's id was
    never remembered: the same signed bytes, sent again once the disk had room, were
    carried out (a round opened, or voided, by a command the table had refused). Now
    it is authenticated first, its id kept in memory and journalled at the next commit:
    refused as a replay after the disk recovers, and after a restart too."""
    with small_disk(tmp_path / "disk") as disk:
        async with sim_table(tmp_path, journal=disk / "journal.db") as t:
            dealer = t.rig.dealer()
            async with dealer.session():
                await dealer.deal_round()
                filler = fill(disk)
                await until_storage_fails(dealer)
                captured = sign_command(t.rig.dealer_key, t.rig.table_id, "open_betting",
                                        "captured-1", time.time())
                refused = await send_raw(dealer, "open_betting", captured)
                assert refused["ok"] is False
                assert refused["error"]["code"] == "storage_failed"

                filler.unlink()
                await until_storage_recovers(dealer)
                again = await send_raw(dealer, "open_betting", captured)
                assert again["ok"] is False, again
                assert again["error"]["code"] == "denied"
                assert "already used" in again["error"]["message"]
                assert "storage_failed" in again["error"]["message"]
                assert again["state"] != "betting"

                t.daemon.stop()  # the id was journalled, not only kept in memory
                t.daemon.start()
                dealer.forget()
                await dealer._expect(lambda tp, b: tp == "status" and
                                     b.get("state") == "online", fresh=True)
                after = await send_raw(dealer, "open_betting", captured)
                assert after["ok"] is False and after["error"]["code"] == "denied", after
                assert "storage_failed" in after["error"]["message"]


async def test_issue_25_build_2_unauthenticated_input_is_rate_limited_while_storage_fails(
        tmp_path: Path) -> None:
    """v2 answered every command with a signed ``storage_failed`` while the disk was full,
    signed or not: 300 unsigned commands got 300 replies in 2.3 s. Unauthenticated input
    now takes the same path and the same limit as on a healthy disk (Untrusted: a burst
    of 20, then 5 a second); and the once-a-minute ``command_denied`` alert, which cannot
    be stored then, no longer uses up its slot."""
    with small_disk(tmp_path / "disk") as disk:
        async with sim_table(tmp_path, journal=disk / "journal.db") as t:
            dealer = t.rig.dealer()
            async with dealer.session():
                filler = fill(disk)
                await until_storage_fails(dealer)
                assert dealer._client is not None
                began = time.monotonic()
                for n in range(300):
                    await dealer._client.publish(
                        f"{dealer.base}/cmd/open_betting",
                        json.dumps({"id": f"forged-{n}", "issued_at": "2026-01-01T00:00:00Z",
                                    "sig": "ed25519:AAAA:AAAA"}), qos=0)
                await asyncio.sleep(1.0)
                elapsed = time.monotonic() - began
                answered = [b for tp, b in dealer.seen if tp == "replies" and
                            str(b.get("id", "")).startswith("forged-")]
                assert len(answered) <= 20 + 5 * elapsed + 1, (len(answered), elapsed)
                assert all(b["error"]["code"] == "denied" for b in answered)

                # The alert that could not be stored left its slot: the first forgery
                # once the disk has room raises one (v2: none for a minute).
                filler.unlink()
                await until_storage_recovers(dealer)
                await dealer._client.publish(
                    f"{dealer.base}/cmd/open_betting",
                    json.dumps({"id": "forged-after", "issued_at": "2026-01-01T00:00:00Z",
                                "sig": "ed25519:AAAA:AAAA"}), qos=1)
                alert = await dealer._expect(lambda tp, b: tp == "alerts" and
                                             b.get("code") == "command_denied", 10)
                assert "forged-after" in alert["detail"]
