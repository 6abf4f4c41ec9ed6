"""Command parsing: each malformed command gets a specific error and changes nothing."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon.commands import MAX_PAYLOAD, Command, CommandError, parse_command, reply


def test_valid_commands() -> None:
    assert parse_command("open_betting", b'{"id": "c1"}') == Command("open_betting", "c1", {},
                                                                     {"id": "c1"})
    body = {"id": "c2", "reason": " dropped card ", "issued_at": "2026-11-26T10:00:00Z",
            "sig": {"alg": "Ed25519"}}
    assert parse_command("void_round", json.dumps(body).encode()) == Command(
        "void_round", "c2", {"reason": "dropped card"}, body)


@pytest.mark.parametrize(("name", "payload", "code", "message"), [
    ("open_betting", b"{not json", "bad_payload", "payload is not JSON"),
    ("open_betting", b"\xff\xfe", "bad_payload", "payload is not JSON"),
    ("open_betting", b"[1, 2]", "bad_payload", "must be a JSON object"),
    ("open_betting", b"{}", "bad_payload", "'id' must be a string"),
    ("open_betting", b'{"id": 5}', "bad_payload", "'id' must be a string"),
    ("open_betting", b"{" + b" " * MAX_PAYLOAD + b"}", "bad_payload", "exceeds 4096"),
    ("launch", b'{"id": "c"}', "unknown_command", "unknown command 'launch'"),
    ("void_round", b'{"id": "c"}', "bad_argument", "void_round needs 'reason'"),
    ("void_round", b'{"id": "c", "reason": ""}', "bad_argument",
     "void_round.reason must be a non-empty string"),
    # Who asked comes from the signature, never from the payload.
    ("end_shoe", b'{"id": "c", "by": "sup-12"}', "bad_argument", "end_shoe takes no 'by'"),
    ("open_betting", b'{"id": "c", "force": true}', "bad_argument",
     "open_betting takes no 'force'"),
])
def test_bad_commands(name: str, payload: bytes, code: str, message: str) -> None:
    with pytest.raises(CommandError) as err:
        parse_command(name, payload)
    assert err.value.code == code and message in str(err.value)


def test_error_reply_echoes_the_id() -> None:
    with pytest.raises(CommandError) as err:
        parse_command("launch", b'{"id": "c9"}')
    r = reply(err.value.command_id, err.value.name, ok=False, state="idle", error=err.value)
    assert r == {"type": "reply", "id": "c9", "command": "launch", "ok": False, "state": "idle",
                 "error": {"code": "unknown_command",
                           "message": "unknown command 'launch'; known: open_betting, "
                                      "close_betting, void_round, close_insurance, "
                                      "reset_dealing_device, confirm_order, reconstruct_deal, "
                                      "new_shoe, end_shoe, status"}}


@given(st.text(max_size=20), st.binary(max_size=5000))
def test_arbitrary_input_only_raises_command_error(name: str, payload: bytes) -> None:
    with contextlib.suppress(CommandError):
        parse_command(name, payload)


@given(st.sampled_from(["void_round", "end_shoe", "open_betting"]),
       st.dictionaries(st.text(max_size=8), st.one_of(st.none(), st.integers(), st.text(),
                                                      st.lists(st.integers())), max_size=5))
def test_arbitrary_json_objects_only_raise_command_error(name: str, body: dict[str, object]
                                                         ) -> None:
    with contextlib.suppress(CommandError):
        parse_command(name, json.dumps(body).encode())
