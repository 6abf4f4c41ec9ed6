"""Tai Sai (Open Cover), RWS, Version 5 (w.e.f. 6 Oct 2023).

Source: shared/rules/tai-sai-open-cover-rws-v5.txt. Pay Table 1 is Appendix A, Pay
Table 2 Appendix C, Pay Table 3 Appendix E (2.1.1, 4.1.1-4.1.3). Combination lists are
kept as printed (decisions D10, D11).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from daemon.games import tai_sai as ts
from daemon.games.decisions import TAI_SAI_DECISIONS
from daemon.games.model import Consequence as C
from daemon.games.model import GameRules, Irregularity, Layout, bet_rule
from daemon.games.outcome import BetRule, Verdict
from daemon.games.rws_section5 import irregularities
from daemon.games.tai_sai import Throw, parse_combinations

PAY_TABLE_OF_LAYOUT = {"A": "4.1.1", "C": "4.1.2", "E": "4.1.3"}

DOMINOS = "1 4, 1 2, 2 4, 1 3, 2 3, 3 4, 2 5, 2 6, 3 5, 4 5, 3 6, 1 5, 1 6, 4 6, 5 6"
FOUR_NUMBERS_TABLE_2 = "6 5 4 3, 6 5 3 2, 5 4 3 2, 4 3 2 1"
FOUR_NUMBERS_TABLE_3 = ("6 5 4 3, 6 5 4 2, 6 5 3 2, 6 4 3 2, 5 4 3 2, 6 5 4 1, 6 5 3 1, 6 4 3 1, "
                        "5 4 3 1, 6 5 2 1, 6 4 2 1, 5 4 2 1, 6 3 2 1, 5 3 2 1, 4 3 2 1")
THREE_SINGLES = ("1 2 6, 1 3 5, 2 3 4, 2 5 6, 3 4 6, 1 2 3, 1 3 6, 1 4 5, 2 3 5, 3 5 6, "
                 "1 2 4, 1 4 6, 2 3 6, 2 4 5, 4 5 6, 1 2 5, 1 3 4, 1 5 6, 2 4 6, 3 4 5")
DOUBLE_SINGLES = ("1 1 3, 1 1 4, 1 1 5, 1 1 6, 2 2 1, 2 2 3, 2 2 4, 2 2 5, 2 2 6, 3 3 1, "
                  "3 3 2, 3 3 4, 3 3 5, 3 3 6, 4 4 1, 4 4 2, 4 4 3, 4 4 5, 4 4 6, 5 5 1, "
                  "5 5 2, 5 5 3, 5 5 4, 5 5 6, 6 6 1, 6 6 2, 6 6 3, 6 6 4")
TOTAL_PAYS = {4: "62", 17: "62", 5: "31", 16: "31", 6: "18", 15: "18", 7: "12", 14: "12",
              8: "8", 13: "8", 9: "7", 12: "7", 10: "6", 11: "6"}


def _typed(bet_type: str, fn: Callable[[Throw], Verdict]) -> Callable[[Throw], Verdict]:
    def predicate(t: Throw) -> Verdict:
        return ts.apply_triple_rule(bet_type, t, fn(t))
    return predicate


def _name(prefix: str, numbers: tuple[int, ...], sep: str = "_") -> str:
    return prefix + sep.join(str(n) for n in numbers)


def _pay_table(clause: str, layout: str) -> list[BetRule[Throw]]:
    at = (layout,)
    rules: list[BetRule[Throw]] = [
        bet_rule("small", clause, at, [("win", "Total Sum of 4-10 except Triple", "1 to 1")],
                 _typed("small", ts.small)),
        bet_rule("big", clause, at, [("win", "Total Sum of 11-17 except Triple", "1 to 1")],
                 _typed("big", ts.big)),
    ]
    if layout == "C":
        rules += [
            bet_rule("odd", clause, at, [("win", "Odd Value of Total Sum except Triple",
                                          "1 to 1")], _typed("odd", ts.odd)),
            bet_rule("even", clause, at, [("win", "Even Value of Total Sum except Triple",
                                           "1 to 1")], _typed("even", ts.even)),
        ]
    for n in range(1, 7):
        rules.append(bet_rule(f"single_{n}", clause, at, [
            ("one_die", "Number Bet appearing on 1 dice", "1 to 1"),
            ("two_dice", "Number Bet appearing on 2 dice", "2 to 1"),
            ("three_dice", "Number Bet appearing on 3 dice", "12 to 1"),
        ], _typed("single", partial(ts.single, n))))
    for n in range(4, 18):
        rules.append(bet_rule(f"total_{n}", clause, at,
                              [("win", f"Total Sum of {n}", f"{TOTAL_PAYS[n]} to 1")],
                              _typed("total", partial(ts.total, n))))
    for combo in parse_combinations(DOMINOS):
        a, b = combo
        rules.append(bet_rule(_name("domino_", combo), clause, at,
                              [("win", f"Specific Two Dice Combination {a} {b}", "6 to 1")],
                              _typed("domino", partial(ts.domino, (a, b)))))
    if layout in ("A", "C"):  # Pay Table 3 prints no Double Dice Bet
        for n in range(1, 7):
            rules.append(bet_rule(f"double_{n}", clause, at,
                                  [("win", f"Two Dice with same specific value {n} {n}",
                                    "11 to 1")], _typed("double", partial(ts.double, n))))
    rules.append(bet_rule("any_triple", clause, at,
                          [("win", "Three Dice with same value", "31 to 1")],
                          _typed("any_triple", ts.any_triple)))
    for n in range(1, 7):
        rules.append(bet_rule(f"triple_{n}", clause, at,
                              [("win", f"Three Dice with same specific value {n} {n} {n}",
                                "180 to 1")], _typed("triple", partial(ts.triple, n))))
    if layout in ("C", "E"):
        printed = FOUR_NUMBERS_TABLE_2 if layout == "C" else FOUR_NUMBERS_TABLE_3
        for combo in parse_combinations(printed):
            rules.append(bet_rule(_name("four_number_", combo, ""), clause, at,
                                  [("win", "Specific Four Number Combination "
                                    + " ".join(map(str, combo)), "7 to 1")],
                                  _typed("four_number", partial(ts.four_number, combo))))
        for combo in parse_combinations(THREE_SINGLES):
            rules.append(bet_rule(_name("three_single_", combo), clause, at,
                                  [("win", "Three Dice Combination "
                                    + " ".join(map(str, combo)), "30 to 1")],
                                  _typed("three_single", partial(ts.three_single, combo))))
        for combo in parse_combinations(DOUBLE_SINGLES):
            rules.append(bet_rule(_name("double_single_", combo), clause, at,
                                  [("win", "Double Numbers With Single Dice "
                                    + " ".join(map(str, combo)), "50 to 1")],
                                  _typed("double_single", partial(ts.double_single, combo))))
    return rules


BETS = tuple(rule for layout, clause in PAY_TABLE_OF_LAYOUT.items()
             for rule in _pay_table(clause, layout))

IRREGULARITIES = irregularities({
    "differential_exceeded": "5.1", "below_minimum": "5.2", "player_walked_away": "5.3",
    "technical_interruption_outcome_established": "5.4.1",
    "technical_interruption_no_outcome": "5.4.2", "bet_after_no_more_bets": "5.7",
    "error_noticed_late": "5.8", "bets_by_chip_position": "5.9", "display_information": "5.11",
    "void_returns_bets": "5.12", "bets_placed_by_staff": "5.13",
    "unresolved_irregularity": "5.14",
}, own=(
    Irregularity("too_few_tumbles", "5.5.1", "The tumbler did not tumble at least three times "
                 "after activation", C.VOID, "controller"),
    Irregularity("die_not_flat", "5.5.2", "A die did not come to rest flat on the base",
                 C.VOID, "controller"),
    Irregularity("activated_before_no_more_bets", "5.5.3", "The tumbler was activated before "
                 "\"No more Bets\"", C.VOID, "controller"),
    Irregularity("damaged_dice", "5.6", "Damaged dice: every affected round is Void", C.VOID,
                 "pit", reaches_back=True),
    Irregularity("illumination_failure", "5.10", "Layout lights wrong or dark: bets settle on "
                 "the dice", C.CONTINUE, "pit"),
))

GAME: GameRules[Throw] = GameRules(
    id="tai-sai-open-cover",
    title="Tai Sai (Open Cover)",
    document="Tai Sai (Open Cover) (RWS) Version 5, w.e.f. 6 October 2023",
    kind="dice",
    layouts={"A": Layout("A", "", "Pay Table 1 (4.1.1)"),
             "C": Layout("C", "", "Pay Table 2 (4.1.2)"),
             "E": Layout("E", "", "Pay Table 3 (4.1.3)")},
    bets=BETS,
    irregularities=IRREGULARITIES,
    decisions=TAI_SAI_DECISIONS,
    decks=None,
    decks_clause=None,
    layouts_clause="2.1.1",
    sim_layout="E",
)


def check_throw(tumbles: int, flat: Sequence[bool], activated_before_no_more_bets: bool
                ) -> Irregularity | None:
    """5.5: the first condition that voids this throw, or None if it is a valid tumble."""
    if activated_before_no_more_bets:
        return GAME.irregularity("activated_before_no_more_bets")
    if tumbles < ts.MIN_TUMBLES:
        return GAME.irregularity("too_few_tumbles")
    if len(flat) != 3 or not all(flat):
        return GAME.irregularity("die_not_flat")
    return None


@dataclass(frozen=True)
class ThrowFacts:
    """What the controller itself saw of one activation, in the round it belongs to.

    ``tumbles`` is the controller's own count of Tumble messages after this activation;
    ``device_tumbles`` the tumbler's count, which is only cross-checked. ``armed`` says the
    activation followed an arm the tumbler confirmed in this round, after "No more Bets".
    """

    activated_before_no_more_bets: bool
    armed: bool
    tumbles: int
    device_tumbles: int
    flat: tuple[bool, ...]
    dice: tuple[int, ...]
    confidence: int


@dataclass(frozen=True)
class ThrowVerdict:
    """Exactly one of: the clause that voids the throw, why the Pit must decide (5.14:
    void, or throw again), or the valid throw."""

    void: Irregularity | None = None
    pit: str | None = None
    throw: Throw | None = None


def judge_throw(f: ThrowFacts, confidence_floor: int) -> ThrowVerdict:
    """5.5 first: its voids need no one's judgement, so an unreadable die after two
    tumbles is a 5.5.1 void, not a question for the Pit; but fewer tumbles than the
    tumbler numbered is no proof of 5.5.1. Then whatever makes the dice untrustworthy goes
    to the Pit (5.14), who voids the round or has the dice thrown again; only what is left
    is a result."""
    bad = check_throw(f.tumbles, f.flat, f.activated_before_no_more_bets)
    if bad is not None and bad.code == "too_few_tumbles" and f.device_tumbles > f.tumbles:
        # The tumbler numbered tumbles the controller never saw (Tumble messages lost):
        # whether 5.5.1 applies is not known, so the count is the Pit's below; 5.5.2
        # still voids on its own.
        bad = check_throw(ts.MIN_TUMBLES, f.flat, f.activated_before_no_more_bets)
    if bad is not None:
        return ThrowVerdict(void=bad)
    doubts = []
    if not f.armed:
        doubts.append("the activation did not follow an arm the tumbler confirmed after "
                      "\"No more Bets\"")
    if f.device_tumbles != f.tumbles:
        doubts.append(f"the tumbler counted {f.device_tumbles} tumble(s), the controller "
                      f"{f.tumbles}")
    if len(f.dice) != 3 or not all(1 <= d <= 6 for d in f.dice):
        doubts.append(f"the camera could not read the dice {list(f.dice)}")
    elif f.confidence < confidence_floor:
        doubts.append(f"the dice {list(f.dice)} were read with {f.confidence}% confidence, "
                      f"under the table's floor of {confidence_floor}%")
    if doubts:
        return ThrowVerdict(pit="; ".join(doubts))
    return ThrowVerdict(throw=Throw.of(f.dice))
