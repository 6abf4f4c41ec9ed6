"""Every printed pay-table row is paid, at the printed odds, under its clause, and nothing
else is ever paid. Rows are transcribed here from the documents, independently of the
engine's data; every distinct 8-deck coup is settled through the live path."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.games import get_game
from daemon.games.par_sheet import coup_weights
from daemon.games.settle import settle_coup

# (clause, bet, pays) as printed in section 4 of each document.
PRINTED: dict[str, list[tuple[str, str, str]]] = {
    "tiger-buffalo": [
        ("4.1.1", "banker", "1:2"), ("4.1.1", "banker", "1:1"), ("4.1.1", "player", "1:1"),
        ("4.1.2", "tie", "8:1"),
        ("4.1.3", "banker_pair", "11:1"), ("4.1.3", "player_pair", "11:1"),
        ("4.1.4", "big_tiger", "50:1"), ("4.1.4", "small_tiger", "22:1"),
        ("4.1.5", "big_buffalo", "35:1"), ("4.1.5", "small_buffalo", "20:1"),
        ("4.1.6", "banker_big_7", "30:1"), ("4.1.6", "banker_small_7", "15:1"),
        ("4.1.7", "player_big_7", "30:1"), ("4.1.7", "player_small_7", "15:1"),
        ("4.1.8", "tiger_buffalo", "6:1"),
        ("4.1.9", "tiger_pair", "4:1"), ("4.1.9", "tiger_pair", "20:1"),
        ("4.1.9", "tiger_pair", "100:1"),
        ("4.1.10", "tiger_tie", "35:1"),
        ("4.1.11", "wu_dalang", "150:1"),
        ("4.1.12", "tiger", "12:1"), ("4.1.12", "tiger", "20:1"),
        ("4.1.13", "banker_char_siu", "10:1"), ("4.1.13", "banker_char_siu", "15:1"),
        ("4.1.13", "banker_char_siu", "50:1"), ("4.1.13", "player_char_siu", "10:1"),
        ("4.1.13", "player_char_siu", "15:1"), ("4.1.13", "player_char_siu", "50:1"),
    ],
    "tiger-buffalo-insurance-plus": [
        ("4.1.1", "banker", "1:2"), ("4.1.1", "banker", "1:1"), ("4.1.1", "player", "1:1"),
        ("4.1.2", "tie", "8:1"),
        ("4.1.3", "banker_pair", "11:1"), ("4.1.3", "player_pair", "11:1"),
        ("4.1.4", "big_tiger", "50:1"), ("4.1.4", "small_tiger", "22:1"),
        ("4.1.4", "big_buffalo", "35:1"), ("4.1.4", "small_buffalo", "20:1"),
        ("4.1.5", "tiger_buffalo", "6:1"),
        ("4.1.6", "wu_dalang", "150:1"),
        ("4.1.7", "banker_char_siu", "10:1"), ("4.1.7", "banker_char_siu", "15:1"),
        ("4.1.7", "banker_char_siu", "50:1"), ("4.1.7", "player_char_siu", "10:1"),
        ("4.1.7", "player_char_siu", "15:1"), ("4.1.7", "player_char_siu", "50:1"),
    ],
    "tiger-baccarat": [
        ("4.1", "banker", "0.95:1"), ("4.1", "player", "1:1"), ("4.1", "tie", "8:1"),
        ("4.2", "tiger_pair", "4:1"), ("4.2", "tiger_pair", "20:1"),
        ("4.2", "tiger_pair", "100:1"),
        ("4.3", "tiger", "12:1"), ("4.3", "tiger", "20:1"), ("4.3", "small_tiger", "22:1"),
        ("4.3", "big_tiger", "50:1"), ("4.3", "tiger_tie", "35:1"),
    ],
}
PREFIX = {"tiger-buffalo": "rws_tb", "tiger-buffalo-insurance-plus": "rws_ip",
          "tiger-baccarat": "mbs"}

_PAID: dict[str, set[tuple[str, str, str]]] = {}


def paid(game_id: str) -> set[tuple[str, str, str]]:
    """(clause, bet, pays) of every win over every coup, on layouts covering every bet."""
    if game_id not in _PAID:
        game = get_game(game_id)
        layouts: list[str] = []
        covered: set[str] = set()
        for layout in game.layouts:
            new = {r.bet for r in game.offered(layout)} - covered
            if new:
                layouts.append(layout)
                covered |= new
        out: set[tuple[str, str, str]] = set()
        for coup in coup_weights(8):
            for layout in layouts:
                for r in settle_coup(game, layout, coup, insurance_offered=False):
                    if r.pays is not None:
                        out.add((r.clause, r.bet, str(r.pays)))
        _PAID[game_id] = out
    return _PAID[game_id]


CASES = [pytest.param(game, row, id=f"{PREFIX[game]}_{row[0].replace('.', '_')}_{row[1]}_pays_"
                                     f"{row[2].replace(':', '_').replace('.', '_')}")
         for game, rows in PRINTED.items() for row in rows]


@pytest.mark.parametrize(("game", "row"), CASES)
def test_printed_row_is_paid(game: str, row: tuple[str, str, str]) -> None:
    assert row in paid(game)


@pytest.mark.parametrize("game", list(PRINTED))
def test_nothing_is_paid_that_is_not_printed(game: str) -> None:
    extra: set[Any] = paid(game) - set(PRINTED[game])
    assert not extra, f"{game} pays rows its document does not print: {sorted(extra)}"


# Tai Sai: (bet type, pays) rows of Pay Tables 1 (A), 2 (C) and 3 (E), as printed.
TAI_SAI_COMMON = [("small", "1:1"), ("big", "1:1"), ("single", "1:1"), ("single", "2:1"),
                  ("single", "12:1"), ("total", "62:1"), ("total", "31:1"), ("total", "18:1"),
                  ("total", "12:1"), ("total", "8:1"), ("total", "7:1"), ("total", "6:1"),
                  ("domino", "6:1"), ("any_triple", "31:1"), ("triple", "180:1")]
TAI_SAI = {
    ("A", "4.1.1"): [*TAI_SAI_COMMON, ("double", "11:1")],
    ("C", "4.1.2"): [*TAI_SAI_COMMON, ("double", "11:1"), ("odd", "1:1"), ("even", "1:1"),
                     ("four_number", "7:1"), ("three_single", "30:1"),
                     ("double_single", "50:1")],
    ("E", "4.1.3"): [*TAI_SAI_COMMON, ("four_number", "7:1"), ("three_single", "30:1"),
                     ("double_single", "50:1")],
}


def _bet_type(bet: str) -> str:
    for t in ("any_triple", "four_number", "three_single", "double_single"):
        if bet.startswith(t):
            return t
    return bet.split("_", maxsplit=1)[0]


def tai_sai_paid(layout: str) -> set[tuple[str, str, str]]:
    from itertools import product  # noqa: PLC0415

    from daemon.games.settle import settle_throw  # noqa: PLC0415
    from daemon.games.tai_sai import Throw  # noqa: PLC0415

    game = get_game("tai-sai-open-cover")
    return {(r.clause, _bet_type(r.bet), str(r.pays))
            for dice in product(range(1, 7), repeat=3)
            for r in settle_throw(game, layout, Throw.of(dice)) if r.pays is not None}


@pytest.mark.parametrize(("layout", "clause"), [
    pytest.param(layout, clause, id=f"tai_sai_{clause.replace('.', '_')}_appendix_{layout}")
    for layout, clause in TAI_SAI])
def test_tai_sai_pay_table_rows(layout: str, clause: str) -> None:
    got = tai_sai_paid(layout)
    want = {(clause, t, pays) for t, pays in TAI_SAI[(layout, clause)]}
    assert got == want
