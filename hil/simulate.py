"""`tabled simulate`: a whole table on one machine, with nothing to configure.

The simulated shuffler sits behind the pyusb backend and the simulated shoe behind a
pty, both opened by the daemon through its real transports. The daemon runs with a
private journal and, unless a broker is given, a private Mosquitto on a free loopback
port. A simulated dealer works the table over MQTT. What is shown comes from a separate
subscriber that verifies every payload with the table's key (daemon/consumers/watch.py, as
``tabled watch`` does), so the view shows what the table published, nothing else.

It survives a broker outage: the table keeps its results in its outbox, the dealer
reconnects and resumes the round under way, and the results re-sent after the outage are
counted once. Its temporary folder (keys, journal, pty links, the private broker's files)
is removed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import aiomqtt

from daemon.config import parse_config
from daemon.consumers.watch import WIDTH, Watcher, result_header, result_line
from daemon.errors import TabledError
from daemon.mqtt.client import Client
from daemon.security.signing import Keyring, public_key_text
from daemon.service import TableService
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.rig import TABLE_ID, SimRig
from hil.table_log import TableLog, kept_apart
from hil.watching import watch_lines

RECONNECT_WITHIN = 300.0  # seconds a broker may be away before the run gives up
DRAIN_SECONDS = 3.0  # at the end, how long the outbox gets to be acknowledged


class BrokerGoneError(TabledError, RuntimeError):
    pass


class TableStuckError(TabledError, RuntimeError):
    pass


@dataclass
class _View:
    """The subscriber whose verified messages are the display; its connection tells when
    the broker goes away."""

    host: str
    port: int
    table: str
    keyring: Keyring
    out: TextIO
    quiet: bool
    live: bool
    watcher: Watcher = field(init=False)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    shown: set[int] = field(default_factory=set)
    _live_shown: bool = False

    def __post_init__(self) -> None:
        self.watcher = Watcher(self.keyring)

    def say(self, line: str) -> None:
        if self.quiet:
            return
        self._clear_live()
        # Prose wraps within WIDTH columns; result lines are already cut to fit.
        for part in textwrap.wrap(line, WIDTH, subsequent_indent="    ", break_on_hyphens=False,
                                  break_long_words=False) or [""]:
            print(part, file=self.out, flush=True)

    def _clear_live(self) -> None:
        if self._live_shown:
            self.out.write("\r\x1b[K")
            self._live_shown = False

    def _show_live(self) -> None:
        state = self.watcher.tables.get(self.table)
        if self.quiet or not self.live or state is None:
            return
        self.out.write("\r\x1b[K" + state.live_line()[:WIDTH - 1])
        self.out.flush()
        self._live_shown = True

    async def run(self) -> None:
        while True:
            try:
                # The daemon's client, as the dealer's (issue 26: no unretrieved error).
                async with Client(self.host, self.port,
                                  identifier=f"sim-view-{self.table}-{id(self):x}"
                                  ) as client:
                    await client.subscribe(f"tables/{self.table}/#", qos=1)
                    self.lost.clear()
                    self.connected.set()
                    async for m in client.messages:
                        raw = m.payload if isinstance(m.payload, bytes) else \
                            str(m.payload).encode()
                        got = self.watcher.feed(str(m.topic), raw)
                        if got is not None and int(got[1]["seq"]) not in self.shown:
                            self.shown.add(int(got[1]["seq"]))
                            self.say(result_line(got[1]))
                        self._show_live()
            except aiomqtt.MqttError:
                self.connected.clear()
                self.lost.set()
                await asyncio.sleep(0.5)


async def _wait_for_broker(host: str, port: int, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            await asyncio.sleep(0.5)
    raise BrokerGoneError(f"the broker at {host}:{port} did not come back within {within:.0f} s")


def _unique(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted({int(r["seq"]): r for r in results}.values(), key=lambda r: int(r["seq"]))


async def _deal(dealer: SimDealer, view: _View, rounds: int,
                broker: tuple[str, int]) -> tuple[int, float]:
    """Deal until ``rounds`` distinct results are in; returns the outages and their time."""
    outages, away, resume = 0, 0.0, False

    async def dealing() -> None:
        nonlocal resume
        async with dealer.session():
            while len(_unique(dealer.results)) < rounds:
                if resume:
                    resume = False
                    await dealer.resume_round()
                else:
                    await dealer.deal_round()

    while len(_unique(dealer.results)) < rounds:
        await view.connected.wait()
        work = asyncio.create_task(dealing())
        lost = asyncio.create_task(view.lost.wait())
        await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)
        lost.cancel()
        if work.done() and work.exception() is None:
            break
        work.cancel()
        try:
            await work
        except (asyncio.CancelledError, aiomqtt.MqttError):
            pass
        except TimeoutError:
            # The dealer waited in vain: an outage the view sees too, or a stuck table.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(view.lost.wait(), 5)
            if not view.lost.is_set():
                raise TableStuckError("the table stopped answering the dealer (no reply "
                                      f"within {dealer.reply_timeout:g} s)") from None
        except Exception:
            if not view.lost.is_set():
                raise
        outages += 1
        started = time.monotonic()
        view.say(f"broker connection lost: the table keeps publishing into its outbox; "
                 f"waiting for {broker[0]}:{broker[1]}")
        await _wait_for_broker(*broker, RECONNECT_WITHIN)
        await view.connected.wait()
        away += time.monotonic() - started
        view.say(f"broker back after {time.monotonic() - started:.1f} s: resuming the round "
                 "under way")
        dealer.forget()
        resume = True
    return outages, away


async def simulate(game: str, layout: str, decks: int | None, rounds: int, *,
                   broker: tuple[str, int] | None = None, speed: float = 20.0,
                   workdir: Path | None = None, out: TextIO = sys.stdout,
                   quiet: bool = False, table: str = TABLE_ID,
                   live: bool | None = None) -> list[dict[str, Any]]:
    """Plays ``rounds`` rounds; returns their results, each once, in seq order. Without
    ``workdir`` the run's temporary folder is removed at the end."""
    work = workdir or Path(tempfile.mkdtemp(prefix="tabled-simulate-"))
    try:
        with kept_apart() as log:
            return await _simulate(game, layout, decks, rounds, broker, speed, work, out,
                                   quiet, table, out.isatty() if live is None else live, log,
                                   private_work=workdir is None)
    finally:
        if workdir is None:
            shutil.rmtree(work, ignore_errors=True)


