"""Checkpoints written by an earlier release are read by this one.

A restart folds from the latest checkpoint, and retention has pruned the records before
it (daemon/round/checkpoint.py): a release that cannot read the checkpoint an earlier
one wrote cannot rebuild its table. What a checkpoint holds is found, not listed (every
attribute that differs from a fresh table), so renaming or retyping a table's attribute
changes the format without anyone deciding to. These files were written by the release
named in each, mid-round, and are never rewritten: a change that breaks one needs a
migration (and a new FORMAT), not a new file. A new format adds its own files:
``python -m tests.unit.round.test_checkpoint_releases`` writes those missing.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon import __version__
from daemon.round import checkpoint
from daemon.round.effects import CommandRefusedError
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import shuffler as fp
from tests.unit.round.test_fold import DECKS, journal, new_table, random_step, snapshot

HERE = Path(__file__).parent / "checkpoints"
GAMES = ("tiger-buffalo", "tiger-baccarat", "tiger-buffalo-insurance-plus",
         "tai-sai-open-cover")


def _plain(value: Any) -> Any:
    """The snapshot as JSON keeps it (tuples become lists)."""
    return json.loads(json.dumps(value))


def _mid_round(game: str) -> tuple[RoundLifecycle, int]:
    """A table with a round open and something in it, by the fold tests' random steps."""
    for seed in range(1000):
        rng = random.Random(seed)
        cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        rng.shuffle(cards)
        live = new_table(game)
        records = []
        for _ in range(200):
            try:
                records += journal(random_step(live, rng, cards), 1.0e9)
            except CommandRefusedError:
                continue
            r = live.round
            started = bool(r.cards) if r is not None else False
            if isinstance(live, TaiSaiTable):
                started = live.tumbles > 0
            if r is not None and started and live.state not in ("idle", "betting_open"):
                table = new_table(game)
                table.replay(records)
                return table, seed
    raise AssertionError(f"no seed gives {game} a round in progress")


def _commit() -> str:
    out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                         text=True, cwd=HERE, check=False)
    return f"git {out.stdout.strip()}" if out.returncode == 0 else "outside git"


def write_missing() -> list[Path]:
    written = []
    for game in GAMES:
        path = HERE / f"format{checkpoint.FORMAT}-{game}.json"
        if path.exists():
            continue
        table, seed = _mid_round(game)

        def fresh(g: str = game) -> RoundLifecycle:
            return new_table(g)

        path.write_text(json.dumps({
            "written_by": f"tabled {__version__} ({_commit()})", "game": game, "seed": seed,
            "checkpoint": checkpoint.make(table, fresh),
            "snapshot": _plain(snapshot(table))}, indent=1, sort_keys=True) + "\n",
            encoding="utf-8")
        written.append(path)
    return written


FILES = sorted(HERE.glob("format*-*.json"))


def test_every_game_has_a_checkpoint_of_the_current_format() -> None:
    names = {p.name for p in FILES}
    assert {f"format{checkpoint.FORMAT}-{g}.json" for g in GAMES} <= names, \
        "python -m tests.unit.round.test_checkpoint_releases writes them"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_checkpoint_an_earlier_release_wrote_rebuilds_its_table(path: Path) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    table = new_table(stored["game"])
    checkpoint.apply(table, stored["checkpoint"])
    assert _plain(snapshot(table)) == stored["snapshot"]
    # And the table goes on from there: written again, it is the same checkpoint.
    assert checkpoint.make(table, lambda: new_table(stored["game"])) == \
        stored["checkpoint"]


if __name__ == "__main__":
    for p in write_missing():
        print(f"wrote {p}")
