"""Tai Sai (Open Cover) RWS v5: pay tables 1-3, the triple rule 3.10, validity 3.7/3.8/5.5."""

from __future__ import annotations

from itertools import product

import pytest

from daemon.games import get_game
from daemon.games.errors import DiceError, UnknownGameError
from daemon.games.settle import settle_throw
from daemon.games.tai_sai import Throw
from daemon.games.tai_sai_open_cover import check_throw

GAME = get_game("tai-sai-open-cover")


def winners(layout: str, dice: tuple[int, int, int]) -> dict[str, str]:
    return {r.bet: str(r.pays) for r in settle_throw(GAME, layout, Throw.of(dice))
            if r.pays is not None}


@pytest.mark.parametrize(("layout", "n"), [
    pytest.param(layout, n, id=f"tai_sai_3_10_triple_{n}_layout_{layout}")
    for layout in "ACE" for n in range(1, 7)])
def test_triple_rule(layout: str, n: int) -> None:
    """3.10: on a triple only Specific Triple, Any Triple, Double, Single and Total 6/9/12/15."""
    got = winners(layout, (n, n, n))
    want = {f"triple_{n}": "180:1", "any_triple": "31:1", f"single_{n}": "12:1"}
    if layout != "E":  # Pay Table 3 has no Double Dice Bet
        want[f"double_{n}"] = "11:1"
    if 3 * n in (6, 9, 12, 15):
        want[f"total_{3 * n}"] = {6: "18:1", 9: "7:1", 12: "7:1", 15: "18:1"}[3 * n]
    assert got == want


@pytest.mark.parametrize(("dice", "layout", "expected"), [
    pytest.param((1, 2, 4), "A", {"small": "1:1", "total_7": "12:1", "single_1": "1:1",
                                  "single_2": "1:1", "single_4": "1:1", "domino_1_2": "6:1",
                                  "domino_1_4": "6:1", "domino_2_4": "6:1"},
                 id="tai_sai_4_1_1_small_total_single_domino"),
    pytest.param((5, 5, 6), "A", {"big": "1:1", "total_16": "31:1", "single_5": "2:1",
                                  "single_6": "1:1", "domino_5_6": "6:1", "double_5": "11:1"},
                 id="tai_sai_4_1_1_big_double"),
    pytest.param((5, 5, 6), "C", {"big": "1:1", "even": "1:1", "total_16": "31:1",
                                  "single_5": "2:1", "single_6": "1:1", "domino_5_6": "6:1",
                                  "double_5": "11:1", "double_single_5_5_6": "50:1"},
                 id="tai_sai_4_1_2_even_double_single"),
    pytest.param((3, 4, 5), "C", {"big": "1:1", "even": "1:1", "total_12": "7:1",
                                  "single_3": "1:1", "single_4": "1:1", "single_5": "1:1",
                                  "domino_3_4": "6:1", "domino_3_5": "6:1", "domino_4_5": "6:1",
                                  "four_number_6543": "7:1", "four_number_5432": "7:1",
                                  "three_single_3_4_5": "30:1"},
                 id="tai_sai_4_1_2_four_number_three_single"),
    pytest.param((1, 2, 2), "E", {"small": "1:1", "odd": None, "total_5": "31:1",
                                  "single_1": "1:1", "single_2": "2:1", "domino_1_2": "6:1",
                                  "double_single_2_2_1": "50:1"},
                 id="tai_sai_4_1_3_no_double_dice_bet"),
])
def test_pay_table_rows(dice: tuple[int, int, int], layout: str,
                        expected: dict[str, str | None]) -> None:
    want = {k: v for k, v in expected.items() if v is not None}
    assert winners(layout, dice) == want


def test_tai_sai_4_1_2_double_single_list_omits_1_1_2_and_6_6_5() -> None:
    """Decision D11: kept as printed; those throws win no Double-with-Single bet."""
    names = {r.bet for r in GAME.offered("C")}
    assert "double_single_1_1_2" not in names and "double_single_6_6_5" not in names
    assert len([n for n in names if n.startswith("double_single_")]) == 28
    for dice in ((1, 1, 2), (6, 6, 5), (2, 1, 1)):
        assert not [b for b in winners("C", dice) if b.startswith("double_single")]


def test_tai_sai_4_1_2_four_number_needs_three_different_numbers() -> None:
    """Decision D10: 6-6-5 does not win 6 5 4 3."""
    assert "four_number_6543" not in winners("C", (6, 6, 5))
    assert "four_number_6543" in winners("C", (6, 5, 3))


def test_tai_sai_4_1_2_and_4_1_3_four_number_lists() -> None:
    four_c = sorted(r.bet for r in GAME.offered("C") if r.bet.startswith("four_number_"))
    four_e = sorted(r.bet for r in GAME.offered("E") if r.bet.startswith("four_number_"))
    assert four_c == sorted(["four_number_6543", "four_number_6532", "four_number_5432",
                             "four_number_4321"])
    assert len(four_e) == 15
    assert not [r for r in GAME.offered("A") if r.bet.startswith("four_number_")]


def test_tai_sai_order_of_dice_does_not_matter() -> None:
    for dice in product(range(1, 7), repeat=3):
        assert winners("C", dice) == winners("C", tuple(sorted(dice)))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [
    pytest.param((1, 2), id="tai_sai_2_2_1_two_dice"),
    pytest.param((1, 2, 7), id="tai_sai_2_2_1_seven"),
    pytest.param((0, 2, 3), id="tai_sai_2_2_1_zero"),
    pytest.param((1, 2, 3, 4), id="tai_sai_2_2_1_four_dice"),
    pytest.param((1, True, 3), id="tai_sai_2_2_1_bool"),
    pytest.param("123", id="tai_sai_2_2_1_string"),
])
def test_invalid_dice(bad: object) -> None:
    with pytest.raises(DiceError, match=r"2\.2\.1"):
        Throw.of(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tumbles", "flat", "early", "clause"), [
    pytest.param(3, [True] * 3, False, None, id="tai_sai_3_7_three_tumbles_valid"),
    pytest.param(2, [True] * 3, False, "5.5.1", id="tai_sai_5_5_1_two_tumbles"),
    pytest.param(0, [True] * 3, False, "5.5.1", id="tai_sai_5_5_1_no_tumble"),
    pytest.param(5, [True, False, True], False, "5.5.2", id="tai_sai_5_5_2_die_not_flat"),
    pytest.param(5, [True, True], False, "5.5.2", id="tai_sai_3_8_two_flat_flags"),
    pytest.param(5, [True] * 3, True, "5.5.3", id="tai_sai_5_5_3_activated_early"),
])
def test_check_throw(tumbles: int, flat: list[bool], early: bool, clause: str | None) -> None:
    found = check_throw(tumbles, flat, early)
    assert (found.clause if found else None) == clause


@pytest.mark.parametrize("layout", ["B", "D", "F", "Z"])
def test_tai_sai_2_1_1_only_a_c_e_are_layouts(layout: str) -> None:
    with pytest.raises(UnknownGameError, match=r"2\.1\.1"):
        GAME.offered(layout)
