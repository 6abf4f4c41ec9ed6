"""Tiger Buffalo (Non-Commission Baccarat), RWS, Version 4 (w.e.f. 8 Aug 2025).

Source: shared/rules/tiger-buffalo-rws-v4.txt. Each pay table below is a section 4
table as printed, with the "applicable ... on Appendices ..." list that follows it.
"""

from __future__ import annotations

from daemon.games import baccarat_bets as p
from daemon.games.baccarat import Coup
from daemon.games.decisions import BACCARAT_DECISIONS
from daemon.games.model import GameRules, Layout, appendices, bet_rule
from daemon.games.rws_section5 import irregularities
from daemon.games.table_settings import TWIN_TIGER_PAIR

ALL = appendices("A-R")

LAYOUTS = {a: Layout(a, "1 to 6") for a in appendices("A, B, C, G, H, J, O, P, Q")}
LAYOUTS |= {a: Layout(a, "1 to 5") for a in appendices("D, E, F, I, L, M, N")}
LAYOUTS |= {a: Layout(a, "10 to 16") for a in appendices("K, R")}
LAYOUTS = dict(sorted(LAYOUTS.items()))

def char_siu_rows(winner: str, loser: str) -> list[tuple[str, str, str]]:
    """The Char Siu Bets table (4.1.13; Insurance Plus 4.1.7), one row per total card count."""
    return [(f"{n}_cards", f"{winner} Hand wins over {loser} Hand by 1 point with a Point "
             f"Total of 7, 8 or 9: {n} cards", pays)
            for n, pays in ((4, "10 to 1"), (5, "15 to 1"), (6, "50 to 1"))]
CHAR_SIU_LAYOUTS = appendices("A, B, C, D, E, F, G, H, I, J, K, L, O, Q and R")

BETS = (
    # 4.1.1 has no applicability list: Player and Banker are on every layout (2.1.1, 3.7).
    bet_rule("player", "4.1.1", ALL, [("win", "Player wins", "1 to 1")], p.player),
    bet_rule("banker", "4.1.1", ALL, [
        ("win_on_6", "Banker wins on 6 points", "1 to 2"),
        ("win", "Banker wins on other points", "1 to 1"),
    ], p.banker),
    bet_rule("tie", "4.1.2",
             appendices("A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q and R"),
             [("win", "Tie wins", "8 to 1")], p.tie),
    bet_rule("player_pair", "4.1.3", appendices("A, B, D, E, G, J, K, L, M and N"),
             [("win", "Player Pair wins", "11 to 1")], p.player_pair),
    bet_rule("banker_pair", "4.1.3", appendices("A, B, D, E, G, J, K, L, M and N"),
             [("win", "Banker Pair wins", "11 to 1")], p.banker_pair),
    bet_rule("big_tiger", "4.1.4",
             appendices("A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, Q and R"),
             [("win", "Big Tiger wins", "50 to 1")], p.big_tiger),
    bet_rule("small_tiger", "4.1.4",
             appendices("A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, Q and R"),
             [("win", "Small Tiger wins", "22 to 1")], p.small_tiger),
    bet_rule("big_buffalo", "4.1.5",
             appendices("A, B, C, D, E, F, G, H, I, J, K, L, O, Q and R"),
             [("win", "Big Buffalo wins", "35 to 1")], p.big_buffalo),
    bet_rule("small_buffalo", "4.1.5",
             appendices("A, B, C, D, E, F, G, H, I, J, K, L, O, Q and R"),
             [("win", "Small Buffalo wins", "20 to 1")], p.small_buffalo),
    bet_rule("banker_big_7", "4.1.6", appendices("P"), [("win", "Banker Big 7 wins", "30 to 1")],
             p.banker_big_7),
    bet_rule("banker_small_7", "4.1.6", appendices("P"),
             [("win", "Banker Small 7 wins", "15 to 1")], p.banker_small_7),
    bet_rule("player_big_7", "4.1.7", appendices("P"), [("win", "Player Big 7 wins", "30 to 1")],
             p.player_big_7),
    bet_rule("player_small_7", "4.1.7", appendices("P"),
             [("win", "Player Small 7 wins", "15 to 1")], p.player_small_7),
    bet_rule("tiger_buffalo", "4.1.8", appendices("C, F, H and I"),
             [("win", "Tiger Buffalo wins", "6 to 1")], p.tiger_buffalo),
    bet_rule("tiger_pair", "4.1.9", appendices("P"), [
        ("single", "Single Tiger Pair wins", "4 to 1"),
        ("double", "Double Tiger Pair wins", "20 to 1"),
        ("twin", "Twin Tiger Pair (Player and Banker have the same pair) wins", "100 to 1"),
    ], TWIN_TIGER_PAIR.predicate()),  # the table's reading replaces it (GameRules.configured)
    bet_rule("tiger_tie", "4.1.10", appendices("O, Q and R"),
             [("win", "Tiger Tie wins", "35 to 1")], p.tiger_tie),
    bet_rule("wu_dalang", "4.1.11", appendices("C, F, H, I and P"),
             [("win", "Wu Dalang wins", "150 to 1")], p.wu_dalang),
    bet_rule("tiger", "4.1.12", appendices("P"), [
        ("two_cards", "Tiger when Banker wins with two cards totaling 6 points", "12 to 1"),
        ("three_cards", "Tiger when Banker wins with three cards totaling 6 points", "20 to 1"),
    ], p.tiger),
    bet_rule("player_char_siu", "4.1.13", CHAR_SIU_LAYOUTS,
             char_siu_rows("Player", "Banker"), p.player_char_siu),
    bet_rule("banker_char_siu", "4.1.13", CHAR_SIU_LAYOUTS,
             char_siu_rows("Banker", "Player"), p.banker_char_siu),
)

IRREGULARITIES = irregularities({
    "differential_exceeded": "5.1", "below_minimum": "5.2", "player_walked_away": "5.3",
    "technical_interruption_outcome_established": "5.4.1",
    "technical_interruption_no_outcome": "5.4.2", "card_not_of_set": "5.5.1",
    "deck_shortage_or_excess": "5.5.2", "incorrect_card_count": "5.5.3",
    "insufficient_cards": "5.5.4", "not_shuffled": "5.5.5", "previous_rounds_stand": "5.6",
    "bet_after_no_more_bets": "5.7", "excess_card": "5.8", "wrong_hand": "5.9",
    "face_up_card": "5.10", "simultaneous_draw": "5.11", "error_noticed_late": "5.12",
    "dealing_error": "5.13", "bets_by_chip_position": "5.14", "display_information": "5.15",
    "void_returns_bets": "5.16", "bets_placed_by_staff": "5.17",
    "unresolved_irregularity": "5.18",
}, options_clause="5.13")

GAME: GameRules[Coup] = GameRules(
    id="tiger-buffalo",
    title="Tiger Buffalo (Non-Commission Baccarat)",
    document="Tiger Buffalo (Non-Commission Baccarat) (RWS) Version 4, w.e.f. 8 August 2025",
    kind="baccarat",
    layouts=LAYOUTS,
    bets=BETS,
    irregularities=IRREGULARITIES,
    decisions=BACCARAT_DECISIONS,
    decks=(4, 10),
    decks_clause="2.2.1",
    layouts_clause="2.1.1",
    settings=(TWIN_TIGER_PAIR,),
    sim_layout="P",
)
