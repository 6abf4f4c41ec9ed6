"""Insurance windows (daemon/round/insurance.py): what their records fold to."""

from __future__ import annotations

from daemon.games.baccarat import deal
from daemon.games.cards import parse_card
from daemon.round.effects import Record
from tests.unit.round.parts import baccarat, dealing, fold, with_shoe

GAME = "tiger-buffalo-insurance-plus"
OFFER = {"bet": "player_insurance", "window": "four_cards", "odds": "5:2",
         "clause": "4.1.8"}


def test_a_window_closes_with_its_record_or_with_the_round() -> None:
    t = dealing(with_shoe(baccarat(GAME)))
    fold(t, "insurance_offered", {"window": "four_cards", "offers": [OFFER]}, "r1")
    assert t.insurance_window == "four_cards" and t.insurance_offers == [OFFER]
    fold(t, "insurance_closed", {"window": "four_cards", "by": "dealer"}, "r1")
    assert t.insurance_window is None and t.insurance_offers == []
    fold(t, "insurance_offered", {"window": "four_cards", "offers": [OFFER]}, "r1")
    fold(t, "result", {"status": "void"}, "r2")  # another round's: the window stays
    assert t.insurance_window == "four_cards"
    fold(t, "result", {"status": "void"}, "r1")
    assert t.insurance_window is None


def test_the_squeeze_waiver_and_late_windows_last_one_round() -> None:
    t = dealing(with_shoe(baccarat(GAME)))
    fold(t, "squeeze_declared", {"by": "pit", "clause": "3.14"}, "r1")
    fold(t, "insurance_offered_late", {"window": "four_cards", "clause": "5.13.1"}, "r1")
    assert t.squeeze_waiver and t.late_windows == {"four_cards"}
    fold(t, "result", {"status": "void"}, "r1")
    fold(t, "betting_opened", {}, "r2")
    assert not t.squeeze_waiver and t.late_windows == set()


def test_a_table_without_insurance_offers_no_window() -> None:
    t = dealing(with_shoe(baccarat(GAME)))
    d = deal([parse_card(c) for c in ("QS", "8S", "6S", "6H")])
    assert [e.kind for e in t._offer_insurance(d) if isinstance(e, Record)] == \
        ["insurance_offered"]
    # IP 4.2.2: a private table where the House allowed no Insurance.
    off = dealing(with_shoe(baccarat(GAME, insurance_offered=False)))
    assert not off.insurance_offered and off._offer_insurance(d) == []
