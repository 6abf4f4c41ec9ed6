"""A command run in a real terminal (a pty of a given size), for tests of what a person
sees: the process's view of isatty(), its width, and everything it wrote."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")


class Terminal:
    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None,
                 columns: int = 100, rows: int = 40, cwd: str | None = None) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.master = master
        self.output = b""
        self.proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave,
                                     env={**(env or os.environ), "TERM": "xterm-256color",
                                          "COLUMNS": str(columns), "LINES": str(rows)},
                                     cwd=cwd, start_new_session=True, close_fds=True)
        os.close(slave)

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the process closed the terminal
            return False
        self.output += data
        return bool(data)

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def wait_for(self, seen: Callable[[str], bool] | str, timeout: float = 60) -> None:
        test = seen if callable(seen) else (lambda t: seen in t)
        deadline = time.monotonic() + timeout
        while not test(self.text):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not seen within {timeout} s; output:\n{self.text[-3000:]}")
            if not self._read(0.1) and self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode}:\n{self.text[-3000:]}")

    def finish(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None or self._read(0):
            if time.monotonic() > deadline:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise TimeoutError(f"still running after {timeout} s:\n{self.text[-3000:]}")
            self._read(0.1)
        os.close(self.master)
        return self.proc.returncode

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
        return self.finish(30)


def screen_lines(raw: str) -> list[str]:
    """The lines as they stand on the screen at the end: carriage returns and "erase
    line" rewrite a line in place; other escape sequences take no columns."""
    return [ANSI.sub("", line.split("\x1b[K")[-1].split("\r")[-1])
            for line in raw.replace("\r\n", "\n").split("\n")]


def every_line_drawn(raw: str) -> list[str]:
    """Every line ever drawn, including the ones a live line overwrote."""
    text = ANSI.sub("", raw.replace("\r\n", "\n"))
    return [part for line in text.split("\n") for part in line.split("\r")]
