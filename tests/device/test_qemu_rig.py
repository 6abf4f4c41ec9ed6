"""The virtual rig (issue 30): the reference firmware built for a Cortex-M3 and run in
QEMU's lm3s6965evb, the daemon on the other end of its emulated UART (a pty, as
/dev/ttyUSB0). A handful of shipped scenarios per device here; every one the rig can
play under ``-m soak`` with TABLED_SOAK=1."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest

from daemon.drivers.device import DeviceDriver
from daemon.drivers.device_url import SerialUrl
from firmware_protocols import shoe
from firmware_protocols import shuffler as sf
from firmware_protocols.common import CommandResult, CommandResultCode, DeviceKind
from firmware_protocols.wire import Message
from hil import qemu_rig
from hil.qemu import BUILD, Mcu, build_images, missing_tools
from hil.runner import run_scenario
from hil.scenario import load_rig, load_scenario
from tests import schemas
from tests.heard import Heard
from tests.integration.running_driver import running
from tests.soak import SOAK
from tests.wait import until

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "hil" / "scenarios"
RIGS = {"shoe": ROOT / "hil" / "rigs" / "qemu-shoe.json",
        "tumbler": ROOT / "hil" / "rigs" / "qemu-tumbler.json",
        "shuffler": ROOT / "hil" / "rigs" / "qemu-shuffler.json"}
# Bounded: per device, clean rounds, sensor faults, a reset of the MCU mid-round (the
# shoe's count must survive it: draw_no never repeats within a shoe), its power cut (the
# tumbler unplugged), and line noise through the pty.
BOUNDED = {
    "shoe": ["tiger-buffalo-face-up", "tiger-buffalo-foreign-card",
             "tiger-baccarat-reboot-shoe", "tiger-buffalo-line-noise"],
    "tumbler": ["tai-sai-valid", "tai-sai-reboot-tumbler", "tai-sai-unplug-tumbler",
                "tai-sai-line-noise"],
    # The firmware shuffler: certified shoes whose order is revealed and verified at shoe
    # end (a card switched on its way to the shoe is caught), and line noise on its UART.
    "shuffler": ["tiger-baccarat-shoe-runs-out", "tiger-baccarat-switched-card",
                 "tiger-buffalo-line-noise"],
}

pytestmark = pytest.mark.xdist_group("qemu")  # one emulator at a time: two cores


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if missing := missing_tools():
        why = (f"{', '.join(missing)} not installed (scripts/setup.sh dev installs them as "
               "root)")
        if os.geteuid() == 0:
            pytest.fail(why)  # root can install them: a set-up that did not is a failure
        pytest.skip(f"{why}, and this user cannot install them")
    return build_images(tmp_path_factory.mktemp("firmware"))


@pytest.fixture
def rig_images(images: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setattr(qemu_rig.QemuRig, "images", images)  # built once, not per run
    return images


def test_firmware_builds_warning_free_and_prints_its_sizes(tmp_path: Path) -> None:
    if missing_tools():
        pytest.skip("no Arm toolchain (see the images fixture)")
    done = subprocess.run(["bash", str(BUILD), str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr  # -Werror
    print(done.stdout)
    for name in ("shoe", "shuffler", "tumbler"):
        line = next(x for x in done.stdout.splitlines() if x.startswith(f"{name}: flash "))
        flash = int(line.split()[2])
        ram = int(line.split("RAM ")[1].split()[0])
        assert 4000 < flash < 32 * 1024 and 8000 < ram < 64 * 1024, line
    # No heap: nothing in the image defines or calls the allocator.
    symbols = subprocess.run(["arm-none-eabi-nm", str(tmp_path / "shoe.elf")],
                             capture_output=True, text=True, check=True).stdout
    assert not {"malloc", "_sbrk", "_malloc_r"} & {s.split()[-1] for s in symbols.splitlines()}


async def _play(name: str, device: str, tmp_path: Path) -> None:
    report = await run_scenario(load_scenario(SCENARIOS / f"{name}.json"),
                                rig=load_rig(RIGS[device]), workdir=tmp_path)
    print(report.render())
    assert report.ok, report.render()
    assert schemas.problems(report.payloads) == []


@pytest.mark.parametrize("name", BOUNDED["shoe"])
async def test_shoe_scenario_on_the_firmware(name: str, rig_images: dict[str, Path],
                                             tmp_path: Path) -> None:
    await _play(name, "shoe", tmp_path)


@pytest.mark.parametrize("name", BOUNDED["tumbler"])
async def test_tumbler_scenario_on_the_firmware(name: str, rig_images: dict[str, Path],
                                                tmp_path: Path) -> None:
    await _play(name, "tumbler", tmp_path)


@pytest.mark.parametrize("name", BOUNDED["shuffler"])
async def test_shuffler_scenario_on_the_firmware(name: str, rig_images: dict[str, Path],
                                                 tmp_path: Path) -> None:
    await _play(name, "shuffler", tmp_path)


async def test_a_scenario_the_rig_cannot_play_says_so_by_name(tmp_path: Path) -> None:
    report = await run_scenario(load_scenario(SCENARIOS / "tiger-buffalo-lost-read.json"),
                                rig=load_rig(RIGS["shoe"]), workdir=tmp_path)
    assert not report.ok and report.rounds == []
    assert report.not_run == ["round 1: lost_read (a read lost after the link has taken it)"]
    assert "NOT RUN on this rig: round 1: lost_read" in report.render()
    wrong = await run_scenario(load_scenario(SCENARIOS / "tai-sai-valid.json"),
                               rig=load_rig(RIGS["shoe"]), workdir=tmp_path)
    assert wrong.not_run == ["tai-sai-open-cover is played with a tumbler, and this rig's "
                             "firmware is a shoe"]
    foreign = await run_scenario(
        load_scenario(SCENARIOS / "tiger-buffalo-foreign-in-shuffler.json"),
        rig=load_rig(RIGS["shuffler"]), workdir=tmp_path)
    assert foreign.not_run == ["shuffle: foreign (the shuffler finds foreign cards)"]


async def test_reset_and_power_cycle_are_reboots_with_new_boot_ids(
        images: dict[str, Path], tmp_path: Path) -> None:
    """The daemon's driver on the MCU's pty: a reset (SRAM kept: the reset count goes on)
    and a power cycle (a new seed) each give a new boot id, and the driver a new session.
    Prints the stack's high-water mark after that work."""
    mcu = Mcu(images["shoe"], tmp_path / "shoe", tmp_path)
    got: list[Message] = []
    driver = DeviceDriver("shoe", SerialUrl(str(tmp_path / "shoe")), shoe.CATALOGUE,
                          DeviceKind.SHOE, Heard(got), backoff_initial=0.05,
                          backoff_max=0.3)
    await mcu.start()
    try:
        async with running(driver):
            await driver.wait_ready(20)
            s = driver.status
            assert (s.model, s.serial) == ("REF-SHOE", "REF-SH-1")
            boots = [(await mcu.until("boot "))]
            mcu.reset()
            await mcu.until("resets 2")  # the reset count survived: SRAM was kept
            boots.append(await mcu.until("boot ", 2))
            await until(lambda: driver.status.sessions == 2 and driver.ready, 20)
            await mcu.kill()
            await mcu.start()  # a cold boot: a new seed, the count starts again
            boots.append(await mcu.until("boot "))
            assert await mcu.until("resets ") == "resets 1"
            await until(lambda: driver.status.sessions == 3 and driver.ready, 30)
            assert len(set(boots)) == 3, boots
            mcu.send("stack")
            used = int((await mcu.until("stack ")).split()[1])
            size = int((await mcu.until("stack_size ")).split()[1])
            print(f"stack high-water mark: {used} of {size} bytes")
            assert 0 < used < size
            said = mcu.log_path.read_text(encoding="utf-8")  # both ways, for a failed run
            assert "> stack\n" in said and f"< {boots[0]}\n" in said
    finally:
        await mcu.kill()


