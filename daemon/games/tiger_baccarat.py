"""Tiger Baccarat (commission baccarat with Tiger side bets), MBS, Version 3 (w.e.f. 9 Mar 2022).

Source: shared/rules/tiger-baccarat-mbs-v3.txt. 2.2 puts every wager on every layout.
"""

from __future__ import annotations

from daemon.games import baccarat_bets as p
from daemon.games.baccarat import Coup
from daemon.games.decisions import MBS_DECISIONS
from daemon.games.model import Consequence as C
from daemon.games.model import GameRules, Irregularity, Layout, appendices, bet_rule

ALL = appendices("A-H")
LAYOUTS = {a: Layout(a, "1 to 8") for a in appendices("A, B, C, F, G")}
LAYOUTS |= {"D": Layout("D", "1 to 9"), "E": Layout("E", "8 to 16")}
# Appendix H's caption did not survive; its count is not invented (decision D20).
LAYOUTS |= {"H": Layout("H", "", "playing positions not printed, decision D20")}
LAYOUTS = dict(sorted(LAYOUTS.items()))

BETS = (
    bet_rule("player", "4.1", ALL, [("win", "\"Player\"", "1 to 1")], p.player),
    # Commission baccarat: a Banker win pays 0.95 to 1 whatever its total.
    bet_rule("banker", "4.1", ALL, [(("win", "win_on_6"), "\"Banker\"", "0.95 to 1")], p.banker),
    bet_rule("tie", "4.1", ALL, [("win", "\"Tie\"", "8 to 1")], p.tie),
    bet_rule("tiger_pair", "4.2", ALL, [
        ("single", "\"Single Tiger\" Pair", "4 to 1"),
        ("double", "\"Double Tiger\" Pair", "20 to 1"),
        ("twin", "\"Twin Tiger\" Pair (\"Player\" and \"Banker\" have the same pair)", "100 to 1"),
    ], p.tiger_pair),
    bet_rule("tiger", "4.3", ALL, [
        ("two_cards", "\"Tiger\" when \"Banker\" wins with two cards totalling six points",
         "12 to 1"),
        ("three_cards", "\"Tiger\" when \"Banker\" wins with three cards totalling six points",
         "20 to 1"),
    ], p.tiger),
    bet_rule("small_tiger", "4.3", ALL, [("win", "\"Small Tiger\"", "22 to 1")], p.small_tiger),
    bet_rule("big_tiger", "4.3", ALL, [("win", "\"Big Tiger\"", "50 to 1")], p.big_tiger),
    bet_rule("tiger_tie", "4.3", ALL, [("win", "\"Tiger Tie\"", "35 to 1")], p.tiger_tie),
)

