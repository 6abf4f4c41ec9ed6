"""Commands through the service: who asked is recorded, and a denied command changes nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from daemon.config import parse_config
from daemon.service import TableService
from tests.keys import STRANGER_KEY, commands, signed, signing


def service(tmp_path: Path, principals: dict[str, Any] | None = None) -> TableService:
    return TableService(parse_config({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9"},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": principals if principals is not None else commands(),
    }))


def journal(s: TableService, kind: str) -> list[dict[str, Any]]:
    return [r.body for r in s.journal.records() if r.kind == kind]


async def test_void_round_records_the_signing_principal(tmp_path: Path) -> None:
    s = service(tmp_path)
    assert s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["ok"]
    answer = s.execute("void_round", signed("ts-1", "void_round", "c2", reason="dice fell off"))
    assert answer["ok"] and s.table.state == "idle"
    assert journal(s, "command")[-1] == {"name": "void_round", "id": "c2", "by": "pit-boss",
                                         "issued_at": journal(s, "command")[-1]["issued_at"],
                                         "reason": "dice fell off"}
    void = json.loads(s.journal.pending()[-2].payload)  # the result, before its reply
    assert void["status"] == "void"
    assert void["void_reason"]["detail"] == "voided by pit-boss: dice fell off"


async def test_tai_sai_5_6_the_pit_voids_under_the_clause_it_saw(tmp_path: Path) -> None:
    s = service(tmp_path)
    assert s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["ok"]
    wrong = s.execute("void_round", signed("ts-1", "void_round", "c2", reason="x",
                                           irregularity="card_not_of_set"))
    assert wrong["error"]["code"] == "bad_argument" and s.table.state == "betting_open"
    assert "one of: technical_interruption_no_outcome, too_few_tumbles" in \
        wrong["error"]["message"]
    answer = s.execute("void_round", signed("ts-1", "void_round", "c3", reason="a chipped die",
                                            irregularity="damaged_dice"))
    assert answer["ok"] and s.table.state == "idle"
    assert journal(s, "command")[-1]["irregularity"] == "damaged_dice"
    void = json.loads(s.journal.pending()[-2].payload)
    assert (void["void_reason"]["code"], void["void_reason"]["clause"]) == ("damaged_dice",
                                                                            "5.6")


async def test_a_denied_command_gets_an_error_and_an_alert_and_changes_nothing(
        tmp_path: Path) -> None:
    s = service(tmp_path)
    assert s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["ok"]
    before = (s.table.state, len(journal(s, "command")))
    attempts = {
        "forged": signed("ts-1", "void_round", "f1", key=STRANGER_KEY, reason="x"),
        "replayed": signed("ts-1", "open_betting", "c1"),
        "stale": signed("ts-1", "void_round", "f3", at=time.time() - 3600, reason="x"),
        "unsigned": b'{"id": "f4", "reason": "x"}',
    }
    for what, payload in attempts.items():
        name = "open_betting" if what == "replayed" else "void_round"
        answer = s.execute(name, payload)
        assert answer["ok"] is False and answer["error"]["code"] == "denied", what
    assert (s.table.state, len(journal(s, "command"))) == before
    alerts = journal(s, "alert")
    assert [a["code"] for a in alerts] == ["command_denied"] * 4
    assert "a replay" in alerts[1]["detail"]


async def test_a_table_without_principals_takes_no_commands(tmp_path: Path) -> None:
    s = service(tmp_path, principals={})
    answer = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))
    assert answer["error"]["code"] == "denied"
    assert "no principals are configured" in answer["error"]["message"]
    assert s.table.state == "idle"
