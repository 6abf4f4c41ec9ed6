"""Helpers for the tests of the round core (test_shoe_custody.py, test_insurance_windows.py,
test_pit_holds.py, test_throw_holds.py): real tables, and journal records folded into them
as a restart folds them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Effect, Record, RoundResult
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.tai_sai import TaiSaiTable

DECKS = 8
AT = 1_764_000_000.0


def baccarat(game: str = "tiger-buffalo", *, insurance_offered: bool = True
             ) -> BaccaratTable:
    ids = itertools.count(1)
    return BaccaratTable("bac-07", get_game(game), "A", DECKS, clock=lambda: AT,
                         new_round_id=lambda: f"r{next(ids)}",
                         insurance_offered=insurance_offered)


def tai_sai() -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("ts-01", get_game("tai-sai-open-cover"), "E", clock=lambda: AT,
                       new_round_id=lambda: f"r{next(ids)}")


@dataclass(frozen=True)
class Row:
    """A journal record as ``replay`` reads it (daemon/store/journal.py's JournalRecord)."""

    kind: str
    body: dict[str, Any]
    round_id: str | None
    at: float
    # A result's: the payload published for it (not journalled: stored as a message).
    published: dict[str, Any] | None = None


def journal(effects: list[Effect], at: float) -> list[Row]:
    """What the service journals of ``effects`` at ``at``: each record, and each round's
    result as the table's own record, with the payload published for it."""
    out = []
    for e in effects:
        if isinstance(e, Record):
            out.append(Row(e.kind, e.body, e.round_id, at))
        elif isinstance(e, RoundResult):
            out.append(Row("result", e.record.body(), e.round_id, at,
                           results_payload(e.facts)))
    return out


def fold(table: RoundLifecycle, kind: str, body: dict[str, Any] | None = None,
         round_id: str | None = None) -> None:
    """Fold one journal record, as ``replay`` does."""
    table.replay([Row(kind, body or {}, round_id, AT)])


def with_shoe(table: BaccaratTable, shuffle_id: int = 77) -> BaccaratTable:
    """A shoe from a certified shuffle, as its records say (the commitment is not checked
    until the reveal)."""
    fold(table, "shuffle_certified", {"shuffle_id": shuffle_id, "decks": DECKS,
                                      "commitment": "00" * 32})
    fold(table, "shoe_loaded", {"shoe_id": f"bac-07-shoe-{shuffle_id}",
                                "shuffle_id": shuffle_id, "cards": DECKS * 52,
                                "deck_set": 0xC0FFEE})
    return table


def dealing(table: BaccaratTable, round_id: str = "r1") -> BaccaratTable:
    """Round ``round_id`` open and closed: its deal takes cards."""
    fold(table, "betting_opened", {"shoe_id": table.shoe_id}, round_id)
    fold(table, "betting_closed", {}, round_id)
    return table
