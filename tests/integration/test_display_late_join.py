"""Issue 26, the page: a display that joins a table late, through the real processes (the
daemon with its simulated devices, Mosquitto, `tabled display`), read over its HTTP
`/state` and with the replay requests it sends counted on the broker.

- Started after its table stopped, it says what it knows (the table is offline; the
  shoe's earlier results it could not fetch) and stops asking: a bounded number of
  replay requests, not one every 3 s for ever.
- A Tai Sai display that joined late says over how many of the table's results its
  statistics are, and how many it never saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt

from daemon.consumers.catchup import MAX_ASKS, RETRY
from daemon.security.signing import public_key_text
from tests.browser.display_process import DisplayProcess
from tests.reliability.harness import Table, deal, sim_table


async def state(display: DisplayProcess) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", display.port)
    writer.write(b"GET /state HTTP/1.1\r\n\r\n")
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    body: dict[str, Any] = json.loads(data.partition(b"\r\n\r\n")[2])
    return body


@contextlib.asynccontextmanager
async def counting_requests(t: Table) -> AsyncIterator[list[dict[str, Any]]]:
    """Every replay request any consumer sends the table, as the broker carries it."""
    seen: list[dict[str, Any]] = []
    subscribed = asyncio.Event()

    async def run() -> None:
        async with aiomqtt.Client("127.0.0.1", t.broker.port) as c:
            await c.subscribe(f"{t.rig.base}/replay/request", qos=1)
            subscribed.set()
            async for m in c.messages:
                seen.append(json.loads(m.payload if isinstance(m.payload, bytes) else b"{}"))

    task = asyncio.create_task(run())
    try:
        async with asyncio.timeout(10):
            await subscribed.wait()
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def display_of(t: Table, work: Path) -> DisplayProcess:
    key = work / "table.pub"
    key.write_text(public_key_text(t.rig.table_key.public_key()))
    display = DisplayProcess(work, t.broker.port, key, remembers=False)
    await display.start()
    return display


async def test_a_display_started_after_its_table_stopped_says_so_and_stops_asking(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path, "tiger-buffalo", "P", 8, speed=100) as t:
        await deal(t, 3)
        assert t.daemon.stop() == 0  # a clean stop: the retained status says "offline"
        async with counting_requests(t) as requests:
            display = await display_of(t, tmp_path)
            try:
                async with asyncio.timeout(20):
                    while True:
                        view = (await state(display))["tables"].get(t.rig.table_id, {})
                        if (view.get("status") or {}).get("state") == "offline" and \
                                (view.get("shoe") or {}).get("shoe_id"):
                            break
                        await asyncio.sleep(0.2)
                # Long enough for the old display to have asked several times.
                await asyncio.sleep(3 * RETRY)
                view = (await state(display))["tables"][t.rig.table_id]
            finally:
                display.kill()
        shoe = view["shoe"]
        assert not shoe["catching_up"], "it says it is fetching from a table that is offline"
        assert shoe["not_fetched"] == {"results": 3, "why": "the table is offline"}, shoe
        assert view["catchup"] == {"asking": False, "why": "the table is offline"}
        # One request may leave before the retained status arrives; none after.
        assert len(requests) <= 1, requests


async def test_a_display_that_gets_no_answer_gives_up_after_a_bounded_number(
        tmp_path: Path) -> None:
    # The table's status says online but nothing answers (here the daemon and its
    # replay process stopped with SIGSTOP, before the broker's keepalive sends its will;
    # or a broker that denies the table its replay topics): the display stops after
    # MAX_ASKS requests.
    async with sim_table(tmp_path, "tiger-buffalo", "P", 8, speed=100) as t:
        await deal(t, 2)
        await t.observer.until(lambda: any((s.get("shoe") or {}).get("hand") == 2
                                           for s in t.observer.of("snapshot")))
        stopped = [t.daemon.pid, *t.daemon.children()]  # and its replay process
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            async with counting_requests(t) as requests:
                display = await display_of(t, tmp_path)
                try:
                    await asyncio.sleep((MAX_ASKS + 1.5) * RETRY)
                    view = (await state(display))["tables"][t.rig.table_id]
                finally:
                    display.kill()
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
        assert view["status"]["state"] == "online", "the will came: the test was too slow"
        assert len(requests) == MAX_ASKS, requests
        why = f"the table answered none of {MAX_ASKS} replay requests"
        assert view["catchup"] == {"asking": False, "why": why}, view["catchup"]
        assert view["shoe"]["not_fetched"] == {"results": 2, "why": why}


async def test_a_tai_sai_display_that_joined_late_says_how_many_throws_it_has(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path, "tai-sai-open-cover", "C", None, speed=100) as t:
        await deal(t, 3)
        display = await display_of(t, tmp_path)
        try:
            async with asyncio.timeout(20):  # subscribed: it has the retained status
                while not (await state(display))["tables"].get(t.rig.table_id):
                    await asyncio.sleep(0.2)
            await deal(t, 2)
            async with asyncio.timeout(20):
                while True:
                    view = (await state(display))["tables"][t.rig.table_id]
                    if view["dice"]["seen"]["results"] == 2:  # a void is no throw
                        break
                    await asyncio.sleep(0.2)
        finally:
            display.kill()
        assert view["dice"]["seen"] == {"results": 2, "published": 5, "missing": 3}, \
            view["dice"]
        assert view["dice"]["throws"] <= 2  # statistics over the results it has, no more
