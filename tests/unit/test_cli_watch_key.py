"""`tabled watch --key` takes the key's base64 text, which may hold "/": it was taken for
a missing file's path ("--key ...: no such file"), so what simulate and hil run print to
paste failed for about one key in three (issue 26)."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.cli.main import main
from daemon.security.signing import public_key_text


def _key_text_with_a_slash() -> str:
    for _ in range(256):  # fresh keys: no fixed seed is committed (test_published_keys)
        text = public_key_text(Ed25519PrivateKey.generate().public_key())
        if "/" in text:
            return text
    raise AssertionError("no key of 256 has a '/'")


def test_watch_takes_key_text_that_holds_a_slash(capsys: Any) -> None:
    # A bad --table after the key: the command stops there, before any connection, so
    # what it said shows how it read the key.
    code = main(["watch", "--broker", "mqtt://127.0.0.1:1", "--key", _key_text_with_a_slash(),
                 "--table", "a/b"])
    err = capsys.readouterr().err
    assert code == 2 and "--table" in err and "no such file" not in err, err


def test_a_missing_key_file_is_still_named(capsys: Any) -> None:
    code = main(["watch", "--key", "/nonexistent/table.pub"])
    assert code == 2 and "/nonexistent/table.pub: no such file" in capsys.readouterr().err
