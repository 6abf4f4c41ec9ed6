"""The simulated dealer (tabled simulate, the reliability suite) plays the Pit's part when
a result is held for a double draw (D17), so a simulated table never waits forever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.rig import SimRig
from hil.shoe import ShoeSim


async def test_a_held_result_is_confirmed_and_published(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    rig = SimRig(tmp_path, "tiger-baccarat", "A", 8, ("127.0.0.1", broker.port), speed=50)
    await rig.start()
    shoe: ShoeSim = rig.sims["shoe"]
    plain = shoe.draw

    def draw(now: float, **kw: Any) -> str | None:  # the shoe's third card leaves doubled
        assert shoe.shoe is not None
        return plain(now, **kw, double_draw=shoe.shoe.drawn == 2)

    monkeypatch.setattr(shoe, "draw", draw)
    daemon = DaemonProcess(rig.config(), tmp_path)
    daemon.start()
    try:
        dealer = rig.dealer(betting_seconds=0.0)
        results = await dealer.run(2)
    finally:
        daemon.stop()
        await rig.stop()
        broker.cleanup()
    assert [r["seq"] for r in results] == [1, 2]
    assert all(r["status"] == "valid" for r in results)
    held = [b for t, b in dealer.seen if t == "events" and b.get("event") == "result_held"]
    assert [h["doubles"] for h in held] == [[3]]
    assert [r["ok"] for r in dealer.replies if r["command"] == "confirm_order"] == [True]
