"""What systemd is told: READY once the table can play, STATUS lines an operator reads
in ``systemctl status tabled``, and the watchdog.

READY=1 is sent only after the journal is recovered and every configured device has
handshaken. The broker is not waited for: results wait safely in the journal's outbox,
and a table must not be held "activating" because the network is down.

The watchdog is fed from the event loop itself, so a hung loop stops feeding it; and
only while every device link is making progress (its ticker or reconnect loop ran
within ``link_stall`` seconds), so a wedged driver gets the process restarted. An
unplugged device is not a stuck link: its driver keeps retrying, and the pit sees the
device as lost on MQTT, which a restart would not fix.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from daemon.system.sdnotify import Notifier

if TYPE_CHECKING:
    from daemon.service import TableService

log = logging.getLogger(__name__)
STARTUP_POLL = 0.05  # seconds between readiness checks until READY=1


class Health:
    def __init__(self, service: TableService, notifier: Notifier, *,
                 link_stall: float = 30.0) -> None:
        self.service = service
        self.notifier = notifier
        self.link_stall = link_stall
        self._loop = asyncio.get_running_loop()
        self._last_status = ""
        self.ready_sent = False  # READY=1 told: a reload may say RELOADING=1 and READY=1

    def waiting_for(self) -> list[str]:
        return [f"{n} ({d.status.state.value}{': ' + d.status.detail if d.status.detail else ''})"
                for n, d in self.service.drivers.items() if not d.ready]

    def problem(self) -> str | None:
        """Why the watchdog must not be fed now, or None."""
        now = self._loop.time()
        stuck = [f"{n} for {now - d.progress_at:.0f}s" for n, d in self.service.drivers.items()
                 if now - d.progress_at > self.link_stall]
        return f"device link stuck: {', '.join(stuck)}" if stuck else None

    def describe(self) -> str:
        s = self.service
        waiting = self.waiting_for()
        head = f"waiting for {', '.join(waiting)}" if waiting else "ready"
        if s.storage_error is not None:
            head = f"JOURNAL UNAVAILABLE, no rounds: {s.storage_error}"
        broker = "broker connected" if s.publisher.stats.connected else \
            f"broker unreachable ({s.publisher.stats.last_error or 'connecting'})"
        return (f"{head}; table {s.cfg.table_id} {s.table.state}; {broker}; "
                f"{s.journal.pending_count()} to publish")

    def _status(self, text: str) -> None:
        if text != self._last_status:
            self._last_status = text
            self.notifier.status(text)

    async def run(self) -> None:
        period = min(self.notifier.watchdog_interval or 2.0, 10.0) / 2
        self.notifier.status("recovering the journal")
        await self._until_ready(period)
        while True:
            self._feed()
            self._status(self.problem() or self.describe())
            await asyncio.sleep(period)

    async def _until_ready(self, period: float) -> None:
        """READY=1 the moment the table can play, not at the next watchdog tick: with
        WatchdogSec=10s that tick is 5 s away (seen under systemd, scripts/systemd-check.sh:
        READY 5 s after the last handshake)."""
        next_feed = 0.0
        while not (self.service.recovered.is_set() and not self.waiting_for()):
            if self._loop.time() >= next_feed:
                self._feed()
                if self.service.recovered.is_set():  # "waiting for shoe (lost)", ...
                    self._status(self.problem() or self.describe())
                next_feed = self._loop.time() + period
            await asyncio.sleep(STARTUP_POLL)
        self._last_status = self.describe()
        self.notifier.ready(self._last_status)
        self.ready_sent = True
        log.info("READY: %s", self._last_status)

    def _feed(self) -> None:
        problem = self.problem()
        if problem is None:
            self.notifier.watchdog()
        else:
            log.error("not feeding the watchdog: %s", problem)
