"""The baccarat roads, derived from a shoe's published results: bead plate, big road,
big eye boy, small road and cockroach pig. Pure: no I/O, no clock.

The rules are written out in docs/display.md ("The roads"); this module is their one
implementation, and the page draws what it returns without deciding anything.

A road is a grid six rows high, filled column by column. The big road and the three
derived roads share one placement rule (``place``): a logical column is a run of one
outcome; it starts in the top row of the next grid column, goes down, and turns right
along its row (the "dragon tail") when it reaches the bottom row or a cell below is
taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

ROWS = 6
Winner = Literal["banker", "player", "tie"]
Colour = Literal["red", "blue"]
# k of each derived road: the column it compares with lies k columns to the left.
DERIVED: dict[str, int] = {"big_eye_boy": 1, "small_road": 2, "cockroach_pig": 3}


@dataclass(frozen=True)
class Hand:
    """One round of the shoe as the roads need it."""

    seq: int
    round_id: str
    winner: Winner | None  # None: the round was void
    player_total: int | None = None
    banker_total: int | None = None
    natural: bool = False
    player_pair: bool = False
    banker_pair: bool = False
    tiger: bool = False  # Banker wins on 6 points
    banker_cards: int = 0
    void_clause: str | None = None
    corrected: bool = False  # settled, then voided by a correction (docs/mqtt.md)


def _first_two_pair(cards: Sequence[Mapping[str, Any]], hand: str) -> bool:
    ranks = {int(c["position"]): str(c["card"])[0] for c in cards if c.get("hand") == hand}
    return 1 in ranks and 2 in ranks and ranks[1] == ranks[2]


def hand_of(result: Mapping[str, Any]) -> Hand:
    """A published baccarat result (docs/mqtt.md, ``results``) as a Hand."""
    seq, round_id = int(result["seq"]), str(result["round_id"])
    if result.get("status") != "valid":
        reason = result.get("void_reason") or {}
        return Hand(seq, round_id, None, void_clause=str(reason.get("clause", "")) or None,
                    corrected=bool(result.get("corrected")))
    cards = list(result.get("cards") or [])
    winner: Winner = result["winner"]
    banker_total = int(result["banker_total"])
    return Hand(
        seq, round_id, winner,
        player_total=int(result["player_total"]), banker_total=banker_total,
        natural=bool(result.get("natural")),
        player_pair=_first_two_pair(cards, "player"),
        banker_pair=_first_two_pair(cards, "banker"),
        tiger=winner == "banker" and banker_total == 6,
        banker_cards=sum(1 for c in cards if c.get("hand") == "banker"))


@dataclass(frozen=True)
class Cell:
    col: int
    row: int


@dataclass(frozen=True)
class BeadCell(Cell):
    hand: Hand


@dataclass(frozen=True)
class BigCell(Cell):
    hand: Hand  # the banker or player win this cell shows
    ties: int  # ties after it, before the next banker or player win
    ties_before: int  # ties before the shoe's first win (first cell only)
    lcol: int  # logical column and row: what the derived roads read
    lrow: int


@dataclass(frozen=True)
class DerivedCell(Cell):
    colour: Colour
    seq: int  # the hand whose big-road entry made this mark


@dataclass(frozen=True)
class Roads:
    bead_plate: list[BeadCell]
    big_road: list[BigCell]
    derived: dict[str, list[DerivedCell]]
    # What each derived road would mark if the next hand were a banker or a player win.
    next_if: dict[str, dict[str, Colour | None]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """What the page draws, and no more (dataclasses.asdict took 86% of a push:
        ``.venv/bin/python -m bench.display``, docs/performance.md)."""
        return {
            "bead_plate": [{"col": c.col, "row": c.row, "hand": _hand_dict(c.hand)}
                           for c in self.bead_plate],
            "big_road": [{"col": c.col, "row": c.row, "hand": _hand_dict(c.hand),
                          "ties": c.ties, "ties_before": c.ties_before, "lcol": c.lcol,
                          "lrow": c.lrow} for c in self.big_road],
            "derived": {name: [{"col": c.col, "row": c.row, "colour": c.colour,
                                "seq": c.seq} for c in cells]
                        for name, cells in self.derived.items()},
            "next_if": {w: dict(marks) for w, marks in self.next_if.items()},
        }


def _hand_dict(h: Hand) -> dict[str, Any]:
    return {"seq": h.seq, "winner": h.winner, "natural": h.natural,
            "player_pair": h.player_pair, "banker_pair": h.banker_pair, "tiger": h.tiger,
            "void_clause": h.void_clause, "corrected": h.corrected}


def bead_plate(hands: Sequence[Hand], rows: int = ROWS) -> list[BeadCell]:
    """Every hand, void and tie included, top to bottom then left to right."""
    return [BeadCell(i // rows, i % rows, h) for i, h in enumerate(hands)]


def place(runs: Sequence[Sequence[Any]], rows: int = ROWS) -> list[tuple[int, int, Any]]:
    """Grid positions of logical columns (runs), with dragon tails. Returns (col, row,
    item) in the order of the items."""
    taken: set[tuple[int, int]] = set()
    out: list[tuple[int, int, Any]] = []
    start = -1
    for run in runs:
        start += 1
        while (start, 0) in taken:  # a tail along the top row: start past it
            start += 1
        x, y, turned = start, 0, False
        for i, item in enumerate(run):
            if i:
                if not turned and y + 1 < rows and (x, y + 1) not in taken:
                    y += 1
                else:
                    turned = True
                    x += 1
                    while (x, y) in taken:  # never drawn over: keep going right
                        x += 1
            taken.add((x, y))
            out.append((x, y, item))
    return out


def _runs(hands: Sequence[Hand]) -> tuple[list[list[Hand]], dict[int, int], int]:
    """Logical columns of banker/player wins; ties after each win by seq; ties before
    the first win."""
    runs: list[list[Hand]] = []
    ties_after: dict[int, int] = {}
    leading = 0
    last: Hand | None = None
    for h in hands:
        if h.winner is None:
            continue  # a void round has no outcome: it is on the bead plate only
        if h.winner == "tie":
            if last is None:
                leading += 1
            else:
                ties_after[last.seq] += 1
            continue
        if runs and runs[-1][-1].winner == h.winner:
            runs[-1].append(h)
        else:
            runs.append([h])
        ties_after[h.seq] = 0
        last = h
    return runs, ties_after, leading


def big_road(hands: Sequence[Hand], rows: int = ROWS) -> list[BigCell]:
    runs, ties_after, leading = _runs(hands)
    logical = [(c, r) for c, run in enumerate(runs) for r in range(len(run))]
    cells = []
    for n, (x, y, h) in enumerate(place(runs, rows)):
        lcol, lrow = logical[n]
        cells.append(BigCell(x, y, h, ties_after[h.seq], leading if n == 0 else 0, lcol, lrow))
    return cells


def derived_marks(lengths: Sequence[int], k: int) -> list[Colour]:
    """The marks of the derived road comparing with the column k to the left, for a big
    road whose logical columns have these lengths (docs/display.md, "Derived roads").

    Each big-road entry at logical (c, r) gives one mark once the road is far enough:
    - r = 0 (a new column, c >= k + 1): red if columns c-1 and c-1-k have the same
      length, else blue;
    - r >= 1 (c >= k): red if column c-k has a cell in row r, or has no cell in row
      r-1 either; blue if its last cell is in row r-1.
    """
    marks: list[Colour] = []
    for c, length in enumerate(lengths):
        for r in range(length):
            if r == 0:
                if c >= k + 1:
                    marks.append("red" if lengths[c - 1] == lengths[c - 1 - k] else "blue")
            elif c >= k:
                marks.append("blue" if lengths[c - k] == r else "red")
    return marks


def _derived_cells(runs: Sequence[Sequence[Hand]], k: int,
                   rows: int) -> list[DerivedCell]:
    lengths = [len(run) for run in runs]
    marks = derived_marks(lengths, k)
    # The hand behind each mark: the same walk as derived_marks, kept beside it.
    sources = [run[r].seq for c, run in enumerate(runs) for r in range(len(run))
               if (r == 0 and c >= k + 1) or (r >= 1 and c >= k)]
    mark_runs: list[list[tuple[Colour, int]]] = []
    for colour, seq in zip(marks, sources, strict=True):
        if mark_runs and mark_runs[-1][-1][0] == colour:
            mark_runs[-1].append((colour, seq))
        else:
            mark_runs.append([(colour, seq)])
    return [DerivedCell(x, y, m[0], m[1]) for x, y, m in place(mark_runs, rows)]


def _next_mark(runs: Sequence[Sequence[Hand]], winner: Winner, k: int) -> Colour | None:
    lengths = [len(run) for run in runs]
    if runs and runs[-1][-1].winner == winner:
        lengths[-1] += 1
    else:
        lengths.append(1)
    before = len(derived_marks([len(run) for run in runs], k))
    after = derived_marks(lengths, k)
    return after[-1] if len(after) > before else None


def derive(results_or_hands: Iterable[Mapping[str, Any] | Hand], rows: int = ROWS) -> Roads:
    """All five roads of one shoe, from its results in seq order."""
    hands = [h if isinstance(h, Hand) else hand_of(h) for h in results_or_hands]
    runs, _, _ = _runs(hands)
    derived = {name: _derived_cells(runs, k, rows) for name, k in DERIVED.items()}
    next_if: dict[str, dict[str, Colour | None]] = {
        w: {name: _next_mark(runs, w, k) for name, k in DERIVED.items()}
        for w in ("banker", "player")}
    return Roads(bead_plate(hands, rows), big_road(hands, rows), derived, next_if)
