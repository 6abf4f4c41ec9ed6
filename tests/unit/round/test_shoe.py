"""Shoe validation: certified shuffle, bound shoe, every card checked; clause per game."""

from __future__ import annotations

import random

import pytest

from daemon.games import get_game
from daemon.round.shoe import Certificate, Shoe, certify
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp

TB, IP, MBS = get_game("tiger-buffalo"), get_game("tiger-buffalo-insurance-plus"), \
    get_game("tiger-baccarat")
DECKS = 8
NONCE = bytes(range(16))


def order(seed: int = 1) -> list[str]:
    cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
    random.Random(seed).shuffle(cards)
    return cards


def complete(cards: list[str], *, rng_ok: bool = True, foreign: int = 0,
             decks: int = DECKS) -> fp.ShuffleComplete:
    return fp.ShuffleComplete(77, decks, fp.inventory_of(cards), foreign, rng_ok,
                              fp.commitment(77, NONCE, cards))


def loaded_shoe(game: object = TB, cards: list[str] | None = None) -> Shoe:
    cards = cards or order()
    cert, findings = certify(game, DECKS, complete(cards))  # type: ignore[arg-type]
    assert findings == []
    shoe, findings = Shoe.load(game, cert, sp.ShoeLoaded(len(cards), 0xC0FFEE))  # type: ignore[arg-type]
    assert shoe is not None and findings == []
    return shoe


def draw(shoe: Shoe, n: int, card: str, **kw: object) -> list[str]:
    msg = sp.CardDrawn(n, card, 99, kw.pop("deck_set", 0xC0FFEE), bool(kw.pop("double", False)),  # type: ignore[arg-type]
                       bool(kw.pop("face_up", False)))
    return [f.clause for f in shoe.check_card(msg)]


def test_an_honest_shuffle_is_certified() -> None:
    cert, findings = certify(TB, DECKS, complete(order()))
    assert findings == [] and isinstance(cert, Certificate) and cert.shuffle_id == 77


@pytest.mark.parametrize(("game", "kwargs", "clause"), [
    pytest.param(TB, {"rng_ok": False}, "5.5.5", id="rws_tb_5_5_5_self_check_failed"),
    pytest.param(MBS, {"rng_ok": False}, "5.1", id="mbs_5_1_unshuffled"),
    pytest.param(TB, {"foreign": 1}, "5.5.1", id="rws_tb_5_5_1_foreign_card_in_shuffler"),
    pytest.param(IP, {"decks": 6}, "5.5.2", id="rws_ip_5_5_2_wrong_deck_count"),
])
def test_shuffle_refused(game: object, kwargs: dict[str, object], clause: str) -> None:
    cards = order()
    cert, findings = certify(game, DECKS, complete(cards, **kwargs))  # type: ignore[arg-type]
    assert cert is None and [f.clause for f in findings] == [clause]


def test_rws_tb_5_5_2_inventory_names_missing_and_extra_cards() -> None:
    cards = order()
    cards[cards.index("KD")] = "AS"
    cert, findings = certify(TB, DECKS, complete(cards))
    assert cert is None
    assert findings[0].clause == "5.5.2"
    assert findings[0].detail == "shuffle 77: 1 extra AS; missing 1 x KD"


def test_rws_tb_5_5_5_shoe_without_certified_shuffle() -> None:
    shoe, findings = Shoe.load(TB, None, sp.ShoeLoaded(416, 1))
    assert shoe is None and [f.clause for f in findings] == ["5.5.5"]


def test_rws_tb_5_5_2_shoe_count_differs_from_the_shuffle() -> None:
    cert, _ = certify(TB, DECKS, complete(order()))
    shoe, findings = Shoe.load(TB, cert, sp.ShoeLoaded(415, 1))
    assert shoe is None and "holds 415 cards" in findings[0].detail


@pytest.mark.parametrize(("game", "kw", "card", "clauses"), [
    # An unreadable card is no evidence of a card not of the set: the Pit's (5.18).
    pytest.param(TB, {}, "??", ["5.18"], id="rws_tb_5_18_unreadable_card_is_the_pits"),
    pytest.param(TB, {"deck_set": 0xBAD}, "AS", ["5.5.1"], id="rws_tb_5_5_1_other_deck_set"),
    pytest.param(MBS, {"deck_set": 0xBAD}, "AS", ["5.1"], id="mbs_5_1_card_not_of_the_decks"),
    pytest.param(TB, {"double": True}, "AS", ["5.11"], id="rws_tb_5_11_double_draw"),
    pytest.param(IP, {"double": True}, "AS", ["5.10"], id="rws_ip_5_10_double_draw"),
    pytest.param(MBS, {"double": True}, "AS", ["5.8"], id="mbs_5_8_double_draw"),
    pytest.param(TB, {"face_up": True}, "AS", ["5.10"], id="rws_tb_5_10_face_up"),
    pytest.param(MBS, {"face_up": True}, "AS", ["5.6"], id="mbs_5_6_face_up"),
    pytest.param(TB, {}, "AS", [], id="rws_tb_clean_card"),
])
def test_card_checks(game: object, kw: dict[str, object], card: str,
                     clauses: list[str]) -> None:
    shoe = loaded_shoe(game)
    assert draw(shoe, 1, card, **kw) == clauses


def test_rws_tb_5_5_2_more_copies_of_a_card_than_decks() -> None:
    shoe = loaded_shoe()
    for n in range(DECKS):
        assert draw(shoe, n + 1, "7H") == []
    assert draw(shoe, DECKS + 1, "7H") == ["5.5.2"]


def chunks(cards: list[str], nonce: bytes = NONCE) -> list[fp.OrderChunk]:
    return [fp.OrderChunk(77, i, len(cards), nonce, tuple(cards[i:i + 100]))
            for i in range(0, len(cards), 100)]


def test_honest_shoe_matches_its_committed_order() -> None:
    cards = order()
    shoe = loaded_shoe(TB, cards)
    for n, c in enumerate(cards[:30]):
        draw(shoe, n + 1, c)
    check = shoe.verify_order(list(reversed(chunks(cards))))
    assert check.findings == [] and check.cards_checked == 30


@pytest.mark.parametrize(("game", "clause"), [
    pytest.param(MBS, "5.2", id="mbs_5_2_order_altered"),
    pytest.param(TB, "5.5.2", id="rws_tb_5_5_2_card_switched"),
])
def test_card_switching_is_found_at_shoe_end(game: object, clause: str) -> None:
    cards = order()
    shoe = loaded_shoe(game, cards)
    dealt = cards[:10]
    dealt[4], dealt[5] = dealt[5], dealt[4]
    for n, c in enumerate(dealt):
        draw(shoe, n + 1, c)
    findings = shoe.verify_order(chunks(cards)).findings
    if cards[4] == cards[5]:
        assert findings == []
    else:
        assert [f.clause for f in findings] == [clause]
        assert f"draw 5: {cards[5]} where the shuffle put {cards[4]}" in findings[0].detail


def test_a_revealed_order_that_breaks_the_commitment_is_found() -> None:
    cards = order()
    shoe = loaded_shoe(TB, cards)
    forged = cards[:]
    forged[0], forged[1] = forged[1], forged[0]
    findings = shoe.verify_order(chunks(forged)).findings
    assert forged == cards or "does not match the commitment" in findings[0].detail


def test_an_incomplete_reveal_is_found() -> None:
    cards = order()
    shoe = loaded_shoe(TB, cards)
    assert "incomplete" in shoe.verify_order(chunks(cards)[:2]).findings[0].detail
