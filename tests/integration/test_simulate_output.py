"""Issue 26, where a newcomer stumbles in `tabled simulate`, through its process: what it
prints is its own view (no log lines of the table in the results table during a broker
outage), and its simulated dealer works the table as a dealer would, at any speed (no
`open_betting` before there is a shoe; no second `new_shoe` while the shuffler is still
shuffling at a tenth of real time, which the shuffler refused; the live line says the
shuffler is at work rather than "idle")."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from hil.broker import Mosquitto
from tests.integration.simulate_run import TABLED, simulate_env, through_a_broker_outage
from tests.terminal import Terminal, every_line_drawn


def _capture(broker: Mosquitto, out: Path) -> subprocess.Popen[bytes]:
    """Everything the table publishes, as mosquitto_sub -v prints it."""
    with out.open("wb") as f:
        proc = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port),
                                 "-v", "-t", "tables/sim-1/#"], stdout=f)
    time.sleep(0.3)  # subscribed before the table starts
    return proc


def _captured(out: Path) -> list[tuple[str, dict[str, Any]]]:
    seen = []
    for line in out.read_text(encoding="utf-8").splitlines():
        topic, _, payload = line.partition(" ")
        if payload.startswith("{"):
            seen.append((topic.removeprefix("tables/sim-1/"), json.loads(payload)))
    return seen


def test_a_broker_outage_mixes_no_log_lines_into_the_results(tmp_path: Path) -> None:
    returncode, out, _ = through_a_broker_outage(tmp_path, ["--rounds", "5", "--speed", "20"],
                                                 merged=True)
    assert returncode == 0, out
    assert "broker connection lost" in out and "5 rounds published" in out, out
    logged = [line for line in out.splitlines()
              if line.lstrip().startswith("{") or '"level"' in line or "Traceback" in line]
    assert logged == [], out


def test_at_a_tenth_of_real_time_the_dealer_waits_for_its_shoe(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    capture = _capture(broker, tmp_path / "capture.txt")
    try:
        term = Terminal([*TABLED, "simulate", "--rounds", "1", "--speed", "0.1",
                         "--broker", f"mqtt://127.0.0.1:{broker.port}"], env=simulate_env(tmp_path))
        assert term.finish(240) == 0, term.text
    finally:
        capture.terminate()
        capture.wait(10)
        broker.cleanup()
    seen = _captured(tmp_path / "capture.txt")
    refused = [(b.get("command"), b.get("error")) for t, b in seen
               if t == "replies" and not b.get("ok")]
    assert refused == [], refused  # the first open_betting came before new_shoe
    alerts = [(b.get("code"), b.get("detail")) for t, b in seen if t == "alerts"]
    assert alerts == [], alerts  # device_command_failed: shuffler refused start_shuffle
    assert sum(t == "events" and b.get("event") == "shuffler_shuffle_started"
               for t, b in seen) == 1
    drawn = every_line_drawn(term.text)
    assert any(line.startswith("sim-1: shuffling") for line in drawn), drawn
