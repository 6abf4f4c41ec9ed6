"""Who may command this table: signed commands from configured principals.

MQTT 5 user properties were the other choice, and were rejected: a broker passes them
through as the publisher wrote them, so any client allowed on the command topic could
claim to be anyone. A signature cannot be claimed. The broker's ACL (an example ships in
``systemd/mosquitto/``) still keeps everyone but supervisors off the command topics, as
a second wall.

A command is accepted when:

- its ``sig`` verifies with the key of a configured principal, over the table id, the
  command name and the payload (so it cannot be replayed at another table or as another
  command);
- that principal is allowed this command;
- its ``issued_at`` is within ``max_age`` seconds of the table's clock, either way;
- its ``id`` has not been accepted before within that window (a replay).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.commands import Command, CommandError
from daemon.config import Principal
from daemon.results import iso
from daemon.signing import COMMAND, Keyring, SignatureError, Signer, key_id


def command_prefix(table_id: str, name: str) -> bytes:
    return f"{table_id}\n{name}\n".encode()


class CommandAuthority:
    def __init__(self, table_id: str, principals: Mapping[str, Principal], max_age: float,
                 clock: Callable[[], float]) -> None:
        self.table_id = table_id
        self.max_age = max_age
        self.clock = clock
        self._by_kid = {key_id(p.key): p for p in principals.values()}
        self._keyring = Keyring({kid: p.key for kid, p in self._by_kid.items()})
        self._seen: dict[str, float] = {}  # command id -> issued_at, for replay checks

    def remember(self, ids: Iterable[tuple[str, float]]) -> None:
        """Command ids accepted before a restart, so a replay across it is caught too."""
        for cid, issued in ids:
            self._seen[cid] = issued

    def authorize(self, cmd: Command) -> Principal:
        """The principal who gave this command; CommandError("denied") otherwise."""
        def deny(why: str) -> CommandError:
            return CommandError("denied", why, cmd.id, cmd.name)

        if not self._by_kid:
            raise deny("no principals are configured for this table, so it takes no "
                       "commands ([commands.principals] in its config)")
        try:
            kid = self._keyring.verify(cmd.body, domain=COMMAND,
                                       prefix=command_prefix(self.table_id, cmd.name))
        except SignatureError as exc:
            raise deny(f"signature rejected: {exc}") from None
        who = self._by_kid[kid]
        if cmd.name not in who.allow:
            raise deny(f"{who.name} may not send {cmd.name}")
        issued = parse_time(cmd.body.get("issued_at"))
        if issued is None:
            raise deny("'issued_at' must be an ISO 8601 time with a zone, e.g. "
                       "2026-11-26T10:00:00Z")
        now = self.clock()
        if abs(now - issued) > self.max_age:
            raise deny(f"issued_at is {now - issued:+.0f} s from the table's clock; "
                       f"commands older or newer than {self.max_age:.0f} s are refused")
        self._forget(now)
        if cmd.id in self._seen:
            raise deny(f"command id {cmd.id!r} was already accepted: a replay")
        self._seen[cmd.id] = issued
        return who

    def _forget(self, now: float) -> None:
        horizon = now - 2 * self.max_age
        for cid in [c for c, t in self._seen.items() if t < horizon]:
            del self._seen[cid]


def parse_time(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.timestamp() if t.tzinfo is not None else None


def sign_command(key: Ed25519PrivateKey, table_id: str, name: str, command_id: str,
                 issued_at: float, **args: str) -> dict[str, Any]:
    """What a supervisor's tool sends: the payload for ``{prefix}/{table_id}/cmd/{name}``."""
    body = {"id": command_id, "issued_at": iso(issued_at), **args}
    return Signer(key, COMMAND).sign(body, prefix=command_prefix(table_id, name))
