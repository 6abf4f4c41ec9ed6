"""Issue 28: commands signed by a supervisor's security key (WebAuthn), verified by the
table itself. Each check the table makes on an assertion is shown to refuse: a command
altered after signing, another origin or rp id, no user presence, the wrong ceremony, a
sign count that did not go up (also after a restart), a replayed assertion, another
table's credential and a revoked one."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.config import parse_config
from daemon.service import TableService
from daemon.timestamps import iso
from tests.keys import commands, signed, signing
from tests.passkey import ORIGIN, RP_ID, SoftKey

TABLE = "ts-1"
WEBAUTHN = {"rp_id": RP_ID, "origins": [ORIGIN]}


def config(tmp_path: Path, principals: dict[str, Any]) -> dict[str, Any]:
    return {
        "table": {"id": TABLE, "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(),
        "commands": {"principals": {**commands()["principals"], **principals},
                     "webauthn": WEBAUTHN},
    }


def service(tmp_path: Path, principals: dict[str, Any]) -> TableService:
    return TableService(parse_config(config(tmp_path, principals)))


def body(cid: str, **args: str) -> dict[str, Any]:
    return {"id": cid, "issued_at": iso(time.time()), **args}


def journal(s: TableService, kind: str) -> list[dict[str, Any]]:
    return [r.body for r in s.journal.records() if r.kind == kind]


@pytest.fixture
def alice() -> SoftKey:
    return SoftKey()


async def test_a_command_signed_by_an_enrolled_security_key_is_carried_out(
        tmp_path: Path, alice: SoftKey) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    answer = s.execute("open_betting", alice.sign(TABLE, "open_betting", body("w1")))
    assert answer["ok"], answer
    rid = answer["round_id"]
    void = s.execute("void_round", alice.sign(TABLE, "void_round",
                                              body("w2", reason="dice fell", round_id=rid)))
    assert void["ok"] and s.table.state == "idle"
    record = journal(s, "command")[-1]
    # Who: the credential's name; how: the credential and its count, for a restart.
    assert (record["by"], record["credential"], record["sign_count"]) == \
        ("alice", alice.principal()["credential_id"], 2)
    assert json.loads(s.journal.pending()[-2].payload)["void_reason"]["detail"] == \
        "voided by alice: dice fell"


def altered(payload: bytes) -> bytes:
    cmd = json.loads(payload)
    cmd["reason"] = cmd["reason"].replace("fell", "felt")
    return json.dumps(cmd).encode()


@pytest.mark.parametrize("what", ["altered", "origin", "rp_id", "no_user_presence",
                                  "create_ceremony", "count_not_up", "other_name"])
async def test_an_assertion_that_fails_a_check_is_denied(tmp_path: Path, alice: SoftKey,
                                                         what: str) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    rid = s.execute("open_betting", alice.sign(TABLE, "open_betting", body("w1")))["round_id"]
    b = body("w2", reason="dice fell", round_id=rid)
    cases: dict[str, dict[str, Any]] = {"altered": {}, "origin": {"origin": "http://localhost:9999"},
                           "rp_id": {"rp_id": "example.com"},
                           "no_user_presence": {"flags": 0x00},
                           "create_ceremony": {"kind": "webauthn.create"},
                           "count_not_up": {"count": 1}, "other_name": {}}
    how = cases[what]
    payload = alice.sign(TABLE, "void_round", b, **how)
    if what == "altered":
        payload = altered(payload)
    # Signed as a void, sent as a hold of the same round: the command name is signed.
    name = "hold_round" if what == "other_name" else "void_round"
    answer = s.execute(name, payload)
    assert answer["ok"] is False and answer["error"]["code"] == "denied", answer
    assert "WebAuthn assertion rejected" in answer["error"]["message"]
    assert s.table.state == "betting_open" and s.untrusted.counts["denied"] == 1


async def test_a_replayed_assertion_is_denied(tmp_path: Path, alice: SoftKey) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    payload = alice.sign(TABLE, "open_betting", body("w1"))
    assert s.execute("open_betting", payload)["ok"]
    s.execute("void_round", alice.sign(TABLE, "void_round", body(
        "w2", reason="x", round_id=s.table.round.round_id)))  # type: ignore[union-attr]
    # Replayed whole: its sign count has not gone up (checked before its used id).
    again = s.execute("open_betting", payload)
    assert again["error"]["code"] == "denied" and "sign count" in again["error"]["message"]
    # The same assertion under a new id: the challenge no longer matches.
    cmd = json.loads(payload)
    cmd["id"] = "w9"
    renamed = s.execute("open_betting", json.dumps(cmd).encode())
    assert renamed["error"]["code"] == "denied"
    assert "challenge" in renamed["error"]["message"]
    assert s.table.state == "idle"


async def test_another_tables_credential_is_denied(tmp_path: Path, alice: SoftKey) -> None:
    bob = SoftKey()  # enrolled at another table, not this one
    s = service(tmp_path, {"alice": alice.principal()})
    answer = s.execute("open_betting", bob.sign(TABLE, "open_betting", body("w1")))
    assert answer["error"]["code"] == "denied"
    assert "unknown credential" in answer["error"]["message"]
    # Alice's assertion made for another table's id is no command here either.
    other = s.execute("open_betting", alice.sign("ts-2", "open_betting", body("w2")))
    assert other["error"]["code"] == "denied" and s.table.state == "idle"


async def test_a_revoked_credential_is_denied_from_the_next_command(
        tmp_path: Path, alice: SoftKey) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    assert s.execute("open_betting", alice.sign(TABLE, "open_betting", body("w1")))["ok"]
    plan = s.reconfigure(parse_config(config(tmp_path, {})))
    assert plan.changed == ["commands.principals"]
    answer = s.execute("void_round", alice.sign(TABLE, "void_round", body(
        "w2", reason="x", round_id=s.table.round.round_id)))  # type: ignore[union-attr]
    assert answer["error"]["code"] == "denied" and s.table.state == "betting_open"
    assert journal(s, "config_reloaded")[-1]["revoked"] == ["alice"]


async def test_a_sign_count_is_remembered_across_a_restart(tmp_path: Path,
                                                           alice: SoftKey) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    for i in range(3):
        assert s.execute("status", alice.sign(TABLE, "status", body(f"w{i}")))["ok"]
    s.journal.close()
    again = service(tmp_path, {"alice": alice.principal()})
    again.authority.remember_journal(again.journal.records())
    # A cloned authenticator still at count 2: refused after the restart too.
    stale = again.execute("status", alice.sign(TABLE, "status", body("w7"), count=2))
    assert stale["error"]["code"] == "denied" and "sign count" in stale["error"]["message"]
    assert again.execute("status", alice.sign(TABLE, "status", body("w8")))["ok"]


async def test_the_ed25519_path_stays_beside_webauthn(tmp_path: Path,
                                                      alice: SoftKey) -> None:
    s = service(tmp_path, {"alice": alice.principal()})
    assert s.execute("open_betting", signed(TABLE, "open_betting", "e1"))["ok"]
