"""Par sheets: the exact probability of every bet's results, and the house edge.

Baccarat: exhaustive over every ordered sequence of six cards drawn without
replacement from N decks. The four initial cards are enumerated by rank (pair bets need
ranks); later cards by point value, since nothing else depends on them. A coup that
ends after four or five cards stands for all of its completions to six cards, so every
weight is an exact count of six-card sequences and they sum to n(n-1)...(n-5).

Each weighted coup is built by ``Coup.from_points`` and settled by the same
``settle_coup`` that settles live rounds.

Tai Sai: exact over the 216 ordered outcomes of three dice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from itertools import product
from math import perm
from typing import Any

from daemon.games import insurance_plus, table_of_play
from daemon.games.baccarat import Coup, same_value_pairs
from daemon.games.cards import POINT_VALUE, RANKS, RANKS_OF_VALUE
from daemon.games.model import GameRules
from daemon.games.outcome import BetResult, Result, settle_rule
from daemon.games.settle import settle_coup, settle_throw
from daemon.games.tai_sai import Throw

PairFlags = tuple[bool, bool, bool, bool]  # player pair, banker pair, twin by rank, by value


@dataclass
class ParLine:
    line: str
    pays: str | None
    net: Fraction  # net return on a unit stake for this line
    count: int = 0


@dataclass
class BetPar:
    bet: str
    clause: str
    window: str | None = None
    line_order: tuple[str, ...] = ()  # pay table rows as printed
    lines: dict[str, ParLine] = field(default_factory=dict)
    offered: int = 0  # weight of coups in which the bet was offered (insurance); else total
    # A bet a table setting governs (TableSetting): the reading, and whether the sheet's
    # game plays it; the sheet lists the bet once per reading.
    setting: tuple[str, str] | None = None
    in_effect: bool = True

    def add(self, r: BetResult, weight: int) -> None:
        # Integer counts only: the expectation is taken once, over the few distinct lines.
        label = r.line if r.result is Result.WIN and r.line else r.result.value
        pl = self.lines.get(label)
        if pl is None:
            pl = self.lines[label] = ParLine(label, str(r.pays) if r.pays else None, r.net)
        pl.count += weight
        self.offered += weight

    def ordered_lines(self) -> list[ParLine]:
        """Wins in pay table order, then push, then lose."""
        rank = {label: i for i, label in enumerate((*self.line_order, "push", "lose"))}
        return sorted(self.lines.values(), key=lambda pl: rank.get(pl.line, -1))

    @property
    def house_edge(self) -> Fraction:
        """Expected loss per unit staked, counting pushes as staked."""
        ev = sum((pl.net * pl.count for pl in self.lines.values()), Fraction(0))
        return -ev / self.offered


@dataclass
class ParSheet:
    game: str
    title: str
    layout: str
    decks: int | None
    total: int
    unit: str
    bets: list[BetPar]

    def as_dict(self) -> dict[str, Any]:
        def bet(b: BetPar) -> dict[str, Any]:
            d: dict[str, Any] = {
                "bet": b.bet,
                "clause": b.clause,
                "lines": [{"line": pl.line, "pays": pl.pays, "count": pl.count,
                           "probability": float(Fraction(pl.count, b.offered))}
                          for pl in b.ordered_lines()],
                "house_edge": float(b.house_edge),
                "house_edge_exact": str(b.house_edge),
            }
            if b.window is not None:
                d["window"] = b.window
                d["offered_count"] = b.offered
                d["offered_probability"] = float(Fraction(b.offered, self.total))
            if b.setting is not None:
                d["setting"] = {b.setting[0]: b.setting[1]}
                d["in_effect"] = b.in_effect
            return d
        return {"game": self.game, "title": self.title, "layout": self.layout,
                "decks": self.decks, "total": self.total, "unit": self.unit,
                "bets": [bet(b) for b in self.bets]}




def _first_four(decks: int) -> dict[tuple[int, int, int, int], dict[PairFlags, int]]:
    """Weights of the four initial cards, by point values and pair flags, from rank counts."""
    per_rank = 4 * decks
    out: dict[tuple[int, int, int, int], dict[PairFlags, int]] = defaultdict(
        lambda: defaultdict(int))
    for r1, r2, r3, r4 in product(RANKS, repeat=4):
        w = (per_rank * (per_rank - (r2 == r1)) * (per_rank - (r3 == r1) - (r3 == r2))
             * (per_rank - (r4 == r1) - (r4 == r2) - (r4 == r3)))
        pp, bp = r1 == r3, r2 == r4
        values = (POINT_VALUE[r1], POINT_VALUE[r2], POINT_VALUE[r3], POINT_VALUE[r4])
        both = pp and bp
        out[values][(pp, bp, both and r1 == r2, both and same_value_pairs(r1, r2))] += w
    return out


Draws = tuple[int | None, int | None]


def _continuations(values: tuple[int, int, int, int], decks: int) -> dict[Draws, int]:
    """(Player third, Banker third) -> ways to fill cards 5 and 6, by the Table of Play."""
    n = 52 * decks - 4
    remaining = [len(RANKS_OF_VALUE[v]) * 4 * decks for v in range(10)]
    for v in values:
        remaining[v] -= 1
    p1, b1, p2, b2 = values
    pt, bt = (p1 + p2) % 10, (b1 + b2) % 10
    out: dict[Draws, int] = {}
    if table_of_play.player_draws(pt, bt):
        for p3 in range(10):
            w3 = remaining[p3]
            if not w3:
                continue
            if table_of_play.banker_draws(pt, bt, p3):
                for b3 in range(10):
                    w4 = remaining[b3] - (b3 == p3)
                    if w4:
                        out[(p3, b3)] = w3 * w4
            else:
                out[(p3, None)] = w3 * (n - 1)
    elif table_of_play.banker_draws(pt, bt, None):
        for b3 in range(10):
            if remaining[b3]:
                out[(None, b3)] = remaining[b3] * (n - 1)
    else:
        out[(None, None)] = n * (n - 1)
    return out


@cache
def coup_weights(decks: int) -> Mapping[Coup, int]:
    """Every distinct Coup with its exact count of ordered six-card sequences (read-only)."""
    weights: dict[Coup, int] = defaultdict(int)
    built: dict[tuple[int, int, int, int, int | None, int | None, PairFlags], Coup] = {}
    for values, by_flags in _first_four(decks).items():
        p1, b1, p2, b2 = values
        for (p3, b3), cw in _continuations(values, decks).items():
            for flags, fw in by_flags.items():
                key = ((p1 + p2) % 10, (b1 + b2) % 10, 0, 0, p3, b3, flags)
                coup = built.get(key)
                if coup is None:
                    player = [p1, p2] if p3 is None else [p1, p2, p3]
                    banker = [b1, b2] if b3 is None else [b1, b2, b3]
                    coup = built[key] = Coup.from_points(player, banker, *flags)
                weights[coup] += fw * cw
    return weights


def baccarat_par_sheet(game: GameRules[Any], layout: str, decks: int) -> ParSheet:
    game.check_layout(layout)
    game.check_decks(decks)
    total = perm(52 * decks, 6)
    pars: dict[tuple[str, str | None], BetPar] = {}
    for coup, weight in coup_weights(decks).items():
        # Insurance rows are weighted per printed row below, not per bet.
        for r in settle_coup(game, layout, coup, insurance_offered=False):
            key = (r.bet, r.window)
            bp = pars.get(key)
            if bp is None:
                order = tuple(pl.label for pl in game.rule(r.bet, layout).pay_lines)
                bp = pars[key] = BetPar(r.bet, r.clause, r.window, order)
            bp.add(r, weight)
    counted = sum(pl.count for pl in pars[("player", None)].lines.values())
    if counted != total:  # the enumeration must account for every sequence exactly once
        raise AssertionError(f"par sheet weights sum to {counted}, expected {total}")
    bets = [b for b in pars.values() if b.window is None]
    bets += _other_readings(game, layout, decks, pars)
    bets += _insurance_rows(game, layout, decks) if game.has_insurance else []
    return ParSheet(game.id, game.title, layout, decks, total,
                    f"ordered six-card sequences from {decks} decks", bets)


def _other_readings(game: GameRules[Any], layout: str, decks: int,
                    pars: dict[tuple[str, str | None], BetPar]) -> list[BetPar]:
    """Each bet a table setting governs, under every reading the game does not play (D2):
    the house chooses its reading knowing the edge of each."""
    out: list[BetPar] = []
    in_effect = game.readings()
    for s in game.settings:
        played = pars.get((s.bet, None))
        if played is None:  # not offered on this layout
            continue
        played.setting = (s.key, in_effect[s.key])
        for value in s.readings:
            if value == in_effect[s.key]:
                continue
            rule = game.configured({s.key: value}).rule(s.bet, layout)
            bp = BetPar(s.bet, rule.clause, None, played.line_order, setting=(s.key, value),
                        in_effect=False)
            for coup, weight in coup_weights(decks).items():
                bp.add(settle_rule(rule, coup), weight)
            out.append(bp)
    return out


def _insurance_rows(game: GameRules[Any], layout: str, decks: int) -> list[BetPar]:
    """One line per printed row of the Insurance Plus Pay Table, conditional on its offer."""
    rows: dict[str, BetPar] = {}
    for coup, weight in coup_weights(decks).items():
        for offer in insurance_plus.offers_for_coup(coup):
            r = insurance_plus.settle_offer(offer, coup)
            label = offer.row.label
            bp = rows.get(label)
            if bp is None:
                bp = rows[label] = BetPar(offer.bet, insurance_plus.CLAUSE,
                                          f"{offer.window} {offer.row.odds!s} "
                                          f"({label.split(': ')[1]})")
            bp.add(r, weight)
    order = {row.label: i for i, row in enumerate(insurance_plus.ROWS)}
    return [rows[k] for k in sorted(rows, key=order.__getitem__)]


def dice_par_sheet(game: GameRules[Any], layout: str) -> ParSheet:
    pars: dict[str, BetPar] = {}
    for dice in product(range(1, 7), repeat=3):
        for r in settle_throw(game, layout, Throw.of(dice)):
            bp = pars.get(r.bet)
            if bp is None:
                order = tuple(pl.label for pl in game.rule(r.bet, layout).pay_lines)
                bp = pars[r.bet] = BetPar(r.bet, r.clause, None, order)
            bp.add(r, 1)
    return ParSheet(game.id, game.title, layout, None, 216,
                    "ordered outcomes of three dice", list(pars.values()))


def par_sheet(game: GameRules[Any], layout: str, decks: int | None) -> ParSheet:
    if game.kind == "dice":
        return dice_par_sheet(game, layout)
    return baccarat_par_sheet(game, layout, 8 if decks is None else decks)
