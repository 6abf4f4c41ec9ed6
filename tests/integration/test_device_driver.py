"""Device drivers against the simulators over real ports: handshake, events, commands,
unplug and replug, firmware reboot, wrong protocol version, lost heartbeat, USB."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from daemon.drivers.device import DeviceDriver, DeviceNotReadyError, DeviceState
from daemon.drivers.device_url import SerialUrl, UsbUrl, parse_device_url
from daemon.drivers.transports import use_sim_usb_backend
from firmware_protocols import shoe, shuffler
from firmware_protocols.common import CommandResult, DeviceKind
from firmware_protocols.wire import Message
from hil.faults import LineFaults
from hil.ports import PtyPort, TcpPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.usb_backend import sim_backend
from tests.heard import Heard
from tests.integration.running_driver import running
from tests.wait import until


def shoe_driver(path: Path, received: list[Message], heard: Heard | None = None,
                **kw: float) -> DeviceDriver:
    heard = heard or Heard()
    heard.messages = received
    return DeviceDriver("shoe", SerialUrl(str(path)), shoe.CATALOGUE, DeviceKind.SHOE,
                        heard, backoff_initial=0.05, backoff_max=0.3,
                        **kw)  # type: ignore[arg-type]


async def test_handshake_events_and_commands(tmp_path: Path) -> None:
    sim = ShoeSim(serial="SH777")
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    got: list[Message] = []
    driver = shoe_driver(tmp_path / "shoe", got)
    async with running(driver):
        await driver.wait_ready(5)
        assert (driver.status.model, driver.status.serial) == ("SIM-SHOE", "SH777")
        reply = await driver.command(shoe.LockGate(0, False))
        assert isinstance(reply, CommandResult) and reply.result == 0
        sim.load(["9H", "KS"], port.now())
        sim.draw(port.now())
        port.kick()
        await until(lambda: any(isinstance(m, shoe.CardDrawn) for m in got))
        assert [m.card for m in got if isinstance(m, shoe.CardDrawn)] == ["9H"]
    await port.stop()


async def test_unplug_is_reported_and_replug_recovers(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [])
    async with running(driver):
        await driver.wait_ready(5)
        await port.unplug()
        await until(lambda: driver.status.state is DeviceState.LOST)
        assert "shoe" in driver.status.detail
        with pytest.raises(DeviceNotReadyError, match="shoe is lost"):
            await driver.command(shoe.LockGate(0, True))
        await port.replug()
        await until(lambda: driver.ready)
        assert driver.status.sessions == 2
    await port.stop()


async def test_firmware_reboot_leads_to_a_new_handshake(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    heard = Heard()
    states = heard.states
    driver = shoe_driver(tmp_path / "shoe", [], heard)
    async with running(driver):
        await driver.wait_ready(5)
        sim.reboot(port.now())
        port.kick()
        await until(lambda: driver.status.sessions == 2 and driver.ready)
    assert any("restarted (firmware reboot)" in s for s in states)
    await port.stop()


async def test_wrong_protocol_version_is_incompatible(tmp_path: Path) -> None:
    sim = ShoeSim(protocol_version=9)
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [], handshake_timeout=1.0)
    async with running(driver):
        await until(lambda: driver.status.state is DeviceState.INCOMPATIBLE)
        assert "protocol version 9, we speak 1, 2 and 3" in driver.status.detail
    await port.stop()


@pytest.mark.parametrize("version", [1, 2])
async def test_a_device_of_either_version_is_served(tmp_path: Path, version: int) -> None:
    sim = ShoeSim(protocol_version=version)
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [])
    async with running(driver):
        await driver.wait_ready(5)
        assert driver.status.protocol_version == version
        assert sim.endpoint.link.session_version == version
    await port.stop()


async def test_request_order_is_answered_by_untagged_order_chunks(tmp_path: Path) -> None:
    """request_order is answered by order_chunk(s), which carry no tag: the driver waited
    for a tagged reply, so every order reveal timed out and raised device_command_failed
    at every shoe end."""
    sim = ShufflerSim(speed=50)
    port = PtyPort(sim, link=tmp_path / "shuffler")
    await port.start()
    got: list[Message] = []
    driver = DeviceDriver("shuffler", SerialUrl(str(tmp_path / "shuffler")), shuffler.CATALOGUE,
                          DeviceKind.SHUFFLER, Heard(got), command_timeout=3.0)
    async with running(driver):
        await driver.wait_ready(5)
        await driver.command(shuffler.StartShuffle(0, 1))
        await until(lambda: any(isinstance(m, shuffler.ShuffleComplete) for m in got))
        done = next(m for m in got if isinstance(m, shuffler.ShuffleComplete))
        answer = await driver.command(shuffler.RequestOrder(0, done.shuffle_id))
        assert isinstance(answer, shuffler.OrderChunk)
        assert answer.shuffle_id == done.shuffle_id and answer.offset == 0
        await until(lambda: sum(len(m.cards) for m in got
                                if isinstance(m, shuffler.OrderChunk)) == 52)
        refused = await driver.command(shuffler.RequestOrder(0, done.shuffle_id + 99))
        assert isinstance(refused, CommandResult) and refused.result == 3
    await port.stop()


async def test_silent_device_is_declared_lost(tmp_path: Path) -> None:
    sim = ShoeSim()
    faults = LineFaults()
    port = PtyPort(sim, link=tmp_path / "shoe", faults_out=faults)
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [], heartbeat_timeout=1.5)
    async with running(driver):
        await driver.wait_ready(5)
        faults.drop_rate = 1.0  # the line goes dead but the port stays open
        await until(lambda: driver.status.state is not DeviceState.READY, timeout=8)
        assert ("no heartbeat" in driver.status.detail
                or "link failed" in driver.status.detail), driver.status.detail
        faults.drop_rate = 0.0
        await until(lambda: driver.ready, timeout=10)
    await port.stop()


async def test_wrong_device_on_the_port_is_incompatible(tmp_path: Path) -> None:
    sim = ShufflerSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [])
    async with running(driver):
        await until(lambda: driver.status.state is DeviceState.INCOMPATIBLE)
        assert "is a shuffler, not a shoe" in driver.status.detail
    await port.stop()


async def test_shuffler_over_usb_url() -> None:
    use_sim_usb_backend(sim_backend)  # as the command line or a rig installs it
    sim = ShufflerSim(speed=50, serial="SF9")
    port = TcpPort(sim)
    await port.start()
    url = parse_device_url(f"usb://1d50:6178?serial=SF9&sim=127.0.0.1:{port.port}")
    assert isinstance(url, UsbUrl)
    got: list[Message] = []
    driver = DeviceDriver("shuffler", url, shuffler.CATALOGUE, DeviceKind.SHUFFLER,
                          Heard(got))
    async with running(driver):
        await driver.wait_ready(5)
        reply = await driver.command(shuffler.StartShuffle(0, 6))
        assert isinstance(reply, CommandResult) and reply.result == 0
        await until(lambda: any(isinstance(m, shuffler.ShuffleComplete) for m in got))
        done = next(m for m in got if isinstance(m, shuffler.ShuffleComplete))
        assert done.decks == 6 and done.inventory == (6,) * 52
    await port.stop()


async def test_missing_usb_device_is_reported() -> None:
    use_sim_usb_backend(sim_backend)
    url = parse_device_url("usb://1d50:6178?sim=127.0.0.1:1")
    driver = DeviceDriver("shuffler", url, shuffler.CATALOGUE, DeviceKind.SHUFFLER,
                          Heard(), backoff_initial=0.05)
    async with running(driver):
        await until(lambda: driver.status.state is DeviceState.LOST)
        assert "no USB device 1d50:6178" in driver.status.detail


async def test_malformed_message_is_reported_and_the_session_survives(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    heard = Heard()
    problems = heard.problems
    driver = shoe_driver(tmp_path / "shoe", [], heard)
    async with running(driver):
        await driver.wait_ready(5)
        # An intact frame whose card_drawn payload is two bytes short (a firmware bug).
        sim.endpoint.link.send(shoe.CardDrawn.MSG_ID, b"\x00\x01TD", port.now())
        port.kick()
        await until(lambda: bool(problems))
        assert "malformed message 0x20" in problems[0] and "card_drawn" in problems[0]
        assert driver.ready
    await port.stop()


async def test_issue_12_6_a_device_reporting_another_serial_is_refused(tmp_path: Path) -> None:
    """A device that copies a shoe's USB ids gets its device node; its IDENTIFY serial is
    not the pinned one, so it is never READY, and the alert is raised once, not per retry."""
    sim = ShoeSim(serial="SH-FAKE")
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    heard = Heard()
    alerts = heard.impostors
    driver = DeviceDriver("shoe", SerialUrl(str(tmp_path / "shoe")), shoe.CATALOGUE,
                          DeviceKind.SHOE, heard, backoff_initial=0.05, backoff_max=0.1,
                          serial="SH0001")
    try:
        async with running(driver):
            await until(lambda: driver.status.state is DeviceState.INCOMPATIBLE)
            await asyncio.sleep(0.5)  # several retries
            assert not driver.ready
            with pytest.raises(DeviceNotReadyError):
                await driver.command(shoe.LockGate(0, False))
        assert alerts == [f"shoe: the device at {SerialUrl(str(tmp_path / 'shoe'))} reports "
                          "serial 'SH-FAKE', not 'SH0001' (devices.serials.shoe): refused"]
        sim.identity = dataclasses.replace(sim.identity, serial="SH0001")  # the real shoe
        async with running(driver):
            await driver.wait_ready(5)
    finally:
        await port.stop()


async def test_a_host_to_device_cut_delivers_every_card_once(tmp_path: Path) -> None:
    """The issue's case, through the real driver over a pty: the line from the host to the
    device is cut, so the device's link fails with cards the host had received (only the
    ACKs were lost). They were reported lost and a device re-sending them would have
    duplicated them; the new session now tells the device what arrived."""
    sim = ShoeSim()
    cut = LineFaults()
    port = PtyPort(sim, link=tmp_path / "shoe", faults_in=cut)
    await port.start()
    got: list[Message] = []
    driver = shoe_driver(tmp_path / "shoe", got, heartbeat_timeout=30.0)
    async with running(driver):
        await driver.wait_ready(5)
        await driver.command(shoe.LockGate(0, False))
        sim.load([f"{r}S" for r in "A23456789TJQK"], port.now())
        port.kick()
        cut.drop_rate = 1.0
        for _ in range(8):
            sim.draw(port.now())
            port.kick()
            await asyncio.sleep(0.1)
        # The device's link fails (5 s without a word from the host) and it knocks with a
        # new session, under a new boot id.
        await until(lambda: sim.endpoint.link.state == "connecting", timeout=15)
        for _ in range(3):  # drawn while its link is down: queued, sent in the new session
            sim.draw(port.now())
            port.kick()
        await asyncio.sleep(0.5)
        cut.drop_rate = 0.0
        await until(lambda: len([m for m in got if isinstance(m, shoe.CardDrawn)]) >= 11,
                    timeout=20)
        await asyncio.sleep(1.0)  # a duplicate would arrive by now
        draws = [m.draw_no for m in got if isinstance(m, shoe.CardDrawn)]
        assert draws == list(range(1, 12)), draws
        assert sim.endpoint.link.stats.confirmed >= 8
    await port.stop()


async def test_a_command_frame_lost_on_the_line_is_sent_again_within_its_rto(
        tmp_path: Path) -> None:
    # The ticker sleeps until the heartbeat deadline (3.5 s) unless a send makes a
    # retransmit due sooner: the lost command must go again after its RTO (0.2 s,
    # doubled per retry), not when the ticker would have woken anyway.
    sim = ShoeSim(serial="SH778")
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    driver = shoe_driver(tmp_path / "shoe", [])
    async with running(driver):
        await driver.wait_ready(5)
        await asyncio.sleep(0.3)  # the handshake's frames acknowledged: the ticker asleep
        port.faults_in = LineFaults(drop_rate=1.0)  # the daemon's next frame is lost
        sent = asyncio.get_running_loop().time()
        command = asyncio.create_task(driver.command(shoe.LockGate(0, False)))
        await until(lambda: port.faults_in is not None and port.faults_in.dropped > 0)
        port.faults_in = None
        reply = await asyncio.wait_for(command, 5)
        took = asyncio.get_running_loop().time() - sent
    assert isinstance(reply, CommandResult) and reply.result == 0
    assert took < driver.heartbeat_timeout / 2, (
        f"the lost command was sent again after {took:.2f} s, not after its RTO")
