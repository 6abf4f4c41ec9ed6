"""A start_shuffle whose answer was lost is followed by a state query before anything is
called failed; a shuffler that shows it never took it is sent it again, exactly once,
under its own command number, and a shuffler that took it does not shuffle twice (issue
24: a start_shuffle dropped with its session was never made), nor after the daemon's
restart. The Python shuffler over the USB simulation, its line cut both ways or one way."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.config import parse_config
from daemon.drivers.command_outcome import Verdict, deliver
from daemon.drivers.device import DeviceDriver
from daemon.drivers.device_url import parse_device_url
from daemon.drivers.transports import use_sim_usb_backend
from daemon.round.effects import DeviceCommand
from daemon.service import TableService
from daemon.service.pending import owed_key
from firmware_protocols import shuffler
from firmware_protocols.common import CommandResult, DeviceKind
from hil.faults import LineFaults
from hil.ports import TcpPort
from hil.shuffler import ShufflerSim
from hil.usb_backend import sim_backend
from tests.heard import Heard
from tests.integration.running_driver import running
from tests.keys import commands, signing
from tests.wait import until


@dataclass
class Line:
    sim: ShufflerSim
    driver: DeviceDriver
    heard: Heard
    to_device: LineFaults
    to_host: LineFaults

    def cut(self, to_device: bool, to_host: bool) -> None:
        self.to_device.drop_rate = 1.0 if to_device else 0.0
        self.to_host.drop_rate = 1.0 if to_host else 0.0

    def asked(self) -> int:
        """How many start_shuffle the simulator received."""
        return sum(isinstance(m, shuffler.StartShuffle) for m in self.sim.received)


@contextlib.asynccontextmanager
async def shuffler_over_usb() -> AsyncIterator[Line]:
    use_sim_usb_backend(sim_backend)
    sim = ShufflerSim(speed=10, serial="SF7")
    to_device, to_host = LineFaults(), LineFaults()
    port = TcpPort(sim, faults_in=to_device, faults_out=to_host)
    await port.start()
    heard = Heard()
    driver = DeviceDriver("shuffler", parse_device_url(
        f"usb://1d50:6178?serial=SF7&sim=127.0.0.1:{port.port}"), shuffler.CATALOGUE,
        DeviceKind.SHUFFLER, heard, command_timeout=1.0, heartbeat_timeout=1.5,
        backoff_initial=0.05, backoff_max=0.3)
    try:
        async with running(driver):
            await driver.wait_ready(10)
            yield Line(sim, driver, heard, to_device, to_host)
    finally:
        await port.stop()


async def test_a_start_shuffle_lost_both_ways_is_sent_again_once_when_the_shuffler_is_back(
        ) -> None:
    async with shuffler_over_usb() as line:
        first = line.sim.next_shuffle_id
        line.cut(to_device=True, to_host=True)
        alerts: list[str] = []
        task = asyncio.create_task(deliver(line.driver, shuffler.StartShuffle(0, 6),
                                           lambda: [], alerts.append))
        await until(lambda: bool(alerts), timeout=15)  # status unanswered too: said so
        [alert] = alerts
        assert alert.startswith("start_shuffle to shuffler: outcome unknown"), alert
        assert "sent again, once, if the shuffler shows it never took it" in alert, alert
        assert line.asked() == 0  # it never arrived
        line.cut(to_device=False, to_host=False)
        outcome = await asyncio.wait_for(task, 30)
        assert outcome.verdict is Verdict.DONE, outcome
        assert "showed it never took it (ready, no shuffle_started or shuffle_complete): " \
               "sent again as command" in outcome.detail, outcome.detail
        assert outcome.detail.endswith("and accepted"), outcome.detail  # result 0
        assert line.asked() == 1
        await until(lambda: any(isinstance(m, shuffler.ShuffleComplete)
                                for m in line.heard.messages), timeout=10)
        assert line.sim.next_shuffle_id == first + 1  # one shuffle made


async def test_a_start_shuffle_taken_whose_answer_was_lost_is_not_made_twice() -> None:
    """Device-to-host dead: the shuffler took it and shuffled; its answer, its status reply
    and its shuffle_started were lost with the session. Back, it re-sends them first: its
    shuffle_started shows it carried the command out, and nothing is sent again."""
    async with shuffler_over_usb() as line:
        first = line.sim.next_shuffle_id
        line.cut(to_device=False, to_host=True)
        alerts: list[str] = []
        task = asyncio.create_task(deliver(line.driver, shuffler.StartShuffle(0, 6),
                                           lambda: [], alerts.append))
        await until(lambda: bool(alerts), timeout=15)
        assert line.asked() == 1
        line.cut(to_device=False, to_host=False)
        outcome = await asyncio.wait_for(task, 30)
        assert outcome.verdict is Verdict.DONE, outcome
        assert "answered status after shuffle_started: it carried start_shuffle out" in \
            outcome.detail, outcome.detail
        assert line.asked() == 1
        assert line.sim.next_shuffle_id == first + 1


async def test_a_command_sent_again_under_its_number_is_not_carried_out_twice() -> None:
    """What a device does with a command it carried out that comes again (version 3: the
    same ORIGIN and NUM): it answers ok and does not shuffle again. A new command (a new
    number) is a new shuffle."""
    async with shuffler_over_usb() as line:
        first = line.sim.next_shuffle_id
        reply = await line.driver.command(shuffler.StartShuffle(0, 6))
        assert isinstance(reply, CommandResult) and reply.result == 0
        await until(lambda: any(isinstance(m, shuffler.ShuffleComplete)
                                for m in line.heard.messages), timeout=10)
        _, number = line.sim.carried_out[-1]
        again = await line.driver.command(shuffler.StartShuffle(0, 6), number=number)
        assert isinstance(again, CommandResult) and again.result == 0
        await asyncio.sleep(0.5)
        assert line.sim.next_shuffle_id == first + 1
        assert line.asked() == 2  # received twice, carried out once
        await line.driver.command(shuffler.StartShuffle(0, 6))
        assert line.sim.next_shuffle_id == first + 2


@contextlib.asynccontextmanager
async def shuffler_service(tmp_path: Path, port: int) -> AsyncIterator[TableService]:
    """The table's service on the journal in ``tmp_path``, its shuffler driver running
    (the shoe configured, never reached); stopped, its tasks ended, on leaving: a daemon
    that stops."""
    cfg = parse_config({
        "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        "devices": {"shuffler": f"usb://1d50:6178?serial=SF7&sim=127.0.0.1:{port}",
                    "shoe": "socket://127.0.0.1:9",
                    "serials": {"shoe": "SH0001", "shuffler": "SF7"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands(),
    })
    service = TableService(cfg)
    driver = service.drivers["shuffler"]
    driver.command_timeout, driver.heartbeat_timeout = 1.0, 1.5
    driver.backoff_initial, driver.backoff_max = 0.05, 0.3
    try:
        async with running(driver):
            yield service
            for task in list(service.state._tasks):  # a command still waited on
                task.cancel()
            await asyncio.sleep(0)
    finally:
        service.journal.close()


def kinds(service: TableService, kind: str) -> list[dict[str, Any]]:
    return [r.body for r in service.journal.records() if r.kind == kind]


async def test_a_start_shuffle_owed_when_the_daemon_stopped_is_made_after_its_restart(
        tmp_path: Path) -> None:
    """new_shoe's start_shuffle lost both ways, and the daemon stopped before the shuffler
    was back: the command is owed in the journal. The next daemon asks the shuffler its
    state once it is up, finds it ready with no shuffle, and sends it again: one shuffle,
    certified; nothing owed any more."""
    use_sim_usb_backend(sim_backend)
    sim = ShufflerSim(speed=10, serial="SF7")
    to_device, to_host = LineFaults(), LineFaults()
    port = TcpPort(sim, faults_in=to_device, faults_out=to_host)
    await port.start()
    try:
        async with shuffler_service(tmp_path, port.port) as first:
            await first.drivers["shuffler"].wait_ready(10)
            to_device.drop_rate = to_host.drop_rate = 1.0
            first.effects.apply([DeviceCommand("shuffler", shuffler.StartShuffle(0, 8))])
            await until(lambda: bool(kinds(first, "alert")), timeout=15)
            assert first.journal.get_meta(owed_key("shuffler")), "owed, journalled"
        assert not [m for m in sim.received if isinstance(m, shuffler.StartShuffle)]
        to_device.drop_rate = to_host.drop_rate = 0.0
        async with shuffler_service(tmp_path, port.port) as second:
            await until(lambda: bool(kinds(second, "shuffle_certified")), timeout=20)
            assert [c["decks"] for c in kinds(second, "shuffle_certified")] == [8]
            assert second.journal.get_meta(owed_key("shuffler")) == ""
            assert second.effects.pending == {}
        assert sum(isinstance(m, shuffler.StartShuffle) for m in sim.received) == 1
    finally:
        await port.stop()
