"""A service with a short retention and a dealer that plays rounds through it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from daemon.config import parse_config
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Effect, RoundResult
from daemon.service import TableService
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.keys import commands, signing

DECKS, SET, NONCE = 8, 0xC0FFEE, bytes(16)


def config(tmp_path: Path) -> Any:
    return parse_config({
        "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": DECKS},
        "devices": {"shoe": "socket://127.0.0.1:9", "shuffler": "socket://127.0.0.1:9",
                    "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "broker": {"url": "mqtt://127.0.0.1:9"},
        "journal": {"path": str(tmp_path / "j.db"), "keep_days": 2, "keep_rounds": 100},
        "signing": signing(), "commands": commands()})


class Dealer:
    """Deals whole rounds through the service (each input journalled as the daemon does),
    with a new certified shoe, its order revealed, every 60 rounds."""

    def __init__(self, s: TableService, seed: int) -> None:
        self.s, self.rng, self.shuffle_id, self.draws = s, random.Random(seed), 0, 0
        self.cards: list[str] = []

    def _in(self, effects: list[Effect]) -> list[Effect]:
        self.s.apply(effects)
        return effects

    def new_shoe(self) -> None:
        t = self.s.table
        assert isinstance(t, BaccaratTable)
        if t.shoe is not None:
            old, total = self.cards, len(self.cards)
            self._in(t.end_shoe("pit"))
            for offset in range(0, total, 100):
                self._in(t.order_chunk(fp.OrderChunk(self.shuffle_id, offset, total, NONCE,
                                                     tuple(old[offset:offset + 100]))))
        self.shuffle_id += 1
        self.cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        self.rng.shuffle(self.cards)
        self._in(t.shuffle_complete(fp.ShuffleComplete(
            self.shuffle_id, DECKS, fp.inventory_of(self.cards), 0, True,
            fp.commitment(self.shuffle_id, NONCE, self.cards))))
        self._in(t.shoe_loaded(sp.ShoeLoaded(len(self.cards), SET)))
        self.draws = 0

    def round(self, n: int) -> None:
        t = self.s.table
        assert isinstance(t, BaccaratTable)
        if n % 60 == 0:
            self.new_shoe()
        self._in(t.open_betting())
        self._in(t.close_betting())
        while True:
            self.draws += 1
            out = self._in(t.card_drawn(sp.CardDrawn(self.draws, self.cards[self.draws - 1],
                                                     99, SET, False, False)))
            if any(isinstance(e, RoundResult) for e in out):
                return