IRREGULARITIES = (
    # A procedure of section 3 with a Player option, which the controller sees.
    Irregularity("cut_card_first_card", "3.22.1", "In HLGA, the cutting card appears as the "
                 "first card of a round: the Dealer may allow Players to withdraw their "
                 "wagers; the round is completed (3.22)", C.PLAYER_OPTION, "controller"),
    Irregularity("deck_shortage_or_excess", "5.1", "Extra or missing cards in the decks in use: "
                 "the round is void (5.1.1); earlier outcomes stand (5.1.2)", C.VOID,
                 "controller"),
    Irregularity("card_not_of_set", "5.1", "Cards that do not belong to the decks in use: the "
                 "round is void (5.1.1)", C.VOID, "controller"),
    Irregularity("not_shuffled", "5.1", "Unshuffled cards used: the round is void (5.1.1)",
                 C.VOID, "controller"),
    Irregularity("order_altered", "5.2", "The order of cards in the dealing device is altered "
                 "and cannot be reconstructed: the round is void", C.VOID, "controller"),
    Irregularity("insufficient_cards", "5.3", "Not enough cards in the dealing device to "
                 "complete the round: the round is void", C.VOID, "controller"),
    Irregularity("bet_after_no_more_bets", "5.4", "Wagers placed or increased after \"No more "
                 "bets\" are refused", C.SETTLE, "pit"),
    Irregularity("withdrawal_after_no_more_bets", "5.5", "Wagers withdrawn after \"No more "
                 "bets\" win or lose on the outcome", C.SETTLE, "pit"),
    Irregularity("face_up_card", "5.6", "A card found face up in the dealing device after the "
                 "first card is played as if face down", C.CONTINUE, "controller"),
    Irregularity("excess_card", "5.7", "Cards dealt in an incorrect order are reconstructed and "
                 "play continues", C.RECONSTRUCT, "controller"),
    Irregularity("wrong_hand", "5.7", "Cards passed to an incorrect Player are retrieved and "
                 "passed correctly; play continues", C.RECONSTRUCT, "pit"),
    Irregularity("dealing_error", "5.7.1", "Cards not passed to the right Player, dealt face up "
                 "or exposed in error: not a wrong delivery; the outcome stands", C.CONTINUE,
                 "pit"),
    Irregularity("simultaneous_draw", "5.8", "Two or more cards drawn at once, order known: "
                 "reconstructed, with the option to withdraw first (5.8.1)", C.RECONSTRUCT,
                 "controller"),
    Irregularity("simultaneous_draw_initial_unknown_order", "5.8.2.1", "Two or more cards drawn "
                 "at once during the initial deal, order unknown: the round is void", C.VOID,
                 "pit"),
    Irregularity("simultaneous_draw_later_unknown_order", "5.8.2.2", "Two or more cards drawn "
                 "at once after the initial deal, order unknown: the Pit Manager sets the order; "
                 "players may withdraw or play on", C.PIT_DECISION, "pit"),
    Irregularity("device_reset", "5.9", "The electronic dealing device is reset after \"No more "
                 "bets\": players may withdraw, then bet again before \"No more bets\"",
                 C.PLAYER_OPTION, "controller"),
    Irregularity("card_handler_absent", "5.10", "The Player handling cards is absent: the "
                 "Dealer exposes them", C.CONTINUE, "pit"),
    Irregularity("cards_taken_from_table", "5.11", "A Player leaves with cards: missing cards "
                 "are determined and replaced (5.11.1-5.11.5)", C.PIT_DECISION, "pit"),
    Irregularity("method_c_exposed", "5.12.1", "Method C: cards exposed while moving the device "
                 "are played as if face down", C.CONTINUE, "pit"),
    Irregularity("method_c_order_altered", "5.12.2", "Method C: the order in the device is "
                 "altered and cannot be rectified: the round is void, the cards replaced",
                 C.VOID, "pit"),
    Irregularity("cards_replaced_after_void", "5.13", "After a void round the cards may be "
                 "replaced", C.PIT_DECISION, "pit"),
    Irregularity("below_minimum", "5.14", "Wagers under the minimum: paid or collected once, "
                 "later ones returned", C.SETTLE, "pit"),
    Irregularity("above_maximum", "5.15", "Wagers over the maximum: paid or collected to the "
                 "maximum only", C.SETTLE, "pit"),
    Irregularity("limits_settled", "5.16", "Earlier over- or under-limit settlements stand",
                 C.SETTLE, "pit"),
    Irregularity("technical_interruption_no_outcome", "5.17.1", "Power failure before any "
                 "outcome: players may withdraw all their wagers; the round is then concluded",
                 C.PLAYER_OPTION, "controller"),
    Irregularity("technical_interruption_outcome_established", "5.17.2", "Power failure after "
                 "an outcome is established: play continues and the round is concluded",
                 C.CONTINUE, "controller"),
    Irregularity("differential_exceeded", "5.18", "Table differential exceeded: wagers are "
                 "decreased, increased or removed (5.18.1-5.18.3)", C.SETTLE, "pit"),
    Irregularity("unresolved_irregularity", "6.1", "Anything else: the Gaming Shift Manager "
                 "decides", C.PIT_DECISION, "pit"),
)

GAME: GameRules[Coup] = GameRules(
    id="tiger-baccarat",
    title="Tiger Baccarat",
    document="Tiger Baccarat (MBS) Game Rules Version 3, w.e.f. 9 March 2022",
    kind="baccarat",
    layouts=LAYOUTS,
    bets=BETS,
    irregularities=IRREGULARITIES,
    decisions=MBS_DECISIONS,
    decks=(4, 10),
    decks_clause="2.1",
    layouts_clause="2.2",
    cut_card_clause="3.22",
    void_returns_clause="5.1.1",
)
