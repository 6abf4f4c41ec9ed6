"""The daemon's replay process (daemon/replay/) as a test sees it from outside: found
among the daemon's children, its state in /proc, and rounds dealt beside it."""

from __future__ import annotations

from pathlib import Path

from daemon.replay.worker import NICE
from tests.reliability.harness import Table


def stat(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name; None: gone (or a zombie nobody reaps)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields


def replay_process(t: Table) -> int | None:
    """The daemon's replay process, once it has set itself up (its priority is set after
    its signal handlers)."""
    for pid in t.daemon.children():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat(pid)
        if b"daemon.replay.worker" in cmdline and fields and int(fields[16]) == NICE:
            return pid
    return None
