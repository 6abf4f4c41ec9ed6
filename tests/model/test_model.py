"""The physical table judges the baccarat core (issue 23): random runs with every fault
kind the core already survives, restarts at random steps, and the invariants of judge.py
checked after every step; and a core that lies is caught (the judge can fail)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.model.judge import ModelViolationError
from tests.model.rig import FAULT_KINDS, GAMES, Rates, Rig, Stats
from tests.soak import scale

PASSING = frozenset(FAULT_KINDS)


def run(game: str, seed: int, kinds: frozenset[str], rounds: int,
        restarts: bool = True, rates: Rates | None = None) -> Stats:
    return Rig(game, seed, kinds, rates, restarts=restarts).run(rounds)


@pytest.mark.parametrize("game", GAMES)
def test_the_core_keeps_every_invariant_under_the_faults_it_survives(game: str) -> None:
    stats = run(game, 23, PASSING, 400)
    assert stats.restarts > 0 and stats.outcomes["valid"] > 0
    assert set(stats.faults) >= PASSING - {"forced_into_held_deal"}


@pytest.mark.soak
def test_soak_every_fault_kind_and_restarts() -> None:
    """TABLED_SOAK=1: at least 20,000 rounds and 5,000 restarts over the three games."""
    rounds = scale(300, 7_000)
    total = Stats()
    for i, game in enumerate(GAMES):
        s = run(game, 1000 + i, PASSING, rounds, rates=Rates(restart=0.04))
        total.rounds += s.rounds
        total.restarts += s.restarts
        total.faults.update(s.faults)
    print(f"model soak: {total.rounds} rounds, {total.restarts} restarts, "
          f"{sum(total.faults.values())} faults of {len(total.faults)} kinds")
    assert total.rounds >= scale(900, 20_000)
    assert total.restarts >= scale(50, 5_000)


class LyingCore(Rig):
    """The core as the service drives it, but one valid result is altered on its way to
    the wire: the judge must catch what it is there to catch."""

    lie = "card"
    lied = False

    def record(self, kind: str, body: dict[str, Any], round_id: str | None,
               published: dict[str, Any] | None = None) -> None:
        p = published
        if p is not None and p.get("status") == "valid" and not self.lied:
            self.lied = True
            if self.lie == "card":
                cards = [dict(c) for c in p["cards"]]
                cards[0]["card"] = "AS" if cards[0]["card"] != "AS" else "KD"
                p = {**p, "cards": cards}
            else:
                p = {**p, "status": "void",
                     "void_reason": {"code": "x", "clause": "5.16", "detail": "a lie"}}
        super().record(kind, body, round_id, p)


@pytest.mark.parametrize(("lie", "invariant"), [
    ("card", "valid result equals the physical deal"),
    ("void", "a fault costs at most its round")])
def test_the_judge_catches_a_core_that_publishes_what_the_table_did_not_deal(
        lie: str, invariant: str) -> None:
    rig = LyingCore("tiger-buffalo", 7, frozenset(), None, restarts=False)
    rig.lie = lie
    with pytest.raises(ModelViolationError) as caught:
        rig.run(20)
    assert caught.value.invariant == invariant
