"""A Tai Sai table, armed and thrown by a test: shared by the round core's tests."""

from __future__ import annotations

import itertools
from typing import Any

from daemon.games import get_game
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import tumbler as tp

ARM = tp.Arm(0, True)


def table(**kw: Any) -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), "E",
                       clock=lambda: 1_764_000_000.0, new_round_id=lambda: f"r{next(ids)}",
                       **kw)


def throw(t: TaiSaiTable, *counts: int) -> list[Any]:
    """The button pressed with the arm on (an activation), then one Tumble message for
    each of ``counts`` (the tumbler's own running count)."""
    out = t.activated(tp.Activated(1, True))
    for n in counts:
        out += t.tumble(tp.Tumble(n))
    return out


def settle(t: TaiSaiTable, dice: tuple[int, int, int] = (2, 4, 6),
           flat: tuple[int, int, int] = (1, 1, 1), confidence: int = 97) -> list[Any]:
    return t.settled(tp.Settled(dice, (0, 0, 0), flat, confidence))