async def _clock_ms(mcu: Mcu, nth: int) -> tuple[int, float]:
    """The firmware's clock (ms) and the host's (s), read together."""
    mcu.send("clock")
    said = int((await mcu.until("clock_ms ", nth)).split()[1])
    return said, asyncio.get_running_loop().time()


async def test_the_firmware_clock_keeps_the_hosts_time_while_qemu_is_starved(
        images: dict[str, Path], tmp_path: Path) -> None:
    """QEMU stopped for 20 ms of every 25 (SIGSTOP, as a loaded host deschedules it): the
    firmware's clock still keeps the host's time. With a 1 ms SysTick the ticks that
    came while it was stopped were lost, and its clock ran at a fraction of the host's
    (37% to 80% under a two-core load, issue 30)."""
    mcu = Mcu(images["shoe"], tmp_path / "shoe", tmp_path)
    await mcu.start()
    try:
        await mcu.until("boot ")
        fw0, host0 = await _clock_ms(mcu, 1)
        loop = asyncio.get_running_loop()
        while loop.time() < host0 + 3.0:
            os.kill(mcu.pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(0.02)
            finally:
                os.kill(mcu.pid, signal.SIGCONT)
            await asyncio.sleep(0.005)
        fw1, host1 = await _clock_ms(mcu, 2)
        firmware, host = ((fw1 - fw0) * 1000 % 2**32) / 1000, (host1 - host0) * 1000
        print(f"firmware {firmware:.0f} ms, host {host:.0f} ms")
        assert abs(firmware - host) < 0.1 * host, (firmware, host)
    finally:
        await mcu.kill()


async def test_the_firmware_shuffler_certifies_and_reveals_only_a_taken_shoe(
        images: dict[str, Path], tmp_path: Path) -> None:
    """The daemon's driver on the shuffler's pty: a shuffle certified with the session
    version's commitment; the same start_shuffle sent again not shuffled twice;
    request_order refused while the cards are in the shuffler
    (spec: request_order), then revealed in chunks that match the commitment and the order
    the firmware reported. Prints the stack's high-water mark after that work."""
    mcu = Mcu(images["shuffler"], tmp_path / "shuffler", tmp_path)
    got: list[Message] = []
    driver = DeviceDriver("shuffler", SerialUrl(str(tmp_path / "shuffler")), sf.CATALOGUE,
                          DeviceKind.SHUFFLER, Heard(got))
    await mcu.start()
    try:
        async with running(driver):
            await driver.wait_ready(20)
            assert (driver.status.model, driver.status.serial) == ("REF-SHUFFLER", "REF-SF-1")
            answer = await driver.command(sf.StartShuffle(0, 6))
            assert isinstance(answer, CommandResult) and answer.result == CommandResultCode.OK
            busy = await driver.command(sf.StartShuffle(0, 6))  # still at work: refused
            assert isinstance(busy, CommandResult) and busy.result == CommandResultCode.BUSY
            await until(lambda: any(isinstance(m, sf.ShuffleComplete) for m in got), 20)
            done = next(m for m in got if isinstance(m, sf.ShuffleComplete))
            # Sent again under its own number (its answer lost, say): answered ok and not
            # shuffled twice. The driver's commands are numbered from 1 (identify), so
            # this start_shuffle was 2 (the spec's NUM).
            again = await driver.command(sf.StartShuffle(0, 6), number=2)
            assert isinstance(again, CommandResult) and again.result == CommandResultCode.OK
            await mcu.until("repeat start_shuffle")
            await asyncio.sleep(0.5)  # a shuffle begun would have said so at once
            assert sum(isinstance(m, sf.ShuffleStarted) for m in got) == 1
            reported = [c for r in mcu.saw("order ") for c in r.split()[1:]]
            assert len(reported) == 312 and sum(done.inventory) == 312
            inside = await driver.command(sf.RequestOrder(0, done.shuffle_id))
            assert isinstance(inside, CommandResult)
            assert (inside.result, inside.detail) == (CommandResultCode.WRONG_STATE,
                                                      "its cards are still in the shuffler")
            mcu.send("take")
            await mcu.until("taken ")
            await driver.command(sf.RequestOrder(0, done.shuffle_id))
            await mcu.until("revealed ")
            await until(lambda: sum(len(m.cards) for m in got
                                    if isinstance(m, sf.OrderChunk)) == 312, 20)
            chunks = sorted((m for m in got if isinstance(m, sf.OrderChunk)),
                            key=lambda m: m.offset)
            order = [c for m in chunks for c in m.cards]
            assert order == reported
            assert sf.commitment_for(driver.status.protocol_version, done.shuffle_id, 6,
                                     chunks[0].nonce, order) == done.commitment
            mcu.send("stack")
            used = int((await mcu.until("stack ")).split()[1])
            print(f"shuffler stack high-water mark: {used} bytes")
            assert 0 < used < int((await mcu.until("stack_size ")).split()[1])
    finally:
        await mcu.kill()


def _runnable(device: str) -> list[str]:
    names = []
    for path in sorted(SCENARIOS.glob("*.json")):
        if not qemu_rig.cannot_run(load_scenario(path), device):
            names.append(path.stem)
    return names


@pytest.mark.soak
@pytest.mark.parametrize("name", _runnable("shoe") + _runnable("tumbler"))
async def test_every_scenario_the_rig_can_play(name: str, rig_images: dict[str, Path],
                                              tmp_path: Path) -> None:
    if not SOAK:
        pytest.skip("TABLED_SOAK=1 plays every scenario on the firmware")
    device = "tumbler" if name.startswith("tai-sai") else "shoe"
    await _play(name, device, tmp_path)
