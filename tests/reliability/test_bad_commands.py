"""Bad commands at the daemon process, over the broker: malformed JSON, unknown names,
the wrong state, oversize payloads, bad signatures. Each gets a clear error reply and
the table's state is unchanged; the daemon keeps running."""

from __future__ import annotations

import json
import time
from pathlib import Path

from daemon.security.authority import sign_command
from tests.reliability.harness import sim_table


async def test_every_bad_command_is_answered_and_changes_nothing(tmp_path: Path) -> None:
    async with sim_table(tmp_path) as t:
        dealer = t.rig.dealer(reply_timeout=10)
        async with dealer.session():
            assert dealer._client is not None
            await dealer.deal_round()  # a table mid-shoe, idle
            before = (await dealer.command("status"))["state"]

            def signed(name: str, cid: str, **args: str) -> str:
                return json.dumps(sign_command(t.rig.dealer_key, "sim-1", name, cid,
                                               time.time(), **args))

            bad = {
                "m1": ("open_betting", b"{not json"),
                "m2": ("open_betting", b"\xff\xfe\x00"),
                "m3": ("open_betting", b"[1, 2, 3]"),
                "m4": ("launch_rocket", signed("launch_rocket", "m4").encode()),
                "m5": ("close_betting", signed("close_betting", "m5",  # wrong state
                                               round_id="none").encode()),
                "m6": ("void_round", signed("void_round", "m6",
                                            round_id="none").encode()),  # no reason
                "m7": ("open_betting", json.dumps({"id": "m7", "pad": "x" * 5000}).encode()),
                "m8": ("open_betting", json.dumps({"id": "m8"}).encode()),  # unsigned
            }
            for name, payload in bad.values():
                await dealer._client.publish(f"{t.rig.base}/cmd/{name}", payload, qos=1)
            replies = [await dealer._expect(lambda tp, b: tp == "replies" and b.get("ok") is
                                            False) for _ in range(len(bad))]
            after = (await dealer.command("status"))["state"]
            await dealer.deal_round()  # and the table still plays
        await t.observer.until(lambda: len(t.results_by_seq()) == 2)
        running = t.daemon.running()
    codes = sorted((r["command"] or "?", r["error"]["code"]) for r in replies)
    assert codes == sorted([
        ("open_betting", "bad_payload"), ("open_betting", "bad_payload"),
        ("open_betting", "bad_payload"), ("launch_rocket", "unknown_command"),
        ("close_betting", "wrong_state"), ("void_round", "bad_argument"),
        ("open_betting", "bad_payload"), ("open_betting", "denied")]), codes
    assert all(r["error"]["message"] for r in replies)
    assert before == after == "idle"
    assert running and len(t.results_by_seq()) == 2
    for r in replies:
        t.rig.keyring.verify(r)
    print("\nbad commands: " + "; ".join(f"{c}: {e}" for c, e in codes))
