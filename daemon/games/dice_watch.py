"""The dice watch: rolling chi-squared tests that a tumbler's dice are still fair.

Beyond the rule documents: Tai Sai 3.7 and 3.8 check each throw, but a worn tumbler or
a loaded die passes every throw and shows only in the counts. Over the last ``window``
valid throws, after each throw once ``MIN_THROWS`` are in, eight checks are made:

- ``faces``: the faces of all three dice together against 1/6 each (5 degrees of freedom).
- ``totals``: the totals against three fair dice, the tails pooled as 3-5 and 16-18 so
  that every cell expects at least 5 throws from ``MIN_THROWS`` on (12 cells, df 11).
- ``die_1_faces`` .. ``die_3_faces``: each reported die position against 1/6 (df 5).
- ``die_1_vs_others`` .. ``die_3_vs_others``: a position's faces against the other two
  positions' (a 2 x 6 test of homogeneity, df 5): one die unlike its two companions.

The per-position checks can only single out a die if the tumbler reports the dice in
the same physical order every throw (coloured or marked dice). With identical dice
read left to right, a loaded die wanders between positions; ``faces`` and ``totals``
still see it, with about three times the throws (docs/performance.md).

False alarms: each check trips at ``false_alarm_rate / 8`` (Bonferroni), so an
evaluation of fair dice trips any check with probability at most ``false_alarm_rate``
(to the chi-squared approximation), and the expected number of false alerts over T
throws is at most T x ``false_alarm_rate``. A check that trips alerts once, and again
only after its counts look fair again (p above ``REARM_P``): the window moves one throw
at a time, so a statistic near the line would otherwise alert on and off.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import cache
from itertools import product

from daemon.errors import InputError

FACES = range(1, 7)
DICE = 3
# Totals 3-5 and 16-18 pooled: 10/216 of fair throws each, so 108 throws expect 5.
TOTAL_CELLS: tuple[tuple[int, ...], ...] = ((3, 4, 5), *((t,) for t in range(6, 16)),
                                            (16, 17, 18))
MIN_THROWS = 120  # every cell of every check expects at least 5 from here on
CHECKS = ("faces", "totals", *(f"die_{i}_faces" for i in range(1, DICE + 1)),
          *(f"die_{i}_vs_others" for i in range(1, DICE + 1)))
DEFAULT_WINDOW = 20_000
DEFAULT_FALSE_ALARM_RATE = 1e-6
REARM_P = 0.05


def _total_probabilities() -> tuple[float, ...]:
    counts = [0] * 19
    for dice in product(FACES, repeat=DICE):
        counts[sum(dice)] += 1
    return tuple(sum(counts[t] for t in cell) / 6 ** DICE for cell in TOTAL_CELLS)


TOTAL_P = _total_probabilities()
_CELL_OF_TOTAL = {t: i for i, cell in enumerate(TOTAL_CELLS) for t in cell}


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for a chi-squared variable with integer ``df``, in closed form."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if x <= 0:
        return 1.0
    h = x / 2
    if df % 2 == 0:  # exp(-h) * sum_{i<df/2} h^i / i!
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= h / i
            total += term
        return min(1.0, math.exp(-h) * total)
    total = math.erfc(math.sqrt(h))
    for j in range(1, (df - 1) // 2 + 1):  # + exp(-h) h^(j-1/2) / Gamma(j+1/2)
        total += math.exp((j - 0.5) * math.log(h) - h - math.lgamma(j + 0.5))
    return min(1.0, total)


@cache
def chi2_critical(alpha: float, df: int) -> float:
    """The x with chi2_sf(x, df) == alpha, by bisection (sf is decreasing)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    lo, hi = 0.0, 1.0
    while chi2_sf(hi, df) > alpha:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def _gof(observed: list[int], probabilities: tuple[float, ...] | list[float]) -> float:
    n = sum(observed)
    return sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probabilities, strict=True))


def _homogeneity(one: list[int], rest: list[int]) -> float:
    """2 x k chi-squared of homogeneity: do two rows of counts share one distribution?"""
    n1, n2 = sum(one), sum(rest)
    n = n1 + n2
    stat = 0.0
    for a, b in zip(one, rest, strict=True):
        col = a + b
        if col == 0:
            continue
        ea, eb = n1 * col / n, n2 * col / n
        stat += (a - ea) ** 2 / ea + (b - eb) ** 2 / eb
    return stat


