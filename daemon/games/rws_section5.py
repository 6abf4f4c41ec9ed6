"""Section 5 irregularities that the RWS documents share word for word.

The three RWS documents number the same clauses differently (Tiger Buffalo's 5.13 is
Insurance Plus's 5.12). The words are encoded once here; each document supplies its
own clause numbers.
"""

from __future__ import annotations

from daemon.games.model import Consequence as C
from daemon.games.model import Irregularity

# code -> (summary, consequence, seen by). "{options}" is the document's dealing-error clause.
SHARED: dict[str, tuple[str, C, str]] = {
    "differential_exceeded": ("Bets over the maximum Differential or limit: excess rejected, "
                              "or settled pro rata", C.SETTLE, "pit"),
    "below_minimum": ("Bet under the minimum: increase or withdraw; if unnoticed it stands",
                      C.SETTLE, "pit"),
    "player_walked_away": ("A Player walks away: the Bet is settled", C.SETTLE, "pit"),
    "technical_interruption_outcome_established": (
        "Technical interruption after an outcome is established: play continues",
        C.CONTINUE, "controller"),
    "technical_interruption_no_outcome": (
        "Technical interruption before any outcome is established: the round is Void",
        C.VOID, "controller"),
    "card_not_of_set": ("A card that is not of the set in play", C.VOID, "controller"),
    "deck_shortage_or_excess": ("A shortage or excess of cards in the deck", C.VOID,
                                "controller"),
    "incorrect_card_count": ("A hand dealt an incorrect number of cards that cannot be "
                             "Reconstructed", C.VOID, "pit"),
    "insufficient_cards": ("Not enough cards to complete the round", C.VOID, "controller"),
    "not_shuffled": ("The cards were not shuffled", C.VOID, "controller"),
    "previous_rounds_stand": ("Once the next round has begun, earlier outcomes stand",
                              C.CONTINUE, "controller"),
    "bet_after_no_more_bets": ("A bet placed, increased or withdrawn after \"No more Bets\" "
                               "is refused", C.SETTLE, "pit"),
    "excess_card": ("Card(s) drawn in excess or exposed: Reconstructed or used in the next "
                    "round; the options of {options} if no outcome", C.RECONSTRUCT,
                    "controller"),
    "wrong_hand": ("Cards dealt to the wrong area or person: Reconstructed; the options of "
                   "{options} unless an outcome is established", C.RECONSTRUCT, "pit"),
    "face_up_card": ("A card dealt face up where cards are dealt face down: play continues; "
                     "the options of {options} if no outcome", C.CONTINUE, "controller"),
    "simultaneous_draw": ("Two or more cards drawn at once: the Pit Supervisor decides the "
                          "order; a dealing error with the options of {options}; the cards "
                          "may be replaced", C.PIT_DECISION, "controller"),
    "error_noticed_late": ("An error noticed after the next round began does not affect "
                           "later rounds", C.CONTINUE, "pit"),
    "dealing_error": ("Any other dealing error: continue, continue Reconstructed, or have the "
                      "Bet returned", C.PLAYER_OPTION, "pit"),
    "bets_by_chip_position": ("Bets settle by chip position at close", C.SETTLE, "pit"),
    "display_information": ("Displays are information only; the table prevails", C.CONTINUE,
                            "pit"),
    "void_returns_bets": ("A Void round returns every Bet", C.VOID, "controller"),
    "bets_placed_by_staff": ("Bets placed by Pit Employees for a Player", C.SETTLE, "pit"),
    "unresolved_irregularity": ("Anything else: the Table Game Shift Manager or above decides",
                                C.PIT_DECISION, "pit"),
}


def irregularities(clauses: dict[str, str], options_clause: str = "",
                   own: tuple[Irregularity, ...] = ()) -> tuple[Irregularity, ...]:
    """The shared irregularities at this document's clause numbers, then its own, by clause."""
    shared = tuple(
        Irregularity(code, clause, SHARED[code][0].format(options=options_clause),
                     SHARED[code][1], SHARED[code][2])
        for code, clause in clauses.items()
    )
    return tuple(sorted((*shared, *own), key=lambda i: [int(x) for x in i.clause.split(".")]))
