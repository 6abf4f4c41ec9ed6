"""Issue 26: every clause a message cites comes from that table's own document. A Tiger
Buffalo (RWS) table's signed ``shoe_ended`` said "the cut card came out (MBS 3.22)": the
RWS documents have no cut-card clause, and MBS is another operator's document."""

from __future__ import annotations

import re

import pytest

from daemon.games import GAMES, get_game
from daemon.round.effects import Record
from firmware_protocols import shoe as sp
from tests.unit.games.documents import text
from tests.unit.round.tables import Table

TOP = ["9H", "KS", "TD", "2C"]  # a natural: four cards settle the round
CLAUSE = re.compile(r"\b\d+(?:\.\d+)+\b")


def cited(line: str) -> list[str]:
    return CLAUSE.findall(line)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_cut_card_text_cites_only_the_games_own_document(game: str) -> None:
    why = get_game(game).cut_card_text()
    assert "cut card came out" in why and "MBS" not in why and "RWS" not in why
    document = text(game)
    for clause in cited(why):
        assert re.search(rf"^\s*-\s*{re.escape(clause)}\s", document, re.M), (game, clause)


@pytest.mark.parametrize(("game", "layout", "clauses"), [
    ("tiger-buffalo", "P", []), ("tiger-buffalo-insurance-plus", "A", []),
    ("tiger-baccarat", "A", ["3.22"])])
def test_shoe_ended_after_the_cut_card_cites_the_tables_own_clause(
        game: str, layout: str, clauses: list[str]) -> None:
    t = Table(game, layout, top=TOP)
    t.t.open_betting()
    t.t.close_betting()
    t.draw()
    t.effects += t.t.cut_card(sp.CutCard(1))  # later in the round: the round completes
    for _ in range(3):
        t.draw()
    [ended] = [e for e in t.effects if isinstance(e, Record) and e.kind == "shoe_ended"]
    why = ended.body["why"]
    assert "cut card came out" in why and cited(why) == clauses, why