async def _simulate(game: str, layout: str, decks: int | None, rounds: int,
                    broker: tuple[str, int] | None, speed: float, work: Path, out: TextIO,
                    quiet: bool, table: str, live: bool, log: TableLog, *,
                    private_work: bool) -> list[dict[str, Any]]:
    mosquitto = None
    if broker is None:
        mosquitto = Mosquitto(work)
        mosquitto.start()
        broker = ("127.0.0.1", mosquitto.port)
    rig = SimRig(work, game, layout, decks, broker, speed=speed, table_id=table)
    service: TableService | None = None
    tasks: list[asyncio.Task[None]] = []
    try:
        await rig.start()
        (work / "table.pub").write_text(public_key_text(rig.table_key.public_key()) + "\n",
                                        encoding="ascii")
        cfg = parse_config(rig.config(), "simulate")
        service = TableService(cfg)
        tasks.append(asyncio.create_task(service.run()))
        await service.devices_ready(15)
        view = _View(broker[0], broker[1], table, rig.keyring, out, quiet, live)
        if not quiet:
            _header(view, cfg, rounds, speed, broker, mosquitto is not None, work,
                    private_work, rig)
        tasks.append(asyncio.create_task(view.run()))
        dealer = rig.dealer()
        try:
            outages, away = await _deal(dealer, view, rounds, broker)
        except asyncio.CancelledError:  # Ctrl-C
            view.say(f"interrupted after {len(_unique(dealer.results))} rounds; cleaning up")
            # Connections cut mid-exchange leave futures nobody will read: not news now.
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
            raise
        results = _unique(dealer.results)[:rounds]
        for _ in range(int(DRAIN_SECONDS / 0.05)):  # let the last payloads be acknowledged
            if not service.journal.pending_count():
                break
            await asyncio.sleep(0.05)
        if not quiet:
            _summary(view, results, outages, away, service.journal.pending_count(), log)
        return results
    finally:
        for t in tasks[1:]:
            t.cancel()
        if service is not None:
            await service.publisher.stop()
        for t in tasks:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await rig.stop()
        if mosquitto is not None:
            mosquitto.cleanup()


def _header(view: _View, cfg: Any, rounds: int, speed: float, broker: tuple[str, int],
            private_broker: bool, work: Path, private_work: bool, rig: SimRig) -> None:
    shoe = f", {cfg.decks} decks" if cfg.decks else ""
    where = "a private Mosquitto, gone at the end" if private_broker else "given by --broker"
    view.say(f"tabled simulate: table {cfg.table_id}, {cfg.game} layout {cfg.layout}{shoe}; "
             f"{rounds} rounds at {speed:g}x")
    view.say(f"broker {broker[0]}:{broker[1]} ({where}); journal {cfg.journal_path}"
             + (" (removed at the end)" if private_work else ""))
    for line in watch_lines(broker, cfg.table_id, rig.table_key.public_key()):
        view.say(line)
    view.say("")
    view.say(result_header(rig.dice))


def _summary(view: _View, results: list[dict[str, Any]], outages: int, away: float,
             pending: int, log: TableLog) -> None:
    valid = sum(r["status"] == "valid" for r in results)
    state = view.watcher.tables.get(view.table)
    view.say("")
    view.say(f"{len(results)} rounds published ({valid} valid, {len(results) - valid} void), "
             f"each signed and verified, seq {results[0]['seq'] if results else '-'}"
             f"-{results[-1]['seq'] if results else '-'}")
    if outages:
        again = state.duplicates if state else 0
        view.say(f"{outages} broker outage(s), {away:.1f} s in all; {again} payloads came "
                 "twice (re-sent from the outbox), each shown once by (journal_id, msg_seq)")
    if view.watcher.rejected:
        view.say(f"{view.watcher.rejected} payloads failed verification and were not shown "
                 f"(last: {view.watcher.last_rejection})")
    if log.count:
        view.say(f"the table logged {log.count} warning(s) or error(s), kept out of this "
                 f"view; the last: {log.last[:300]}")
    if pending:
        view.say(f"outbox pending: {pending}: payloads recorded in the journal that the broker "
                 "had not acknowledged when the run stopped; a real table sends them on its "
                 "next connection")
    else:
        view.say("outbox pending: 0: the broker acknowledged everything the table recorded")

