"""Test keys: the table's signing key, one supervisor's command key, and a stranger's.

Made afresh at every run: a private key written into the repository is a key anyone can
sign with (issue 12). The fixed seeds these once came from are in
``daemon/security/published_keys.py``, which no config may use."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.authority import sign_command
from daemon.security.signing import Keyring, Signer, private_key_pem, public_key_text

TABLE_KEY = Ed25519PrivateKey.generate()
SUPERVISOR_KEY = Ed25519PrivateKey.generate()
STRANGER_KEY = Ed25519PrivateKey.generate()
TABLE_KEYRING = Keyring.of([TABLE_KEY.public_key()])

_DIR = Path(tempfile.mkdtemp(prefix="tabled-test-keys-"))
TABLE_KEY_FILE = _DIR / "signing.pem"
TABLE_KEY_FILE.write_bytes(private_key_pem(TABLE_KEY))
TABLE_KEY_FILE.chmod(0o600)


def signing() -> dict[str, Any]:
    return {"key_file": str(TABLE_KEY_FILE)}


def commands() -> dict[str, Any]:
    return {"principals": {"pit-boss": {"key": public_key_text(SUPERVISOR_KEY.public_key())}}}


def signed(table: str, name: str, command_id: str, *, key: Ed25519PrivateKey = SUPERVISOR_KEY,
           at: float | None = None, **args: str) -> bytes:
    return json.dumps(sign_command(key, table, name, command_id,
                                   time.time() if at is None else at, **args)).encode()


TABLE_SIGNER = Signer(TABLE_KEY)


def sealed(payload: dict[str, Any], msg_seq: int = 1,
           journal_id: str = "0123456789abcdef") -> dict[str, Any]:
    """A payload as the journal seals it (contract v2 envelope and signature)."""
    return TABLE_SIGNER.sign({**payload, "journal_id": journal_id, "msg_seq": msg_seq})
