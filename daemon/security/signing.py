"""Ed25519 signatures on everything tabled publishes, and on the commands it accepts.

A signed payload is the JSON object with one more member::

    "sig": {"alg": "Ed25519", "kid": "<16 hex>", "value": "<base64 of 64 bytes>"}

The signature covers ``DOMAIN + canonical(payload without "sig")``, where canonical is
JSON with keys sorted, no whitespace, UTF-8. For the values tabled publishes (strings,
integers, booleans, null; never floats) that is exactly RFC 8785 (JCS), so a consumer
in any language can rebuild the bytes. Floats are refused, not rounded: their text is
the one part of JSON that differs between implementations.

``kid`` is the first 16 hex digits of SHA-256 over the raw 32-byte public key, so keys
can rotate: a consumer holds the public keys it trusts, by kid.

The domain string differs for results/events (published) and for commands (received),
so a signature made for one can never be replayed as the other.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from daemon.errors import InputError

PUBLISHED = b"tabled-payload-v1\n"
COMMAND = b"tabled-command-v1\n"


class SignatureError(InputError, ValueError):
    """A payload is unsigned, malformed, signed by an unknown key, or altered."""


class KeyFileError(InputError, ValueError):
    """A key file cannot be read or is not an Ed25519 key."""


def _no_floats(value: Any) -> Any:
    if isinstance(value, float):
        raise TypeError(f"float {value!r} cannot be signed portably; use a string or "
                        "an integer")
    if isinstance(value, dict):
        for v in value.values():
            _no_floats(v)
    elif isinstance(value, list):
        for v in value:
            _no_floats(v)
    return value


def canonical(payload: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in payload.items() if k != "sig"}
    _no_floats(body)
    return _canonical_text(body)


def _canonical_text(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def parse_object(raw: bytes) -> dict[str, Any]:
    """The JSON object ``raw`` holds; SignatureError for any other bytes, and never
    another exception: whatever arrives is data, so nothing a publisher sends can stop a
    reader (invalid UTF-8, NaN, nesting deeper than Python recurses, a number too long
    to convert)."""
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise SignatureError(f"not JSON: {shown(str(exc), 80)}") from None
    if not isinstance(body, dict):
        raise SignatureError("not a JSON object")
    return body


def require_canonical(raw: bytes, body: Mapping[str, Any]) -> None:
    """SignatureError unless ``raw`` is exactly the canonical text of ``body``, ``sig``
    included: the bytes ``Signer.seal`` puts on the wire, and the only ones a consumer
    accepts. The signature covers the parsed object, not the text, so without this a
    duplicate key put in front (which a first-key-wins parser, or a person reading a
    capture, takes), keys in another order or added whitespace would verify."""
    try:
        _no_floats(body)
        text = _canonical_text(body)
    except (TypeError, ValueError, RecursionError) as exc:  # a lone surrogate: ValueError
        raise SignatureError(f"cannot be canonicalised: {shown(str(exc), 80)}") from None
    if text != raw:
        raise SignatureError("not the canonical bytes a table publishes (a duplicate key, "
                             "keys out of order or whitespace)")


def signable(text: str) -> bool:
    """Whether outside text can be echoed in a signed, journalled payload: it has a
    UTF-8 form. JSON can carry a lone surrogate (``"\\ud800"``), which has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(value: object, limit: int = 40) -> str:
    """Outside text in a message: ASCII only (a lone surrogate cannot be printed or
    encoded) and at most ``limit`` characters (a 10 MB key id is not repeated)."""
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_key_text(public: Ed25519PublicKey) -> str:
    """The form used in configs: base64 of the raw 32 bytes."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def parse_public_key(text: str) -> Ed25519PublicKey:
    """A public key as base64 of its 32 raw bytes, or as PEM (SubjectPublicKeyInfo)."""
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(text.encode("ascii"))
            if not isinstance(key, Ed25519PublicKey):
                raise KeyFileError(f"not an Ed25519 public key but {type(key).__name__}")
            return key
        raw = base64.b64decode(text, validate=True)
        if len(raw) != 32:
            raise KeyFileError(f"an Ed25519 public key has 32 bytes, this has {len(raw)}")
        return Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, binascii.Error) as exc:
        if isinstance(exc, KeyFileError):
            raise
        raise KeyFileError(f"not a public key: {exc}") from None


def load_public_key(path: Path) -> Ed25519PublicKey:
    try:
        return parse_public_key(path.read_text(encoding="ascii"))
    except OSError as exc:
        raise KeyFileError(f"cannot read {path}: {exc.strerror}") from None
    except (KeyFileError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"{path}: {exc}") from None


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """A PKCS#8 PEM file, as written by ``tabled keys generate`` or
    ``openssl genpkey -algorithm ed25519``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read {path}: {exc.strerror}") from None
    return parse_private_key(data, str(path))


def parse_private_key(data: bytes, where: str) -> Ed25519PrivateKey:
    """A PKCS#8 PEM private key read from ``where`` (named in the error)."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{where} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{where} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass(frozen=True)  # cached_property needs the instance __dict__: no slots
class Signer:
    key: Ed25519PrivateKey
    domain: bytes = PUBLISHED

    @functools.cached_property
    def kid(self) -> str:  # a SHA-256 per published payload otherwise
        return key_id(self.key.public_key())

    def sign(self, payload: Mapping[str, Any], *, prefix: bytes = b"") -> dict[str, Any]:
        """The payload with its ``sig``; ``prefix`` binds extra context (a command's topic)."""
        signature = self.key.sign(self.domain + prefix + canonical(payload))
        out = {k: v for k, v in payload.items() if k != "sig"}
        out["sig"] = {"alg": "Ed25519", "kid": self.kid,
                      "value": base64.b64encode(signature).decode("ascii")}
        return out

    def seal(self, payload: Mapping[str, Any]) -> str:
        """The signed payload as the JSON text that goes on the wire."""
        return json.dumps(self.sign(payload), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)


@dataclass(frozen=True)
class Keyring:
    """Public keys trusted for verification, by kid."""

    keys: Mapping[str, Ed25519PublicKey]

    @classmethod
    def of(cls, keys: Iterable[Ed25519PublicKey]) -> Keyring:
        return cls({key_id(k): k for k in keys})

    def verify(self, payload: Mapping[str, Any], *, domain: bytes = PUBLISHED,
               prefix: bytes = b"") -> str:
        """Returns the kid that signed the payload; raises SignatureError otherwise."""
        sig = payload.get("sig")
        if not isinstance(sig, dict):
            raise SignatureError("unsigned: the payload has no 'sig' object")
        if sig.get("alg") != "Ed25519":
            raise SignatureError("unsupported signature algorithm "
                                 f"{shown(repr(sig.get('alg')))}")
        kid = sig.get("kid")
        public = self.keys.get(kid) if isinstance(kid, str) else None
        if public is None:
            raise SignatureError(f"signed by an unknown key {shown(repr(kid))}")
        try:
            value = base64.b64decode(str(sig.get("value", "")), validate=True)
        except ValueError:  # binascii.Error, or a character outside ASCII
            raise SignatureError("the signature is not base64") from None
        try:
            body = canonical(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            # A float, a lone surrogate (no UTF-8 for it), nesting deeper than Python
            # recurses: bytes nobody signed, refused like a bad signature.
            raise SignatureError(f"cannot be canonicalised: {shown(str(exc), 80)}") from None
        try:
            public.verify(value, domain + prefix + body)
        except InvalidSignature:
            raise SignatureError(f"bad signature for key {kid}: the payload was altered "
                                 "or signed by another key") from None
        return str(kid)
