"""Tai Sai dice: a throw, each bet type's winning condition, and the triple rule 3.10."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from daemon.games.errors import DiceError
from daemon.games.outcome import Result, Verdict

# 3.7 / 5.5.1: a valid tumble is at least three tumbles.
MIN_TUMBLES = 3


@dataclass(frozen=True, slots=True)
class Throw:
    """Three dice as they rest, in the order the tumbler reports them."""

    dice: tuple[int, int, int]

    @classmethod
    def of(cls, dice: Sequence[int]) -> Throw:
        if isinstance(dice, str | bytes) or len(dice) != 3:
            raise DiceError(f"a throw is three dice (2.2.1), got {dice!r}")
        for d in dice:
            if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 6:
                raise DiceError(f"a die shows 1 to 6 (2.2.1), got {d!r} in {list(dice)}")
        return cls((dice[0], dice[1], dice[2]))

    @property
    def total(self) -> int:
        return sum(self.dice)

    @property
    def counts(self) -> Counter[int]:
        return Counter(self.dice)

    @property
    def is_triple(self) -> bool:
        return len(set(self.dice)) == 1


WIN, LOSE = Result.WIN, Result.LOSE


def _win_if(cond: bool, key: str = "win") -> Verdict:
    return (WIN, key) if cond else (LOSE, None)


def small(t: Throw) -> Verdict:
    return _win_if(4 <= t.total <= 10 and not t.is_triple)


def big(t: Throw) -> Verdict:
    return _win_if(11 <= t.total <= 17 and not t.is_triple)


def odd(t: Throw) -> Verdict:
    return _win_if(t.total % 2 == 1 and not t.is_triple)


def even(t: Throw) -> Verdict:
    return _win_if(t.total % 2 == 0 and not t.is_triple)


SINGLE_KEYS = {1: "one_die", 2: "two_dice", 3: "three_dice"}


def single(n: int, t: Throw) -> Verdict:
    k = t.counts[n]
    return (WIN, SINGLE_KEYS[k]) if k else (LOSE, None)


def total(n: int, t: Throw) -> Verdict:
    return _win_if(t.total == n)


def domino(pair: tuple[int, int], t: Throw) -> Verdict:
    return _win_if(pair[0] in t.dice and pair[1] in t.dice)


def double(n: int, t: Throw) -> Verdict:
    """Two dice (or, on a triple, 3.10.3: three) show n."""
    return _win_if(t.counts[n] >= 2)


def any_triple(t: Throw) -> Verdict:
    return _win_if(t.is_triple)


def triple(n: int, t: Throw) -> Verdict:
    return _win_if(t.counts[n] == 3)


def four_number(numbers: tuple[int, ...], t: Throw) -> Verdict:
    """Decision D10: three different dice, all within the four numbers."""
    return _win_if(len(set(t.dice)) == 3 and set(t.dice) <= set(numbers))


def three_single(numbers: tuple[int, ...], t: Throw) -> Verdict:
    return _win_if(sorted(t.dice) == sorted(numbers))


def double_single(numbers: tuple[int, ...], t: Throw) -> Verdict:
    d, _, s = numbers
    return _win_if(t.counts[d] == 2 and t.counts[s] == 1)


# 3.10: on a triple only these bet types can win, each with its sub-clause.
TRIPLE_WINNING_TYPES: dict[str, str] = {
    "triple": "3.10.1",
    "any_triple": "3.10.2",
    "double": "3.10.3",
    "single": "3.10.4",
    "total": "3.10.5",
}
TRIPLE_WINNING_TOTALS = frozenset({6, 9, 12, 15})  # 3.10.5


def apply_triple_rule(bet_type: str, t: Throw, verdict: Verdict) -> Verdict:
    """3.10 as a filter over each bet's own condition."""
    if t.is_triple and verdict[0] is WIN and bet_type not in TRIPLE_WINNING_TYPES:
        return LOSE, None
    return verdict


def parse_combinations(printed: str) -> tuple[tuple[int, ...], ...]:
    """"1 4, 1 2, 2 4" -> ((1, 4), (1, 2), (2, 4)), in printed order."""
    return tuple(tuple(int(x) for x in item.split()) for item in printed.split(","))
