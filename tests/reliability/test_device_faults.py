"""Device faults against the daemon process: line noise at a bit error rate of 1e-3 for
a whole run, and a device of the wrong protocol version. The daemon stays up, reports
each fault, and voids nothing that the rules do not void. (Unplug, replug and firmware
reboot mid-round are HIL scenarios: hil/scenarios/*-unplug-*.json, *-reboot-*.json.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hil.faults import LineFaults
from tests.reliability.harness import sim_table
from tests.soak import scale


@pytest.mark.soak
async def test_line_noise_at_ber_1e_3_voids_nothing(tmp_path: Path) -> None:
    rounds = scale(15, 100)
    async with sim_table(tmp_path, speed=100) as t:
        for i, port in enumerate(t.rig.ports.values()):
            port.faults_out = LineFaults(bit_error_rate=1e-3, seed=i)
            port.faults_in = LineFaults(bit_error_rate=1e-3, seed=10 + i)
        dealer = t.rig.dealer(betting_seconds=0.01)
        await dealer.run(rounds)
        await t.observer.until(lambda: len(t.results_by_seq()) >= rounds)
        flipped = sum((p.faults_out.flipped if p.faults_out else 0) +
                      (p.faults_in.flipped if p.faults_in else 0)
                      for p in t.rig.ports.values())
        assert t.daemon.running()
    results = t.results_by_seq()
    assert [r["status"] for r in results.values()] == ["valid"] * len(results)
    problems = [a for a in t.observer.of("alerts") if a["code"] == "device_protocol_error"]
    assert problems, "line errors were not reported"
    devices = {d["name"]: d for d in t.observer.of("devices/shoe") +
               t.observer.of("devices/shuffler")}
    print(f"\nline noise: {len(results)} rounds at BER 1e-3 both ways, {flipped} bits "
          f"flipped, all valid; {len(problems)} device_protocol_error alerts; decode errors "
          f"reported: { {n: d['decode_errors'] for n, d in devices.items()} }")


async def test_a_device_of_the_wrong_protocol_version_is_refused_and_reported(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path, protocol_versions={"shoe": 9}) as t:
        await t.observer.until(lambda: any(d["state"] == "incompatible"
                                           for d in t.observer.of("devices/shoe")))
        shoe = next(d for d in t.observer.of("devices/shoe") if d["state"] == "incompatible")
        assert "peer speaks protocol version 9, we speak 1, 2 and 3" in shoe["detail"]
        await asyncio.sleep(1.0)
        assert t.daemon.running()
        # The table refuses to play without its shoe rather than guess.
        dealer = t.rig.dealer(reply_timeout=10)
        async with dealer.session():
            answer = await dealer.command("open_betting")
        assert answer["ok"] is False
