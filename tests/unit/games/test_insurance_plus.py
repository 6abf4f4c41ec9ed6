"""Insurance Plus: offers per window (3.12, 4.1.8), settlement (3.11, 3.17, 4.2.1), 3.14, 3.12.2."""

from __future__ import annotations

from fractions import Fraction

import pytest

from daemon.games import insurance_plus as ins
from daemon.games.baccarat import deal
from daemon.games.cards import parse_cards
from tests.unit.games.helpers import CARD_OF_VALUE, outcome, settle

IP = "tiger-buffalo-insurance-plus"

# The printed 4.1.8 table, transcribed independently: (bet, window, insured, other, odds).
PRINTED = """
player four_cards 5 4 3:2
player four_cards 6 0-5 5:2
player four_cards 7 0-5 4:1
player player_third_card 5 0-4 3:2
player player_third_card 6 0-5 5:2
player player_third_card 7 0-6 4:1
player player_third_card 8 0-6 10:1
player player_third_card 9 0-6 10:1
banker four_cards 4 0-3 3:2
banker four_cards 5 0-4 3:2
banker four_cards 6 0-5 5:2
banker four_cards 7 0-5 4:1
banker player_third_card 1-6 0 10:1
banker player_third_card 1 1 6:1
banker player_third_card 2-6 1 10:1
banker player_third_card 3-6 2 4:1
banker player_third_card 4 3 5:2
"""


def _span(s: str) -> set[int]:
    lo, _, hi = s.partition("-")
    return set(range(int(lo), int(hi or lo) + 1))


def test_rws_ip_4_1_8_rows_as_printed() -> None:
    got = [(r.bet.split("_")[0], r.window, r.insured_points, r.other_points, str(r.odds))
           for r in ins.ROWS]
    want = [(b, w, frozenset(_span(i)), frozenset(_span(o)), odds) for b, w, i, o, odds in
            (line.split() for line in PRINTED.strip().splitlines())]
    assert got == want


def _four_card_deal(pt: int, bt: int) -> list[str]:
    return ["KS", "KH", CARD_OF_VALUE[pt], CARD_OF_VALUE[bt].replace("C", "D")]


@pytest.mark.parametrize(("pt", "bt"), [
    pytest.param(pt, bt, id=f"rws_ip_4_1_8_four_cards_player_{pt}_banker_{bt}")
    for pt in range(10) for bt in range(10)])
def test_four_card_window_offers(pt: int, bt: int) -> None:
    d = deal(parse_cards(_four_card_deal(pt, bt)))
    offered = {(o.bet, str(o.row.odds)) for o in ins.offers_for_deal(d)}
    want = set()
    for line in PRINTED.strip().splitlines():
        bet, window, insured, other, odds = line.split()
        mine, theirs = (pt, bt) if bet == "player" else (bt, pt)
        if (window == "four_cards" and mine in _span(insured) and theirs in _span(other)
                and not d.complete):
            want.add((f"{bet}_insurance", odds))
    assert offered == want


def test_rws_ip_1_12_no_offer_when_no_card_follows() -> None:
    """Decision D8: Player 5+ten stays 5, Banker 4 stands on a 0: the window stays closed."""
    cards = parse_cards(["2S", "2H", "3C", "2D", "KS"])
    assert deal(cards).complete
    assert ins.offers_for_deal(deal(cards)) == []
    results = settle(IP, "A", "2S 2H 3C 2D KS")
    assert [k for k in results if "@" in k] == ["player_insurance@four_cards"]


def test_rws_ip_4_2_1_a_player_nine_tie_pays() -> None:
    """Player draws to 9, Banker 3 draws to 9: the tie pays the Player Insurance."""
    results = settle(IP, "A", "2S KH 2C 3D 5S 6H")
    assert outcome(results["player"]) == "push"
    assert outcome(results["player_insurance@player_third_card"]) == "win 10:1"
    assert "player_insurance@four_cards" not in results


def test_rws_ip_4_2_1_b_banker_zero_tie_pays() -> None:
    """Player draws to 0, Banker 3 draws to 0: the tie pays the Banker Insurance."""
    results = settle(IP, "A", "KS AH KC 2D KD 7S")
    assert outcome(results["banker"]) == "push"
    assert outcome(results["banker_insurance@player_third_card"]) == "win 10:1"


