"""Signatures on published payloads (daemon/security/signing.py) and on commands
(daemon/security/authority.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from hypothesis import given
from hypothesis import strategies as st

from daemon.security.authority import CommandAuthority, sign_command
from daemon.security.commands import Command, CommandError, parse_command
from daemon.security.principal import Principal
from daemon.security.signing import (
    KeyFileError,
    Keyring,
    SignatureError,
    Signer,
    canonical,
    key_id,
    parse_public_key,
)
from tests.keys import STRANGER_KEY, SUPERVISOR_KEY, TABLE_KEY, TABLE_KEYRING

RESULT = {"type": "result", "seq": 12, "winner": "banker", "table": "bac-07",
          "bets": [{"bet": "tiger", "pays": "12:1"}], "note": "Tai Sai ♦ ünïcode",
          "replayed": False}


def test_a_signed_payload_verifies_and_names_its_key() -> None:
    signed = Signer(TABLE_KEY).sign(RESULT)
    assert signed["sig"]["kid"] == key_id(TABLE_KEY.public_key())
    assert TABLE_KEYRING.verify(json.loads(json.dumps(signed))) == signed["sig"]["kid"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.update(winner="player"), "bad signature"),
    (lambda p: p["bets"][0].update(pays="13:1"), "bad signature"),
    (lambda p: p.update(extra=1), "bad signature"),
    (lambda p: p.pop("seq"), "bad signature"),
    (lambda p: p.pop("sig"), "unsigned"),
    (lambda p: p["sig"].update(alg="HS256"), "unsupported signature algorithm 'HS256'"),
    (lambda p: p["sig"].update(kid="0000000000000000"), "unknown key '0000000000000000'"),
    (lambda p: p["sig"].update(value="***"), "not base64"),
    (lambda p: p.update(seq=12.0), "float 12.0 cannot be signed"),
])
def test_tampering_is_detected(change: Any, message: str) -> None:
    signed = json.loads(Signer(TABLE_KEY).seal(RESULT))
    change(signed)
    with pytest.raises(SignatureError, match=message):
        TABLE_KEYRING.verify(signed)


def test_a_key_of_another_table_is_not_trusted() -> None:
    forged = Signer(STRANGER_KEY).sign(RESULT)
    with pytest.raises(SignatureError, match="unknown key"):
        TABLE_KEYRING.verify(forged)


def test_rotation_trusts_old_and_new_keys_by_kid() -> None:
    ring = Keyring.of([TABLE_KEY.public_key(), STRANGER_KEY.public_key()])
    assert ring.verify(Signer(STRANGER_KEY).sign(RESULT)) == key_id(STRANGER_KEY.public_key())
    assert ring.verify(Signer(TABLE_KEY).sign(RESULT)) == key_id(TABLE_KEY.public_key())


def test_canonical_form_is_rfc8785_for_our_values() -> None:
    assert canonical({"b": 1, "a": [True, None, "é\n"], "sig": {}}) == \
        '{"a":[true,null,"é\\n"],"b":1}'.encode()
    with pytest.raises(TypeError, match="float"):
        canonical({"x": 0.1})


def test_a_published_signature_cannot_pass_as_a_command() -> None:
    published = Signer(SUPERVISOR_KEY).sign({"id": "c1", "issued_at": "2026-11-26T10:00:00Z"})
    authority = _authority(time.time())
    with pytest.raises(CommandError, match="bad signature"):
        authority.authorize(_command("open_betting", published))


def test_public_key_forms() -> None:
    with pytest.raises(KeyFileError, match="32 bytes"):
        parse_public_key("AAAA")
    pem = SUPERVISOR_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert pem.startswith("-----BEGIN PUBLIC KEY-----\n")
    assert parse_public_key(pem) == SUPERVISOR_KEY.public_key()


@given(st.dictionaries(st.text(max_size=6), st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=10), st.floats(),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3)), max_size=6))
def test_verify_of_arbitrary_objects_only_raises_signature_error(body: dict[str, Any]) -> None:
    with pytest.raises(SignatureError):
        TABLE_KEYRING.verify(body)


# -- commands -------------------------------------------------------------------------


NOW = 1_800_000_000.0
R = "bac-07-r1"  # the open round a round-scoped command names


def _authority(now: float, allow: frozenset[str] | None = None) -> CommandAuthority:
    from daemon.security.commands import COMMANDS  # noqa: PLC0415

    boss = Principal("pit-boss", SUPERVISOR_KEY.public_key(), allow or frozenset(COMMANDS))
    return CommandAuthority("bac-07", {"pit-boss": boss}, 120, lambda: now)


def _command(name: str, body: dict[str, Any]) -> Command:
    return parse_command(name, json.dumps(body).encode())


def test_a_signed_command_names_its_principal() -> None:
    body = sign_command(SUPERVISOR_KEY, "bac-07", "void_round", "c1", NOW, reason="x", round_id=R)
    assert _authority(NOW).authorize(_command("void_round", body)).name == "pit-boss"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: sign_command(STRANGER_KEY, "bac-07", "void_round", "c1", NOW, reason="x",
                          round_id=R),
     "signed by an unknown key"),
    (lambda: {**sign_command(SUPERVISOR_KEY, "bac-07", "void_round", "c1", NOW, reason="x",
                             round_id=R),
              "reason": "y"}, "bad signature"),
    (lambda: sign_command(SUPERVISOR_KEY, "bac-08", "void_round", "c1", NOW, reason="x",
                          round_id=R),
     "bad signature"),  # signed for another table
    (lambda: sign_command(SUPERVISOR_KEY, "bac-07", "end_shoe", "c1", NOW, reason="x",
                              round_id=R),
     "bad signature"),  # signed as another command
    (lambda: {"id": "c1", "reason": "x", "round_id": R}, "unsigned"),
    (lambda: sign_command(SUPERVISOR_KEY, "bac-07", "void_round", "c1", NOW - 121, reason="x",
                              round_id=R),
     "issued_at is 121 s in the past by the table's clock \\(-121 s\\)"),
    (lambda: sign_command(SUPERVISOR_KEY, "bac-07", "void_round", "c1", NOW + 500, reason="x",
                              round_id=R),
     "issued_at is 500 s in the future by the table's clock \\(\\+500 s\\)"),
])
def test_forged_altered_misdirected_or_stale_commands_are_denied(make: Any, message: str
                                                                 ) -> None:
    with pytest.raises(CommandError, match=message) as err:
        _authority(NOW).authorize(_command("void_round", make()))
    assert err.value.code == "denied" and err.value.command_id == "c1"


def test_a_principal_may_send_only_what_it_is_allowed() -> None:
    authority = _authority(NOW, frozenset({"open_betting"}))
    body = sign_command(SUPERVISOR_KEY, "bac-07", "void_round", "c1", NOW, reason="x", round_id=R)
    with pytest.raises(CommandError, match="pit-boss may not send void_round"):
        authority.authorize(_command("void_round", body))


def test_a_replayed_command_is_denied_even_across_a_restart() -> None:
    body = sign_command(SUPERVISOR_KEY, "bac-07", "open_betting", "c1", NOW)
    authority = _authority(NOW)
    authority.authorize(_command("open_betting", body))
    with pytest.raises(CommandError, match=r"already used .*: a replay"):
        authority.authorize(_command("open_betting", body))
    restarted = _authority(NOW + 5)
    restarted.remember([("c1", NOW, "accepted")])
    with pytest.raises(CommandError, match="was accepted\\): a replay"):
        restarted.authorize(_command("open_betting", body))


def test_issue_12_5_a_refused_id_replayed_is_not_called_accepted() -> None:
    body = sign_command(SUPERVISOR_KEY, "bac-07", "open_betting", "c1", NOW)
    authority = _authority(NOW)
    authority.authorize(_command("open_betting", body))
    authority.settle("c1", "refused (wrong_state)")
    with pytest.raises(CommandError) as err:
        authority.authorize(_command("open_betting", body))
    assert "accepted" not in str(err.value)
    assert "was refused (wrong_state)): a replay" in str(err.value)


def test_no_principals_means_no_commands() -> None:
    authority = CommandAuthority("bac-07", {}, 120, lambda: NOW)
    body = sign_command(SUPERVISOR_KEY, "bac-07", "status", "c1", NOW)
    with pytest.raises(CommandError, match="no principals are configured"):
        authority.authorize(_command("status", body))
