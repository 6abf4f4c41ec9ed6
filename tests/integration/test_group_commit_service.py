"""Group commit in the daemon's service, on a real SQLite file: what one device read
brings is journalled as one transaction, and the device commands it causes are sent
only once that transaction is on disk (seen by another connection, as a restart would)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import DeviceCommand
from daemon.service import TableService
from firmware_protocols import shoe as sp
from tests.integration.service_dealer import Dealer, config
from tests.journal_file import committed_kinds


async def test_commands_a_group_causes_are_sent_after_its_commit(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    s = TableService(cfg, clock=lambda: 1.8e9)
    s.begin()
    dealer = Dealer(s, seed=1)
    dealer.round(0)  # a shoe, one round dealt
    t = s.table
    assert isinstance(t, BaccaratTable)
    sent: list[tuple[Any, list[str]]] = []

    def spawn(coro: Any, name: str | None = None) -> None:
        sent.append((coro.cr_frame.f_locals.get("e"), committed_kinds(cfg.journal_path)))
        coro.close()

    s.state.spawn = spawn  # type: ignore[method-assign]
    before = len(committed_kinds(cfg.journal_path))
    seen: list[str] = []
    s.journal._db.set_trace_callback(seen.append)
    with s.effects.together():  # two inputs of one read: "No more bets" and the first card
        s.apply(t.open_betting())
        effects = t.close_betting()
        assert any(isinstance(e, DeviceCommand) for e in effects)
        s.apply(effects)
        assert sent == [], "a device command went out before its group was on disk"
        assert len(committed_kinds(cfg.journal_path)) == before
        dealer.draws += 1
        s.apply(t.card_drawn(sp.CardDrawn(dealer.draws, dealer.cards[dealer.draws - 1], 99,
                                          0xC0FFEE, False, False)))
    assert seen.count("COMMIT") == 1 and seen.count("BEGIN IMMEDIATE") == 1
    assert sent, "the group's device commands were not sent"
    for command, disk in sent:
        assert isinstance(command, DeviceCommand)
        assert {"betting_opened", "betting_closed", "card"} <= set(disk[before:])
    s.journal.close()
