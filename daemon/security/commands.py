"""Commands in: ``{prefix}/{table}/cmd/{name}`` with a JSON object payload.

Every command carries an ``id`` (echoed in the reply), an ``issued_at`` time and a
``sig`` by a configured principal (``daemon/security/authority.py``). Parsing never raises
anything but CommandError, whose ``code`` and message say exactly what is wrong; the
caller replies with it and changes nothing.

Who asked is not an argument: ``void_round`` and ``end_shoe`` record the principal whose
key signed the command, which nobody can claim falsely.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from daemon.errors import InputError
from daemon.games.model import GameRules
from daemon.security.signing import signable

MAX_PAYLOAD = 4096
# An oversized command is still read this far, to echo its id in the refusal.
MAX_ID_SCAN = 2 * 1024 * 1024
MAX_ID = 64
MAX_ECHO = 64  # an unknown command name is echoed this far, never more
MAX_MESSAGE = 300  # the longest error message a reply carries

# name -> (required string fields, optional string fields)
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "open_betting": ((), ()),
    "close_betting": ((), ()),
    # ``hold``: a Pit answer names the hold it answers (a result_held's hold_id), so that
    # a second answer to one hold is refused (issue 23); void_round may void without one.
    "void_round": (("reason",), ("irregularity", "hold")),
    "close_insurance": ((), ()),
    "reset_dealing_device": ((), ()),
    "confirm_order": (("hold",), ("swap",)),
    # The Pit's reconstruction of a held deal: its cards in order, e.g. "9S 2H AS KD".
    # Like every round-scoped command it names its round_id (TABLE_SCOPED below).
    "reconstruct_deal": (("cards", "hold"), ()),
    # The Pit holds a deal it sees is wrong (a card on the table that was never read).
    "hold_round": (("reason",), ()),
    # D23: a published result disputed by a later read stands (its round_id names it).
    "confirm_result": (("round_id",), ()),
    "new_shoe": ((), ()),
    "end_shoe": ((), ()),
    "status": ((), ()),
    "throw_again": ((), ("hold",)),  # Tai Sai 5.14: the Pit lets the dice be thrown again
    "declare_squeeze": ((), ()),  # Insurance Plus 3.14: the squeeze waiver
    # The Pit voids a round already published (Tai Sai 5.6): its round_id names that
    # round, not the open one, so it is table-scoped below; the signature covers it.
    "void_settled_round": (("round_id", "reason"), ("irregularity",)),
}

# Every command acts on the open round and carries its ``round_id``, signed, so one meant
# for a round can never act on another (a replayed void, a stale tool) -- except these,
# which act on the table. A new command is round-scoped unless it is listed here.
TABLE_SCOPED = frozenset({"open_betting", "new_shoe", "end_shoe", "status",
                          "void_settled_round", "confirm_result"})


def round_scoped(name: str) -> bool:
    return name not in TABLE_SCOPED


class CommandError(InputError, ValueError):
    def __init__(self, code: str, message: str, command_id: str | None = None,
                 name: str | None = None) -> None:
        super().__init__(bounded(message, MAX_MESSAGE))
        self.code = code
        self.command_id = command_id
        self.name = name if name is None or name in COMMANDS else bounded(name, MAX_ECHO)


def bounded(text: str, limit: int) -> str:
    """Text from outside, cut to ``limit`` characters: nothing an unauthenticated sender
    writes reaches a reply, the journal or an alert at more than a fixed size."""
    return text if len(text) <= limit else f"{text[:limit - 1]}\u2026"


# Members every command may carry besides its arguments.
ENVELOPE = ("id", "issued_at", "sig")


@dataclass(frozen=True)
class Command:
    name: str
    id: str
    args: dict[str, str]
    body: dict[str, Any]  # the whole payload, for the signature check


def parse_command(topic_name: str, payload: bytes) -> Command:
    """Validate one command's shape; raises CommandError (bad_payload, unknown_command,
    bad_argument). Whether its sender may give it is the authority's question."""
    if len(payload) > MAX_PAYLOAD:
        raise CommandError("bad_payload", f"payload of {len(payload)} bytes exceeds "
                                          f"{MAX_PAYLOAD}", command_id(payload), topic_name)
    try:
        body: Any = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CommandError("bad_payload", f"payload is not JSON: {exc}",
                           name=topic_name) from None
    if not isinstance(body, dict):
        raise CommandError("bad_payload", "payload must be a JSON object", name=topic_name)
    if not is_unicode(body):
        raise CommandError("bad_payload", "payload has text that is not Unicode (a lone "
                           "surrogate escape such as \\ud800): nothing can be signed over it",
                           _id_of(body), topic_name)
    cid = _id_of(body)
    if cid is None:
        raise CommandError("bad_payload", f"'id' must be a string of 1-{MAX_ID} characters",
                           name=topic_name)
    if topic_name not in COMMANDS:
        raise CommandError("unknown_command", f"unknown command "
                                              f"{bounded(topic_name, MAX_ECHO)!r}; known: "
                                              f"{', '.join(COMMANDS)}", cid, topic_name)
    required, optional = COMMANDS[topic_name]
    if round_scoped(topic_name):
        required = (*required, "round_id")
    args: dict[str, str] = {}
    for key in sorted(set(body) - set(ENVELOPE)):
        if key not in required and key not in optional:
            raise CommandError("bad_argument", f"{topic_name} takes no {key!r}", cid,
                               topic_name)
    for key in (*required, *optional):
        if key not in body:
            if key in required:
                raise CommandError("bad_argument", f"{topic_name} needs {key!r}", cid,
                                   topic_name)
            continue
        value = body[key]
        limit = MAX_ID if key == "round_id" else 200
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise CommandError("bad_argument", f"{topic_name}.{key} must be a non-empty "
                                               f"string of at most {limit} characters",
                               cid, topic_name)
        args[key] = value.strip()
    if "swap" in args and not _two_numbers(args["swap"]):
        # Its numbers are checked against the held round's draws when it is carried out.
        raise CommandError("bad_argument", f"{topic_name}.swap must be two draw numbers, "
                                           "e.g. '5,6'", cid, topic_name)
    issued = body.get("issued_at")
    if issued is not None and (not isinstance(issued, str) or len(issued) > 40):
        raise CommandError("bad_argument", "'issued_at' must be an ISO 8601 time of at most "
                                           "40 characters", cid, topic_name)
    return Command(topic_name, cid, args, body)


