"""Issue 11: every field of every device message has a documented range (firmware_protocols
LIMITS), checked at the boundary. Every message a device sends, with every field at and
just beyond its limits, goes through the real driver over a real pty: in range it is
delivered; out of range it is rejected with the raw frame; the session never drops."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.drivers.device import DeviceDriver, DeviceState
from daemon.drivers.device_url import SerialUrl
from firmware_protocols import shoe, shuffler, tumbler
from firmware_protocols.common import LIMITS, DeviceKind, Limit
from firmware_protocols.examples import EXAMPLES
from firmware_protocols.wire import Catalogue, Message
from hil.device import SimDevice
from hil.ports import PtyPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.tumbler import TumblerSim
from tests.heard import Heard
from tests.integration.running_driver import running
from tests.integration.tai_sai_service import tai_sai_service
from tests.wait import until

WIRE_MAX = {"u8": 0xFF, "u16": 0xFFFF, "u32": 0xFFFF_FFFF, "u8[3]": 0xFF, "u8[52]": 0xFF,
            "u16[3]": 0xFFFF}


def device_messages(catalogue: Catalogue) -> list[type[Message]]:
    return [c for c in catalogue.by_id.values() if c.SENDER == "device"]


def test_every_field_of_every_device_message_has_a_documented_range() -> None:
    for cat in (shoe.CATALOGUE, shuffler.CATALOGUE, tumbler.CATALOGUE):
        for cls in device_messages(cat):
            assert cls in LIMITS, f"{cat.device}: {cls.NAME} declares no limits"
            assert set(LIMITS[cls]) == {f.name for f in dataclasses.fields(cls)}


def probes(cls: type[Message]) -> Iterator[tuple[Message, bool]]:
    """``cls``'s example with one field at a time at, and just beyond, each limit."""
    base = EXAMPLES[cls]
    for f in dataclasses.fields(cls):
        limit: Limit = LIMITS[cls][f.name]
        wire_name = f.metadata["wire"].name
        current = getattr(base, f.name)
        if limit.free:
            continue
        if limit.codes:
            yield dataclasses.replace(base, **{f.name: sorted(limit.codes)[0]}), True
            yield dataclasses.replace(base, **{f.name: "ZZ"}), False
            continue
        top = WIRE_MAX[wire_name]
        for value, ok in ((limit.lo, True), (limit.hi, True), (limit.lo - 1, False),
                          (limit.hi + 1, False)):
            if not 0 <= value <= top:
                continue  # the wire type cannot carry it: nothing to check
            v: object = tuple([value, *list(current[1:])]) if isinstance(current, tuple) \
                else value
            yield dataclasses.replace(base, **{f.name: v}), ok


SIMS: dict[str, tuple[type[SimDevice], Catalogue, DeviceKind]] = {
    "shoe": (ShoeSim, shoe.CATALOGUE, DeviceKind.SHOE),
    "shuffler": (ShufflerSim, shuffler.CATALOGUE, DeviceKind.SHUFFLER),
    "tumbler": (TumblerSim, tumbler.CATALOGUE, DeviceKind.TUMBLER),
}


@pytest.mark.parametrize("device", sorted(SIMS))
async def test_every_device_message_at_and_beyond_its_limits_through_the_driver(
        tmp_path: Path, device: str) -> None:
    sim_cls, catalogue, kind = SIMS[device]
    sim = sim_cls()  # type: ignore[call-arg]
    port = PtyPort(sim, link=tmp_path / device)
    await port.start()
    delivered: list[Message] = []
    rejected: list[tuple[Message, str]] = []
    driver = DeviceDriver(device, SerialUrl(str(tmp_path / device)), catalogue, kind,
                          Heard(delivered, rejected=rejected),
                          backoff_initial=0.05, backoff_max=0.3)
    sent: list[tuple[Message, bool]] = [
        p for cls in device_messages(catalogue) if cls in EXAMPLES for p in probes(cls)]
    assert any(not ok for _, ok in sent)
    async with running(driver):
        await driver.wait_ready(5)
        for msg, _ in sent:
            sim.emit(msg, port.now())
            port.kick()
            await asyncio.sleep(0)
        want_in = [m for m, ok in sent if ok]
        want_out = [m for m, ok in sent if not ok]
        await until(lambda: len(rejected) >= len(want_out) and all(
            m in delivered for m in want_in), timeout=20)
        assert [m for m, _ in rejected] == want_out
        for m, detail in rejected:
            assert f"payload {m.to_bytes().hex()}" in detail and "is outside" in detail
        assert driver.status.state is DeviceState.READY and driver.status.sessions == 1
    await port.stop()


async def test_tai_sai_5_14_a_die_of_7_through_the_service_goes_to_the_pit(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    bad = tumbler.Settled((7, 2, 3), (0, 0, 0), (1, 1, 1), 97)
    s.board.device_rejected("tumbler", bad,
                            "tumbler: settled.dice = (7, 2, 3) is outside 0-6 (raw ...)")
    alerts = [(r.body["code"], r.body["clause"]) for r in s.journal.records()
              if r.kind == "alert"]
    assert alerts == [("device_value_out_of_range", ""), ("unresolved_irregularity", "5.14")]
    assert s.table.state == "tumbling"  # the round waits for the Pit
    assert not [r for r in s.journal.records() if r.kind == "result"]


async def test_a_handler_that_raises_is_journalled_and_never_reaches_the_session(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)

    def broken(m: Message) -> list[Any]:
        raise ZeroDivisionError("a bug")

    s.board.handlers[tumbler.Settled] = broken
    s.board.device_message("tumbler", tumbler.Settled((2, 2, 3), (0, 0, 0), (1, 1, 1), 97))
    [alert] = [r.body for r in s.journal.records() if r.kind == "alert"]
    assert alert["code"] == "internal_error" and "ZeroDivisionError" in alert["detail"]
