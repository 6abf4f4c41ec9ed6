"""The sd_notify protocol, with the standard library only: one datagram per message to
the AF_UNIX socket in ``$NOTIFY_SOCKET`` (a leading ``@`` names an abstract socket).

Outside systemd there is no socket and every call is a no-op, so the daemon runs the
same from a shell, a test or a unit.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET", "")
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_interval: float | None = None
        usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
        # WATCHDOG_PID names the process systemd watches; a child must not feed it.
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_interval = int(usec) / 1e6
        self._sock: socket.socket | None = None
        self._warned = False

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        if not self.address:
            return False
        data = "\n".join(fields).encode("utf-8")
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.setblocking(False)  # never stall the event loop on systemd
            self._sock.sendto(data, self.address)
        except OSError as exc:
            if not self._warned:  # once: a missing manager must not flood the log
                log.warning("sd_notify to %r failed: %s", self.address, exc)
                self._warned = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def reloading(self) -> bool:
        """A reload begins; ``ready()`` ends it (systemd shows the unit "reloading")."""
        usec = int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)
        return self.send("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self, status: str) -> bool:
        return self.send("STOPPING=1", f"STATUS={status}")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
