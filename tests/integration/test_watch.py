"""`tabled watch` through its process, in a real terminal (a pty read by a terminal
emulator, pyte): what a technician sees comes only from payloads that verify; the round
card by card, results, gaps and re-sent copies, devices, alerts, a broker outage."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.publish
import pyte
import pytest

from daemon.security.signing import Signer, public_key_text
from hil.broker import Mosquitto
from tests.keys import STRANGER_KEY, TABLE_KEY
from tests.terminal import Terminal

COLUMNS, ROWS = 100, 45


class Screen:
    def __init__(self, term: Terminal) -> None:
        self.term = term

    @property
    def text(self) -> str:
        screen = pyte.Screen(COLUMNS, ROWS)
        pyte.ByteStream(screen).feed(self.term.output)
        return "\n".join(screen.display)

    def wait_for(self, *wanted: str, timeout: float = 30) -> str:
        self.term.wait_for(lambda _: all(w in self.text for w in wanted), timeout)
        return self.text


@contextlib.contextmanager
def _watching(tmp_path: Path, broker: Mosquitto) -> Iterator[tuple[Terminal, Screen]]:
    """`tabled watch` of table bac-07 as its own process in a terminal, trusting the
    table's key; killed if the test did not stop it."""
    pub = tmp_path / "table.pub"
    pub.write_text(public_key_text(TABLE_KEY.public_key()) + "\n", encoding="ascii")
    term = Terminal([sys.executable, "-m", "daemon", "watch", "--broker",
                     f"mqtt://127.0.0.1:{broker.port}", "--table", "bac-07", "--key", str(pub)],
                    columns=COLUMNS, rows=ROWS)
    try:
        yield term, Screen(term)
    finally:
        if term.proc.poll() is None:
            term.stop(signal.SIGKILL)


def _publish(b: Mosquitto, topic: str, body: dict[str, Any] | str, *,
             key: Any = TABLE_KEY, retain: bool = False) -> None:
    # Every payload names its table (the envelope): a consumer takes none that does not.
    text = body if isinstance(body, str) else Signer(key).seal({"table": "bac-07", **body})
    paho.mqtt.publish.single(f"tables/bac-07/{topic}", text, qos=1, retain=retain,
                             hostname="127.0.0.1", port=b.port)


J1, J2 = "a" * 16, "b" * 16  # two journals of the table (contract v2)


def _snapshot(journal_id: str, as_of: int) -> dict[str, Any]:
    """The retained snapshot a watch joins at: the numbers before as_of are no gap."""
    return {"type": "snapshot", "schema": "tabled/snapshot/2", "table": "bac-07",
            "journal_id": journal_id, "msg_seq": None, "as_of_msg_seq": as_of,
            "state": "idle", "shoe": None, "round": None, "last_result_seq": 0,
            "last_result_msg_seq": None, "first_msg_seq": 1,
            "at": "2026-11-26T14:00:00.000Z"}


def _result(seq: int, round_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "result", "schema": "tabled/result/2", "seq": seq, "round_id": round_id,
            "journal_id": J1, "msg_seq": 100 + seq,
            "table": "bac-07", "game": "tiger-buffalo", "layout": "P", "status": "valid",
            "cards": [{"card": "2S", "hand": "player", "position": 1},
                      {"card": "3H", "hand": "banker", "position": 1},
                      {"card": "3S", "hand": "player", "position": 2},
                      {"card": "3D", "hand": "banker", "position": 2},
                      {"card": "KC", "hand": "player", "position": 3}],
            "player_total": 5, "banker_total": 6, "natural": False, "winner": "banker",
            "bets": [{"bet": "banker", "result": "win", "pays": "1:2"},
                     {"bet": "tiger", "result": "win", "pays": "12:1"},
                     {"bet": "player", "result": "lose", "pays": None}],
            **extra}


