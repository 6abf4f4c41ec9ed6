"""Issue 25 Build 3 and issue 26: every consumer check refuses the poison corpus and a
genuine payload anywhere but on its own table's topic, as data (counted, with a short
ASCII reason), never by raising. The same checks run through the processes and a real
Mosquitto in tests/integration/test_consumer_poison.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from daemon.consumers.verify import accept
from daemon.consumers.watch import Watcher
from daemon.display.view import Display
from daemon.security.signing import Keyring, SignatureError, Signer, public_key_text
from tests.keys import TABLE_KEY, TABLE_KEYRING
from tests.poison import as_json_lines, corpus, genuine_foreign

AT = "2026-11-27T10:00:00.000Z"
POISON = corpus(TABLE_KEY, "t1")
TOPICS = ("tables/t1/results", "tables/t1/status", "tables/t1/snapshot",
          "tables/t1/devices/shoe", "tables/t1/replay/to/me")


def _fine(reason: str) -> bool:
    """A reason a terminal, a log line or a page can always show."""
    return reason.isascii() and len(reason) < 600


@pytest.mark.parametrize(("name", "raw"), POISON, ids=[n for n, _ in POISON])
def test_issue_25_3_the_consumer_check_refuses_each_poison_as_data(name: str,
                                                                   raw: bytes) -> None:
    with pytest.raises(SignatureError) as refused:
        accept(raw, "t1", TABLE_KEYRING)
    assert _fine(str(refused.value)), (name, str(refused.value)[:200])


def test_issue_25_3_the_display_and_the_watch_count_every_poison_on_every_topic() -> None:
    d, w = Display(TABLE_KEYRING), Watcher(TABLE_KEYRING)
    for topic in TOPICS:
        for name, raw in POISON:
            assert d.receive(topic, raw, AT) == "", (topic, name)
            assert w.feed(topic, raw) is None, (topic, name)
    assert d.refused_total == len(TOPICS) * len(POISON)
    assert w.rejected == (len(TOPICS) - 1) * len(POISON)  # the watch asks no replays
    assert all(_fine(r["reason"]) for r in d.refused_view()["last"])
    assert _fine(w.last_rejection)
    assert not d.tables and not w.tables
    # And they still take the table's word.
    good = Signer(TABLE_KEY).seal({"type": "status", "table": "t1", "state": "online"})
    assert d.receive("tables/t1/status", good.encode(), AT) == "t1"
    w.feed("tables/t1/status", good.encode())
    assert (w.tables["t1"].status or {})["state"] == "online"


def test_issue_25_3_keyring_verify_refuses_what_cannot_be_canonicalised() -> None:
    """Keyring.verify caught only TypeError: a lone surrogate escaped as
    UnicodeEncodeError, nesting deeper than Python recurses as RecursionError."""
    sig = Signer(TABLE_KEY).sign({"table": "t1"})["sig"]
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    for body in ({"winner": "\ud800", "sig": sig}, {"x": deep, "sig": sig},
                 {"sig": {**sig, "value": "é" * 88}}):
        with pytest.raises(SignatureError):
            TABLE_KEYRING.verify(body)


def test_issue_26_a_genuine_payload_of_another_table_is_refused_on_this_ones_topic() -> None:
    foreign = genuine_foreign(TABLE_KEY, "t2")
    with pytest.raises(SignatureError, match="signed for table 't2', published on table "
                                             "'t1''s topic"):
        accept(foreign, "t1", TABLE_KEYRING)
    w = Watcher(TABLE_KEYRING)
    assert w.feed("tables/t1/results", foreign) is None
    assert w.rejected == 1 and "t1" not in w.tables
    assert w.feed("tables/t2/results", foreign) is not None  # on its own topic: taken
    d = Display(TABLE_KEYRING)
    unnamed = Signer(TABLE_KEY).seal({"type": "status", "state": "online"}).encode()
    assert d.receive("tables/t1/status", unnamed, AT) == ""  # names no table: not t1's


def test_issue_26_only_the_canonical_bytes_are_accepted() -> None:
    by_name = dict(POISON)
    keyring = Keyring.of([TABLE_KEY.public_key()])
    for name in ("duplicate key", "keys re-ordered", "whitespace added", "ASCII escapes"):
        with pytest.raises(SignatureError, match="not the canonical bytes"):
            accept(by_name[name], "t1", keyring)


def test_issue_25_3_and_26_tabled_verify_refuses_each_line_and_says_why(
        tmp_path: Path) -> None:
    """Through the process, from a capture as mosquitto_sub -v writes it: one REJECTED
    line per poison and for the foreign result, exit 1, no traceback (it died on the
    first surrogate)."""
    key = tmp_path / "table.pub"
    key.write_text(public_key_text(TABLE_KEY.public_key()) + "\n", encoding="ascii")
    good = Signer(TABLE_KEY).seal({"type": "result", "table": "t1", "seq": 2})
    capture = tmp_path / "capture.txt"
    capture.write_bytes(as_json_lines(POISON, "tables/t1/results")
                        + b"tables/t1/results " + genuine_foreign(TABLE_KEY, "t2") + b"\n"
                        + b"tables/t1/results " + good.encode() + b"\n")
    run = subprocess.run([sys.executable, "-m", "daemon", "verify", "--key", str(key),
                          str(capture)], capture_output=True, timeout=120, check=False)
    out, err = run.stdout.decode(), run.stderr.decode()
    assert "Traceback" not in err, err[-2000:]
    assert run.returncode == 1
    lines = out.splitlines()
    rejected = [n for n in range(1, len(POISON) + 2)
                if any(line.startswith(f"REJECTED line {n} ") for line in lines)]
    assert rejected == list(range(1, len(POISON) + 2)), out[-3000:]
    assert f"ok line {len(POISON) + 2} (tables/t1/results): result seq 2" in out
    assert "signed for table 't2', published on table 't1''s topic" in out
    assert f"1 verified, {len(POISON) + 1} rejected" in err
    assert all(len(line) < 1000 for line in lines)
