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
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": principals if principals is not None else commands(),
    }))


def journal(s: TableService, kind: str) -> list[dict[str, Any]]:
    return [r.body for r in s.journal.records() if r.kind == kind]


async def test_void_round_records_the_signing_principal(tmp_path: Path) -> None:
    s = service(tmp_path)
    rid = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["round_id"]
    answer = s.execute("void_round", signed("ts-1", "void_round", "c2", reason="dice fell off",
                                            round_id=rid))
    assert answer["ok"] and s.table.state == "idle"
    assert journal(s, "command")[-1] == {"name": "void_round", "id": "c2", "by": "pit-boss",
                                         "issued_at": journal(s, "command")[-1]["issued_at"],
                                         "reason": "dice fell off", "round_id": rid}
    void = json.loads(s.journal.pending()[-2].payload)  # the result, before its reply
    assert void["status"] == "void"
    assert void["void_reason"]["detail"] == "voided by pit-boss: dice fell off"


async def test_tai_sai_5_6_the_pit_voids_under_the_clause_it_saw(tmp_path: Path) -> None:
    s = service(tmp_path)
    rid = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["round_id"]
    wrong = s.execute("void_round", signed("ts-1", "void_round", "c2", reason="x",
                                           irregularity="card_not_of_set", round_id=rid))
    assert wrong["error"]["code"] == "bad_argument" and s.table.state == "betting_open"
    assert "one of: technical_interruption_no_outcome, too_few_tumbles" in \
        wrong["error"]["message"]
    answer = s.execute("void_round", signed("ts-1", "void_round", "c3", reason="a chipped die",
                                            irregularity="damaged_dice", round_id=rid))
    assert answer["ok"] and s.table.state == "idle"
    assert journal(s, "command")[-1]["irregularity"] == "damaged_dice"
    void = json.loads(s.journal.pending()[-2].payload)
    assert (void["void_reason"]["code"], void["void_reason"]["clause"]) == ("damaged_dice",
                                                                            "5.6")


async def test_a_denied_command_gets_an_error_and_an_alert_and_changes_nothing(
        tmp_path: Path) -> None:
    s = service(tmp_path)
    rid = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["round_id"]
    before = (s.table.state, len(journal(s, "command")))
    attempts = {
        "forged": signed("ts-1", "void_round", "f1", key=STRANGER_KEY, reason="x", round_id=rid),
        "replayed": signed("ts-1", "open_betting", "c1"),
        "stale": signed("ts-1", "void_round", "f3", at=time.time() - 3600, reason="x",
                        round_id=rid),
        "unsigned": b'{"id": "f4", "reason": "x", "round_id": "%s"}' % rid.encode(),
    }
    for what, payload in attempts.items():
        name = "open_betting" if what == "replayed" else "void_round"
        answer = s.execute(name, payload)
        assert answer["ok"] is False and answer["error"]["code"] == "denied", what
    assert (s.table.state, len(journal(s, "command"))) == before
    # Unauthenticated: counted, not journalled one by one; one alert says what came in.
    assert s.untrusted.counts == {"denied": 4}
    alerts = journal(s, "alert")
    assert [a["code"] for a in alerts] == ["command_denied"]
    assert "signature rejected" in alerts[0]["detail"]
    assert not journal(s, "command_refused")


async def test_issue_12_1_a_refused_command_is_journalled_and_never_runs_later(
        tmp_path: Path) -> None:
    """A signed close_betting refused (the table idle) and an open_betting refused (a round
    open): after a restart, with the state now right for them, replays are still refused."""
    s = service(tmp_path)
    early = signed("ts-1", "close_betting", "e1", round_id="ts-1-guess")
    assert s.execute("close_betting", early)["error"]["code"] == "wrong_state"
    rid = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["round_id"]
    second = signed("ts-1", "open_betting", "e2")
    assert s.execute("open_betting", second)["error"]["code"] == "wrong_state"
    assert [(r["id"], r["code"]) for r in journal(s, "command_refused")] == [
        ("e1", "wrong_state"), ("e2", "wrong_state")]
    answer = s.execute("void_round", signed("ts-1", "void_round", "c2", reason="x",
                                            round_id=rid))
    assert answer["ok"] and s.table.state == "idle"
    replay = s.execute("open_betting", second)  # the same process: not "accepted"
    assert replay["error"]["code"] == "denied"
    assert "was refused (wrong_state)): a replay" in replay["error"]["message"]
    s.journal.close()

    restarted = service(tmp_path)
    restarted.authority.remember_journal(restarted.journal.records())
    answer = restarted.execute("open_betting", second)
    assert answer["error"]["code"] == "denied" and "a replay" in answer["error"]["message"]
    assert restarted.table.state == "idle"


async def test_issue_12_1_a_command_for_another_round_is_refused(tmp_path: Path) -> None:
    s = service(tmp_path)
    first = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))["round_id"]
    assert s.execute("void_round", signed("ts-1", "void_round", "c2", reason="x",
                                          round_id=first))["ok"]
    second = s.execute("open_betting", signed("ts-1", "open_betting", "c3"))["round_id"]
    assert second != first
    stale = s.execute("close_betting", signed("ts-1", "close_betting", "c4", round_id=first))
    assert stale["error"]["code"] == "wrong_round" and s.table.state == "betting_open"
    assert f"the open round is {second!r}" in stale["error"]["message"]
    assert journal(s, "command_refused")[-1]["code"] == "wrong_round"
    assert s.execute("close_betting", signed("ts-1", "close_betting", "c5",
                                             round_id=second))["ok"]


async def test_a_table_without_principals_takes_no_commands(tmp_path: Path) -> None:
    s = service(tmp_path, principals={})
    answer = s.execute("open_betting", signed("ts-1", "open_betting", "c1"))
    assert answer["error"]["code"] == "denied"
    assert "no principals are configured" in answer["error"]["message"]
    assert s.table.state == "idle"


async def test_issue_25_a_command_whose_text_is_not_unicode_is_refused_not_raised(
        tmp_path: Path) -> None:
    """Valid JSON can still hold a lone surrogate (``"\\ud800"``), which no signature or
    reply can be made over: v2 raised UnicodeEncodeError out of the command path (in the
    signature check, or in the spawned task that signs the reply). It is a bad payload."""
    s = service(tmp_path)
    for payload in (b'{"id": "\\ud800", "issued_at": "2026-01-01T00:00:00Z", "sig": "x"}',
                    b'{"id": "ok-1", "issued_at": "2026-01-01T00:00:00Z", "sig": "\\udfff"}'):
        answer = s.execute("open_betting", payload)
        assert answer["ok"] is False and answer["error"]["code"] == "bad_payload", answer
        assert answer["id"] is None or answer["id"] == "ok-1"
        json.dumps(answer).encode("utf-8")  # the reply itself can be signed and sent
    assert s.table.state == "idle"
