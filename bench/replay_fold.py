"""Benchmark: what a restart costs per journal record, folded into a fresh table.

Run: .venv/bin/python -m bench.replay_fold [--rounds N] [--repeats R]

Plays ``--rounds`` clean rounds at a baccarat table (a certified shoe, every card read
at 99%) and at a Tai Sai table (an armed tumbler, three tumbles, flat dice), keeps the
records they journal, then folds them into a fresh table ``--repeats`` times
(``RoundLifecycle.replay``: each record read from its journalled body, upcast, typed and
folded). Prints the best time per record (the machine is shared: the best run is the
one least disturbed). Writes bench/results/replay_fold.json.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from dataclasses import dataclass
from typing import Any

from bench.figures import save
from daemon.games import get_game
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Effect, Record, RoundResult
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from firmware_protocols import tumbler as tp

DECKS = 8
AT = 1.0e9


@dataclass(frozen=True)
class Row:
    """A journal record as the journal hands it to ``replay``."""

    kind: str
    body: dict[str, Any]
    round_id: str | None
    at: float


def _rows(effects: list[Effect]) -> list[Row]:
    return [Row(e.kind, e.body, e.round_id, AT) if isinstance(e, Record)
            else Row("result", e.record.body(), e.round_id, AT)
            for e in effects if isinstance(e, Record | RoundResult)]


def baccarat() -> BaccaratTable:
    ids = itertools.count(1)
    return BaccaratTable("t", get_game("tiger-buffalo"), "A", DECKS, clock=lambda: AT,
                         new_round_id=lambda: f"r{next(ids)}")


def tai_sai() -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("t", get_game("tai-sai-open-cover"), "E", clock=lambda: AT,
                       new_round_id=lambda: f"r{next(ids)}")


def baccarat_journal(rounds: int) -> list[Row]:
    rng = random.Random(1)
    t, draw = baccarat(), 0
    out: list[Row] = []
    while len({r.round_id for r in out if r.kind == "result"}) < rounds:
        cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        rng.shuffle(cards)
        sid = draw + 1
        out += _rows(t.shuffle_complete(fp.ShuffleComplete(
            sid, DECKS, fp.inventory_of(cards), 0, True,
            fp.commitment(sid, bytes(16), cards))))
        out += _rows(t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE)))
        n = 0
        while n < len(cards) - 12 and len({r.round_id for r in out
                                           if r.kind == "result"}) < rounds:
            out += _rows(t.open_betting() + t.close_betting())
            while t.state == "dealing":
                n += 1
                out += _rows(t.card_drawn(sp.CardDrawn(n, cards[n - 1], 99, 0xC0FFEE,
                                                       False, False)))
        out += _rows(t.end_shoe("bench"))
        draw += 1
    return out


def tai_sai_journal(rounds: int) -> list[Row]:
    rng = random.Random(1)
    t = tai_sai()
    out: list[Row] = []
    for _ in range(rounds):
        out += _rows(t.open_betting() + t.close_betting())
        out += _rows(t.command_answered("tumbler", tp.Arm(0, True)))
        out += _rows(t.activated(tp.Activated(1, True)))
        for n in (1, 2, 3):
            out += _rows(t.tumble(tp.Tumble(n)))
        dice = tuple(rng.randint(1, 6) for _ in range(3))
        out += _rows(t.settled(tp.Settled(dice, (0, 0, 0), (1, 1, 1), 99)))
    return out


def best_per_record(new: Any, rows: list[Row], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        table: RoundLifecycle = new()
        t0 = time.perf_counter()
        table.replay(rows)
        best = min(best, time.perf_counter() - t0)
    return best / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    figures = {}
    for name, new, rows in (("baccarat", baccarat, baccarat_journal(args.rounds)),
                            ("tai_sai", tai_sai, tai_sai_journal(args.rounds))):
        us = best_per_record(new, rows, args.repeats) * 1e6
        figures[name] = {"records": len(rows), "us_per_record": round(us, 2)}
        print(f"{name}: {len(rows)} records of {args.rounds} rounds, {us:.1f} us per "
              f"record folded (best of {args.repeats})")
    save("replay_fold", figures)


if __name__ == "__main__":
    main()