class DiceWatchError(InputError, ValueError):
    pass


@dataclass(frozen=True)
class DiceWatchSettings:
    window: int = DEFAULT_WINDOW
    false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int) or \
                not MIN_THROWS <= self.window <= 1_000_000:
            raise DiceWatchError(f"window: {self.window!r} must be a whole number of throws "
                                 f"in {MIN_THROWS}-1000000")
        rate = self.false_alarm_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or \
                not 1e-12 <= rate <= 0.01:
            raise DiceWatchError(f"false_alarm_rate: {rate!r} must be a probability per "
                                 "evaluation in 1e-12-0.01")

    @property
    def alpha_per_check(self) -> float:
        return self.false_alarm_rate / len(CHECKS)


@dataclass(frozen=True)
class Trip:
    """A check that has just tripped: what the surveillance alert says."""

    check: str
    statistic: float
    df: int
    critical: float
    p_value: float
    throws: int

    @property
    def detail(self) -> str:
        return (f"dice watch: {self.check} chi-squared {self.statistic:.1f} on {self.df} "
                f"degrees of freedom over the last {self.throws} throws exceeds "
                f"{self.critical:.1f} (p = {self.p_value:.2g}); have the dice and the "
                "tumbler inspected")


class DiceWatch:
    """Counts over a moving window of valid throws; ``add`` returns the checks that trip."""

    def __init__(self, settings: DiceWatchSettings | None = None) -> None:
        self.settings = settings or DiceWatchSettings()
        self.throws: deque[tuple[int, ...]] = deque()
        self.faces = [[0] * 6 for _ in range(DICE)]  # [position][face - 1]
        self.totals = [0] * len(TOTAL_CELLS)
        self.tripped: set[str] = set()

    def _count(self, dice: tuple[int, ...], step: int) -> None:
        for i, d in enumerate(dice):
            self.faces[i][d - 1] += step
        self.totals[_CELL_OF_TOTAL[sum(dice)]] += step

    def add(self, dice: tuple[int, ...] | list[int]) -> None:
        """Count a valid throw into the window (also when a restart replays the journal)."""
        throw = tuple(dice)
        if len(throw) != DICE or not all(isinstance(d, int) and 1 <= d <= 6 for d in throw):
            raise DiceWatchError(f"a throw is three dice 1-6, got {list(throw)}")
        self.throws.append(throw)
        self._count(throw, 1)
        if len(self.throws) > self.settings.window:
            self._count(self.throws.popleft(), -1)

    def check(self) -> list[Trip]:
        """Evaluate every check on the window as it is now; the ones that have just tripped."""
        if len(self.throws) < MIN_THROWS:
            return []
        out = []
        for check, (stat, df) in self.statistics().items():
            critical = chi2_critical(self.settings.alpha_per_check, df)
            if stat < chi2_critical(REARM_P, df):
                self.tripped.discard(check)
            elif stat >= critical and check not in self.tripped:
                self.tripped.add(check)
                out.append(Trip(check, stat, df, critical, chi2_sf(stat, df),
                                len(self.throws)))
        return out

    def observe(self, dice: tuple[int, ...] | list[int]) -> list[Trip]:
        """A live throw: count it, then evaluate."""
        self.add(dice)
        return self.check()

    def statistics(self) -> dict[str, tuple[float, int]]:
        """Each check's chi-squared statistic and degrees of freedom, now."""
        pooled = [sum(self.faces[i][f] for i in range(DICE)) for f in range(6)]
        uniform = [1 / 6] * 6
        out = {"faces": (_gof(pooled, uniform), 5),
               "totals": (_gof(self.totals, TOTAL_P), len(TOTAL_CELLS) - 1)}
        for i in range(DICE):
            out[f"die_{i + 1}_faces"] = (_gof(self.faces[i], uniform), 5)
        for i in range(DICE):
            rest = [p - o for p, o in zip(pooled, self.faces[i], strict=True)]
            out[f"die_{i + 1}_vs_others"] = (_homogeneity(self.faces[i], rest), 5)
        return out
