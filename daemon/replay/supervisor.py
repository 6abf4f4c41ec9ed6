"""The daemon's side of the replay process (``worker``): started with the table, started
again when it ends, stopped with the table; its counts go into the table's metrics.

A replay process that dies costs consumers their catch-up until it is back (a second or
so; longer after repeated failures, ``BACKOFF``), never a round: the table goes on, its
status and ``tabled_replay_server_up`` say so, and the error is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import daemon
from daemon.replay.worker import WorkerSpec
from daemon.system.metrics import TableMetrics

log = logging.getLogger(__name__)

# A login of the replay process took the table's session if the table lost it after the
# login began and at most CONFLICT_WINDOW seconds after its CONNACK; two such logins
# within CONFLICT_SPAN seconds are a conflict (``_suspect``).
CONFLICT_WINDOW = 1.0
CONFLICT_SPAN = 10.0
BACKOFF = (1.0, 30.0)  # seconds before a start after the process ended: first, longest
HELD = 60.0  # seconds: a process that ran this long starts again after BACKOFF[0]
STOP_WAIT = 3.0  # seconds for the process to end on its own at a stop, then SIGKILL
# Seconds without a line from the process (it reports every second): stuck, or stopped
# (SIGSTOP), so it is killed and started again.
SILENT = 10.0


class ReplayProcess:
    def __init__(self, spec: WorkerSpec, metrics: TableMetrics,
                 conflicted: Callable[[str], None]) -> None:
        self.spec = spec
        self.metrics = metrics
        self.conflicted = conflicted  # told why, when it is stopped for a conflict
        self.subscribed = asyncio.Event()  # the process hears replay requests
        self.restarts = 0  # starts after the first
        self.running = False  # run() under way
        # What the process has counted (reported each second): answered, and refused by
        # code ("dropped": not answered at all), over every process this one started.
        self.served = 0
        self.refused: dict[str, int] = {}
        self._counted: tuple[int, dict[str, int]] = (0, {})
        self.pid: int | None = None
        # Monotonic times (CLOCK_MONOTONIC, the same in every process): its latest login,
        # from its start to its CONNACK; the table's sessions lost; suspected logins.
        self._login: tuple[float, float] | None = None
        self._lost: list[float] = []
        self._suspects: list[float] = []
        # Why it is not started again (its login takes the table's own session); None:
        # it runs. A reload clears it (``renew``).
        self.conflict: str | None = None
        self._renewed = asyncio.Event()
        self._stop: asyncio.Event | None = None  # set: end the running process

    async def run(self) -> None:
        self.running = True
        try:
            await self._run()
        finally:
            self.running = False

    async def _run(self) -> None:
        wait = BACKOFF[0]
        while True:
            began = time.monotonic()
            self._renewed.clear()
            try:
                code: int | str | None = await self._once()
            except OSError as exc:  # not started (no memory, no process left, ...): the
                code = f"not started: {exc}"  # table deals on; tried again as below
            self.restarts += 1
            if self.conflict is not None:
                await self._renewed.wait()
                continue
            if self._renewed.is_set():  # ended for a new config: at once
                continue
            if time.monotonic() - began > HELD:
                wait = BACKOFF[0]
            log.error("the replay process ended (%s): replay requests are not answered; "
                      "starting it again in %.0f s",
                      code if isinstance(code, str) else f"exit status {code}", wait)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._renewed.wait()
            wait = min(wait * 2, BACKOFF[1])

    def renew(self, spec: WorkerSpec) -> None:
        """A reload: the next process starts with ``spec`` (the running one is ended), also
        after a conflict."""
        self.spec = spec
        self.conflict = None
        self._suspects = []
        self._renewed.set()
        if self._stop is not None:
            self._stop.set()

    def table_session_lost(self) -> None:
        """The table's own broker session ended: see ``_suspect``."""
        now = time.monotonic()
        self._lost = [t for t in self._lost if now - t < CONFLICT_SPAN] + [now]
        self._suspect()

    def _suspect(self) -> None:
        """Did the latest login of the replay process take the table's session? So it
        seems when the table lost it after that login began and no later than
        CONFLICT_WINDOW after its CONNACK (the broker throws the older session off as it
        takes the new one). A broker that went down loses both sessions before the
        replay process's next login begins, so an outage is no suspect. Two suspect
        logins within CONFLICT_SPAN seconds: the broker gives their user one connection
        (use_username_as_clientid) and the two would take turns throwing each other off.
        The replay process is then ended, not started again until a reload, and
        ``conflicted`` is told why."""
        login = self._login
        if login is None or self.conflict is not None or login[0] in self._suspects:
            return
        began, connacked = login
        if not any(began <= t <= connacked + CONFLICT_WINDOW for t in self._lost):
            return
        self._suspects = [t for t in self._suspects if began - t < CONFLICT_SPAN] + [began]
        if len(self._suspects) < 2:
            return
        self.conflict = (
            "the broker ended the table's session as the replay process logged in as "
            f"{self.spec.login_name!r}: it gives each user one connection "
            "(use_username_as_clientid). Replay requests go unanswered: give the replay "
            "process a broker user of its own (broker.replay_username and "
            "replay_password_file, docs/operations.md), then reload")
        log.error("%s", self.conflict)
        if self._stop is not None:
            self._stop.set()
        self.conflicted(self.conflict)

    async def _once(self) -> int | None:
        root = str(Path(daemon.__file__).resolve().parent.parent)
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get(
                   "PYTHONPATH")) if p)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "daemon.replay.worker", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        self.pid = proc.pid
        self._counted = (0, {})  # a new process counts from 0
        self._stop = stop = asyncio.Event()
        try:
            proc.stdin.write(self.spec.line())  # and the pipe stays open: its lifeline
            await proc.stdin.drain()
            async with asyncio.TaskGroup() as tg:
                reading = tg.create_task(self._read(proc.stdout))
                stopping = tg.create_task(stop.wait())
                await asyncio.wait((reading, stopping), return_when=asyncio.FIRST_COMPLETED)
                reading.cancel()
                stopping.cancel()
            silent = reading.done() and not reading.cancelled() and reading.result()
            if stop.is_set() or silent:
                await self._end(proc, at_once=silent)
            return await proc.wait()
        except (BrokenPipeError, ConnectionResetError):
            return await proc.wait()
        finally:
            self.subscribed.clear()
            self.pid = None
            self._login = None
            self._stop = None
            if proc.returncode is None:
                await self._end(proc)

    async def _read(self, stdout: asyncio.StreamReader) -> bool:
        """Its lines, until it closes stdout (False) or says nothing for SILENT (True)."""
        while True:
            try:
                async with asyncio.timeout(SILENT):
                    line = await stdout.readline()
            except TimeoutError:
                log.error("the replay process said nothing for %.0f s: killed", SILENT)
                return True
            if not line:
                return False
            self._heard(line)

    @staticmethod
    async def _end(proc: asyncio.subprocess.Process, at_once: bool = False) -> None:
        """End of file on its stdin, and it ends on its own; SIGKILL if it has not after
        STOP_WAIT, or ``at_once`` (a stuck or stopped process reads nothing)."""
        assert proc.stdin is not None
        proc.stdin.close()
        if not at_once:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT):
                    await proc.wait()
                    return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()

    def _heard(self, line: bytes) -> None:
        """One line of the process: a line it should not have written is logged, never
        raised (it would end the table's tasks with it)."""
        try:
            self._take(json.loads(line))
        except (ValueError, TypeError, KeyError, AttributeError):
            log.warning("the replay process said %.200r", line)

    def _take(self, said: dict[str, Any]) -> None:
        if "log" in said:  # a record of its log, logged here as the daemon's own
            level, name, text = said["log"]
            logging.getLogger(str(name)).log(int(level), "%s", text)
        if said.get("connected"):
            self._login = (float(said["began"]), float(said["at"]))
            self._suspect()
        if "subscribed" in said:
            (self.subscribed.set if said["subscribed"] else self.subscribed.clear)()
        if "served" in said:
            served, refused = int(said["served"]), dict(said["refused"])
            before_served, before = self._counted
            self.metrics.replays_served.inc(served - before_served)
            self.served += served - before_served
            for code, n in refused.items():
                self.metrics.replays_refused.labels(code).inc(n - before.get(code, 0))
                self.refused[code] = self.refused.get(code, 0) + n - before.get(code, 0)
            self._counted = (served, refused)
