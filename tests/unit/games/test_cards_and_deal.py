"""Card codes, point values (RWS 3.2, MBS 3.3), totals (RWS 1.23, MBS 3.4), deal order."""

from __future__ import annotations

import pytest

from daemon.games.baccarat import NextCard, coup_of, deal
from daemon.games.cards import parse_card, parse_cards, point_total
from daemon.games.errors import CardCodeError, DealError


@pytest.mark.parametrize(("code", "value"), [
    pytest.param("AS", 1, id="rws_tb_3_2_1_ace_is_one"),
    pytest.param("9H", 9, id="rws_tb_3_2_2_nine_face_value"),
    pytest.param("2D", 2, id="mbs_3_3_1_two_face_value"),
    pytest.param("TC", 0, id="mbs_3_3_2_ten_is_zero"),
    pytest.param("JS", 0, id="rws_tb_3_2_3_jack_is_zero"),
    pytest.param("QH", 0, id="rws_tb_3_2_3_queen_is_zero"),
    pytest.param("KD", 0, id="rws_tb_3_2_3_king_is_zero"),
])
def test_point_values(code: str, value: int) -> None:
    assert parse_card(code).value == value


def test_rws_tb_3_2_2_ten_face_value_gives_same_totals() -> None:
    """Decision D1: a ten valued 10 (RWS) or 0 (MBS) gives the same Point Total."""
    for other in range(10):
        assert (10 + other) % 10 == point_total([0, other])


@pytest.mark.parametrize(("values", "total"), [
    pytest.param([7, 8], 5, id="rws_tb_1_23_second_digit"),
    pytest.param([9, 9, 9], 7, id="mbs_3_4_2_right_digit"),
    pytest.param([4, 5], 9, id="mbs_3_4_1_under_ten"),
])
def test_point_total(values: list[int], total: int) -> None:
    assert point_total(values) == total


@pytest.mark.parametrize("bad", ["", "A", "1S", "AX", "10S", "ASS", "  "])
def test_bad_card_codes_are_named(bad: str) -> None:
    with pytest.raises(CardCodeError, match="card"):
        parse_card(bad)


def test_lower_case_codes_are_accepted() -> None:
    assert parse_card("td").code == "TD"


def test_rws_tb_3_10_deal_order() -> None:
    d = deal(parse_cards(["9H", "KS", "TD", "2C"]))
    assert [(c.card.code, c.hand, c.position) for c in d.cards] == [
        ("9H", "player", 1), ("KS", "banker", 1), ("TD", "player", 2), ("2C", "banker", 2)]


def test_mbs_3_13_next_card_prompts() -> None:
    steps = [deal(parse_cards(c.split())).next_card for c in
             ("", "KS", "KS 2H", "KS 2H 4C", "KS 2H 4C AD", "KS 2H 4C AD KC", "KS 2H 4C AD KC 3S")]
    assert steps == [NextCard.PLAYER_1, NextCard.BANKER_1, NextCard.PLAYER_2, NextCard.BANKER_2,
                     NextCard.PLAYER_THIRD, NextCard.BANKER_THIRD, NextCard.NONE]


def test_rws_tb_3_11_banker_draws_when_player_stands() -> None:
    d = deal(parse_cards(["3S", "KH", "4C", "2D"]))
    assert d.next_card is NextCard.BANKER_THIRD


def test_rws_tb_5_8_excess_card_is_an_error() -> None:
    with pytest.raises(DealError, match=r"card 5 \(4C\) is not required"):
        deal(parse_cards(["9S", "2H", "KH", "3D", "4C"]))


def test_rws_tb_5_5_3_incomplete_deal_cannot_settle() -> None:
    with pytest.raises(DealError, match="player_third_card"):
        coup_of(parse_cards(["KS", "2H", "4C", "AD"]))


def test_winner_and_natural() -> None:
    c = coup_of(parse_cards(["9S", "2H", "KH", "3D"]))
    assert (c.winner, c.natural, c.player_total, c.banker_total) == ("player", True, 9, 5)
