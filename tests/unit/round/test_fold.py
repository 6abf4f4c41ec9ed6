"""One interpreter of the journal: whatever a table went through live, folding the records
it produced into a fresh table gives the same table. Random commands and device messages
(every handler, in and out of range, in every state) drive the live table; no device
input raises; after every step the live state equals the replayed one."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.round import checkpoint
from daemon.round.effects import CommandRefusedError
from daemon.round.lifecycle import RoundLifecycle
from firmware_protocols import shuffler as fp
from tests.unit.round.fold_steps import DECKS, new_table, random_step, snapshot
from tests.unit.round.parts import Row, journal


@settings(max_examples=60)
@given(seed=st.integers(0, 100_000),
       game=st.sampled_from(["tiger-buffalo", "tiger-baccarat", "tiger-buffalo-insurance-plus",
                             "tai-sai-open-cover"]))
def test_the_live_table_is_the_folded_journal(seed: int, game: str) -> None:
    rng = random.Random(seed)
    cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
    rng.shuffle(cards)
    live = new_table(game)
    records: list[Row] = []
    for step in range(120):
        try:
            effects = random_step(live, rng, cards)
        except CommandRefusedError:
            continue  # refused: nothing changed, nothing recorded
        records += journal(effects, 1.0e9)
        fresh = new_table(game)
        fresh.replay(records)
        assert snapshot(fresh) == snapshot(live), f"step {step}: live and replayed differ"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), at=st.integers(0, 119),
       game=st.sampled_from(["tiger-buffalo", "tiger-baccarat", "tiger-buffalo-insurance-plus",
                             "tai-sai-open-cover"]))
def test_a_checkpoint_and_the_records_after_it_are_the_whole_journal(
        seed: int, at: int, game: str) -> None:
    """Retention prunes the records before a checkpoint: folding the checkpoint (made
    from the fold of the records so far, stored as JSON) and what followed gives the
    table that folding every record gives, in every attribute."""
    rng = random.Random(seed)
    cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
    rng.shuffle(cards)

    def new() -> RoundLifecycle:
        return new_table(game)

    live = new()
    every: list[Row] = []
    pruned: list[Row] = []
    for step in range(120):
        if step == at:
            so_far = new()
            so_far.replay(every)
            body = json.loads(json.dumps(checkpoint.make(so_far, new)))
            pruned = [Row(checkpoint.KIND, body, None, 1.0e9)]  # what came before: gone
        try:
            effects = random_step(live, rng, cards)
        except CommandRefusedError:
            continue
        every += journal(effects, 1.0e9)
        pruned += journal(effects, 1.0e9)
    whole, from_checkpoint = new(), new()
    whole.replay(every)
    from_checkpoint.replay(pruned)
    assert checkpoint.exact(whole, from_checkpoint)
    assert snapshot(from_checkpoint) == snapshot(live)
