"""Issue 12, item 2: no key whose private half is in the repository may be trusted."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.cli.main import main
from daemon.security.published_keys import PUBLISHED, published
from daemon.security.signing import parse_public_key, private_key_pem, public_key_text
from tests.keys import STRANGER_KEY, SUPERVISOR_KEY, TABLE_KEY

ROOT = Path(__file__).resolve().parents[2]
# The seeds tests/keys.py used until issue 12: in the repository's history for good.
SEEDS = (range(32), range(1, 33), range(2, 34))


def test_the_list_holds_every_published_seed_and_nothing_else() -> None:
    derived = {public_key_text(Ed25519PrivateKey.from_private_bytes(bytes(s)).public_key())
               for s in SEEDS}
    assert derived == set(PUBLISHED)
    for text in derived:
        assert published(parse_public_key(text)) is not None


def test_todays_test_keys_are_made_at_run_time() -> None:
    for key in (TABLE_KEY, SUPERVISOR_KEY, STRANGER_KEY):
        assert published(key.public_key()) is None


def test_no_private_key_is_committed() -> None:
    """A PEM private key or a fixed Ed25519 seed anywhere in the tracked files."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    seed = re.compile(r"from_private_bytes\(")
    pem = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----\s*\n[A-Za-z0-9+/=]{20,}")
    offenders = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in (".png", ".db"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if pem.search(text):
            offenders.append(name)
        if seed.search(text) and name not in ("tests/unit/test_published_keys.py",
                                              "tests/unit/test_config.py"):
            offenders.append(name)
    assert not offenders, f"private key material in the repository: {offenders}"


def test_issue_12_2_config_check_and_run_refuse_the_shipped_example_and_published_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The attack: the example config installed as is trusted the supervisor seed, and
    'config check' said ok. Now check and run both refuse, saying how to make a key."""
    (tmp_path / "signing-key").write_bytes(private_key_pem(Ed25519PrivateKey.generate()))
    example = ROOT / "systemd" / "table.example.toml"
    assert main(["config", "check", "--config", str(example), "--credentials",
                 str(tmp_path)]) == 2
    assert "tabled keys generate --out pit-supervisor-1" in capsys.readouterr().err
    old = example.read_text(encoding="utf-8").replace(
        re.search(r'^key = "(REPLACE-ME[^"]*)"', example.read_text(encoding="utf-8"),
                  re.M).group(1),  # type: ignore[union-attr]
        "ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=")  # what shipped before issue 12
    config = tmp_path / "table.toml"
    config.write_text(old, encoding="utf-8")
    for argv in (["config", "check", "--config", str(config), "--credentials", str(tmp_path)],
                 ["run", "--config", str(config)]):
        monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))  # run: as systemd does
        assert main(argv) == 2, argv
        assert "its private half is published (tests/keys.py SUPERVISOR_KEY" in \
            capsys.readouterr().err
