"""What a rule document says about one game, as data: layouts, pay tables, irregularities."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Generic

from daemon.games.errors import UnknownGameError
from daemon.games.odds import odds
from daemon.games.outcome import BetRule, Outcome, PayLine, Verdict


class Consequence(StrEnum):
    VOID = "void"  # the round is void and every bet is returned
    CONTINUE = "continue"  # play continues and the result stands
    RECONSTRUCT = "reconstruct"  # cards are put back in order, play continues
    PLAYER_OPTION = "player_option"  # players may continue or have their bets returned
    PIT_DECISION = "pit_decision"  # a supervisor decides; the controller records it
    SETTLE = "settle"  # bets are settled as they lie (limits, walk-aways)


@dataclass(frozen=True, slots=True)
class Irregularity:
    """One condition of a document's section 5 and what it leads to."""

    code: str
    clause: str
    summary: str
    consequence: Consequence
    detected_by: str  # "controller": tabled sees it from devices; "pit": people report it
    # The clause voids rounds already settled ("all affected Rounds of play"), not only
    # the round in play: the Pit's correction of a published result (void_settled_round).
    reaches_back: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """How we read text that can be read more than one way."""

    id: str
    clause: str
    question: str
    decision: str
    reason: str


@dataclass(frozen=True)
class TableSetting(Generic[Outcome]):
    """Where approved text reads two ways and neither is absurd, the house's approved
    reading is configuration (``[table] <key>``), not ours to fix in code: each reading is
    a predicate for one bet, and the default is the reading our decision records."""

    key: str
    clause: str
    decision: str  # the Decision that weighs the readings
    bet: str  # the bet whose winning condition the reading changes
    # value -> (what it means, in one line; the bet's predicate under it)
    readings: Mapping[str, tuple[str, Callable[[Outcome], Verdict]]]
    default: str

    def predicate(self, value: str | None = None) -> Callable[[Outcome], Verdict]:
        return self.readings[self.default if value is None else value][1]


@dataclass(frozen=True, slots=True)
class Layout:
    appendix: str
    positions: str
    note: str = ""


Row = tuple[str | tuple[str, ...], str, str]  # (line key(s), label as printed, odds as printed)


def bet_rule(bet: str, clause: str, layouts: Iterable[str], rows: Iterable[Row],
             predicate: Callable[[Outcome], Verdict]) -> BetRule[Outcome]:
    lines = tuple(
        PayLine((keys,) if isinstance(keys, str) else keys, label, odds(text))
        for keys, label, text in rows
    )
    return BetRule(bet, clause, lines, frozenset(layouts), predicate)


def appendices(spec: str) -> tuple[str, ...]:
    """"A, B, C and D" or "A-R" as printed in an applicability list."""
    spec = spec.replace(" and ", ", ")
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(chr(c) for c in range(ord(lo), ord(hi) + 1))
        elif part:
            out.append(part)
    return tuple(out)


