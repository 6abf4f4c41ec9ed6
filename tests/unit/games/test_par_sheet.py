"""Par sheets: exact counts, checked against independently published 8-deck figures and theory."""

from __future__ import annotations

from fractions import Fraction
from math import perm

import pytest

from daemon.games import get_game
from daemon.games.par_sheet import BetPar, ParSheet, coup_weights, par_sheet

# The standard exact 8-deck baccarat counts of ordered six-card sequences, as published
# in casino mathematics references; computed here by a different method.
PUBLISHED_8_DECKS = {"banker": 2_292_252_566_437_888, "player": 2_230_518_282_592_256,
                     "tie": 475_627_426_473_216}


def bet(sheet: ParSheet, name: str) -> BetPar:
    return next(b for b in sheet.bets if b.bet == name and b.window is None)


@pytest.fixture(scope="module")
def tb_p() -> ParSheet:
    return par_sheet(get_game("tiger-buffalo"), "P", 8)


def test_weights_count_every_six_card_sequence_once() -> None:
    for decks in (4, 8):
        assert sum(coup_weights(decks).values()) == perm(52 * decks, 6)


def test_rws_tb_3_13_main_outcomes_match_published_counts(tb_p: ParSheet) -> None:
    assert tb_p.total == 4_998_398_275_503_360
    player = bet(tb_p, "player")
    assert player.lines["Player wins"].count == PUBLISHED_8_DECKS["player"]
    assert player.lines["lose"].count == PUBLISHED_8_DECKS["banker"]
    assert player.lines["push"].count == PUBLISHED_8_DECKS["tie"]


def test_rws_tb_4_1_1_house_edges(tb_p: ParSheet) -> None:
    assert round(float(bet(tb_p, "player").house_edge), 6) == 0.012351
    assert round(float(bet(tb_p, "banker").house_edge), 6) == 0.014581  # 1 to 2 on six
    assert round(float(bet(tb_p, "tie").house_edge), 6) == 0.143596


def test_mbs_4_1_commission_banker_edge() -> None:
    sheet = par_sheet(get_game("tiger-baccarat"), "A", 8)
    assert round(float(bet(sheet, "banker").house_edge), 6) == 0.010579


def test_rws_tb_4_1_3_pair_probability_is_exact() -> None:
    """P(Player Pair) = (4N-1)/(52N-1): the second card matches the first card's rank."""
    for decks in (4, 8):
        sheet = par_sheet(get_game("tiger-buffalo"), "A", decks)
        pp = bet(sheet, "player_pair")
        assert Fraction(pp.lines["Player Pair wins"].count, sheet.total) == Fraction(
            4 * decks - 1, 52 * decks - 1)


def test_rws_tb_4_1_11_wu_dalang_reading_has_a_house_edge(tb_p: ParSheet) -> None:
    """Decision D3: the 'Player wins with 1' reading gives the house an edge."""
    assert 0.2 < bet(tb_p, "wu_dalang").house_edge < 0.3


def test_every_edge_is_positive_for_every_layout() -> None:
    """A negative edge would mean a misread rule (or a misprinted pay table)."""
    for game_id in ("tiger-buffalo", "tiger-buffalo-insurance-plus", "tiger-baccarat"):
        game = get_game(game_id)
        for layout in game.layouts:
            for b in par_sheet(game, layout, 8).bets:
                assert b.house_edge > 0, (game_id, layout, b.bet, b.window)


def test_rws_ip_4_1_8_insurance_rows_all_weighted() -> None:
    sheet = par_sheet(get_game("tiger-buffalo-insurance-plus"), "A", 8)
    rows = [b for b in sheet.bets if b.window is not None]
    assert len(rows) == 17
    for r in rows:
        assert 0 < r.offered < sheet.total
        assert sum(pl.count for pl in r.lines.values()) == r.offered


@pytest.mark.parametrize(("name", "edge"), [
    pytest.param("small", Fraction(1, 36), id="tai_sai_4_1_1_small"),
    pytest.param("big", Fraction(1, 36), id="tai_sai_4_1_1_big"),
    pytest.param("single_1", Fraction(1, 27), id="tai_sai_4_1_1_single_1_2_12"),
    pytest.param("any_triple", Fraction(1, 9), id="tai_sai_4_1_1_any_triple"),
    pytest.param("triple_6", Fraction(35, 216), id="tai_sai_4_1_1_specific_triple"),
    pytest.param("total_4", Fraction(1, 8), id="tai_sai_4_1_1_total_4"),
])
def test_tai_sai_exact_edges(name: str, edge: Fraction) -> None:
    sheet = par_sheet(get_game("tai-sai-open-cover"), "A", None)
    assert sheet.total == 216
    assert bet(sheet, name).house_edge == edge


def test_par_sheet_json_shape(tb_p: ParSheet) -> None:
    d = tb_p.as_dict()
    assert d["total"] == tb_p.total and d["decks"] == 8
    tiger = next(b for b in d["bets"] if b["bet"] == "tiger")
    assert [ln["pays"] for ln in tiger["lines"]] == ["12:1", "20:1", None]
