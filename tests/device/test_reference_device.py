"""The C reference device (device/): built with -std=c99 -Wall -Wextra -Werror, it passes
the byte vectors the Python tests use, and its emulator, a shoe or a tumbler behind a pty,
works with the daemon: the driver's handshake, cards, commands, heartbeats, a device
reboot and line noise; the whole daemon process playing Tai Sai on the C tumbler; and
baccarat with the C shuffler on a serial line and the C shoe, honest or cheating."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from daemon.drivers.device import DeviceDriver, Unattended
from daemon.drivers.device_url import SerialUrl
from firmware_protocols import shoe, shuffler
from firmware_protocols.common import CommandResult, DeviceKind, Heartbeat
from firmware_protocols.wire import Message
from hil.rig import SimRig
from tests.device.c_devices import (
    ROOT,
    CShufflerRig,
    deal_one_round,
    emulator,
    results_at_least,
    sent_events,
    table,
)
from tests.integration.running_driver import running
from tests.wait import until


def test_c_library_passes_the_shared_vectors(built: Path) -> None:
    """Both files: version 3's stamps (every example message sent and received as a
    version 3 frame by a C link) and each rule of its open questions, as a device keeps it."""
    done = subprocess.run([str(built / "test_vectors"),
                           str(ROOT / "firmware_protocols" / "vectors.txt"),
                           str(ROOT / "firmware_protocols" / "vectors_v3.txt")],
                          capture_output=True, text=True, timeout=120, check=False)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "30 msg" in done.stdout and ", 0 failed" in done.stdout
    assert "version 3: 2 stamp, 30 msg3, 1 resume_chain," in done.stdout
    # SHA-256 against FIPS 180-4's examples, and the shuffler's v2 and v3 commitments.
    assert "3 commit, 4 sha256" in done.stdout


def cards_of(got: list[Message]) -> list[tuple[int, str]]:
    return [(m.draw_no, m.card) for m in got if isinstance(m, shoe.CardDrawn)]


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_c_shoe_with_the_daemon_driver(built: Path, tmp_path: Path, version: int) -> None:
    got: list[Message] = []
    stamped: list[tuple[int, int, str]] = []  # version 3: each event as the driver got it

    class Take(Unattended):
        def device_message(self, device: str, m: Message) -> None:
            got.append(m)
            if driver.stamp is not None and m.EVENT:
                stamped.append((driver.stamp.origin, driver.stamp.number, m.NAME))

    async with emulator(built, "shoe", tmp_path / "shoe", "--version", str(version),
                        "--serial", "C-SHOE-7") as dev:
        driver = DeviceDriver("shoe", SerialUrl(str(tmp_path / "shoe")), shoe.CATALOGUE,
                              DeviceKind.SHOE, Take(), backoff_initial=0.05,
                              backoff_max=0.3)
        async with running(driver):
            await driver.wait_ready(10)
            s = driver.status
            assert (s.model, s.firmware, s.serial) == ("REF-SHOE", "c99-1.0", "C-SHOE-7")
            assert s.protocol_version == version
            # A command and its answer; the gate event follows.
            reply = await driver.command(shoe.LockGate(0, False))
            assert isinstance(reply, CommandResult) and reply.result == 0
            await until(lambda: any(isinstance(m, shoe.Gate) and not m.locked for m in got))
            # Cards, in order.
            await dev.do("load AS KD 7C TH 2S 9D", "draw", "draw", "draw")
            await until(lambda: len(cards_of(got)) == 3)
            assert cards_of(got) == [(1, "AS"), (2, "KD"), (3, "7C")]
            # Heartbeats keep an idle device ready past the 3.5 s timeout.
            await asyncio.sleep(4.0)
            assert driver.ready and sum(isinstance(m, Heartbeat) for m in got) >= 3
            # A firmware reboot: the daemon identifies it again; it comes up locked.
            await dev.do("reboot")
            await until(lambda: driver.status.sessions == 2 and driver.ready)
            await driver.command(shoe.LockGate(0, False))
            # Line noise on the device's output: every card still arrives, once, in order.
            await dev.do("noise 0.001", "load " + " ".join(["QS", "3H"] * 20))
            for _ in range(40):  # a dealer's pace, well above the device's queue's
                await dev.do("draw")
                await asyncio.sleep(0.05)
            await until(lambda: len(cards_of(got)) == 43 or "dropped" in " ".join(dev.lines),
                        timeout=60)
            assert not [line for line in dev.lines if line.startswith("dropped")]
            await dev.do("noise 0")
            drawn = cards_of(got)[3:]
            assert drawn == [(i + 1, ["QS", "3H"][i % 2]) for i in range(40)]
            if version == 3:  # every event the device numbered arrived once, in order
                await until(lambda: len(stamped) >= len(sent_events(dev)), timeout=10)
                assert stamped == sent_events(dev) and len(stamped) > 43
                assert len({origin for origin, _, _ in stamped}) == 2  # the reboot
            else:
                assert not stamped
            print(f"decode errors under noise: {driver.status.decode_errors}")


async def test_c_tumbler_plays_tai_sai_with_the_real_daemon(built: Path, tmp_path: Path
                                                            ) -> None:
    """The daemon as its own process, its tumbler the C emulator: rounds with the dice the
    emulator threw, a device reboot between rounds, and a round on a noisy line."""
    async with table(tmp_path, SimRig, "tai-sai-open-cover", "E", None,
                     {"tumbler": "C-TM-9"}) as t, \
            emulator(built, "tumbler", tmp_path / "tumbler", "--speed", "10",
                     "--serial", "C-TM-9") as dev:
        observer = t.observer
        t.daemon.start()
        await until(lambda: t.ready("tumbler"), timeout=30)
        ready = next(d for d in observer.of("devices/tumbler") if d["state"] == "ready")
        assert (ready["model"], ready["protocol_version"]) == ("REF-TUMBLER", 3)
        dealer = t.rig.dealer(reply_timeout=15)
        async with dealer.session():
            throws = [(3, 3, 5), (1, 2, 6), (6, 6, 6)]
            for n, dice in enumerate(throws):
                if n == 1:  # a firmware reboot between rounds
                    await dev.do("reboot")
                    await until(lambda: sum(d["state"] == "ready" for d in observer.of(
                        "devices/tumbler")) >= 2, timeout=30)
                if n == 2:
                    await dev.do("noise 0.001")
                await dev.do(f"throw {dice[0]} {dice[1]} {dice[2]} 0 10 20")
                for name in ("open_betting", "close_betting"):
                    answer = await dealer.command(name)
                    assert answer["ok"], answer
                await dev.saw("armed 1", n + 1)
                await dev.do("button")
                await until(results_at_least(observer, n + 1), timeout=30)
                result = observer.of("results")[n]
                assert result["status"] == "valid", result
                assert tuple(result["dice"]) == dice
            await dev.do("noise 0")


@pytest.mark.parametrize("mode", ["honest", "repeat", "switch", "short", "alter", "recant"])
async def test_c_shuffler_over_a_serial_line_is_told_apart_when_it_cheats(
        built: Path, tmp_path: Path, mode: str) -> None:
    """RWS 5.5.2 end to end: the daemon as its own process, the C shuffler (SHA-256, the
    commitment of its session's version) and the C shoe behind ptys. A shoe dealt from an
    honest shuffle, or one whose chunks came twice and whose whole reveal came again, is
    verified; a card switched on its way to the shoe, a short commitment and reveal, or an
    altered reveal is never verified, and the alert says which; a shoe whose committed order
    was revealed, then another order, stays verified (the commitment binds the first) and
    the second is alerted."""
    async with table(tmp_path, CShufflerRig, "tiger-buffalo", "P", 8,
                     {"shoe": "C-SHOE-1", "shuffler": "C-SF-1"}) as t:
        events, observer = t.events, t.observer
        async with emulator(built, "shuffler", tmp_path / "shuffler", "--speed", "10",
                            "--serial", "C-SF-1") as shuffler, \
                emulator(built, "shoe", tmp_path / "shoe", "--serial", "C-SHOE-1") as shoe_dev:
            await shuffler.do(f"mode {mode}")
            t.daemon.start()
            await until(lambda: t.ready("shoe") and t.ready("shuffler"), timeout=30)
            up = next(d for d in observer.of("devices/shuffler") if d["state"] == "ready")
            # Version 3: the commitment binds the decks and the total (spec: shuffle_complete).
            assert (up["model"], up["serial"], up["protocol_version"]) == (
                "REF-SHUFFLER", "C-SF-1", 3)
            assert any(line.startswith("session 3 ") for line in shuffler.lines)
            dealer = t.rig.dealer(reply_timeout=15)
            async with dealer.session():
                assert (await dealer.command("new_shoe"))["ok"]
                await until(lambda: bool(events("shuffle_certified")), timeout=20)
                [certified] = events("shuffle_certified")
                await shuffler.saw("shuffled ")
                [line] = [x for x in shuffler.lines if x.startswith("shuffled ")]
                sid, *cards = line.split()[1:]
                assert int(sid) == certified["shuffle_id"] and len(cards) == 416
                await shuffler.do("take")
                await shuffler.saw("taken ")
                await shoe_dev.do("load " + " ".join(cards))
                await until(lambda: bool(events("shoe_loaded")), timeout=20)
                for name in ("open_betting", "close_betting"):
                    answer = await dealer.command(name)
                    assert answer["ok"], answer
                await deal_one_round(observer, shoe_dev, 1)
                dealt = len(events("card"))
                assert (await dealer.command("end_shoe"))["ok"]
                await until(lambda: bool(events("shuffle_verified")
                                         or events("shuffle_verification_failed")), timeout=30)
                await asyncio.sleep(1.0)  # a repeated reveal still arriving changes nothing
        verified = events("shuffle_verified")
        failed = events("shuffle_verification_failed")
        alerts = [a for a in observer.of("alerts") if a.get("clause") == "5.5.2"]
        if mode in ("honest", "repeat"):
            assert [v["cards_checked"] for v in verified] == [dealt] and not failed, alerts
            assert not alerts
        elif mode == "recant":
            assert [v["cards_checked"] for v in verified] == [dealt] and not failed, alerts
            assert [a for a in alerts if "was verified" in a["detail"]
                    and "revealed as" in a["detail"]], alerts
        else:
            assert not verified and len(failed) == 1
            why = {"switch": "draw 3:", "short": "has 4 cards",
                   "alter": "does not match the commitment"}[mode]
            assert any(why in a["detail"] for a in alerts), alerts


async def test_c_shuffler_carries_a_command_sent_again_out_once(built: Path,
                                                                tmp_path: Path) -> None:
    """A start_shuffle sent again under its own command number (version 3: the host's
    answer was lost) is answered ok and not shuffled twice; a new command is a new
    shuffle."""
    async with emulator(built, "shuffler", tmp_path / "shuffler", "--speed", "4",
                        "--serial", "C-SF-3") as dev:
        driver = DeviceDriver("shuffler", SerialUrl(str(tmp_path / "shuffler")),
                              shuffler.CATALOGUE, DeviceKind.SHUFFLER, Unattended(),
                              backoff_initial=0.05, backoff_max=0.3)
        async with running(driver):
            await driver.wait_ready(10)
            reply = await driver.command(shuffler.StartShuffle(0, 6))
            assert isinstance(reply, CommandResult) and reply.result == 0
            await dev.saw("shuffled ")
            [line] = [x for x in dev.lines if x.startswith("rx start_shuffle ")]
            number = int(line.split()[2])
            assert number > 0
            again = await driver.command(shuffler.StartShuffle(0, 6), number=number)
            assert isinstance(again, CommandResult) and again.result == 0
            await dev.saw("repeat start_shuffle")
            await asyncio.sleep(1.0)  # a second shuffle would be done by now
            assert dev.count("shuffled ") == 1
            await driver.command(shuffler.StartShuffle(0, 6))
            await dev.saw("shuffled ", 2)
            assert dev.count("repeat ") == 1
