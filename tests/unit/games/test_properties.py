"""Hypothesis properties of the rules engine."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.games import GAMES, get_game
from daemon.games.baccarat import coup_of, deal
from daemon.games.cards import RANKS, SUITS, Card
from daemon.games.decided import decided_bets
from daemon.games.errors import DealError
from daemon.games.par_sheet import coup_weights
from daemon.games.settle import settle_cards

BACCARAT = [g for g in GAMES.values() if g.kind == "baccarat"]
cards = st.builds(Card, st.sampled_from(RANKS), st.sampled_from(SUITS))
six_cards = st.lists(cards, min_size=6, max_size=6)


def complete(seq: list[Card]) -> list[Card]:
    """The prefix of six drawn cards that the Table of Play deals."""
    d = deal(seq[:4])
    n = 4
    while not d.complete:
        n += 1
        d = deal(seq[:n])
    return seq[:n]


@given(six_cards, st.permutations(list(SUITS)), st.sampled_from(BACCARAT), st.data())
def test_suits_never_change_an_outcome(seq: list[Card], perm: list[str], game: object,
                                       data: st.DataObject) -> None:
    g = get_game(game.id)  # type: ignore[attr-defined]
    layout = data.draw(st.sampled_from(list(g.layouts)))
    hand = complete(seq)
    swapped = [Card(c.rank, perm[SUITS.index(c.suit)]) for c in hand]
    assert settle_cards(g, layout, hand) == settle_cards(g, layout, swapped)


@given(six_cards)
def test_every_live_coup_is_weighted_by_the_par_sheet(seq: list[Card]) -> None:
    assert coup_of(complete(seq)) in coup_weights(8)


@given(six_cards, st.sampled_from(BACCARAT), st.data())
@settings(max_examples=60)
def test_decided_bets_agree_with_the_final_result(seq: list[Card], game: object,
                                                  data: st.DataObject) -> None:
    g = get_game(game.id)  # type: ignore[attr-defined]
    layout = data.draw(st.sampled_from(list(g.layouts)))
    hand = complete(seq)
    final = {r.bet: r.result for r in settle_cards(g, layout, hand, insurance_offered=False)}
    for n in range(len(hand) + 1):
        for bet, result in decided_bets(g, layout, hand[:n]).items():
            assert final[bet] is result, (bet, n)


@given(st.lists(cards, max_size=8))
def test_deal_accepts_exactly_the_cards_the_table_of_play_asks_for(seq: list[Card]) -> None:
    try:
        d = deal(seq)
    except DealError:
        # Only ever because the deal finished before the last card.
        longest = complete(seq) if len(seq) >= 6 else None
        assert longest is None or len(longest) < len(seq)
        return
    assert len(d.player) in (0, 1, 2, 3) and len(d.banker) in (0, 1, 2, 3)
    assert len(d.cards) == len(seq)


@given(six_cards, st.sampled_from(BACCARAT), st.data())
def test_wins_pay_a_printed_row_and_nothing_else_pays(seq: list[Card], game: object,
                                                      data: st.DataObject) -> None:
    g = get_game(game.id)  # type: ignore[attr-defined]
    layout = data.draw(st.sampled_from(list(g.layouts)))
    for r in settle_cards(g, layout, complete(seq)):
        if r.result.value == "win":
            assert r.pays is not None and r.line
        else:
            assert r.pays is None
