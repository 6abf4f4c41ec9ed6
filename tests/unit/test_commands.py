"""Command parsing: each malformed command gets a specific error and changes nothing."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon.security.commands import (
    COMMANDS,
    MAX_ECHO,
    MAX_MESSAGE,
    MAX_PAYLOAD,
    TABLE_SCOPED,
    Command,
    CommandError,
    check_round,
    parse_command,
    reply,
    round_scoped,
)


def test_valid_commands() -> None:
    assert parse_command("open_betting", b'{"id": "c1"}') == Command("open_betting", "c1", {},
                                                                     {"id": "c1"})
    body = {"id": "c2", "reason": " dropped card ", "issued_at": "2026-11-26T10:00:00Z",
            "round_id": "r1", "sig": {"alg": "Ed25519"}}
    assert parse_command("void_round", json.dumps(body).encode()) == Command(
        "void_round", "c2", {"reason": "dropped card", "round_id": "r1"}, body)


@pytest.mark.parametrize(("name", "payload", "code", "message"), [
    ("open_betting", b"{not json", "bad_payload", "payload is not JSON"),
    ("open_betting", b"\xff\xfe", "bad_payload", "payload is not JSON"),
    ("open_betting", b"[1, 2]", "bad_payload", "must be a JSON object"),
    ("open_betting", b"{}", "bad_payload", "'id' must be a string"),
    ("open_betting", b'{"id": 5}', "bad_payload", "'id' must be a string"),
    ("open_betting", b"{" + b" " * MAX_PAYLOAD + b"}", "bad_payload", "exceeds 4096"),
    ("launch", b'{"id": "c"}', "unknown_command", "unknown command 'launch'"),
    ("void_round", b'{"id": "c", "round_id": "r1"}', "bad_argument",
     "void_round needs 'reason'"),
    ("void_round", b'{"id": "c", "reason": "x"}', "bad_argument", "void_round needs 'round_id'"),
    ("close_betting", b'{"id": "c"}', "bad_argument", "close_betting needs 'round_id'"),
    ("close_betting", b'{"id": "c", "round_id": 7}', "bad_argument",
     "close_betting.round_id must be a non-empty string of at most 64"),
    ("void_round", b'{"id": "c", "reason": "", "round_id": "r1"}', "bad_argument",
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
                 "round_id": None,
                 "error": {"code": "unknown_command",
                           "message": "unknown command 'launch'; known: open_betting, "
                                      "close_betting, void_round, close_insurance, "
                                      "reset_dealing_device, confirm_order, reconstruct_deal, "
                                      "hold_round, confirm_result, "
                                      "new_shoe, end_shoe, status, throw_again, "
                                      "declare_squeeze, void_settled_round"}}


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


def test_issue_12_1_round_scoped_commands_name_the_open_round() -> None:
    body = json.dumps({"id": "c1", "round_id": "r1"}).encode()
    cmd = parse_command("close_betting", body)
    check_round(cmd, "r1")  # the open round: fine
    with pytest.raises(CommandError) as err:
        check_round(cmd, "r2")
    assert err.value.code == "wrong_round" and "the open round is 'r2'" in str(err.value)
    with pytest.raises(CommandError) as err:
        check_round(cmd, None)
    assert err.value.code == "wrong_state" and "no round is open" in str(err.value)
    check_round(parse_command("open_betting", b'{"id": "c2"}'), None)  # table-scoped
    # A command nobody listed as table-scoped is round-scoped: a new Pit command is too.
    assert set(COMMANDS) - TABLE_SCOPED == {"close_betting", "void_round", "close_insurance",
                                            "reset_dealing_device", "confirm_order",
                                            "reconstruct_deal", "throw_again",
                                            "declare_squeeze", "hold_round"}
    assert round_scoped("some_future_pit_command")


def test_issue_12_5_an_oversized_command_echoes_its_id() -> None:
    big = json.dumps({"id": "big-1", "pad": "x" * 1_000_000}).encode()
    with pytest.raises(CommandError) as err:
        parse_command("open_betting", big)
    assert err.value.code == "bad_payload" and err.value.command_id == "big-1"
    with pytest.raises(CommandError) as err:  # not JSON: no id to echo
        parse_command("open_betting", b"{" * (MAX_PAYLOAD + 1))
    assert err.value.command_id is None


@given(st.text(min_size=0, max_size=70_000), st.binary(max_size=200))
def test_issue_12_4_nothing_from_outside_is_echoed_unbounded(name: str, payload: bytes) -> None:
    try:
        parse_command(name, payload)
    except CommandError as exc:
        r = reply(exc.command_id, exc.name, ok=False, state="idle", error=exc)
        assert len(json.dumps(r)) < 1000


def test_issue_12_4_a_60000_character_command_name_is_not_echoed_twice() -> None:
    name = "n" * 60_000
    with pytest.raises(CommandError) as err:
        parse_command(name, b'{"id": "c1"}')
    r = reply(err.value.command_id, err.value.name, ok=False, state="idle", error=err.value)
    assert len(r["command"]) <= MAX_ECHO and len(r["error"]["message"]) <= MAX_MESSAGE
