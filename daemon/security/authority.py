"""Who may command this table: signed commands from configured principals.

MQTT 5 user properties were the other choice, and were rejected: a broker passes them
through as the publisher wrote them, so any client allowed on the command topic could
claim to be anyone. A signature cannot be claimed. The broker's ACL (an example ships in
``systemd/mosquitto/``) still keeps everyone but supervisors off the command topics, as
a second wall.

A command is accepted when:

- its ``sig`` verifies with the key of a configured principal, over the table id, the
  command name and the payload (so it cannot be replayed at another table or as another
  command): an Ed25519 signature, or a WebAuthn assertion whose challenge is the SHA-256
  of those same bytes, from an enrolled security key with its sign count gone up
  (``daemon/security/passkeys.py``);
- that principal is allowed this command;
- its ``issued_at`` is within ``max_age`` seconds of the table's clock, either way;
- its ``id`` has not been used before (a replay): every command that passes the checks
  above is journalled with its outcome, accepted or refused, and those ids are reloaded
  at start, so a command refused once can never be carried out later, not even after a
  restart. A round-scoped command also names its round (``daemon/security/commands.py``).

What fails before that is unauthenticated: anyone on the broker can send it. It is
counted (``Untrusted``), never journalled row by row, and its replies and alerts are
rate-limited, so it cannot fill the disk or slow a round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security import passkeys
from daemon.security.commands import Command, CommandError
from daemon.security.passkeys import RelyingParty
from daemon.security.principal import Principal
from daemon.security.signing import COMMAND, Keyring, SignatureError, Signer, key_id, shown
from daemon.store.journal import JournalRecord
from daemon.timestamps import iso

# Journal kinds of a command that passed authentication: carried out, or refused.
ACCEPTED, REFUSED = "command", "command_refused"


def command_prefix(table_id: str, name: str) -> bytes:
    return f"{table_id}\n{name}\n".encode()


class CommandAuthority:
    def __init__(self, table_id: str, principals: Mapping[str, Principal], max_age: float,
                 clock: Callable[[], float], webauthn: RelyingParty | None = None) -> None:
        self.table_id = table_id
        self.clock = clock
        # credential id (base64url) -> the highest sign count its authenticator gave, so
        # a cloned authenticator is refused (the count must go up); kept across a
        # restart by the journal (``trail``, ``remember_journal``)
        self._sign_counts: dict[str, int] = {}
        self.reconfigure(principals, max_age, webauthn)
        # command id -> (issued_at, what became of it), for replay checks
        self._seen: dict[str, tuple[float, str]] = {}
        self._swept = float("-inf")

    def reconfigure(self, principals: Mapping[str, Principal], max_age: float,
                    webauthn: RelyingParty | None = None) -> None:
        """A reload: these principals from the next command on (a revoked key is refused
        at once); the ids already used stay used."""
        self.max_age = max_age
        self.webauthn = webauthn
        self._by_kid = {key_id(p.key): p for p in principals.values() if p.key is not None}
        self._keyring = Keyring({kid: p.key for kid, p in self._by_kid.items()
                                 if p.key is not None})
        self._by_credential = {p.credential.id_text: p for p in principals.values()
                               if p.credential is not None}

    def remember(self, ids: Iterable[tuple[str, float, str]]) -> None:
        """Command ids used before a restart (id, issued_at, outcome), so a replay across
        it is caught too."""
        for cid, issued, outcome in ids:
            self._seen[cid] = (issued, outcome)

    def remember_journal(self, records: Iterable[JournalRecord]) -> None:
        """The ids of every command journalled as accepted or refused."""
        self.remember(
            (r.body["id"], parse_time(r.body.get("issued_at")) or r.at,
             "accepted" if r.kind == ACCEPTED else f"refused ({r.body.get('code', '?')})")
            for r in records if r.kind in (ACCEPTED, REFUSED))
        for r in records:
            cred, count = r.body.get("credential"), r.body.get("sign_count")
            if r.kind in (ACCEPTED, REFUSED) and isinstance(cred, str) and \
                    isinstance(count, int):
                self._sign_counts[cred] = max(count, self._sign_counts.get(cred, 0))

    def trail(self, cmd: Command) -> dict[str, Any]:
        """What the journal keeps of how a command was signed, beyond who: a WebAuthn
        credential and its sign count (so a restart still refuses a count that did not
        go up); nothing for Ed25519."""
        sig = cmd.body.get("sig")
        if not isinstance(sig, dict) or sig.get("alg") != passkeys.ALG:
            return {}
        cred = sig.get("cred")
        if not isinstance(cred, str) or cred not in self._sign_counts:
            return {}
        return {"credential": cred, "sign_count": self._sign_counts[cred]}

    def settle(self, cid: str, outcome: str) -> None:
        """What became of an authenticated command: 'accepted' or 'refused (code)'."""
        if cid in self._seen:
            self._seen[cid] = (self._seen[cid][0], outcome)

    def authorize(self, cmd: Command) -> Principal:
        """``authenticate`` then ``permit``: the principal who gave this command."""
        who = self.authenticate(cmd)
        self.permit(cmd, who)
        return who

    def authenticate(self, cmd: Command) -> Principal:
        """The principal whose key signed this fresh command with a new id; its id is now
        used. CommandError("denied") otherwise: unauthenticated input."""
        def deny(why: str) -> CommandError:
            return CommandError("denied", why, cmd.id, cmd.name)

        if not self._by_kid and not self._by_credential:
            raise deny("no principals are configured for this table, so it takes no "
                       "commands ([commands.principals] in its config)")
        sig = cmd.body.get("sig")
        counted: tuple[str, int] | None = None
        try:
            if isinstance(sig, dict) and sig.get("alg") == passkeys.ALG:
                who, counted = self._assertion(cmd, sig)
            else:
                who = self._by_kid[self._keyring.verify(
                    cmd.body, domain=COMMAND, prefix=command_prefix(self.table_id, cmd.name))]
        except SignatureError as exc:
            raise deny(f"signature rejected: {exc}") from None
        issued = parse_time(cmd.body.get("issued_at"))
        if issued is None:
            raise deny("'issued_at' must be an ISO 8601 time with a zone, e.g. "
                       "2026-11-26T10:00:00Z")
        now = self.clock()
        skew = issued - now
        if abs(skew) > self.max_age:
            raise deny(f"issued_at is {abs(skew):.0f} s "
                       f"{'in the past' if skew < 0 else 'in the future'} by the table's "
                       f"clock ({skew:+.0f} s); commands older or newer than "
                       f"{self.max_age:.0f} s are refused")
        self._forget(now)
        if cmd.id in self._seen:
            raise deny(f"command id {cmd.id!r} was already used (it was "
                       f"{self._seen[cmd.id][1]}): a replay; every command needs a new id")
        self._seen[cmd.id] = (issued, "received")
        if counted is not None:  # journalled with the command (``trail``)
            self._sign_counts[counted[0]] = counted[1]
        return who

    def _assertion(self, cmd: Command, sig: Mapping[str, Any]) -> tuple[Principal, tuple[str, int]]:
        """The principal whose enrolled credential made this WebAuthn assertion over the
        command's bytes, and its new sign count; SignatureError otherwise."""
        cred = passkeys.credential_of(sig)
        who = self._by_credential.get(cred)
        if who is None or who.credential is None or self.webauthn is None:
            raise SignatureError(f"signed by an unknown credential {shown(cred)}")
        expected = passkeys.challenge(COMMAND, command_prefix(self.table_id, cmd.name),
                                      cmd.body)
        count = passkeys.verify(sig, expected, who.credential, self.webauthn,
                                self._sign_counts.get(cred, 0))
        return who, (cred, count)

    def permit(self, cmd: Command, who: Principal) -> None:
        """CommandError("denied") if this principal may not send this command."""
        if cmd.name not in who.allow:
            raise CommandError("denied", f"{who.name} may not send {cmd.name}", cmd.id,
                               cmd.name)

    def _forget(self, now: float) -> None:
        # Past this horizon a replay is refused as stale anyway (checked before the ids),
        # so an id kept a second longer changes nothing. Swept once a second, not per
        # command: the sweep reads every id of the last 2 * max_age seconds, thousands
        # at full dealer speed (docs/performance.md).
        if abs(now - self._swept) < 1.0:
            return
        self._swept = now
        horizon = now - 2 * self.max_age
        for cid in [c for c, (t, _) in self._seen.items() if t < horizon]:
            del self._seen[cid]


