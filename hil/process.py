"""The daemon as a separate process, started the way systemd starts it: a TOML config
file, ``python -m daemon run``, and the environment systemd would give it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to TOML")


def to_toml(data: Mapping[str, Any], prefix: str = "") -> str:
    """Enough TOML for a table config: nested tables of scalars and lists."""
    scalars = [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
            out.append(to_toml(v, name))
    return "\n".join(x for x in out if x) + "\n"


class DaemonProcess:
    def __init__(self, config: Mapping[str, Any], workdir: Path, *,
                 env: Mapping[str, str] | None = None, log_level: str = "INFO") -> None:
        self.config_path = workdir / "table.toml"
        self.config_path.write_text(to_toml(config), encoding="utf-8")
        self.log_path = workdir / "tabled.log"
        self.env = {**os.environ, **(env or {})}
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        # The log is appended to across restarts, as the journal (systemd's) would keep it.
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(self.config_path),
                 "--log-level", self.log_level],
                stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.starts += 1

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def children(self) -> list[int]:
        """The daemon's child processes (its replay process, daemon/replay/)."""
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:  # gone
            return []
        return [int(p) for p in text.split()]

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no cleanup, no offline status; what a power cut looks like to the journal."""
        if self.running():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 10) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                return -9
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")
