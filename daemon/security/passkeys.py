"""WebAuthn (security keys, passkeys) as a way to sign a table's commands.

A supervisor at the Pit page signs a command with the key in their hand, not with a key
file on a laptop. The table verifies that assertion itself, so the page's server only
relays bytes it cannot forge or alter.

The challenge the authenticator signs is the SHA-256 of exactly the bytes an Ed25519
command signature covers (``daemon/security/authority.py``): the command domain, the table id,
the command name and the canonical payload without ``sig`` (id, issued_at, round, hold,
arguments). A changed byte anywhere changes the challenge, and the client data the
authenticator signed no longer matches it.

The parsing (CBOR, COSE, client data) and the signature check are the ``webauthn``
library's (py_webauthn, Duo Labs; pinned in pyproject.toml, why in
docs/architecture.md); nothing of it is written here.

A command so signed carries::

    "sig": {"alg": "WebAuthn", "cred": "<credential id, base64url>",
            "authenticator_data": "<base64url>", "client_data": "<base64url>",
            "signature": "<base64url>"}
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    decode_credential_public_key,
)
from webauthn.helpers.exceptions import WebAuthnException

from daemon.errors import InputError
from daemon.security.signing import SignatureError, canonical, shown


class EnrolmentError(InputError, ValueError):
    """A security key's enrolment, or a credential or relying party in the config, that
    cannot be taken: says why."""


ALG = "WebAuthn"
SIG_FIELDS = ("cred", "authenticator_data", "client_data", "signature")


@dataclass(frozen=True)
class Credential:
    """An enrolled authenticator: its credential id and COSE public key (raw bytes)."""

    credential_id: bytes
    public_key: bytes

    @property
    def id_text(self) -> str:
        return bytes_to_base64url(self.credential_id)

    @property
    def key_text(self) -> str:
        return bytes_to_base64url(self.public_key)


@dataclass(frozen=True)
class RelyingParty:
    """Where the Pit page is served: the rp id the credentials are scoped to, and the
    origins (scheme://host[:port]) the browser may report."""

    rp_id: str
    origins: tuple[str, ...]


def challenge(domain: bytes, prefix: bytes, payload: Mapping[str, Any]) -> bytes:
    """The WebAuthn challenge for a command: SHA-256 of the bytes Ed25519 would sign."""
    return hashlib.sha256(domain + prefix + canonical(payload)).digest()


def credential_of(sig: Mapping[str, Any]) -> str:
    """The base64url credential id a WebAuthn ``sig`` names; SignatureError if malformed."""
    for name in SIG_FIELDS:
        value = sig.get(name)
        if not isinstance(value, str) or not value or len(value) > 2048:
            raise SignatureError(f"a WebAuthn signature needs '{name}' as base64url text")
    return str(sig["cred"])


def verify(sig: Mapping[str, Any], expected: bytes, credential: Credential,
           rp: RelyingParty, sign_count: int) -> int:
    """The authenticator's new sign count once the assertion in ``sig`` is verified for
    the challenge ``expected`` (rp id hash, user presence, client data type, challenge
    and origin, the signature under the enrolled key, a sign count that went up);
    SignatureError otherwise."""
    cred = credential_of(sig)
    if cred != credential.id_text:
        raise SignatureError(f"signed by an unknown credential {shown(cred)}")
    try:
        verified = verify_authentication_response(
            credential={"id": cred, "rawId": cred, "type": "public-key",
                        "response": {"authenticatorData": sig["authenticator_data"],
                                     "clientDataJSON": sig["client_data"],
                                     "signature": sig["signature"]}},
            expected_challenge=expected, expected_rp_id=rp.rp_id,
            expected_origin=list(rp.origins), credential_public_key=credential.public_key,
            credential_current_sign_count=sign_count)
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        # The library raises for every malformed or failing assertion; anything of ours
        # (base64 that is not, a key that does not decode) is refused the same way.
        raise SignatureError(f"WebAuthn assertion rejected: {shown(str(exc), 120)}") from None
    return int(verified.new_sign_count)


@dataclass(frozen=True)
class Enrolment:
    name: str
    credential: Credential


def enrol(response: Mapping[str, Any], challenge_text: str, rp: RelyingParty,
          name: str) -> Enrolment:
    """An enrolment from the Pit page (``navigator.credentials.create``'s JSON and the
    challenge the page asked it to sign), verified by the library: the credential to
    list as a principal. EnrolmentError says why not."""
    try:
        verified = verify_registration_response(
            credential=dict(response), expected_challenge=base64url_to_bytes(challenge_text),
            expected_rp_id=rp.rp_id, expected_origin=list(rp.origins),
            require_user_verification=False)
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise EnrolmentError(f"the enrolment does not verify: {exc}") from None
    return Enrolment(name, Credential(bytes(verified.credential_id),
                                      bytes(verified.credential_public_key)))


def parse_credential(credential_id: object, public_key: object) -> Credential:
    """A credential as written in the config (both base64url); EnrolmentError says why not."""
    if not isinstance(credential_id, str) or not isinstance(public_key, str):
        raise EnrolmentError("'credential_id' and 'public_key' must be base64url text")
    try:
        cid, key = base64url_to_bytes(credential_id), base64url_to_bytes(public_key)
    except ValueError as exc:
        raise EnrolmentError(f"not base64url: {exc}") from None
    if not cid or not key:
        raise EnrolmentError("'credential_id' and 'public_key' must not be empty")
    try:
        decode_credential_public_key(key)
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise EnrolmentError(f"'public_key' is not a COSE public key: {exc}") from None
    return Credential(cid, key)


def parse_relying_party(rp_id: object, origins: object) -> RelyingParty:
    if not isinstance(rp_id, str) or not rp_id or "/" in rp_id or ":" in rp_id:
        raise EnrolmentError("'rp_id' must be the Pit page's host name, e.g. pit.example")
    if isinstance(origins, str):
        origins = [origins]
    if not isinstance(origins, Sequence) or not origins or not all(
            isinstance(o, str) and o.startswith(("https://", "http://localhost"))
            for o in origins):
        raise EnrolmentError("'origins' must list the Pit page's origins, e.g. "
                         "https://pit.example:8443 (http only for localhost)")
    return RelyingParty(rp_id, tuple(origins))