@dataclass
class Untrusted:
    """Unauthenticated commands: counted by error code, never journalled one by one.
    Replies to them are rate-limited (a token bucket), and so is the ``command_denied``
    alert: one per ``alert_every`` seconds at most, which says how many were held back."""

    clock: Callable[[], float]
    replies_per_second: float = 5.0
    reply_burst: float = 20.0
    alert_every: float = 60.0
    counts: Counter[str] = field(default_factory=Counter)
    replies_dropped: int = 0

    def __post_init__(self) -> None:
        self._tokens = self.reply_burst
        self._filled_at = self.clock()
        self._alerted_at: float | None = None
        self._held_back = 0

    def note(self, code: str) -> None:
        self.counts[code] += 1

    def may_reply(self) -> bool:
        now = self.clock()
        self._tokens = min(self.reply_burst,
                           self._tokens + (now - self._filled_at) * self.replies_per_second)
        self._filled_at = now
        if self._tokens < 1:
            self.replies_dropped += 1
            return False
        self._tokens -= 1
        return True

    def alert(self) -> str | None:
        """None while alerts are held back; otherwise what to add to the alert's detail.
        The slot is taken by ``alerted``, once the alert is stored: one that could not be
        (a full disk) leaves it for the next."""
        now = self.clock()
        if self._alerted_at is not None and now - self._alerted_at < self.alert_every:
            self._held_back += 1
            return None
        held = self._held_back
        totals = ", ".join(f"{c} {n}" for c, n in sorted(self.counts.items()))
        return (f" ({held} more held back since the last alert; " if held else " (") + \
            f"unauthenticated commands since start: {totals})"

    def alerted(self) -> None:
        """The alert ``alert`` described is stored: the next waits ``alert_every``."""
        self._held_back, self._alerted_at = 0, self.clock()


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
