"""tabled display run as its own process, for the browser and late-join tests."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
from pathlib import Path

from hil.broker import free_port


class DisplayProcess:
    """`tabled display` as its own process, with a persistent session and a state file."""

    def __init__(self, work: Path, broker_port: int, key_file: Path, *,
                 remembers: bool = True) -> None:
        self.port = free_port()
        self.args = [sys.executable, "-m", "daemon", "display",
                     "--broker", f"mqtt://127.0.0.1:{broker_port}",
                     "--listen", f"127.0.0.1:{self.port}", "--key", str(key_file)]
        if remembers:
            self.args += ["--session", "display-under-test",
                          "--state", str(work / "display.jsonl")]
        self.log = work / f"display-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    async def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        async with asyncio.timeout(20):
            while True:
                assert self.proc.poll() is None, self.log.read_text()
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                    return
                await asyncio.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
