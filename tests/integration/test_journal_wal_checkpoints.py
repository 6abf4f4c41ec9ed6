"""The journal's WAL checkpoints come while betting is open, never inside a card's or a
result's commit (docs/architecture.md, "WAL checkpoints while betting is open"): the
whole table in this process, the simulated shoe on a pty and the shuffler through the
pyusb backend, a real Mosquitto, dealt at full speed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from daemon.config import parse_config
from daemon.round.lifecycle import BETTING
from daemon.service import TableService
from daemon.store.journal import WAL_CHECKPOINT_COMMITS
from hil.broker import Mosquitto
from hil.rig import SimRig


async def test_checkpoints_come_while_betting_is_open_round_after_round(
        tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    rig = SimRig(tmp_path, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=1000)
    await rig.start()
    service = TableService(parse_config(rig.config()))
    states: list[str] = []
    commits: list[int] = []
    checkpoint = service.journal.wal_checkpoint

    def watched() -> None:
        states.append(service.table.state)
        commits.append(service.journal._commits)
        checkpoint()

    service.journal.wal_checkpoint = watched  # type: ignore[method-assign]
    task = asyncio.create_task(service.run())
    try:
        dealer = rig.dealer(betting_seconds=0.0)
        results = await dealer.run(40)
    finally:
        await service.publisher.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await rig.stop()
        broker.cleanup()
    assert [r["seq"] for r in results] == list(range(1, 41))
    # Each round's end records the shoe's answer to the gate's lock after its result:
    # the checkpoints must not depend on the result being the latest record.
    assert len(states) >= 40 * 8 // WAL_CHECKPOINT_COMMITS  # at least 8 commits a round
    assert set(states) == {BETTING}
    assert min(commits) >= WAL_CHECKPOINT_COMMITS
