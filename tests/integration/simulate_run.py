"""`tabled simulate` as its own process, for the tests of what it prints and does: the
command, the temporary folder it runs in, and a run through a broker outage."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hil.broker import Mosquitto

TABLED = [sys.executable, "-m", "daemon"]


def simulate_env(tmp: Path) -> dict[str, str]:
    """The run's temporary folder (its keys, journal, pty links) under ``tmp``."""
    return {**os.environ, "TMPDIR": str(tmp)}


def through_a_broker_outage(tmp_path: Path, args: list[str], *,
                            merged: bool) -> tuple[int, str, str]:
    """``tabled simulate ARGS`` on its own broker, stopped for 4 s once round 2's line is
    printed: the exit code, everything on stdout (stderr too when ``merged``, one pipe as
    `2>&1 | tee` or a CI log shows them), and stderr."""
    broker = Mosquitto(tmp_path)
    broker.start()
    run = subprocess.Popen([*TABLED, "simulate", *args,
                            "--broker", f"mqtt://127.0.0.1:{broker.port}"],
                           stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True,
                           env=simulate_env(tmp_path))
    try:
        assert run.stdout is not None
        seen = ""
        while "#2 " not in seen:
            line = run.stdout.readline()
            assert line, seen + (run.stderr.read() if run.stderr else "")
            seen += line
        broker.stop()
        time.sleep(4)
        broker.start()
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
        broker.cleanup()
    return run.returncode, seen + out, err or ""
