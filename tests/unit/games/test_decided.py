"""Decided bets: "an outcome has been established" (RWS 5.4, MBS 5.17, Tai Sai 5.4)."""

from __future__ import annotations

import pytest

from daemon.games import get_game
from daemon.games.cards import parse_cards
from daemon.games.decided import decided_bets, decided_dice_bets, outcome_established
from daemon.games.errors import DealError
from daemon.games.outcome import Result
from daemon.games.tai_sai import Throw

TB, MBS = get_game("tiger-buffalo"), get_game("tiger-baccarat")


def decided(game: object, layout: str, cards: str) -> dict[str, Result]:
    return decided_bets(game, layout, parse_cards(cards.split()))  # type: ignore[arg-type]


def test_rws_tb_5_4_2_nothing_dealt_is_void() -> None:
    assert not outcome_established(decided(TB, "A", ""))


def test_rws_tb_5_4_1_player_pair_decided_after_three_cards_on_layout_a() -> None:
    got = decided(TB, "A", "7S 2H 7D")
    assert got["player_pair"] is Result.WIN
    assert outcome_established(got)


@pytest.mark.parametrize("layout", list(TB.layouts))
def test_rws_tb_5_4_2_two_cards_decide_nothing_on_any_layout(layout: str) -> None:
    assert decided(TB, layout, "7S 2H") == {}


def test_rws_tb_5_4_1_player_who_must_draw_has_lost_small_buffalo() -> None:
    """Player 7+7=4 must draw: no two-card Player win is possible any more (layout C)."""
    got = decided(TB, "C", "7S 2H 7D")
    assert got == {"small_buffalo": Result.LOSE}


def test_rws_tb_5_4_1_player_who_stands_has_lost_big_buffalo() -> None:
    """Player 7+9=6 stands: Big Buffalo, Wu Dalang and Player Char Siu are lost, and a Banker
    six can only tie, so Big and Small Tiger are lost. Banker Char Siu (7 over 6) is open."""
    got = decided(TB, "C", "7S 2H 9D")
    assert got == {"big_buffalo": Result.LOSE, "wu_dalang": Result.LOSE,
                   "big_tiger": Result.LOSE, "small_tiger": Result.LOSE,
                   "player_char_siu": Result.LOSE}


def test_rws_tb_5_4_1_no_pair_is_a_decided_loss() -> None:
    assert decided(TB, "A", "7S 2H 8D")["player_pair"] is Result.LOSE


def test_rws_tb_5_4_1_natural_decides_everything() -> None:
    got = decided(TB, "P", "9S 2H KH 3D")
    assert set(got) == {r.bet for r in TB.offered("P")}
    assert got["player"] is Result.WIN


def test_rws_tb_5_4_1_banker_small_7_decided_when_banker_must_stand() -> None:
    """Banker 7 stands and has two cards: Banker Small/Big 7 and Tiger are decided."""
    got = decided(TB, "P", "KS 4H 3D 3C")
    assert got["banker_big_7"] is Result.LOSE
    assert got["tiger"] is Result.LOSE
    assert "banker_small_7" not in got  # the Player's third card decides who wins


def test_mbs_5_17_2_tiger_pair_won_after_three_cards() -> None:
    assert decided(MBS, "A", "QS 2H QD")["tiger_pair"] is Result.WIN


def test_mbs_5_17_1_no_outcome_after_two_cards() -> None:
    assert decided(MBS, "A", "QS 2H") == {}


def test_decided_rejects_impossible_deal() -> None:
    with pytest.raises(DealError, match="not required by the Table of Play"):
        decided(TB, "A", "9S 2H KH 3D 4C")


def test_tai_sai_5_4_2_dice_not_at_rest_is_void() -> None:
    game = get_game("tai-sai-open-cover")
    assert decided_dice_bets(game, "A", None) == {}


def test_tai_sai_5_4_1_dice_at_rest_decide_every_bet() -> None:
    game = get_game("tai-sai-open-cover")
    got = decided_dice_bets(game, "C", Throw.of((1, 2, 3)))
    assert len(got) == len(game.offered("C"))
    assert got["small"] is Result.WIN
