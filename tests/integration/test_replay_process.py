"""The replay process (daemon/replay/) beside the daemon, both real processes: it runs
below the daemon's priority, ends with it however the daemon ends, and one that dies is
started again while the table deals on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import aiomqtt

from daemon.replay.supervisor import SILENT
from tests.reliability.harness import Table, deal, sim_table
from tests.replay_process import replay_process, stat
from tests.wait import until


async def replayed_results(t: Table) -> int:
    """Results a replay request from msg_seq 1 brings back."""
    count = 0
    async with aiomqtt.Client("127.0.0.1", t.broker.port) as c:
        await c.subscribe(f"{t.rig.base}/replay/to/me", qos=1)
        await c.publish(f"{t.rig.base}/replay/request", json.dumps(
            {"id": "r", "reply_to": "me", "from_msg_seq": 1, "topics": ["results"]}), qos=1)
        async with asyncio.timeout(20):
            async for m in c.messages:
                body = json.loads(bytes(m.payload))
                if body["type"] == "replay":
                    assert body["error"] is None, body
                    return count
                count += 1
    return count


async def test_it_runs_below_the_daemon_and_ends_when_the_daemon_is_killed(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)  # at its priority
        pid = replay_process(t)
        assert pid is not None
        t.daemon.kill()  # SIGKILL: no cleanup in the daemon; the pipe closes regardless
        await until(lambda: stat(pid) is None, 10)


async def test_it_ignores_the_groups_sigterm_and_ends_after_the_daemon(
        tmp_path: Path) -> None:
    """systemd's stop sends SIGTERM to every process of the unit: the replay process
    leaves its end to the daemon, which stops it last, so the daemon's clean stop is
    not interleaved with an error about its replay process."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        pid = replay_process(t)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)
        await asyncio.sleep(0.5)
        assert stat(pid) is not None
        assert t.daemon.stop() == 0
        await until(lambda: stat(pid) is None, 10)
        assert "the replay process ended" not in t.daemon.log()


async def test_one_that_dies_is_started_again_and_the_table_deals_on(
        tmp_path: Path) -> None:
    async with sim_table(tmp_path) as t:
        await deal(t, 1)
        first = replay_process(t)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        await deal(t, 2)  # the rounds never needed it
        await until(lambda: replay_process(t) not in (None, first), 20)
        await until(lambda: "replay" in t.daemon.log(), 5)
        assert "the replay process ended (exit status -9)" in t.daemon.log()
        # Subscribed again within a second or so of its start: asked until it answers.
        async with asyncio.timeout(20):
            while True:
                try:
                    async with asyncio.timeout(2):
                        got = await replayed_results(t)
                    break
                except TimeoutError:
                    continue
        assert got == len(t.results_by_seq()) == 3


async def test_one_that_stops_answering_is_killed_and_started_again(
        tmp_path: Path) -> None:
    """A replay process that is stuck (here SIGSTOPped) holds its subscription at the
    broker for its keepalive and answers nothing: it reports every second, so the daemon
    kills one that has said nothing for SILENT seconds and starts another."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        stuck = replay_process(t)
        assert stuck is not None
        os.kill(stuck, signal.SIGSTOP)
        await until(lambda: replay_process(t) not in (None, stuck), SILENT + 15)
        assert stat(stuck) is None
        assert f"the replay process said nothing for {SILENT:.0f} s: killed" in t.daemon.log()
        async with asyncio.timeout(20):  # and the new one answers
            while True:
                try:
                    async with asyncio.timeout(2):
                        await replayed_results(t)
                    break
                except TimeoutError:
                    continue