@dataclass(frozen=True)
class GameRules(Generic[Outcome]):
    id: str
    title: str
    document: str
    kind: str  # its table kind, "baccarat" | "dice" (daemon/round/kinds.py)
    layouts: dict[str, Layout]
    bets: tuple[BetRule[Outcome], ...]
    irregularities: tuple[Irregularity, ...]
    decisions: tuple[Decision, ...]
    decks: tuple[int, int] | None  # inclusive range the document allows
    decks_clause: str | None
    layouts_clause: str
    has_insurance: bool = False
    # Readings the house chooses per table (TableSetting), and the ones this table chose.
    settings: tuple[TableSetting[Outcome], ...] = ()
    chosen: tuple[tuple[str, str], ...] = ()
    # The clause of this game's own document on the cut card coming out during a round
    # (MBS 3.22: the round is completed); None where the document has none (the RWS
    # documents: the shoe ends after the round all the same, by the house's procedure).
    cut_card_clause: str | None = None
    # The clause that returns every bet of a void round, where the document says so outside
    # a section-5 entry of its own (MBS 5.1.1); the RWS documents list it in section 5
    # (``void_returns_bets``), and their games leave this None.
    void_returns_clause: str | None = None
    # The layout ``tabled simulate`` deals on unless told (None: the first Appendix).
    sim_layout: str | None = None

    def void_returns(self) -> str:
        """The clause each returned bet of a void round cites (result and correction)."""
        if self.void_returns_clause is not None:
            return self.void_returns_clause
        return self.irregularity("void_returns_bets").clause

    def simulated_layout(self) -> str:
        """The layout a simulated table deals on when no --layout is given."""
        return self.sim_layout if self.sim_layout is not None else next(iter(self.layouts))

    def readings(self) -> dict[str, str]:
        """Every table setting of the game with the reading in effect: what a result says."""
        chosen = dict(self.chosen)
        return {s.key: chosen.get(s.key, s.default) for s in self.settings}

    def configured(self, choices: Mapping[str, str]) -> GameRules[Outcome]:
        """The game as one table plays it: each chosen reading's predicate on its bet."""
        known = {s.key: s for s in self.settings}
        for key, value in choices.items():
            if key not in known:
                raise UnknownGameError(f"game {self.id!r} has no table setting {key!r}: its "
                                       "text reads one way")
            if value not in known[key].readings:
                raise UnknownGameError(f"{key} is one of {', '.join(known[key].readings)}, "
                                       f"not {value!r} (decision {known[key].decision})")
        chosen = {**self.readings(), **choices}
        by_bet = {s.bet: s.predicate(chosen[s.key]) for s in self.settings}
        bets = tuple(replace(r, predicate=by_bet[r.bet]) if r.bet in by_bet else r
                     for r in self.bets)
        return replace(self, bets=bets, chosen=tuple(sorted(chosen.items())))

    def cut_card_text(self) -> str:
        """Why a shoe ended after its cut card came out: a message of this table, so it
        cites only this game's document (issue 26: an RWS table cited MBS 3.22)."""
        if self.cut_card_clause is None:
            return "the cut card came out"
        return f"the cut card came out ({self.cut_card_clause})"

    def check_layout(self, layout: str) -> str:
        if layout not in self.layouts:
            raise UnknownGameError(
                f"game {self.id!r} has no layout {layout!r}: clause {self.layouts_clause} "
                f"allows Appendices {', '.join(self.layouts)}"
            )
        return layout

    def check_decks(self, decks: int) -> int:
        if self.decks is None:
            raise UnknownGameError(f"game {self.id!r} is not played with cards")
        lo, hi = self.decks
        if isinstance(decks, bool) or not isinstance(decks, int) or not lo <= decks <= hi:
            raise UnknownGameError(
                f"game {self.id!r} is played with {lo} to {hi} decks "
                f"(clause {self.decks_clause}), not {decks!r}"
            )
        return decks

    def offered(self, layout: str) -> tuple[BetRule[Outcome], ...]:
        self.check_layout(layout)
        return tuple(rule for rule in self.bets if layout in rule.layouts)

    def rule(self, bet: str, layout: str) -> BetRule[Outcome]:
        for r in self.offered(layout):
            if r.bet == bet:
                return r
        raise UnknownGameError(f"game {self.id!r} offers no bet {bet!r} on layout {layout!r}")

    def offered_names(self, layout: str) -> tuple[str, ...]:
        """Every bet a player can make on this layout, insurance included."""
        names = tuple(r.bet for r in self.offered(layout))
        return (*names, "player_insurance", "banker_insurance") if self.has_insurance else names

    def irregularity(self, code: str) -> Irregularity:
        for i in self.irregularities:
            if i.code == code:
                return i
        raise UnknownGameError(f"game {self.id!r} has no irregularity {code!r}")

    def voids_settled_rounds(self) -> tuple[str, ...]:
        """The causes under which the Pit may void a round whose result is published."""
        return tuple(i.code for i in self.irregularities if i.reaches_back)

    def pit_voidable(self) -> tuple[str, ...]:
        """The irregularities a pit supervisor may void a round under, by code: every cause
        whose consequence is a void, and "anything else" (D14). The clause that only says
        a void round returns its bets is a consequence, not a cause."""
        causes = tuple(i.code for i in self.irregularities
                       if i.consequence is Consequence.VOID and i.code != "void_returns_bets")
        return (*dict.fromkeys(causes), "unresolved_irregularity")
