"""Issue 28: `tabled principals` adds a security key from the Pit page's enrolment text
(verified by the WebAuthn library), lists and revokes, editing the config as text and
checking it whole before it replaces the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from daemon.config import load_config
from hil.process import to_toml
from tests.keys import commands, signing
from tests.passkey import ORIGIN, RP_ID, SoftKey, b64url


def tabled(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "daemon", *argv], capture_output=True,
                          text=True, timeout=60, check=False, env=env)


def config(tmp_path: Path) -> Path:
    path = tmp_path / "table.toml"
    path.write_text("# the operator's own comment stays\n" + to_toml({
        "table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E"},
        "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
        "journal": {"path": str(tmp_path / "j.db")}, "signing": signing(),
        "commands": {**commands(), "webauthn": {"rp_id": RP_ID, "origins": [ORIGIN]}},
    }), encoding="utf-8")
    return path


def enrolment(tmp_path: Path, key: SoftKey, name: str, **how: str) -> Path:
    challenge = os.urandom(32)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"name": name, "challenge": b64url(challenge),
                                "response": key.registration(challenge, **how)}))
    return path


def test_add_list_revoke_a_security_key(tmp_path: Path) -> None:
    cfg, alice = config(tmp_path), SoftKey()
    added = tabled("principals", "add", "--config", str(cfg), "--enrolment",
                   str(enrolment(tmp_path, alice, "alice")), "--allow", "void_round")
    assert added.returncode == 0, added.stderr
    p = load_config(cfg).principals["alice"]
    assert p.credential is not None and p.credential.public_key == alice.cose()
    assert p.allow == frozenset({"void_round"})
    listed = tabled("principals", "list", "--config", str(cfg)).stdout
    assert f"alice: security key {b64url(alice.credential_id)}; may send void_round" in listed
    assert "pit-boss: Ed25519 key" in listed
    revoked = tabled("principals", "revoke", "--config", str(cfg), "alice")
    assert revoked.returncode == 0, revoked.stderr
    assert "alice" not in load_config(cfg).principals
    assert cfg.read_text().startswith("# the operator's own comment stays\n")


def test_an_enrolment_for_another_origin_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    before = cfg.read_text()
    added = tabled("principals", "add", "--config", str(cfg), "--enrolment", str(enrolment(
        tmp_path, SoftKey(), "mallory", origin="https://elsewhere.example")))
    assert added.returncode == 2 and "does not verify" in added.stderr
    assert cfg.read_text() == before


def test_revoking_someone_not_listed_says_so(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    out = tabled("principals", "revoke", "--config", str(cfg), "nobody")
    assert out.returncode == 2 and "lists no principal 'nobody'" in out.stderr