def _two_numbers(text: str) -> bool:
    parts = text.split(",")
    return len(parts) == 2 and all(p.strip().isdigit() for p in parts)


def is_unicode(value: Any) -> bool:
    """Whether every string in a parsed JSON value can be encoded, so signed and echoed:
    JSON's escapes can spell a lone surrogate, which UTF-8 cannot."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _id_of(body: Any) -> str | None:
    # An id is echoed in the reply and the alert, both signed and journalled: one with
    # no UTF-8 form (a lone surrogate) could be neither, so it is no id (issue 25).
    cid = body.get("id") if isinstance(body, dict) else None
    return cid if isinstance(cid, str) and 0 < len(cid) <= MAX_ID and signable(cid) else None


def command_id(payload: bytes) -> str | None:
    """The id of a command that will not be carried out, to echo in its refusal; None
    when it cannot be read (not JSON, or too large even to look at)."""
    if len(payload) > MAX_ID_SCAN:
        return None
    try:
        return _id_of(json.loads(payload))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def check_round(cmd: Command, open_round: str | None) -> None:
    """A round-scoped command must name the round that is open (TABLE_SCOPED)."""
    if not round_scoped(cmd.name):
        return
    named = cmd.args["round_id"]
    if open_round is None:
        raise CommandError("wrong_state", f"{cmd.name} names round {named!r}, but no round "
                                          "is open", cmd.id, cmd.name)
    if named != open_round:
        raise CommandError("wrong_round", f"{cmd.name} names round {named!r}; the open round "
                                          f"is {open_round!r}", cmd.id, cmd.name)


def check_irregularity(cmd: Command, game: GameRules[Any]) -> None:
    """``void_round``'s ``irregularity``: the pit names the cause it saw, which must be a
    cause that voids a round in this game's document (decision D14)."""
    code = cmd.args.get("irregularity")
    if code is not None and code not in game.pit_voidable():
        raise CommandError("bad_argument", f"{cmd.name}.irregularity {code!r} does not void "
                                           f"a round of {game.id}; one of: "
                                           f"{', '.join(game.pit_voidable())}", cmd.id, cmd.name)


def reply(command_id: str | None, name: str | None, *, ok: bool, state: str,
          error: CommandError | str | None = None, code: str | None = None,
          round_id: str | None = None) -> dict[str, Any]:
    """The payload for ``{prefix}/{table}/replies``; ``round_id`` is the round open after
    the command, which a round-scoped command must name."""
    if name is not None and name not in COMMANDS:
        name = bounded(name, MAX_ECHO)
    out: dict[str, Any] = {"type": "reply", "id": command_id, "command": name, "ok": ok,
                           "state": state, "round_id": round_id}
    if isinstance(error, CommandError):
        out["error"] = {"code": error.code, "message": str(error)}
    elif error is not None:
        out["error"] = {"code": code or "refused", "message": bounded(error, MAX_MESSAGE)}
    return out
