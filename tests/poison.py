"""Issue 25, Build 3: the poison corpus. Byte sequences anyone allowed to publish under a
table's topics can send, each one that once stopped a reader or could: every consumer
must refuse and count each, and go on. Shared by the unit tests (the checks themselves)
and the process tests (display, watch, verify and the daemon over a real Mosquitto).

Most carry a ``sig`` naming the trusted table key, so a reader gets as far as it can
(canonicalising and verifying) before it must refuse."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.signing import Signer

BIG = 10 * 1024 * 1024  # a 10 MB string


def _sig(kid: str, value: str = "A" * 86 + "==") -> str:
    return f'"sig":{{"alg":"Ed25519","kid":"{kid}","value":"{value}"}}'


def corpus(key: Ed25519PrivateKey, table: str, *, big: int = BIG) -> list[tuple[str, bytes]]:
    """(name, bytes): each a payload a consumer must refuse, on ``table``'s topics."""
    signer = Signer(key)
    kid = signer.kid
    head = f'"table":"{table}","type":"result"'
    genuine = signer.seal({"type": "result", "table": table, "seq": 1, "winner": "banker",
                           "journal_id": "c" * 16, "msg_seq": 1})
    body = json.loads(genuine)
    depth = 100_000
    surrogate = "\\ud800"  # the six characters of the JSON escape
    return [
        # Valid JSON; Python reads it as a str that has no UTF-8 form (issue 25).
        ("lone surrogate", f'{{{_sig(kid)},{head},"winner":"{surrogate}"}}'.encode()),
        ("lone surrogate in the kid", f'{{{_sig(surrogate)},{head}}}'.encode()),
        ("lone surrogate in the signature", f'{{{_sig(kid, surrogate)},{head}}}'.encode()),
        ("lone surrogate in a key", f'{{{_sig(kid)},{head},"{surrogate}":1}}'.encode()),
        ("non-ASCII signature", f'{{{_sig(kid, "é" * 88)},{head}}}'.encode()),
        ("deep nesting", f'{{{_sig(kid)},{head},"x":'.encode() + b"[" * depth
         + b"]" * depth + b"}"),
        ("deep nesting, no sig", b'{"a":' * depth + b"1" + b"}" * depth),
        ("a number of 5,000 digits", f'{{{_sig(kid)},{head},"seq":{"9" * 5000}}}'.encode()),
        ("a number of 4,000 digits", f'{{{_sig(kid)},{head},"seq":{"9" * 4000}}}'.encode()),
        ("a number past a float's range", f'{{{_sig(kid)},{head},"seq":1e999}}'.encode()),
        ("a float", f'{{{_sig(kid)},{head},"seq":1.5}}'.encode()),
        ("NaN", f'{{{_sig(kid)},{head},"seq":NaN}}'.encode()),
        ("Infinity", f'{{{_sig(kid)},{head},"seq":-Infinity}}'.encode()),
        # A genuine result with another winner put in front: a first-key-wins parser
        # (or a person reading a capture) sees "player" (issue 26).
        ("duplicate key", genuine.replace("{", '{"winner":"player",', 1).encode()),
        ("keys re-ordered", json.dumps(dict(reversed(body.items())), separators=(",", ":"),
                                       ensure_ascii=False).encode()),
        ("whitespace added", json.dumps(body, sort_keys=True, ensure_ascii=False).encode()),
        ("ASCII escapes", json.dumps(body, sort_keys=True, separators=(",", ":"))
         .replace('"banker"', '"\\u0062anker"').encode()),
        ("invalid UTF-8", f'{{{_sig(kid)},{head},"winner":"'.encode() + b"\xff\xfe" + b'"}'),
        ("UTF-16", genuine.encode("utf-16")),
        ("a 10 MB string", f'{{{_sig(kid)},{head},"winner":"'.encode() + b"x" * big + b'"}'),
        ("a 10 MB key id", f'{{{_sig("k" * big)},{head}}}'.encode()),
        ("sig not an object", f'{{"sig":[1,2],{head}}}'.encode()),
        ("not an object", b"[1,2,3]"),
        ("null", b"null"),
        ("a bare string", b'"\\ud800"'),
        ("not JSON", b"{not json"),
        ("NUL bytes", b"\x00" * 64),
    ]


def commands(principal: Ed25519PrivateKey) -> list[tuple[str, bytes]]:
    """Command-shaped poison for ``cmd/{name}``: a lone surrogate where the table echoes
    or signs it. Its id once took the minute's ``command_denied`` alert slot and then
    could not be stored; with a principal's kid it raised out of the signature check."""
    kid = Signer(principal).kid
    when = '"issued_at":"2026-11-27T10:00:00Z"'
    return [
        ("unknown key, a lone surrogate in the id",
         f'{{"id":"\\ud800",{when},{_sig("0" * 16)}}}'.encode()),
        ("a principal's kid, a lone surrogate in the id",
         f'{{"id":"\\ud800",{when},{_sig(kid)}}}'.encode()),
        ("a principal's kid, a lone surrogate in issued_at",
         f'{{"id":"p1","issued_at":"\\udfff",{_sig(kid)}}}'.encode()),
        # Not poison: a plain forgery after it, which must still be denied and alerted
        # (the surrogates above are refused as bad payloads before any key is looked at).
        ("unknown key, a plain id",
         f'{{"id":"plain-forgery",{when},{_sig("0" * 16)}}}'.encode()),
    ]


def genuine_foreign(key: Ed25519PrivateKey, table: str) -> bytes:
    """A genuine result of ``table``, for publishing on another table's topic."""
    return Signer(key).seal({"type": "result", "table": table, "seq": 1,
                             "winner": "banker", "journal_id": "f" * 16,
                             "msg_seq": 1}).encode()


def as_json_lines(items: list[tuple[str, bytes]], topic: str) -> bytes:
    """A capture as ``mosquitto_sub -v`` prints it: topic, space, payload, newline."""
    return b"".join(f"{topic} ".encode() + raw.replace(b"\n", b" ") + b"\n"
                    for _, raw in items)

