"""Commands in: ``{prefix}/{table}/cmd/{name}`` with a JSON object payload.

Every command carries an ``id`` (echoed in the reply), an ``issued_at`` time and a
``sig`` by a configured principal (``daemon/authority.py``). Parsing never raises
anything but CommandError, whose ``code`` and message say exactly what is wrong; the
caller replies with it and changes nothing.

Who asked is not an argument: ``void_round`` and ``end_shoe`` record the principal whose
key signed the command, which nobody can claim falsely.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from daemon.errors import TabledError
from daemon.games.model import GameRules

MAX_PAYLOAD = 4096

# name -> (required string fields, optional string fields)
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "open_betting": ((), ()),
    "close_betting": ((), ()),
    "void_round": (("reason",), ("irregularity",)),
    "close_insurance": ((), ()),
    "reset_dealing_device": ((), ()),
    "confirm_order": ((), ("swap",)),
    # The Pit's reconstruction of a held deal: its cards in order, e.g. "9S 2H AS KD".
    "reconstruct_deal": (("cards",), ("round_id",)),
    "new_shoe": ((), ()),
    "end_shoe": ((), ()),
    "status": ((), ()),
}


class CommandError(TabledError, ValueError):
    def __init__(self, code: str, message: str, command_id: str | None = None,
                 name: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.command_id = command_id
        self.name = name


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
                                          f"{MAX_PAYLOAD}", name=topic_name)
    try:
        body: Any = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CommandError("bad_payload", f"payload is not JSON: {exc}",
                           name=topic_name) from None
    if not isinstance(body, dict):
        raise CommandError("bad_payload", "payload must be a JSON object", name=topic_name)
    command_id = body.get("id")
    if not isinstance(command_id, str) or not 0 < len(command_id) <= 64:
        raise CommandError("bad_payload", "'id' must be a string of 1-64 characters",
                           name=topic_name)
    if topic_name not in COMMANDS:
        raise CommandError("unknown_command", f"unknown command {topic_name!r}; known: "
                                              f"{', '.join(COMMANDS)}", command_id, topic_name)
    required, optional = COMMANDS[topic_name]
    args: dict[str, str] = {}
    for key in sorted(set(body) - set(ENVELOPE)):
        if key not in required and key not in optional:
            raise CommandError("bad_argument", f"{topic_name} takes no {key!r}", command_id,
                               topic_name)
    for key in (*required, *optional):
        if key not in body:
            if key in required:
                raise CommandError("bad_argument", f"{topic_name} needs {key!r}", command_id,
                                   topic_name)
            continue
        value = body[key]
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise CommandError("bad_argument", f"{topic_name}.{key} must be a non-empty "
                                               "string of at most 200 characters",
                               command_id, topic_name)
        args[key] = value.strip()
    return Command(topic_name, command_id, args, body)


def check_irregularity(cmd: Command, game: GameRules[Any]) -> None:
    """``void_round``'s ``irregularity``: the pit names the cause it saw, which must be a
    cause that voids a round in this game's document (decision D14)."""
    code = cmd.args.get("irregularity")
    if code is not None and code not in game.pit_voidable():
        raise CommandError("bad_argument", f"{cmd.name}.irregularity {code!r} does not void "
                                           f"a round of {game.id}; one of: "
                                           f"{', '.join(game.pit_voidable())}", cmd.id, cmd.name)


def reply(command_id: str | None, name: str | None, *, ok: bool, state: str,
          error: CommandError | str | None = None, code: str | None = None
          ) -> dict[str, Any]:
    """The payload for ``{prefix}/{table}/replies``."""
    out: dict[str, Any] = {"type": "reply", "id": command_id, "command": name, "ok": ok,
                           "state": state}
    if isinstance(error, CommandError):
        out["error"] = {"code": error.code, "message": str(error)}
    elif error is not None:
        out["error"] = {"code": code or "refused", "message": error}
    return out