def test_watch_shows_only_what_verifies(tmp_path: Path, broker: Mosquitto) -> None:
    with _watching(tmp_path, broker) as (term, screen):
        screen.wait_for("connected", "table bac-07: nothing verified yet")
        _publish(broker, "status", {"type": "status", "state": "online", "session": 3,
                                    "table": "bac-07", "game": "tiger-buffalo", "layout": "P",
                                    "version": "0.1.0"}, retain=True)
        _publish(broker, "snapshot", _snapshot(J1, 97), retain=True)
        _publish(broker, "devices/shoe", {"type": "device", "name": "shoe", "state": "ready",
                                          "serial": "SH0042", "firmware": "1.2.0", "fault": 0})
        # A newer table's payloads carry fields this watch does not know: still shown.
        _publish(broker, "events", {"type": "event", "event": "betting_closed",
                                    "round_id": "bac-07-000001", "journal_id": J1,
                                    "msg_seq": 98, "future_field": 1})
        _publish(broker, "events", {"type": "event", "event": "card", "card": "2S",
                                    "hand": "player", "position": 1, "round_id":
                                    "bac-07-000001", "journal_id": J1, "msg_seq": 99})
        _publish(broker, "events", {"type": "event", "event": "card", "card": "3H",
                                    "hand": "banker", "position": 1, "round_id":
                                    "bac-07-000001", "journal_id": J1, "msg_seq": 100})
        text = screen.wait_for("online (session 3", "shoe ready (serial SH0042, fw 1.2.0)",
                               "round 7-000001: dealing; P 2♠; B 3♥")
        assert "tiger-buffalo layout P" in text

        # Forged: signed by a key nobody trusts; tampered: a valid signature, then changed;
        # unsigned; not JSON. None of them may show.
        _publish(broker, "results", _result(1, "FORGED01"), key=STRANGER_KEY)
        tampered = {**Signer(TABLE_KEY).sign(_result(1, "bac-07-000001")),
                    "round_id": "TAMPER01"}
        _publish(broker, "results", json.dumps(tampered))
        _publish(broker, "results", json.dumps(_result(1, "UNSIGNED1")))
        _publish(broker, "alerts", "not json {")
        text = screen.wait_for("4 payloads REJECTED (not shown)")
        for bad in ("FORGED01", "TAMPER01", "UNSIGNED1"):
            assert bad not in text

        _publish(broker, "results", _result(1, "bac-07-000001"))
        _publish(broker, "results", _result(3, "bac-07-000003"))
        text = screen.wait_for("#1    7-000001", "#3    7-000003", "MISSING msg_seq 102")
        assert "2♠ 3♠ K♣" in text and "BANKER" in text and "tiger 12:1" in text
        assert "round 7-000001" not in text  # the round under way ended with its result

        # The outage's copy fills the gap; a copy received again is counted, not shown.
        _publish(broker, "results", _result(2, "bac-07-000002"))
        _publish(broker, "results", _result(3, "bac-07-000003"))
        text = screen.wait_for("#2    7-000002", "duplicates 1", f"journal {J1}")
        assert "MISSING" not in text
        _publish(broker, "alerts", {"type": "alert", "code": "card_exposed", "clause": "5.6",
                                    "detail": "a card was exposed", "journal_id": J1,
                                    "msg_seq": 104})
        _publish(broker, "devices/shoe", {"type": "device", "name": "shoe", "state": "lost",
                                          "detail": "silent for 3.0 s"})
        screen.wait_for("ALERT card_exposed clause 5.6: a card was exposed",
                        "shoe lost (silent for 3.0 s)")

        broker.stop()
        screen.wait_for("disconnected")
        broker.start()
        screen.wait_for("connected  ")
        assert term.stop(signal.SIGINT) == 0
    too_wide = [line for line in screen.text.splitlines() if len(line.rstrip()) > COLUMNS]
    assert not too_wide


def test_watch_v2_journals_and_corrections(tmp_path: Path, broker: Mosquitto) -> None:
    """Issue 15 review: watch de-duplicated results by seq alone (a new journal's seq 1-3
    dropped as duplicates of the old one's), drew a correction as "#6 rrection" and
    left the round it voids valid. v2: messages by (journal_id, msg_seq), results by
    (journal_id, seq), a correction applied as the display applies it."""
    with _watching(tmp_path, broker) as (term, screen):
        screen.wait_for("connected", "table bac-07: nothing verified yet")
        _publish(broker, "snapshot", _snapshot(J1, 100), retain=True)
        for seq in range(1, 6):
            _publish(broker, "results", _result(seq, f"bac-07-00000{seq}"))
        screen.wait_for("#5    7-000005")
        # The table starts a new journal (a restored journal file): numbers start again.
        for seq in range(1, 4):
            _publish(broker, "results", _result(seq, f"bac-07-10000{seq}", journal_id=J2,
                                                msg_seq=seq))
        text = screen.wait_for("#1    7-100001", "#2    7-100002", "#3    7-100003",
                               f"journal {J2}")
        assert "duplicates 0" in text and "7-000005" not in text  # the newest journal shown
        # A Pit correction of the new journal's round 2 (Tai Sai 5.6 style): seq 4.
        correction = {"type": "correction", "schema": "tabled/correction/2", "seq": 4,
                      "round_id": "bac-07-100002/correction", "corrects": "bac-07-100002",
                      "table": "bac-07", "game": "tiger-buffalo", "layout": "P",
                      "status": "void", "by": "pit-1", "bets": [],
                      "void_reason": {"code": "damaged_dice", "clause": "5.6",
                                      "text": "damaged", "detail": "a die was chipped"},
                      "settled_at": "2026-11-26T14:00:00Z", "journal_id": J2,
                      "msg_seq": 4}
        _publish(broker, "results", correction)
        _publish(broker, "results", correction)  # at least once: a copy
        text = screen.wait_for("#4    CORRECTION: round 7-100002 void, clause 5.6",
                               "#2    7-100002  VOID corrected by #4, clause 5.6",
                               "duplicates 1")
        assert "rrection" not in text and "MISSING" not in text
        assert "#1    7-100001  2♠" in text  # the others stand
        assert term.stop(signal.SIGINT) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--key", "/nonexistent/table.pub"], "--key /nonexistent/table.pub"),
    (["--key", "bm90IGEga2V5"], "--key bm90IGEga2V5"),
    (["--key", "{key}", "--broker", "mqtt://127.0.0.1:1883x"], "expected mqtt://host:port"),
    (["--key", "{key}", "--table", "a/b"], "--table 'a/b'"),
    (["--broker", "mqtt://127.0.0.1:1883"], "the following arguments are required: --key"),
])
def test_watch_bad_arguments_exit_2(args: list[str], message: str) -> None:
    import subprocess  # noqa: PLC0415

    key = public_key_text(TABLE_KEY.public_key())
    proc = subprocess.run([sys.executable, "-m", "daemon", "watch",
                           *[a.replace("{key}", key) for a in args]],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
