"""Decision D2, the Twin Tiger Pair, per document (RWS 1.33 and 3.2; MBS 1.1.14.3).

RWS defines the Twin by the pairs' *value*, and 3.2 defines value: a picture card 0, a ten
its face value 10. MBS matches face-card pairs by identity ("same face cards"), as its Pair
definition does. The house edges quoted in the decision are checked against an
enumeration written here independently of the par sheet.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest

from daemon.games import get_game
from daemon.games.decisions import PAIR_SAME_RANK
from daemon.games.par_sheet import par_sheet
from tests.unit.games.helpers import outcome, settle

TB, MBS = "tiger-buffalo", "tiger-baccarat"

RANKS = "A23456789TJQK"
PICTURES = "JQK"
ZERO = "TJQK"


def test_rws_1_33_two_picture_pairs_are_a_twin_by_value() -> None:
    # Player J J, Banker K K: both pairs have the value 0 (RWS 3.2.3).
    assert outcome(settle(TB, "P", "JS KH JC KD 5S 4H")["tiger_pair"]) == "win 100:1"
    assert outcome(settle(TB, "P", "QS KH QC KD 5S 4H")["tiger_pair"]) == "win 100:1"


def test_rws_3_2_2_a_pair_of_tens_has_value_10_not_a_twin_with_kings() -> None:
    assert outcome(settle(TB, "P", "TS KH TC KD 5S 4H")["tiger_pair"]) == "win 20:1"
    assert outcome(settle(TB, "P", "TS TH TC TD 5S 4H")["tiger_pair"]) == "win 100:1"


@pytest.mark.parametrize("cards", ["JS KH JC KD 5S 4H", "TS KH TC KD 5S 4H",
                                   "QS JH QC JD 5S 4H"])
def test_mbs_1_1_14_3_face_card_pairs_twin_only_as_the_same_face_cards(cards: str) -> None:
    assert outcome(settle(MBS, "A", cards)["tiger_pair"]) == "win 20:1"


def test_mbs_1_1_14_3_same_face_cards_are_a_twin() -> None:
    assert outcome(settle(MBS, "A", "QS QH QC QD 5S 4H")["tiger_pair"]) == "win 100:1"


def _edge(decks: int, pair: str, twin: str) -> Fraction:
    """Tiger Pair house edge by exhaustive enumeration of the four initial ranks."""
    def is_pair(a: str, b: str) -> bool:
        if pair == "rank":
            return a == b
        # MBS 1.1.14 literally: same point value, except two non-identical face cards.
        return a == b or (a in ZERO and b in ZERO and not (a in PICTURES and b in PICTURES))

    def is_twin(p: str, b: str, p2: str, b2: str) -> bool:
        if twin == "rank":
            return p == b
        if twin == "rws_value":  # 3.2: pictures 0, a ten 10
            return p == b or (p in PICTURES and b in PICTURES)
        if twin == "point_value":  # every zero-valued rank alike
            return p == b or (p in ZERO and b in ZERO)
        return p == b == p2 == b2  # four cards of one rank

    n = 4 * decks
    ev, total = Fraction(0), 0
    for r1, r2, r3, r4 in product(RANKS, repeat=4):
        w = (n * (n - (r2 == r1)) * (n - (r3 == r1) - (r3 == r2))
             * (n - (r4 == r1) - (r4 == r2) - (r4 == r3)))
        pp, bp = is_pair(r1, r3), is_pair(r2, r4)
        pays = (100 if pp and bp and is_twin(r1, r2, r3, r4) else 20 if pp and bp
                else 4 if pp or bp else -1)
        ev += pays * w
        total += w
    return -ev / total


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:.2f}%"


def test_d2_house_edges_as_decided_and_as_quoted() -> None:
    rws = next(b for b in par_sheet(get_game(TB), "P", 8).bets if b.bet == "tiger_pair")
    mbs = next(b for b in par_sheet(get_game(MBS), "A", 8).bets if b.bet == "tiger_pair")
    assert rws.house_edge == _edge(8, "rank", "rws_value")
    assert mbs.house_edge == _edge(8, "rank", "rank")
    text = PAIR_SAME_RANK.decision + PAIR_SAME_RANK.reason
    for figure in (_edge(8, "rank", "rws_value"), _edge(8, "rank", "rank"),
                   _edge(8, "rank", "point_value")):
        assert _pct(figure) in text
    # The literal MBS Pair (T-J, T-Q, T-K pair) gives players the edge.
    literal = _edge(8, "mbs_literal", "four_of_a_rank")
    assert literal < 0
    assert _pct(-literal) in text
