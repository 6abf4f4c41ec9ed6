"""`tabled watch` through its process, in a real terminal (a pty read by a terminal
emulator, pyte): what a technician sees comes only from payloads that verify; the round
card by card, results, gaps and re-sent copies, devices, alerts, a broker outage."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import paho.mqtt.publish
import pyte
import pytest

from daemon.signing import Signer, public_key_text
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


def _publish(b: Mosquitto, topic: str, body: dict[str, Any] | str, *,
             key: Any = TABLE_KEY, retain: bool = False) -> None:
    text = body if isinstance(body, str) else Signer(key).seal(body)
    paho.mqtt.publish.single(f"tables/bac-07/{topic}", text, qos=1, retain=retain,
                             hostname="127.0.0.1", port=b.port)


def _result(seq: int, round_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "result", "schema": "tabled/result/1", "seq": seq, "round_id": round_id,
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
            "replayed": False, **extra}


def test_watch_shows_only_what_verifies(tmp_path: Path, broker: Mosquitto) -> None:
    pub = tmp_path / "table.pub"
    pub.write_text(public_key_text(TABLE_KEY.public_key()) + "\n", encoding="ascii")
    term = Terminal([sys.executable, "-m", "daemon", "watch", "--broker",
                     f"mqtt://127.0.0.1:{broker.port}", "--table", "bac-07", "--key", str(pub)],
                    columns=COLUMNS, rows=ROWS)
    screen = Screen(term)
    try:
        screen.wait_for("connected", "table bac-07: nothing verified yet")
        _publish(broker, "status", {"type": "status", "state": "online", "session": 3,
                                    "table": "bac-07", "game": "tiger-buffalo", "layout": "P",
                                    "version": "0.1.0"}, retain=True)
        _publish(broker, "devices/shoe", {"type": "device", "name": "shoe", "state": "ready",
                                          "serial": "SH0042", "firmware": "1.2.0", "fault": 0})
        # A newer table's payloads carry fields this watch does not know: still shown.
        _publish(broker, "events", {"type": "event", "event": "betting_closed",
                                    "round_id": "bac-07-000001", "journal_id": 17,
                                    "msg_seq": 4, "replayed": False})
        _publish(broker, "events", {"type": "event", "event": "card", "card": "2S",
                                    "hand": "player", "position": 1, "round_id":
                                    "bac-07-000001", "journal_id": 18, "replayed": False})
        _publish(broker, "events", {"type": "event", "event": "card", "card": "3H",
                                    "hand": "banker", "position": 1, "round_id":
                                    "bac-07-000001", "replayed": False})
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

        _publish(broker, "results", _result(1, "bac-07-000001", journal_id=19))
        _publish(broker, "results", _result(3, "bac-07-000003"))
        text = screen.wait_for("#1    7-000001", "#3    7-000003", "MISSING seq 2")
        assert "2♠ 3♠ K♣" in text and "BANKER" in text and "tiger 12:1" in text
        assert "round 7-000001" not in text  # the round under way ended with its result

        # The outage's copy fills the gap, counted as re-sent; a duplicate is counted once.
        _publish(broker, "results", _result(2, "bac-07-000002", replayed=True))
        _publish(broker, "results", _result(3, "bac-07-000003", replayed=True))
        text = screen.wait_for("#2    7-000002", "2 payloads re-sent", "duplicates 2")
        assert "MISSING" not in text
        _publish(broker, "alerts", {"type": "alert", "code": "card_exposed", "clause": "5.6",
                                    "detail": "a card was exposed", "replayed": False})
        _publish(broker, "devices/shoe", {"type": "device", "name": "shoe", "state": "lost",
                                          "detail": "silent for 3.0 s"})
        screen.wait_for("ALERT card_exposed clause 5.6: a card was exposed",
                        "shoe lost (silent for 3.0 s)")

        broker.stop()
        screen.wait_for("disconnected")
        broker.start()
        screen.wait_for("connected  ")
        assert term.stop(signal.SIGINT) == 0
    finally:
        if term.proc.poll() is None:
            term.stop(signal.SIGKILL)
    too_wide = [line for line in screen.text.splitlines() if len(line.rstrip()) > COLUMNS]
    assert not too_wide


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
