"""Random legal steps of a round lifecycle and what they journal: for the live-equals-replay
property and the golden checkpoints of earlier releases."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Effect, Record, RoundResult
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from firmware_protocols import tumbler as tp

DECKS = 8
SET = 0xC0FFEE
CODES = [*fp.INVENTORY_ORDER[:8], "??", "ZZ"]


@dataclass
class Rec:
    kind: str
    body: dict[str, Any]
    round_id: str | None
    at: float
    # A result's: the payload published for it (not journalled: stored as a message).
    published: dict[str, Any] | None = None


def journal(effects: list[Effect], at: float) -> list[Rec]:
    """What the service journals of ``effects``, and what it publishes for a result."""
    out = []
    for e in effects:
        if isinstance(e, Record):
            out.append(Rec(e.kind, e.body, e.round_id, at))
        elif isinstance(e, RoundResult):
            out.append(Rec("result", e.record.body(), e.round_id, at,
                           results_payload(e.facts)))
    return out


def snapshot(t: RoundLifecycle) -> dict[str, Any]:
    r = t.round
    snap: dict[str, Any] = {"state": t.state, "round": None if r is None else (
        r.round_id, r.opened_at, r.closed_at, [c.code for c in r.cards], r.draws, r.doubles,
        r.held, r.reads)}
    if isinstance(t, BaccaratTable):
        snap.update(
            carried=[(c.code if c else None, n) for c, n in t.carried],
            insurance=(t.insurance_window, t.insurance_offers), shoe_id=t.shoe_id,
            shoe=None if t.shoe is None else (t.shoe.drawn, +t.shoe.counts,
                                               t.shoe.last_draw_no),
            ending=t.shoe_ending, owed=sorted(t.awaiting_order),
            cert=None if t.certificate is None else t.certificate.shuffle_id)
    if isinstance(t, TaiSaiTable):
        snap.update(early=t.activated_early, tumbles=t.tumbles, throw=t.throw)
    return snap


def baccarat(game: str) -> BaccaratTable:
    ids = itertools.count(1)
    return BaccaratTable("t", get_game(game), "A", DECKS, clock=lambda: 1.0e9,
                         new_round_id=lambda: f"r{next(ids)}")


def tai_sai() -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("t", get_game("tai-sai-open-cover"), "E", clock=lambda: 1.0e9,
                       new_round_id=lambda: f"r{next(ids)}")


def baccarat_step(t: BaccaratTable, rng: random.Random, cards: list[str]) -> list[Effect]:
    last = t.shoe.last_draw_no if t.shoe else 0
    if rng.random() < 0.8:  # mostly a clean next draw, so that deals complete
        n = last + 1
        msg = sp.CardDrawn(n, cards[(n - 1) % len(cards)], 99, SET, False, False)
    else:
        n = max(0, last + rng.choice([-1, 0, 1, 2]))
        msg = sp.CardDrawn(n, rng.choice([cards[(n - 1) % len(cards)], *CODES]),
                           rng.choice([0, 50, 99, 100, 200]), rng.choice([SET, SET, 0xBAD]),
                           rng.random() < 0.3, rng.random() < 0.2)
    reads = [c or rng.choice(CODES) for _, c in (t.round.reads if t.round else [])]
    actions: list[tuple[float, Callable[[], list[Effect]]]] = [
        (5, t.open_betting), (5, t.close_betting), (1, lambda: t.void_round("x", "pit")),
        (3, lambda: t.close_insurance("d")),
        (2, lambda: t.confirm_order("pit", rng.choice([None, "1,2", "3,4"]))),
        (2, lambda: t.reconstruct_deal("pit", [*reads, *rng.sample(cards[:20],
                                                                   rng.randint(0, 2))])),
        (1, lambda: t.reset_dealing_device("pit")), (1, lambda: t.end_shoe("pit")),
        (0.5, lambda: t.cut_card(sp.CutCard(last))),
        (0.2, lambda: t.shoe_empty(sp.ShoeEmpty(last))),
        (2, lambda: t.shuffle_complete(fp.ShuffleComplete(
            1, DECKS, fp.inventory_of(cards), 0, True, fp.commitment(1, bytes(16), cards)))),
        (2, lambda: t.shoe_loaded(sp.ShoeLoaded(len(cards), SET))),
        (1, lambda: t.order_chunk(fp.OrderChunk(1, 0, len(cards[:100]), bytes(16),
                                                tuple(cards[:100])))),
    ]
    if t.state == "dealing" and rng.random() < 0.75:
        if msg.confidence > 100 or msg.card == "ZZ" or n == 0:
            return t.device_fault(msg, "out of range")
        return t.card_drawn(msg)
    if rng.random() < 0.1:
        return t.card_drawn(msg)
    [(_, call)] = rng.choices(actions, [w for w, _ in actions])
    return call()


def tai_sai_step(t: TaiSaiTable, rng: random.Random) -> list[Effect]:
    dice = tuple(rng.choice([0, 1, 2, 3, 4, 5, 6, 6, 7]) for _ in range(3))
    settled = tp.Settled(dice, tuple(rng.choice([0, 40, 60, 900, 1000]) for _ in range(3)),
                         tuple(rng.choice([0, 1, 1, 2]) for _ in range(3)), 90)
    actions: list[Callable[[], list[Effect]]] = [
        t.open_betting, t.close_betting, lambda: t.void_round("x", "pit"),
        lambda: t.activated(tp.Activated(rng.choice([1, 2]), rng.random() < 0.8)),
        lambda: t.tumble(tp.Tumble(rng.randint(1, 5))),
        lambda: t.settled(settled), lambda: t.device_fault(settled, "out of range"),
    ]
    return rng.choice(actions)()


def new_table(game: str) -> RoundLifecycle:
    return tai_sai() if game.startswith("tai-sai") else baccarat(game)


def random_step(t: RoundLifecycle, rng: random.Random, cards: list[str]) -> list[Effect]:
    """One random command or device report to either kind of table (it may refuse)."""
    if isinstance(t, BaccaratTable):
        return baccarat_step(t, rng, cards)
    assert isinstance(t, TaiSaiTable)
    return tai_sai_step(t, rng)
