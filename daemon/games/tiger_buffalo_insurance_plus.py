"""Tiger Buffalo (Non-Commission Baccarat with Insurance Plus), RWS (w.e.f. 14 May 2024).

Source: shared/rules/tiger-buffalo-insurance-plus-rws.txt. The insurance pay table
(4.1.8) lives in insurance_plus.py; the bets below are section 4.1.1-4.1.7.
"""

from __future__ import annotations

from daemon.games import baccarat_bets as p
from daemon.games.baccarat import Coup
from daemon.games.decisions import INSURANCE_DECISIONS
from daemon.games.model import Consequence as C
from daemon.games.model import GameRules, Irregularity, Layout, appendices, bet_rule
from daemon.games.rws_section5 import irregularities
from daemon.games.tiger_buffalo import char_siu_rows

ALL = appendices("A-K")
LAYOUTS = {a: Layout(a, "1 to 6") for a in appendices("A, B, C, G, H, J")}
LAYOUTS |= {a: Layout(a, "1 to 5") for a in appendices("D, E, F, I")}
LAYOUTS |= {"K": Layout("K", "10 to 16")}
LAYOUTS = dict(sorted(LAYOUTS.items()))
PAIRS = appendices("A, B, D, E, G, J and K")
TIGERS = appendices("A, B, C, D, E, F, G, H, I, J and K")

BETS = (
    bet_rule("player", "4.1.1", ALL, [("win", "Player wins", "1 to 1")], p.player),
    bet_rule("banker", "4.1.1", ALL, [
        ("win_on_6", "Banker wins on 6 points", "1 to 2"),
        ("win", "Banker wins on other points", "1 to 1"),
    ], p.banker),
    bet_rule("tie", "4.1.2", appendices("A, B, C, D, E, F, G, H, I, J and K"),
             [("win", "Tie wins", "8 to 1")], p.tie),
    # 4.1.3 prints one row, "Pair wins 11 to 1", for both pair bets.
    bet_rule("player_pair", "4.1.3", PAIRS, [("win", "Pair wins", "11 to 1")], p.player_pair),
    bet_rule("banker_pair", "4.1.3", PAIRS, [("win", "Pair wins", "11 to 1")], p.banker_pair),
    # 4.1.4 governs over the Appendix G labels that swap Small Tiger and Small Buffalo odds.
    bet_rule("big_tiger", "4.1.4", TIGERS, [("win", "Big Tiger wins", "50 to 1")], p.big_tiger),
    bet_rule("small_tiger", "4.1.4", TIGERS, [("win", "Small Tiger wins", "22 to 1")],
             p.small_tiger),
    bet_rule("big_buffalo", "4.1.4", TIGERS, [("win", "Big Buffalo wins", "35 to 1")],
             p.big_buffalo),
    bet_rule("small_buffalo", "4.1.4", TIGERS, [("win", "Small Buffalo wins", "20 to 1")],
             p.small_buffalo),
    bet_rule("tiger_buffalo", "4.1.5", appendices("C, F, H and I"),
             [("win", "Tiger Buffalo wins", "6 to 1")], p.tiger_buffalo),
    bet_rule("wu_dalang", "4.1.6", appendices("C, F, H and I"),
             [("win", "Wu Dalang wins", "150 to 1")], p.wu_dalang),
    bet_rule("player_char_siu", "4.1.7", ALL,
             char_siu_rows("Player", "Banker"), p.player_char_siu),
    bet_rule("banker_char_siu", "4.1.7", ALL,
             char_siu_rows("Banker", "Player"), p.banker_char_siu),
)

IRREGULARITIES = irregularities({
    "differential_exceeded": "5.1", "below_minimum": "5.2", "player_walked_away": "5.3.1",
    "technical_interruption_outcome_established": "5.4.1",
    "technical_interruption_no_outcome": "5.4.2", "card_not_of_set": "5.5.1",
    "deck_shortage_or_excess": "5.5.2", "incorrect_card_count": "5.5.3",
    "insufficient_cards": "5.5.4", "not_shuffled": "5.5.5", "bet_after_no_more_bets": "5.6",
    "excess_card": "5.7", "wrong_hand": "5.8", "face_up_card": "5.9",
    "simultaneous_draw": "5.10", "error_noticed_late": "5.11", "dealing_error": "5.12",
    "bets_by_chip_position": "5.14", "display_information": "5.15",
    "void_returns_bets": "5.16", "bets_placed_by_staff": "5.17",
    "unresolved_irregularity": "5.18",
}, options_clause="5.12", own=(
    Irregularity("insurance_forgone", "5.3", "A Player who does not bet Insurance before the "
                 "next card is drawn forgoes it for the round", C.CONTINUE, "pit"),
    Irregularity("insurance_not_offered_before_outcome", "5.13.1", "Insurance not offered, "
                 "noticed before an outcome: a Pit Manager offers it", C.PIT_DECISION,
                 "controller"),
    Irregularity("insurance_not_offered_after_outcome", "5.13.2", "Insurance not offered, "
                 "noticed after an outcome: Original Bets returned to those whose insurance "
                 "would have won", C.PIT_DECISION, "controller"),
))

GAME: GameRules[Coup] = GameRules(
    id="tiger-buffalo-insurance-plus",
    title="Tiger Buffalo (Non-Commission Baccarat with Insurance Plus)",
    document="Tiger Buffalo (Non-Commission Baccarat with Insurance Plus) (RWS), "
             "w.e.f. 14 May 2024",
    kind="baccarat",
    layouts=LAYOUTS,
    bets=BETS,
    irregularities=IRREGULARITIES,
    decisions=INSURANCE_DECISIONS,
    decks=(4, 10),
    decks_clause="2.2.1",
    layouts_clause="2.1.1",
    has_insurance=True,
)
