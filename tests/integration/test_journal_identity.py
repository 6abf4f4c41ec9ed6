"""Issue 15: a lost, replaced or rolled-back journal is noticed at start. v1 started on an
empty journal without a word (the next result was seq 1 again), and on a restored backup
published seq 6-8 again for other rounds with nothing to tell them apart."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from daemon.config import parse_config
from daemon.service import TableService
from daemon.store.identity import JournalIdentityError, identity_path
from daemon.store.journal import Journal
from hil.process import DaemonProcess, to_toml
from tests.keys import commands, signing
from tests.reliability.harness import sim_table
from tests.wait import until


def config(tmp_path: Path, accept: str | None = None) -> dict[str, Any]:
    journal: dict[str, Any] = {"path": str(tmp_path / "journal.db")}
    if accept is not None:
        journal["accept_new"] = accept
    return {"table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
            "devices": {"shoe": "socket://127.0.0.1:9", "shuffler": "socket://127.0.0.1:9",
                        "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
            "journal": journal, "signing": signing(), "commands": commands()}


def start(tmp_path: Path, accept: str | None = None) -> TableService:
    service = TableService(parse_config(config(tmp_path, accept)))
    service.begin()
    return service


def announcements(service: TableService) -> list[dict[str, Any]]:
    return [p for p in (json.loads(e.payload) for e in service.journal.pending(10**6))
            if p.get("event") == "journal_started"]


def deal_some(service: TableService, n: int) -> None:
    for i in range(n):  # results as the table records them
        service.journal.record_result(f"r-{i}-{service.journal.last_seq()}",
                                      {"type": "result", "n": i}, service.topics["results"],
                                      record={})
    service.save_identity()


async def test_a_new_journal_is_announced(tmp_path: Path) -> None:
    s = start(tmp_path)
    [news] = announcements(s)
    assert news["journal_id"] == s.journal.journal_id and news["msg_seq"] == 1
    assert news["previous_journal_id"] is None
    s.journal.close()
    again = start(tmp_path)  # the same journal: nothing new to announce
    assert announcements(again) == [news]


async def test_a_missing_journal_is_refused_with_the_reason(tmp_path: Path) -> None:
    s = start(tmp_path)
    deal_some(s, 3)
    had = s.journal.journal_id
    s.journal.close()
    (tmp_path / "journal.db").unlink()
    with pytest.raises(JournalIdentityError, match=f"the journal is missing; this table had "
                                                    f"journal {had} .*3 results"):
        TableService(parse_config(config(tmp_path)))
    assert not (tmp_path / "journal.db").exists()  # nothing was created in its place


async def test_a_replaced_journal_is_refused(tmp_path: Path) -> None:
    s = start(tmp_path)
    s.journal.close()
    other = tmp_path / "other"
    other.mkdir()
    Journal(other / "journal.db").close()
    shutil.copy(other / "journal.db", tmp_path / "journal.db")
    with pytest.raises(JournalIdentityError, match="the journal was replaced"):
        TableService(parse_config(config(tmp_path)))


async def test_a_restored_backup_is_refused_and_accepted_only_under_a_new_journal_id(
        tmp_path: Path) -> None:
    s = start(tmp_path)
    deal_some(s, 5)
    s.journal.close()
    shutil.copy(tmp_path / "journal.db", tmp_path / "backup.db")
    s = start(tmp_path)
    deal_some(s, 3)  # results 6-8, published
    old_id = s.journal.journal_id
    s.journal.close()
    shutil.copy(tmp_path / "backup.db", tmp_path / "journal.db")
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"journal.db{suffix}").unlink(missing_ok=True)
    with pytest.raises(JournalIdentityError, match="older than what was published"):
        TableService(parse_config(config(tmp_path)))
    s = start(tmp_path, accept="restored last night's backup after a disk failure")
    assert s.journal.journal_id != old_id  # seq 6 again, but never taken for the old 6
    [*_, news] = announcements(s)
    assert news["previous_journal_id"] == old_id
    assert news["accepted"] == "restored last night's backup after a disk failure"
    assert news["journal_id"] == s.journal.journal_id
    # its numbers go on from the backup's, and nothing before them is replayed as its own
    assert news["msg_seq"] == s.journal.first_msg_seq() > 1
    s.journal.close()
    start(tmp_path).journal.close()  # and from now on it is this table's journal


async def test_tabled_run_exits_2_with_the_reason(tmp_path: Path) -> None:
    s = start(tmp_path)
    s.journal.close()
    (tmp_path / "journal.db").unlink()
    cfg = tmp_path / "table.toml"
    cfg.write_text(to_toml(config(tmp_path)), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "daemon", "run", "--config", str(cfg)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "the journal is missing" in proc.stderr and "accept_new" in proc.stderr


async def retained(port: int, topic: str) -> dict[str, Any]:
    async with aiomqtt.Client("127.0.0.1", port) as c:
        await c.subscribe(topic, qos=1)
        async with asyncio.timeout(10):
            async for m in c.messages:
                body: dict[str, Any] = json.loads(bytes(m.payload))
                return body
    raise AssertionError("no retained message")


def restore(backup: Path, journal: Path) -> None:
    """Put a backup of the journal and its identity file back, as an operator would."""
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    shutil.copy(backup / journal.name, journal)
    ident = identity_path(journal)
    shutil.copy(backup / ident.name, ident)


async def test_issue_25_build_1_a_journal_behind_the_brokers_snapshot_is_refused(
        tmp_path: Path) -> None:
    """v2 started without a word on a journal restored together with its identity file
    (the operations guide says to back them up together), and numbered its next result
    seq 5 again under the same journal_id. The table's retained snapshot on the broker
    knew the journal had gone further: now it is compared at start, before anything is
    published. Through the real daemon and a real Mosquitto."""
    async with sim_table(tmp_path) as t:
        journal = t.rig.journal or t.rig.work / "journal.db"
        dealer = t.rig.dealer()
        async with dealer.session():
            for _ in range(2):
                await dealer.deal_round()
        assert t.daemon.stop(30) == 0
        backup = tmp_path / "backup"
        backup.mkdir()
        shutil.copy(journal, backup / journal.name)
        shutil.copy(identity_path(journal), backup / identity_path(journal).name)

        t.daemon.start()
        dealer = t.rig.dealer()
        async with dealer.session():
            for _ in range(3):
                await dealer.deal_round()
            await until(lambda: any(b.get("last_result_seq") == 5
                                    for b in t.observer.of("snapshot")))
        assert t.daemon.stop(30) == 0
        snapshot = await retained(t.broker.port, f"{t.rig.base}/snapshot")
        old_id = snapshot["journal_id"]
        assert snapshot["last_result_seq"] == 5

        restore(backup, journal)
        t.daemon.start()
        assert t.daemon.proc is not None
        assert t.daemon.proc.wait(30) == 2
        log = t.daemon.log()
        assert "behind what the broker saw" in log
        assert f"journal {old_id} ends at message" in log and "result 2;" in log
        assert f"of message {snapshot['as_of_msg_seq']}, result 5" in log
        assert "accept_new" in log

        # Accepted: a new journal_id, announced with the one it replaces and its numbers.
        accepting = t.rig.config()
        accepting["journal"]["accept_new"] = "restored last night's backup"
        t.daemon = DaemonProcess(accepting, t.rig.work)
        t.daemon.start()
        await until(lambda: any(e.get("event") == "journal_started" and
                                e.get("previous_journal_id") == old_id
                                for e in t.observer.of("events")), 30)
        [news] = [e for e in t.observer.of("events") if e.get("event") == "journal_started"
                  and e.get("previous_journal_id") == old_id]
        assert news["journal_id"] != old_id
        assert news["accepted"] == "restored last night's backup"
        assert news["previous_msg_seq"] == snapshot["as_of_msg_seq"]
        assert news["previous_seq"] == 5
        t.rig.keyring.verify(news)