def test_rws_ip_3_17_other_ties_return_insurance() -> None:
    """Player 6 stands, Banker 5 draws to 6: a tie, the four-card Player Insurance is returned."""
    results = settle(IP, "A", "3S 2H 3C 3D AS")
    assert outcome(results["player_insurance@four_cards"]) == "push"


def test_rws_ip_3_11_insurance_wins_when_insured_hand_loses() -> None:
    """Player 6 stands, Banker 5 draws a 2 to 7: Player Insurance 5 to 2 wins."""
    results = settle(IP, "A", "3S 2H 3C 3D 2S")
    assert outcome(results["player"]) == "lose"
    assert outcome(results["player_insurance@four_cards"]) == "win 5:2"


def test_rws_ip_3_11_insurance_loses_when_insured_hand_wins() -> None:
    results = settle(IP, "A", "3S 2H 3C 3D KS")
    assert outcome(results["player"]) == "win 1:1"
    assert outcome(results["player_insurance@four_cards"]) == "lose"


def test_rws_ip_3_14_squeeze_waives_third_card_window() -> None:
    results = settle(IP, "A", "2S KH 2C 3D 5S 6H", squeeze_waiver=True)
    assert not [k for k in results if "@player_third_card" in k]


def test_rws_ip_4_2_2_private_table_without_insurance() -> None:
    results = settle(IP, "A", "3S 2H 3C 3D 2S", insurance_offered=False)
    assert not [k for k in results if "insurance" in k]


def test_rws_ip_3_12_1_banker_insurance_only_on_two_cards() -> None:
    """Every offer is made while the Banker Hand has two cards."""
    d = deal(parse_cards(["2S", "KH", "2C", "3D", "5S"]))
    assert len(d.banker) == 2
    assert {o.window for o in ins.offers_for_deal(d)} == {"player_third_card"}


@pytest.mark.parametrize(("odds", "original", "table_max", "cap"), [
    pytest.param("5 to 2", 100, 10_000, 100, id="rws_ip_3_12_2_capped_at_original_bet"),
    pytest.param("10 to 1", 1_000, 2_000, 500, id="rws_ip_3_12_2_ten_to_one_quarter_of_max"),
    pytest.param("10 to 1", 300, 2_000, 300, id="rws_ip_3_12_2_ten_to_one_and_original_bet"),
])
def test_stake_limits(odds: str, original: int, table_max: int, cap: int) -> None:
    row = next(r for r in ins.ROWS if str(r.odds) == odds.replace(" to ", ":"))
    offer = ins.InsuranceOffer(row)
    assert offer.max_stake(Fraction(original), Fraction(table_max)) == cap


def test_rws_ip_3_10_no_offer_on_a_natural() -> None:
    assert ins.offers_for_deal(deal(parse_cards(["9S", "2H", "KH", "3D"]))) == []


def test_rws_ip_5_13_1_late_offer_carries_the_payout_cap() -> None:
    """A window the Pit offered late (5.13.1): 'the total payout on the Insurance Bet(s)
    shall not exceed the Original Bet', published with each of that window's results."""
    from daemon.games import get_game  # noqa: PLC0415
    from daemon.games.settle import settle_cards  # noqa: PLC0415

    # Player 2 vs Banker 4 (Banker Insurance 3 to 2), Player draws a 5 to 7 (Player
    # Insurance 4 to 1), Banker draws a 4 to 8: both windows were open.
    cards = parse_cards(["2S", "KH", "KC", "4D", "5S", "4H"])
    late = settle_cards(get_game(IP), "A", cards, late_windows=frozenset({"four_cards"}))
    by = {(r.bet, r.window): r for r in late}
    capped = [r for r in late if r.window == "four_cards"]
    assert capped and all(r.as_dict()["payout_cap"] == {"limit": "original_bet",
                                                         "clause": "5.13.1"} for r in capped)
    assert all("payout_cap" not in r.as_dict() for r in late if r.window != "four_cards")
    assert ("banker_insurance", "four_cards") in by
    assert ("player_insurance", "player_third_card") in by
    plain = settle_cards(get_game(IP), "A", cards)
    assert all("payout_cap" not in r.as_dict() for r in plain)
    # The cap changes no result or odds: it is a limit on the total paid.
    assert [(r.bet, r.result, r.pays) for r in plain] == [(r.bet, r.result, r.pays)
                                                           for r in late]
