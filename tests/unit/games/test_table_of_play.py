"""The Table of Play, checked cell by cell against a literal transcription of each printed table.

The transcriptions below are copied from the documents and parsed here, independently of
the engine's own encoding in daemon/games/table_of_play.py.
"""

from __future__ import annotations

import re

import pytest

from daemon.games import table_of_play
from daemon.games.baccarat import NextCard, deal
from daemon.games.cards import parse_cards
from tests.unit.games.helpers import CARD_OF_VALUE

# RWS Tiger Buffalo 3.12 and RWS Insurance Plus 3.15 print this table, word for word.
RWS_TABLE = """
0-1-2-3-4-5 | Player draws a card
6-7 | Player stands
8-9 | Natural – Both Player and Banker cannot draw
3 | 0-1-2-3-4-5-6-7-9 | 8
4 | 2-3-4-5-6-7 | 0-1-8-9
5 | 4-5-6-7 | 0-1-2-3-8-9
6 | 6-7 | 0-1-2-3-4-5-8-9
7 | Banker stands
8-9 | Natural – Both Player and Banker cannot draw
0-1-2 | Banker draws a card
"""
# RWS 3.11 / Insurance Plus 3.13: "if Player Hand does not draw a third card, Banker Hand
# shall stand on 6, 7, 8 or 9 and draw on 0, 1, 2, 3, 4 or 5."
RWS_PLAYER_STANDS = "stand on 6, 7, 8 or 9 and draw on 0, 1, 2, 3, 4 or 5"

# MBS 3.15, as printed.
MBS_TABLE = """
Player 0, 1, 2, 3, 4, 5 | Draws a Card
Player 6, 7 | Stand
Banker 0, 1, 2 | Draws a Card
Banker 3 | Draws except when "Player" draws an "8" as 3rd Card
Banker 4 | Draws when "Player" 3rd Card is "2", "3", "4", "5", "6" or "7"
Banker 5 | Draws when "Player" 3rd Card is "4", "5", "6" or "7"
Banker 6 | Draws when "Player" 3rd Card is "6" or "7"
Banker 7 | Stands
When "Player" stands on "6" or "7", "Banker" draws on "0" - "5"
Natural | If the point total of either hand is "8" or "9", no more cards shall be dealt
"""


def _nums(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d", text)}


def _rws_oracle() -> tuple[set[int], dict[int, set[int]], set[int], set[int]]:
    player_draws: set[int] = set()
    banker_draws: dict[int, set[int]] = {}
    naturals: set[int] = set()
    rows = [r.split(" | ") for r in RWS_TABLE.strip().splitlines()]
    for cells in rows[:3]:
        if cells[1] == "Player draws a card":
            player_draws |= _nums(cells[0])
        elif cells[1].startswith("Natural"):
            naturals |= _nums(cells[0])
    for cells in rows[3:]:
        for b in _nums(cells[0]):
            if len(cells) == 3:
                banker_draws[b] = _nums(cells[1])
                assert _nums(cells[1]) | _nums(cells[2]) == set(range(10))
            elif cells[1] == "Banker stands" or cells[1].startswith("Natural"):
                banker_draws[b] = set()
            elif cells[1] == "Banker draws a card":
                banker_draws[b] = set(range(10))
    draw_on = _nums(RWS_PLAYER_STANDS.split("draw on")[1])
    return player_draws, banker_draws, naturals, draw_on


def _mbs_oracle() -> tuple[set[int], dict[int, set[int]], set[int], set[int]]:
    player_draws: set[int] = set()
    banker_draws: dict[int, set[int]] = {}
    draw_on: set[int] = set()
    for line in MBS_TABLE.strip().splitlines():
        head, _, rule = line.partition(" | ")
        if head.startswith("Player") and rule.startswith("Draws"):
            player_draws |= _nums(head)
        elif head.startswith("Banker"):
            totals = _nums(head)
            if rule == "Draws a Card":
                third = set(range(10))
            elif rule == "Stands":
                third = set()
            elif "except" in rule:
                third = set(range(10)) - _nums(rule.replace("3rd", ""))
            else:
                third = _nums(rule.replace("3rd", ""))
            for b in totals:
                banker_draws[b] = third
        elif head.startswith("When"):
            lo, hi = sorted(_nums(head.split("draws on")[1]))
            draw_on = set(range(lo, hi + 1))
    naturals = {8, 9}
    for b in naturals:
        banker_draws[b] = set()
    return player_draws, banker_draws, naturals, draw_on


ORACLES = {"rws_tb_3_12": _rws_oracle(), "rws_ip_3_15": _rws_oracle(), "mbs_3_15": _mbs_oracle()}


def _cases() -> list[object]:
    return [pytest.param(doc, pt, bt, id=f"{doc}_player_{pt}_banker_{bt}")
            for doc in ORACLES for pt in range(10) for bt in range(10)]


@pytest.mark.parametrize(("doc", "pt", "bt"), _cases())
def test_table_of_play_cell(doc: str, pt: int, bt: int) -> None:
    player_draws, banker_draws, naturals, banker_draws_when_player_stands = ORACLES[doc]
    natural = pt in naturals or bt in naturals
    assert table_of_play.is_natural(pt, bt) == natural
    expect_player = not natural and pt in player_draws
    assert table_of_play.player_draws(pt, bt) == expect_player
    if expect_player:
        for p3 in range(10):
            expect = not natural and p3 in banker_draws[bt]
            assert table_of_play.banker_draws(pt, bt, p3) == expect, (pt, bt, p3)
    else:
        expect = not natural and bt in banker_draws_when_player_stands
        assert table_of_play.banker_draws(pt, bt, None) == expect


def _two_cards(total: int) -> tuple[str, str]:
    # A ten and a card of the total, so the deal reaches exactly this two-card total.
    return CARD_OF_VALUE[0], CARD_OF_VALUE[total]


@pytest.mark.parametrize(("doc", "pt", "bt"), [c for c in _cases()
                                               if "rws_tb" in c.id])  # type: ignore[attr-defined]
def test_deal_follows_table_of_play_rws_tb_3_11(doc: str, pt: int, bt: int) -> None:
    """The live deal path asks for exactly the cards the Table of Play requires."""
    player_draws, banker_draws, naturals, stands_draw = ORACLES[doc]
    p1, p2 = _two_cards(pt)
    b1, b2 = ("QD", CARD_OF_VALUE[bt].replace("C", "D"))
    first_four = [p1, b1, p2, b2]
    natural = pt in naturals or bt in naturals
    d = deal(parse_cards(first_four))
    if natural:
        assert d.next_card is NextCard.NONE
    elif pt in player_draws:
        assert d.next_card is NextCard.PLAYER_THIRD
        for p3 in range(10):
            d3 = deal(parse_cards([*first_four, CARD_OF_VALUE[p3].replace("C", "H")]))
            want = NextCard.BANKER_THIRD if p3 in banker_draws[bt] else NextCard.NONE
            assert d3.next_card is want, (pt, bt, p3)
    else:
        want = NextCard.BANKER_THIRD if bt in stands_draw else NextCard.NONE
        assert d.next_card is want
