"""A shoe that ends normally has its order revealed and verified, with no alert: the
shuffler answers request_order with order_chunks (no tag), and the driver takes them for
the answer. Before, every reveal timed out after 3 s and raised device_command_failed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.reliability.harness import sim_table


async def test_a_shoe_ends_normally_with_its_order_verified_and_no_alert(tmp_path: Path) -> None:
    async with sim_table(tmp_path, game="tiger-baccarat", layout="A") as t:
        dealer = t.rig.dealer(reply_timeout=15)
        async with dealer.session():
            for _ in range(2):
                result = await dealer.deal_round()
                assert result["status"] == "valid"
            answer = await dealer.command("end_shoe")
            assert answer["ok"] is True, answer
        await t.observer.until(lambda: any(e["event"] == "shuffle_verified"
                                           for e in t.observer.of("events")))
        verified = next(e for e in t.observer.of("events") if e["event"] == "shuffle_verified")
        assert verified["cards_checked"] >= 8
        await asyncio.sleep(4.0)  # longer than the driver's 3 s command timeout
        alerts = [a["code"] for a in t.observer.of("alerts")]
        assert "device_command_failed" not in alerts, t.observer.of("alerts")
