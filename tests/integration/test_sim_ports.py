"""Simulators behind real transports, driven by host code through pyserial and pyusb."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import serial
import usb.core

from firmware_protocols import common, shoe, shuffler, tumbler
from firmware_protocols.framing import DecodeError
from firmware_protocols.link import PeerReset
from hil.faults import LineFaults
from hil.ports import PtyPort, TcpPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.tumbler import Throw, TumblerSim
from hil.usb_backend import SimUsbBackend
from tests.hostside import Host, SerialLine, UsbLine

CARDS = ["9H", "KS", "TD", "2C", "AS", "7D"]


def identified(h: Host) -> bool:
    return bool(h.messages(common.IdentifyReply))


async def test_shoe_over_pty_identifies_and_deals(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    line = SerialLine(str(tmp_path / "shoe"))  # opened by path, exactly like /dev/tabled/shoe
    host = Host(line, shoe.CATALOGUE)
    host.send(common.Identify(tag=7))
    host.send(shoe.LockGate(tag=8, locked=False))
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(shoe.Gate)))
    reply = host.messages(common.IdentifyReply)[0]
    assert (reply.tag, reply.kind, reply.protocol_version) == (7, 1, 3)
    sim.load(CARDS, port.now(), cut_at=5)
    for _ in CARDS:
        sim.draw(port.now())
    port.kick()
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(shoe.ShoeEmpty)))
    drawn = host.messages(shoe.CardDrawn)
    assert [m.card for m in drawn] == CARDS
    assert [m.draw_no for m in drawn] == [1, 2, 3, 4, 5, 6]
    assert host.messages(shoe.CutCard) == [shoe.CutCard(5)]
    line.close()
    await port.stop()


async def test_locked_gate_stops_drawing(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    sim.load(CARDS, port.now())
    assert sim.draw(port.now()) is None  # the shoe comes up locked
    await port.stop()


async def test_tumbler_over_socket_url() -> None:
    sim = TumblerSim(speed=20)
    sim.script(Throw((3, 3, 5), tumbles=4, tilt=(0, 80, 10)))
    port = TcpPort(sim)
    await port.start()
    line = SerialLine(port.url)  # pyserial's socket:// handler
    host = Host(line, tumbler.CATALOGUE)
    host.send(tumbler.TumbleNow(tag=1))  # not armed: refused
    host.send(tumbler.Arm(tag=2, armed=True))
    host.send(tumbler.TumbleNow(tag=3))
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(tumbler.Settled)))
    results = {m.tag: m.result for m in host.messages(common.CommandResult)}
    assert results == {1: common.CommandResultCode.WRONG_STATE, 2: 0, 3: 0}
    assert host.messages(tumbler.Activated) == [tumbler.Activated(2, True)]
    assert [m.count for m in host.messages(tumbler.Tumble)] == [1, 2, 3, 4]
    settled = host.messages(tumbler.Settled)[0]
    assert settled == tumbler.Settled((3, 3, 5), (0, 80, 10), (1, 0, 1), 97)
    line.close()
    await port.stop()


async def test_shuffler_through_pyusb() -> None:
    sim = ShufflerSim(speed=50, serial="SF4242")
    port = TcpPort(sim)
    await port.start()
    backend = SimUsbBackend("127.0.0.1", port.port, serial="SF4242")

    def open_device() -> object:
        dev = usb.core.find(backend=backend, idVendor=shuffler.USB_VID,
                            idProduct=shuffler.USB_PID)
        assert dev is not None and dev.serial_number == "SF4242"
        dev.set_configuration()
        return dev

    dev = await asyncio.to_thread(open_device)
    host = Host(UsbLine(dev), shuffler.CATALOGUE)
    host.send(common.Identify(tag=1))
    host.send(shuffler.StartShuffle(tag=2, decks=8))
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(shuffler.ShuffleComplete)))
    done = host.messages(shuffler.ShuffleComplete)[0]
    assert isinstance(done, shuffler.ShuffleComplete)
    assert done.inventory == (8,) * 52 and done.rng_ok and done.foreign_cards == 0
    host.send(shuffler.RequestOrder(tag=3, shuffle_id=done.shuffle_id))
    await asyncio.to_thread(
        host.run_until,
        lambda h: sum(len(m.cards) for m in h.messages(shuffler.OrderChunk)) == 416)
    chunks = host.messages(shuffler.OrderChunk)
    order = [c for m in chunks for c in m.cards]
    nonce = chunks[0].nonce
    assert shuffler.commitment(done.shuffle_id, nonce, order) == done.commitment
    assert shuffler.inventory_of(order) == done.inventory
    await port.stop()


async def test_usb_unplug_is_reported_as_no_device() -> None:
    sim = ShufflerSim()
    port = TcpPort(sim)
    await port.start()
    backend = SimUsbBackend("127.0.0.1", port.port)
    dev = await asyncio.to_thread(usb.core.find, backend=backend, idVendor=shuffler.USB_VID,
                                  idProduct=shuffler.USB_PID)
    await asyncio.to_thread(dev.set_configuration)
    await asyncio.to_thread(dev.write, shuffler.EP_OUT, b"\x00", 1000)
    await port.unplug()

    def read_until_gone() -> int:
        for _ in range(200):
            try:
                dev.read(shuffler.EP_IN, 64, 20)
            except usb.core.USBTimeoutError:
                continue  # timeouts are normal until the disconnect is noticed
            except usb.core.USBError as exc:
                return int(exc.errno)
        raise AssertionError("the unplug was never reported")

    assert await asyncio.to_thread(read_until_gone) == 19  # ENODEV
    assert await asyncio.to_thread(backend.enumerate_devices) == []
    await port.replug()
    assert await asyncio.to_thread(backend.enumerate_devices) == ["sim-shuffler"]
    await port.stop()


async def test_noisy_line_delivers_every_card_once(tmp_path: Path) -> None:
    """Bit errors at 1e-3, dropped, duplicated and truncated writes: the link hides them all."""
    sim = ShoeSim(seed=3)
    faults = LineFaults(bit_error_rate=1e-3, dup_rate=1e-3, drop_rate=1e-3, truncate_rate=0.01,
                        seed=3)
    port = PtyPort(sim, link=tmp_path / "shoe", faults_out=faults,
                   faults_in=LineFaults(bit_error_rate=1e-3, seed=4))
    await port.start()
    line = SerialLine(str(tmp_path / "shoe"))
    host = Host(line, shoe.CATALOGUE)
    host.send(shoe.LockGate(tag=1, locked=False))
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(shoe.Gate)), 20)
    cards = [r + s for s in "SHDC" for r in "A23456789TJQK"] * 2
    sim.load(cards, port.now())
    for _ in cards:
        sim.draw(port.now())
    port.kick()
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(shoe.ShoeEmpty)), 60)
    assert [m.card for m in host.messages(shoe.CardDrawn)] == cards
    assert faults.flipped > 0
    assert any(isinstance(e, DecodeError) for e in host.events)
    line.close()
    await port.stop()


async def test_firmware_reboot_mid_stream_is_seen_as_peer_reset(tmp_path: Path) -> None:
    sim = ShoeSim()
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    line = SerialLine(str(tmp_path / "shoe"))
    host = Host(line, shoe.CATALOGUE)
    host.send(common.Identify(tag=1))
    await asyncio.to_thread(host.run_until, identified)
    sim.reboot(port.now())
    port.kick()
    await asyncio.to_thread(host.run_until,
                            lambda h: any(isinstance(e, PeerReset) for e in h.events))
    host.send(common.Identify(tag=2))
    await asyncio.to_thread(host.run_until, lambda h: len(h.messages(common.IdentifyReply)) == 2)
    assert sim.gate_locked  # a rebooted shoe comes back locked
    line.close()
    await port.stop()


async def test_wrong_protocol_version_is_reported(tmp_path: Path) -> None:
    sim = ShoeSim(protocol_version=9)
    port = PtyPort(sim, link=tmp_path / "shoe")
    await port.start()
    line = SerialLine(str(tmp_path / "shoe"))
    host = Host(line, shoe.CATALOGUE)
    await asyncio.to_thread(
        host.run_until,
        lambda h: any(isinstance(e, DecodeError) and e.reason == "unsupported_version"
                      for e in h.events))
    assert host.endpoint.link.state == "connecting"
    line.close()
    await port.stop()


async def test_pty_unplug_and_replug(tmp_path: Path) -> None:
    sim = ShoeSim()
    link = tmp_path / "shoe"
    port = PtyPort(sim, link=link)
    await port.start()
    line = SerialLine(str(link))
    host = Host(line, shoe.CATALOGUE)
    host.send(common.Identify(tag=1))
    await asyncio.to_thread(host.run_until, identified)
    await port.unplug()
    assert not link.exists()
    # pyserial reports a vanished pty as SerialException or a bare OSError (EIO from
    # in_waiting); SerialException is an OSError, so a transport must treat both as unplugged.
    assert issubclass(serial.SerialException, OSError)
    with pytest.raises(OSError):
        for _ in range(100):
            await asyncio.to_thread(line.read)
    line.close()
    await port.replug()
    line2 = SerialLine(str(link))
    host2 = Host(line2, shoe.CATALOGUE)
    host2.send(common.Identify(tag=2))
    await asyncio.to_thread(host2.run_until, identified)
    line2.close()
    await port.stop()


async def test_delayed_line_still_delivers_in_order() -> None:
    sim = TumblerSim(speed=20)
    sim.script(Throw((6, 6, 6)))
    port = TcpPort(sim, faults_out=LineFaults(delay=0.15))
    await port.start()
    line = SerialLine(port.url)
    host = Host(line, tumbler.CATALOGUE)
    host.send(tumbler.Arm(tag=1, armed=True))
    host.send(tumbler.TumbleNow(tag=2))
    await asyncio.to_thread(host.run_until, lambda h: bool(h.messages(tumbler.Settled)))
    assert [m.count for m in host.messages(tumbler.Tumble)] == [1, 2, 3]
    assert host.messages(tumbler.Settled)[0].dice == (6, 6, 6)
    line.close()
    await port.stop()
