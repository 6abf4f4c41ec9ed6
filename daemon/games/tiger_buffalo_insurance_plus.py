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

IRREGULARITIES = (
    Irregularity("differential_exceeded", "5.1", "Bets over the maximum Differential: excess "
                 "rejected, or settled pro rata (5.1.1, 5.1.2)", C.SETTLE, "pit"),
    Irregularity("below_minimum", "5.2", "Bet under the minimum: increase or withdraw; "
                 "if unnoticed it stands (5.2.1)", C.SETTLE, "pit"),
    Irregularity("insurance_forgone", "5.3", "A Player who does not bet Insurance before the "
                 "next card is drawn forgoes it for the round", C.CONTINUE, "pit"),
    Irregularity("player_walked_away", "5.3.1", "A Player walks away: the Bet is settled",
                 C.SETTLE, "pit"),
    Irregularity("technical_interruption_outcome_established", "5.4.1",
                 "Technical interruption after an outcome is established: play continues",
                 C.CONTINUE, "controller"),
    Irregularity("technical_interruption_no_outcome", "5.4.2",
                 "Technical interruption before any outcome is established: the round is Void",
                 C.VOID, "controller"),
    Irregularity("card_not_of_set", "5.5.1", "A card that is not of the set in play",
                 C.VOID, "controller"),
    Irregularity("deck_shortage_or_excess", "5.5.2", "A shortage or excess of cards in the deck",
                 C.VOID, "controller"),
    Irregularity("incorrect_card_count", "5.5.3", "A hand dealt an incorrect number of cards "
                 "that cannot be Reconstructed", C.VOID, "controller"),
    Irregularity("insufficient_cards", "5.5.4", "Not enough cards to complete the round",
                 C.VOID, "controller"),
    Irregularity("not_shuffled", "5.5.5", "The cards were not shuffled", C.VOID, "controller"),
    Irregularity("bet_after_no_more_bets", "5.6", "A bet placed, increased or withdrawn after "
                 "\"No more Bets\" is refused", C.SETTLE, "pit"),
    Irregularity("excess_card", "5.7", "Card(s) drawn in excess or exposed: Reconstructed or "
                 "used in the next round; options of 5.12 if no outcome (5.7.1)",
                 C.RECONSTRUCT, "controller"),
    Irregularity("wrong_hand", "5.8", "Cards dealt to the wrong area or person: Reconstructed; "
                 "options of 5.12 unless an outcome is established", C.RECONSTRUCT, "pit"),
    Irregularity("face_up_card", "5.9", "A card dealt face up where cards are dealt face down: "
                 "play continues; options of 5.12 if no outcome", C.CONTINUE, "controller"),
    Irregularity("simultaneous_draw", "5.10", "Two or more cards drawn at once: the Pit "
                 "Supervisor decides the order; a dealing error with the options of 5.12 "
                 "(5.10.1); the cards may be replaced (5.10.2)", C.PIT_DECISION, "controller"),
    Irregularity("error_noticed_late", "5.11", "An error noticed after the next round began "
                 "does not affect later rounds", C.CONTINUE, "pit"),
    Irregularity("dealing_error", "5.12", "Any other dealing error: continue, continue "
                 "Reconstructed, or have the Bet returned", C.PLAYER_OPTION, "controller"),
    Irregularity("insurance_not_offered_before_outcome", "5.13.1", "Insurance not offered, "
                 "noticed before an outcome: a Pit Manager offers it", C.PIT_DECISION,
                 "controller"),
    Irregularity("insurance_not_offered_after_outcome", "5.13.2", "Insurance not offered, "
                 "noticed after an outcome: Original Bets returned to those whose insurance "
                 "would have won", C.PIT_DECISION, "controller"),
    Irregularity("bets_by_chip_position", "5.14", "Bets settle by chip position at close",
                 C.SETTLE, "pit"),
    Irregularity("display_information", "5.15", "Displays are information only; the table "
                 "prevails", C.CONTINUE, "pit"),
    Irregularity("void_returns_bets", "5.16", "A Void round returns every Bet", C.VOID,
                 "controller"),
    Irregularity("bets_placed_by_staff", "5.17", "Bets placed by Pit Employees for a Player",
                 C.SETTLE, "pit"),
    Irregularity("unresolved_irregularity", "5.18", "Anything else: the Table Game Shift "
                 "Manager decides", C.PIT_DECISION, "pit"),
)

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
