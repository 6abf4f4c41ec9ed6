"""A private Mosquitto broker: the embedded broker of `tabled simulate`, and the broker that
tests stop, restart or cut off.

It listens on a free loopback port; the shared broker on 1883 is never touched.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from hil.errors import ToolFailedError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Mosquitto:
    def __init__(self, workdir: Path, port: int | None = None, extra_conf: str = "",
                 persistent: bool = False, anonymous: bool = True) -> None:
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        if not Path(binary).exists():
            raise ToolFailedError("mosquitto is not installed: apt-get install mosquitto")
        self.binary = binary
        self.port = port or free_port()
        self.conf = workdir / f"mosquitto-{self.port}.conf"
        self.log = workdir / f"mosquitto-{self.port}.log"
        persistence = "persistence false\n"
        self._data: Path | None = None
        if persistent:
            # Started as root, mosquitto drops to its own user; give it a directory it can
            # write, or it cannot save sessions across a restart.
            # pytest's own tmp tree is 0700, so the data directory lives beside it.
            data = Path(tempfile.mkdtemp(prefix="tabled-mosquitto-"))
            data.chmod(0o777)
            self._data = data
            persistence = f"persistence true\npersistence_location {data}/\n"
        anon = "true" if anonymous else "false"
        # set_tcp_nodelay: without it, small request/reply packets wait out Nagle + delayed ACK.
        self.conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous {anon}\n"
                             "set_tcp_nodelay true\n"
                             # A backlog drains faster than a consumer reads: room for
                             # it, or mosquitto drops QoS 1 messages past 1000 queued.
                             "max_queued_messages 100000\n"
                             f"{persistence}{extra_conf}", encoding="utf-8")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        # Its own session: a Ctrl-C at the terminal goes to its owner, which stops it last.
        self.proc = subprocess.Popen([self.binary, "-c", str(self.conf)], stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ToolFailedError(f"mosquitto exited: {self.log.read_text()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise ToolFailedError("mosquitto did not start listening")

    def cleanup(self) -> None:
        self.stop()
        if self._data is not None:
            shutil.rmtree(self._data, ignore_errors=True)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
