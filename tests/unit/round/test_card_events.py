"""What the events topic gets, as the table decides it: one ``card`` event per card.

The table decides what each record publishes (``effects.Record.event``): the record as
recorded, a card's one event (``CardEvent``: the draw, the card as placed, the card
required next), or nothing. Until issue 27 the service rebuilt each card's event from
the order of the effects (``wire.event.plan``); the events it published then, for the
model's physical table (tests/model/rig.py: every fault kind, restarts) dealing
``rounds`` rounds of each game, are in ``published/events-1.json``, written by that
code. This release must publish exactly those. The file is never rewritten: a change of
what is published by design is a new file, written where missing by
``python -m tests.unit.round.test_card_events`` (and the contract's version with it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon import __version__
from daemon.mqtt import wire
from daemon.round.effects import CardEvent, Effect, Record
from tests.model.rig import FAULT_KINDS, GAMES, Rig
from tests.unit.round.tables import Table

HERE = Path(__file__).parent / "published"
FILES = sorted(HERE.glob("events-*.json"))
ROUNDS, SEED = 25, 23


class Publishing(Rig):
    """The model's table, and what each record it journals publishes."""

    def __init__(self, game: str, seed: int) -> None:
        self.events: list[list[Any]] = []
        super().__init__(game, seed, frozenset(FAULT_KINDS))

    def apply(self, effects: list[Effect]) -> None:
        for e in effects:
            event = wire.event.published(e) if isinstance(e, Record) else None
            if isinstance(e, Record) and event is not None:
                self.events.append([e.round_id, *event])
        super().apply(effects)


def published(game: str, rounds: int, seed: int) -> list[list[Any]]:
    rig = Publishing(game, seed)
    rig.run(rounds)
    return json.loads(json.dumps(rig.events))  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
@pytest.mark.parametrize("game", GAMES)
def test_the_events_published_are_those_an_earlier_release_published(
        path: Path, game: str) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert published(game, stored["rounds"], stored["seed"]) == stored["events"][game]


def test_the_stored_events_cover_every_shape_of_a_card_event() -> None:
    """The comparison above can tell: cards with their draw and without (carried), with
    the card required next and without, draws not placed and next cards on their own."""
    events = [e for p in FILES for g in GAMES
              for e in json.loads(p.read_text(encoding="utf-8"))["events"][g]]
    cards = [body for _, kind, body in events if kind == "card"]
    assert any(b.get("carried") for b in cards) and any("confidence" in b for b in cards)
    assert any(b["next"] is None for b in cards) and any(b["next"] for b in cards)
    assert {"card_drawn", "next_card", "insurance_offered"} <= {k for _, k, _ in events}


def test_a_card_carries_its_draw_and_the_card_required_next() -> None:
    t = Table("tiger-buffalo", "A", top=["9S", "2H", "KH", "3D"])
    t.t.open_betting()
    t.t.close_betting()
    out = t.draw()
    drawn, card, needed = [e for e in out if isinstance(e, Record)]
    assert (drawn.kind, card.kind, needed.kind) == ("card_drawn", "card", "next_card")
    assert (drawn.event, needed.event) == (None, None)  # journalled, published in the card
    assert isinstance(card.event, CardEvent)
    assert wire.event.published(card) == ("card", {
        "card": "9S", "hand": "player", "position": 1, "draw_no": 1, "confidence": 99,
        "deck_set": 0xC0FFEE, "double_draw": False, "face_up": False,
        "next": "banker_card_1"})


def test_a_card_that_completes_the_deal_has_no_next_and_a_first_next_goes_alone() -> None:
    t = Table("tiger-buffalo", "A", top=["9S", "2H", "KH", "3D"])  # a natural: four cards
    t.t.open_betting()
    [first] = [e for e in t.t.close_betting() if isinstance(e, Record)
               and e.kind == "next_card"]
    assert wire.event.published(first) == ("next_card", {"needed": "player_card_1"})
    for _ in range(3):
        t.draw()
    last = t.draw()
    [card] = [e for e in last if isinstance(e, Record) and e.kind == "card"]
    assert wire.event.published(card) == ("card", {
        "card": "3D", "hand": "banker", "position": 2, "draw_no": 4, "confidence": 99,
        "deck_set": 0xC0FFEE, "double_draw": False, "face_up": False, "next": None})
    assert not [e for e in last if isinstance(e, Record) and e.kind == "next_card"]


def write_missing() -> Path | None:
    """This release's events, if no file holds them (a change by design)."""
    events = {g: published(g, ROUNDS, SEED) for g in GAMES}
    if any(json.loads(p.read_text(encoding="utf-8"))["events"] == events for p in FILES):
        return None
    path = HERE / f"events-{len(FILES) + 1}.json"
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=HERE, check=False).stdout.strip() or "outside git"
    games = ",\n".join(f"  {json.dumps(g)}: [\n" + ",\n".join(
        f"   {json.dumps(e, sort_keys=True)}" for e in events[g]) + "\n  ]" for g in GAMES)
    written_by = json.dumps(f"tabled {__version__} (daemon/ at {head})")
    path.write_text(f'{{\n "written_by": {written_by},\n "rounds": {ROUNDS}, "seed": {SEED},'
                    f'\n "events": {{\n{games}\n }}\n}}\n', encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_missing() or 'nothing: a file holds these events'}")
