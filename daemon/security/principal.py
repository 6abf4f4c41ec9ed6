"""Someone allowed to command a table: the config names them, the authority checks them."""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from daemon.security.passkeys import Credential


@dataclass(frozen=True)
class Principal:
    """Someone allowed to command this table, and which commands: by an Ed25519 public key
    (scripts, ``tabled command sign``) or by an enrolled WebAuthn credential (a
    supervisor's security key at the Pit page, ``daemon/security/passkeys.py``); exactly one."""

    name: str
    key: Ed25519PublicKey | None
    allow: frozenset[str]
    credential: Credential | None = None
