"""A baccarat table with a certified shoe whose top cards a test chooses, and what its
effects say: shared by the round core's tests."""

from __future__ import annotations

import itertools
import random
from typing import Any

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Record, RoundResult
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp

DECKS = 8
NONCE = bytes(16)


def shuffled(seed: int = 1) -> list[str]:
    cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
    random.Random(seed).shuffle(cards)
    return cards


class Table:
    """A table with a certified shoe whose top cards are chosen by the test."""

    def __init__(self, game: str = "tiger-buffalo", layout: str = "P",
                 top: list[str] | None = None) -> None:
        ids = itertools.count(1)
        self.t = BaccaratTable("bac-07", get_game(game), layout, DECKS,
                               clock=lambda: 1_764_000_000.0, new_round_id=lambda: f"r{next(ids)}")
        cards = shuffled()
        for i, c in enumerate(top or []):  # move chosen cards to the top, keep the inventory
            j = cards.index(c, i)
            cards[i], cards[j] = cards[j], cards[i]
        self.cards = cards
        self.draws = 0
        self.effects: list[Any] = []
        self.effects += self.t.shuffle_complete(fp.ShuffleComplete(
            77, DECKS, fp.inventory_of(cards), 0, True, fp.commitment(77, NONCE, cards)))
        self.effects += self.t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE))

    def draw(self, **kw: Any) -> list[Any]:
        card = kw.pop("card", None) or self.cards[self.draws]
        self.draws += 1
        msg = sp.CardDrawn(self.draws, card, 99, kw.pop("deck_set", 0xC0FFEE),
                           kw.pop("double_draw", False), kw.pop("face_up", False))
        out = self.t.card_drawn(msg)
        self.effects += out
        return out


def results(effects: list[Any]) -> list[dict[str, Any]]:
    return [results_payload(e.facts) for e in effects if isinstance(e, RoundResult)]


def kinds(effects: list[Any]) -> list[str]:
    return [e.kind for e in effects if isinstance(e, Record)]
