"""Every baccarat pay table row, tested with hand-built deals; ids carry the clause numbers.

Deals are written in the order cards leave the shoe: P1 B1 P2 B2, then third cards.
"""

from __future__ import annotations

import pytest

from tests.unit.games.helpers import outcome, settle

TB, IP, MBS = "tiger-buffalo", "tiger-buffalo-insurance-plus", "tiger-baccarat"

# (id, game, layout, cards, {bet: expected}) - expected is "win <pays>", "lose" or "push".
CASES = [
    # Banker 3+3=6 on two cards beats Player 2+3+K=5.
    ("rws_tb_4_1_1_banker_wins_on_6_pays_1_to_2", TB, "P", "2S 3H 3S 3D KC",
     {"banker": "win 1:2", "player": "lose", "tiger": "win 12:1", "tiger_pair": "win 4:1"}),
    ("rws_tb_4_1_4_small_tiger", TB, "A", "2S 3H 3S 3D KC",
     {"small_tiger": "win 22:1", "big_tiger": "lose", "banker_pair": "win 11:1",
      "player_pair": "lose"}),
    ("rws_tb_4_1_8_tiger_buffalo_banker", TB, "C", "2S 3H 3S 3D KC",
     {"tiger_buffalo": "win 6:1"}),
    ("mbs_4_1_banker_pays_0_95_on_six", MBS, "A", "2S 3H 3S 3D KC",
     {"banker": "win 0.95:1", "small_tiger": "win 22:1", "tiger": "win 12:1"}),
    # Banker 2+A+3=6 on three cards beats Player K+4+K=4.
    ("rws_tb_4_1_4_big_tiger", TB, "A", "KS 2H 4C AD KC 3S",
     {"big_tiger": "win 50:1", "small_tiger": "lose", "banker": "win 1:2"}),
    ("rws_tb_4_1_12_tiger_three_cards", TB, "P", "KS 2H 4C AD KC 3S",
     {"tiger": "win 20:1"}),
    ("mbs_4_3_tiger_three_cards_and_big_tiger", MBS, "A", "KS 2H 4C AD KC 3S",
     {"tiger": "win 20:1", "big_tiger": "win 50:1", "banker": "win 0.95:1"}),
    # Banker 7 on two cards: pays 1 to 1 in non-commission.
    ("rws_tb_4_1_1_banker_wins_on_other_points", TB, "P", "AS 3H 2C 4D KS",
     {"banker": "win 1:1", "banker_small_7": "win 15:1", "tiger": "lose"}),
    ("rws_tb_4_1_6_banker_big_7", TB, "P", "KS 2H 3C KD 2S 5D",
     {"banker_big_7": "win 30:1", "banker_small_7": "lose"}),
    ("rws_tb_4_1_7_player_small_7", TB, "P", "3S KH 4C 2D 4H",
     {"player_small_7": "win 15:1", "player": "win 1:1", "player_big_7": "lose"}),
    ("rws_tb_4_1_7_player_big_7", TB, "P", "KS KH 3C 2D 4S KD",
     {"player_big_7": "win 30:1", "player_small_7": "lose"}),
    # Player 6 on two cards beats Banker 5.
    ("rws_tb_4_1_5_small_buffalo", TB, "A", "4S 2H 2C KD 3S",
     {"small_buffalo": "win 20:1", "big_buffalo": "lose"}),
    ("rws_tb_4_1_8_tiger_buffalo_player", TB, "C", "4S 2H 2C KD 3S",
     {"tiger_buffalo": "win 6:1"}),
    ("rws_tb_4_1_5_big_buffalo", TB, "A", "KS 5H 3C KD 3S",
     {"big_buffalo": "win 35:1", "small_buffalo": "lose"}),
    # Char Siu: 4, 5 and 6 cards; wins by exactly one point on 7, 8 or 9.
    ("rws_tb_4_1_13_char_siu_4_cards", TB, "A", "4S 5H 4C 4D",
     {"banker_char_siu": "win 10:1", "player_char_siu": "lose", "banker": "win 1:1"}),
    ("rws_tb_4_1_13_char_siu_5_cards", TB, "A", "3S KH 4C 2D 4H",
     {"player_char_siu": "win 15:1", "banker_char_siu": "lose"}),
    ("rws_tb_4_1_13_char_siu_6_cards", TB, "A", "KS KH 3C 2D 5S 5H",
     {"player_char_siu": "win 50:1"}),
    ("rws_tb_1_20_char_siu_needs_one_point", TB, "A", "KS KH 3C 2D 5S 4H",
     {"player_char_siu": "lose", "player": "win 1:1"}),
    ("rws_ip_4_1_7_char_siu_6_cards", IP, "A", "KS KH 3C 2D 5S 5H",
     {"player_char_siu": "win 50:1"}),
    # Wu Dalang (decision D3): Player wins with 1 over Banker 0.
    ("rws_tb_4_1_11_wu_dalang", TB, "P", "AS KH KC QD KS KD",
     {"wu_dalang": "win 150:1", "player": "win 1:1", "tiger_pair": "lose"}),
    ("rws_tb_1_36_wu_dalang_total_1_without_winning_loses", TB, "P", "AS KH KC 2D KS 9D",
     {"wu_dalang": "lose", "player": "push", "tie": "win 8:1"}),
    ("rws_ip_4_1_6_wu_dalang", IP, "C", "AS KH KC QD KS KD", {"wu_dalang": "win 150:1"}),
    # Ties: Original Bets returned (RWS 3.14, MBS 3.16.1), Tiger Tie on a tie of six.
    ("rws_tb_3_14_tie_returns_original_bets", TB, "O", "3S 3H 3C 3D",
     {"player": "push", "banker": "push", "tie": "win 8:1", "tiger_tie": "win 35:1"}),
    ("rws_tb_4_1_10_tiger_tie_only_on_six", TB, "O", "4S 5H 3C 2D",
     {"tie": "win 8:1", "tiger_tie": "lose"}),
    ("mbs_3_16_1_tie_and_tiger_tie", MBS, "A", "3S 3H 3C 3D",
     {"player": "push", "banker": "push", "tie": "win 8:1", "tiger_tie": "win 35:1",
      "tiger": "lose", "small_tiger": "lose"}),
    # Pairs: same rank (decision D2).
    ("rws_tb_4_1_9_twin_tiger_pair", TB, "P", "3S 3H 3C 3D", {"tiger_pair": "win 100:1"}),
    ("rws_tb_4_1_9_double_tiger_pair", TB, "P", "4S 5H 4C 5D", {"tiger_pair": "win 20:1"}),
    ("rws_tb_4_1_3_both_pairs", TB, "A", "4S 5H 4C 5D",
     {"player_pair": "win 11:1", "banker_pair": "win 11:1"}),
    ("rws_ip_4_1_3_pair_wins_11_to_1", IP, "A", "4S 5H 4C 5D",
     {"player_pair": "win 11:1", "banker_pair": "win 11:1"}),
    ("mbs_4_2_double_tiger_pair", MBS, "A", "4S 5H 4C 5D", {"tiger_pair": "win 20:1"}),
    ("mbs_4_2_twin_tiger_pair_tens", MBS, "A", "TS TH TC TD 5S 4H",
     {"tiger_pair": "win 100:1", "player": "win 1:1"}),
    ("mbs_1_1_14_kq_is_not_a_pair", MBS, "A", "KS 9H QC 9D", {"tiger_pair": "win 4:1"}),
    ("mbs_1_1_14_ten_king_is_not_a_pair", MBS, "A", "TS 2H KC 3D 5C 4C",
     {"tiger_pair": "lose"}),
    ("rws_tb_1_21_ten_king_is_not_a_pair", TB, "A", "TS 2H KC 3D 5C 4C",
     {"player_pair": "lose", "banker_pair": "lose"}),
    ("rws_tb_1_21_suits_do_not_matter", TB, "A", "QS 2H QH 3D 5C 4C",
     {"player_pair": "win 11:1"}),
    ("rws_tb_1_14_natural_stands", TB, "A", "9S 2H KH 3D",
     {"player": "win 1:1", "banker": "lose"}),
]


@pytest.mark.parametrize(("game", "layout", "cards", "expected"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_pay_table_row(game: str, layout: str, cards: str, expected: dict[str, str]) -> None:
    results = settle(game, layout, cards)
    got = {bet: outcome(results[bet]) for bet in expected}
    assert got == expected


@pytest.mark.parametrize(("game", "layout"), [
    pytest.param(TB, "P", id="rws_tb_4_1_1_every_offered_bet_settled"),
    pytest.param(IP, "C", id="rws_ip_4_1_every_offered_bet_settled"),
    pytest.param(MBS, "E", id="mbs_4_every_offered_bet_settled"),
])
def test_one_result_per_offered_bet(game: str, layout: str) -> None:
    from daemon.games import get_game  # noqa: PLC0415

    results = settle(game, layout, "KS KH 3C 2D 5S 5H", insurance_offered=False)
    assert sorted(results) == sorted(r.bet for r in get_game(game).offered(layout))
