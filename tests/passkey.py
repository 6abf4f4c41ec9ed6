"""A software WebAuthn authenticator for the daemon's tests: an ECDSA P-256 credential
that makes assertions as a security key would (authenticator data, client data JSON, a
signature over both), with every part it signs open to change, so each check the table
makes can be shown to refuse. The browser tests use Chromium's own virtual
authenticator instead (tests/browser/test_pit.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from daemon.security.authority import command_prefix
from daemon.security.passkeys import ALG, challenge
from daemon.security.signing import COMMAND

RP_ID = "localhost"
ORIGIN = "http://localhost:8080"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass
class SoftKey:
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    credential_id: bytes = field(default_factory=lambda: os.urandom(16))
    sign_count: int = 0

    def cose(self) -> bytes:
        n = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: n.x.to_bytes(32, "big"),
                            -3: n.y.to_bytes(32, "big")})

    def principal(self, allow: list[str] | None = None) -> dict[str, Any]:
        """Its entry in [commands.principals.NAME]."""
        out: dict[str, Any] = {"credential_id": b64url(self.credential_id),
                               "public_key": b64url(self.cose())}
        if allow is not None:
            out["allow"] = allow
        return out

    def assertion(self, expected: bytes, *, rp_id: str = RP_ID, origin: str = ORIGIN,
                  flags: int = 0x01, kind: str = "webauthn.get",
                  count: int | None = None) -> dict[str, Any]:
        """The ``sig`` of a command whose challenge is ``expected``."""
        if count is None:
            self.sign_count += 1
            count = self.sign_count
        auth = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + \
            struct.pack(">I", count)
        client = json.dumps({"type": kind, "challenge": b64url(expected), "origin": origin,
                             "crossOrigin": False}).encode()
        signature = self.key.sign(auth + hashlib.sha256(client).digest(),
                                  ec.ECDSA(hashes.SHA256()))
        return {"alg": ALG, "cred": b64url(self.credential_id),
                "authenticator_data": b64url(auth), "client_data": b64url(client),
                "signature": b64url(signature)}

    def registration(self, expected: bytes, *, rp_id: str = RP_ID,
                     origin: str = ORIGIN) -> dict[str, Any]:
        """What ``navigator.credentials.create`` gives as JSON (attestation "none")."""
        auth = hashlib.sha256(rp_id.encode()).digest() + bytes([0x41]) + \
            struct.pack(">I", 0) + bytes(16) + struct.pack(">H", len(self.credential_id)) + \
            self.credential_id + self.cose()
        client = json.dumps({"type": "webauthn.create", "challenge": b64url(expected),
                             "origin": origin}).encode()
        cid = b64url(self.credential_id)
        return {"id": cid, "rawId": cid, "type": "public-key",
                "response": {"clientDataJSON": b64url(client), "attestationObject": b64url(
                    cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth}))}}

    def sign(self, table: str, name: str, body: dict[str, Any], **how: Any) -> bytes:
        sig = self.assertion(challenge(COMMAND, command_prefix(table, name), body), **how)
        return json.dumps({**body, "sig": sig}).encode()
