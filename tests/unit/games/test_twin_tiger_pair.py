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

from daemon.games import RulesError, get_game
from daemon.games.baccarat import Coup
from daemon.games.cards import parse_cards
from daemon.games.decisions import PAIR_SAME_RANK
from daemon.games.docs import render_games_md
from daemon.games.model import GameRules
from daemon.games.par_sheet import par_sheet
from daemon.games.par_text import render_par_sheet
from daemon.games.settle import settle_cards
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


# Issue 23, item 8: where RWS 1.33 reads two ways, the house's reading is the table's.
JJ_KK = "JS KH JC KD 5S 4H"  # Player J-J, Banker K-K: a Twin by value, a Double by rank


def _settled(game: GameRules[Coup], cards: str) -> str:
    results = settle_cards(game, "P", parse_cards(cards.split()))
    return outcome(next(r for r in results if r.bet == "tiger_pair"))


def test_rws_1_33_twin_tiger_pair_is_a_table_setting_value_by_default() -> None:
    game = get_game(TB)
    assert game.readings() == {"twin_tiger_pair": "value"}
    assert _settled(game.configured({}), JJ_KK) == "win 100:1"
    assert _settled(game.configured({"twin_tiger_pair": "value"}), JJ_KK) == "win 100:1"
    ranked = game.configured({"twin_tiger_pair": "rank"})
    assert ranked.readings() == {"twin_tiger_pair": "rank"}
    assert _settled(ranked, JJ_KK) == "win 20:1"
    assert _settled(ranked, "QS QH QC QD 5S 4H") == "win 100:1"
    assert _settled(ranked, "TS KH TC KD 5S 4H") == "win 20:1"
    # The game data itself is not changed by one table's reading.
    assert _settled(get_game(TB), JJ_KK) == "win 100:1"


@pytest.mark.parametrize(("game_id", "choice", "words"), [
    (MBS, {"twin_tiger_pair": "rank"}, "has no table setting 'twin_tiger_pair'"),
    (TB, {"twin_tiger_pair": "point_value"}, "twin_tiger_pair is one of value, rank"),
    (TB, {"twin_tiger": "rank"}, "has no table setting 'twin_tiger'"),
])
def test_a_reading_the_text_does_not_admit_is_refused(game_id: str, choice: dict[str, str],
                                                      words: str) -> None:
    with pytest.raises(RulesError, match=words):
        get_game(game_id).configured(choice)


def test_d2_par_sheet_gives_the_house_edge_of_both_readings() -> None:
    for chosen, other in (("value", "rank"), ("rank", "value")):
        game = get_game(TB).configured({"twin_tiger_pair": chosen})
        sheet = par_sheet(game, "P", 8)
        rows = {b.setting: b for b in sheet.bets if b.bet == "tiger_pair"}
        assert set(rows) == {("twin_tiger_pair", chosen), ("twin_tiger_pair", other)}
        assert rows[("twin_tiger_pair", chosen)].in_effect
        assert not rows[("twin_tiger_pair", other)].in_effect
        by_reading = {b.setting[1]: b.house_edge for b in rows.values() if b.setting}
        assert by_reading == {"value": _edge(8, "rank", "rws_value"),
                              "rank": _edge(8, "rank", "rank")}
        text = render_par_sheet(sheet)
        assert f'twin_tiger_pair = "{chosen}" (in effect)' in text
        assert f'twin_tiger_pair = "{other}" (another reading a table may set)' in text
    # A game whose text reads one way lists its bet once, with no setting.
    mbs = [b for b in par_sheet(get_game(MBS), "A", 8).bets if b.bet == "tiger_pair"]
    assert [b.setting for b in mbs] == [None]


def test_d2_docs_name_the_setting_with_both_edges() -> None:
    text = render_games_md()
    for value, twin in (("value", "rws_value"), ("rank", "rank")):
        row = next(line for line in text.splitlines()
                   if line.startswith('| `twin_tiger_pair` | ') and f'`"{value}"`' in line)
        assert f"{float(_edge(8, 'rank', twin)) * 100:.4f}%" in row
    assert "twin_tiger_pair" in PAIR_SAME_RANK.decision
