"""The roads against a shoe worked by hand (the grids below were drawn on paper from the
rules in docs/display.md, not printed by the code), and properties over random shoes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from daemon.display.roads import DERIVED, ROWS, Hand, derive, derived_marks, hand_of, place

# The hand-worked shoe: T, then B B | P P P | B T T | P | B x7 | P P | void | B.
SHOE = "T B B P P P B T T P B B B B B B B P P V B"
LETTER = {"B": "banker", "P": "player", "T": "tie"}


def hands(text: str) -> list[Hand]:
    out = []
    for seq, w in enumerate(text.split(), 1):
        if w == "V":
            out.append(Hand(seq, f"r{seq}", None, void_clause="5.16"))
        else:
            out.append(Hand(seq, f"r{seq}", LETTER[w]))  # type: ignore[arg-type]
    return out


def test_bead_plate_holds_every_hand_down_then_across() -> None:
    roads = derive(hands(SHOE))
    got = [(c.col, c.row, c.hand.winner) for c in roads.bead_plate]
    # 21 hands, six to a column: hand 7 tops column 1, the void (hand 20) is at (3, 1).
    assert len(got) == 21
    assert got[0] == (0, 0, "tie") and got[6] == (1, 0, "banker")
    assert got[19] == (3, 1, None) and got[20] == (3, 2, "banker")


def test_big_road_hand_worked() -> None:
    roads = derive(hands(SHOE))
    got = [(c.col, c.row, c.hand.seq, c.ties, c.ties_before) for c in roads.big_road]
    assert got == [
        (0, 0, 2, 0, 1), (0, 1, 3, 0, 0),                       # B B, after a leading tie
        (1, 0, 4, 0, 0), (1, 1, 5, 0, 0), (1, 2, 6, 0, 0),      # P P P
        (2, 0, 7, 2, 0),                                        # B, then two ties on it
        (3, 0, 10, 0, 0),                                       # P
        (4, 0, 11, 0, 0), (4, 1, 12, 0, 0), (4, 2, 13, 0, 0),   # seven Bs: six down,
        (4, 3, 14, 0, 0), (4, 4, 15, 0, 0), (4, 5, 16, 0, 0),
        (5, 5, 17, 0, 0),                                       # the seventh turns right
        (5, 0, 18, 0, 0), (5, 1, 19, 0, 0),                     # P P beside the tail
        (6, 0, 21, 0, 0),                                       # the void is skipped
    ]
    assert [(c.lcol, c.lrow) for c in roads.big_road][13] == (4, 6)


def marks(roads: Any, name: str) -> list[tuple[int, int, str]]:
    return [(c.col, c.row, c.colour[0].upper()) for c in roads.derived[name]]


def test_big_eye_boy_hand_worked() -> None:
    # Column lengths 2 3 1 1 7 2 1. Marks in order: R B | B | B | R B R R R R R | B R | B
    roads = derive(hands(SHOE))
    assert [c.colour[0].upper() for c in roads.derived["big_eye_boy"]] == list(
        "RBBBRBRRRRRBRB")
    assert marks(roads, "big_eye_boy") == [
        (0, 0, "R"), (1, 0, "B"), (1, 1, "B"), (1, 2, "B"), (2, 0, "R"), (3, 0, "B"),
        (4, 0, "R"), (4, 1, "R"), (4, 2, "R"), (4, 3, "R"), (4, 4, "R"), (5, 0, "B"),
        (6, 0, "R"), (7, 0, "B")]
    # The first mark is P at column 1 row 1 (hand 5): column 0 has a cell in row 1.
    assert roads.derived["big_eye_boy"][0].seq == 5


def test_small_road_hand_worked() -> None:
    # Starts at column 2 row 1 or column 3 row 0: the P of hand 10 (column 3).
    roads = derive(hands(SHOE))
    assert [c.colour[0].upper() for c in roads.derived["small_road"]] == list("BBBRRRRRBBB")
    assert marks(roads, "small_road") == [
        (0, 0, "B"), (0, 1, "B"), (0, 2, "B"),
        (1, 0, "R"), (1, 1, "R"), (1, 2, "R"), (1, 3, "R"), (1, 4, "R"),
        (2, 0, "B"), (2, 1, "B"), (2, 2, "B")]
    assert roads.derived["small_road"][0].seq == 10


def test_cockroach_pig_hand_worked() -> None:
    roads = derive(hands(SHOE))
    assert [c.colour[0].upper() for c in roads.derived["cockroach_pig"]] == list("BRRBRRRBBB")
    assert marks(roads, "cockroach_pig") == [
        (0, 0, "B"), (1, 0, "R"), (1, 1, "R"), (2, 0, "B"),
        (3, 0, "R"), (3, 1, "R"), (3, 2, "R"), (4, 0, "B"), (4, 1, "B"), (4, 2, "B")]
    assert roads.derived["cockroach_pig"][0].seq == 11


def test_next_hand_predictions_hand_worked() -> None:
    roads = derive(hands(SHOE))
    # Banker next: column 6 row 1; column 5 has a row 1 -> red on the big eye boy.
    # Player next: a new column 7; columns 6 and 5 differ (1 vs 2) -> blue.
    assert roads.next_if["banker"]["big_eye_boy"] == "red"
    assert roads.next_if["player"]["big_eye_boy"] == "blue"
    # Cockroach, banker next: column 3 (length 1) has no row 1 -> blue.
    assert roads.next_if["banker"]["cockroach_pig"] == "blue"


def test_a_tail_blocks_the_column_after_it() -> None:
    # Seven Bs then seven Ps: the Ps hit the Bs' tail at (1, 5) and turn at row 4.
    got = place([list("BBBBBBB"), list("PPPPPPP")])
    assert [(x, y) for x, y, w in got if w == "P"] == [
        (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4)]


def test_pairs_natural_and_tiger_read_from_the_published_cards() -> None:
    # docs/mqtt.md's example: P 2S 3S KC (5), B 3H 3D (6): banker pair, Tiger.
    result: dict[str, Any] = {
              "seq": 123, "round_id": "bac-07-000123", "status": "valid", "winner": "banker",
              "player_total": 5, "banker_total": 6, "natural": False,
              "cards": [{"card": "2S", "hand": "player", "position": 1},
                        {"card": "3H", "hand": "banker", "position": 1},
                        {"card": "3S", "hand": "player", "position": 2},
                        {"card": "3D", "hand": "banker", "position": 2},
                        {"card": "KC", "hand": "player", "position": 3}]}
    h = hand_of(result)
    assert (h.banker_pair, h.player_pair, h.tiger, h.banker_cards) == (True, False, True, 2)
    # A ten and a king are not a pair: a pair is the same rank, not the same value.
    result["cards"][1]["card"], result["cards"][3]["card"] = "TH", "KD"
    assert not hand_of(result).banker_pair
    void = hand_of({"seq": 1, "round_id": "x", "status": "void",
                    "void_reason": {"code": "c", "clause": "5.16", "text": "", "detail": ""}})
    assert void.winner is None and void.void_clause == "5.16"


shoes = st.lists(st.sampled_from("BBBBPPPPTV"), max_size=90).map(
    lambda ws: hands(" ".join(ws)) if ws else [])


def columns(hs: list[Hand]) -> list[int]:
    out: list[int] = []
    last = None
    for h in hs:
        if h.winner in ("banker", "player"):
            if h.winner == last:
                out[-1] += 1
            else:
                out.append(1)
            last = h.winner
    return out


@given(shoes)
def test_roads_properties(hs: list[Hand]) -> None:
    roads = derive(hs)
    assert len(roads.bead_plate) == len(hs)
    decided = [h for h in hs if h.winner in ("banker", "player")]
    assert [c.hand.seq for c in roads.big_road] == [h.seq for h in decided]
    ties = sum(h.winner == "tie" for h in hs)
    assert sum(c.ties + c.ties_before for c in roads.big_road) == (ties if decided else 0)
    lengths = columns(hs)
    for name, k in DERIVED.items():
        cells = roads.derived[name]
        # One mark per entry from column k row 1, or column k+1 row 0, on.
        expected = sum(n - 1 for n in lengths[k:]) + max(0, len(lengths) - k - 1)
        assert len(cells) == expected
        grid = [(c.col, c.row) for c in cells]
        assert len(set(grid)) == len(grid) and all(0 <= r < ROWS for _, r in grid)
    grid = [(c.col, c.row) for c in roads.big_road]
    assert len(set(grid)) == len(grid) and all(0 <= r < ROWS for _, r in grid)
    # Column heights: a logical column fills down before it turns, never past row 5.
    for c in roads.big_road:
        assert c.row == min(c.lrow, c.row) and (c.lrow < ROWS or c.row <= ROWS - 1)


@given(st.integers(1, 9), st.integers(2, 12))
def test_an_orderly_road_is_all_red(length: int, ncols: int) -> None:
    # Every column as long as the one before it: every derived mark is red.
    for k in DERIVED.values():
        assert set(derived_marks([length] * ncols, k)) <= {"red"}


@given(st.lists(st.integers(1, 8), min_size=2, max_size=30))
def test_new_column_mark_compares_lengths(lengths: list[int]) -> None:
    # The first mark of each new column (from k+1 on) is red exactly when the two
    # columns before it, k apart, are equally long.
    k = 1
    got = derived_marks(lengths, k)
    n = 0
    for c, length in enumerate(lengths):
        for r in range(length):
            if r == 0 and c >= k + 1:
                assert got[n] == ("red" if lengths[c - 1] == lengths[c - 2] else "blue")
            if (r == 0 and c >= k + 1) or (r >= 1 and c >= k):
                n += 1
    assert n == len(got)
