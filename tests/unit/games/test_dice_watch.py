"""The dice watch (beyond the documents): chi-squared arithmetic, windows, trips, settings."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon.games.dice_watch import (
    CHECKS,
    MIN_THROWS,
    TOTAL_P,
    DiceWatch,
    DiceWatchError,
    DiceWatchSettings,
    chi2_critical,
    chi2_sf,
)


def _lower_gamma_series(a: float, x: float) -> float:
    """Regularized lower incomplete gamma P(a, x) by its power series (independent check)."""
    term = total = 1 / a
    n = 1
    while term > 1e-17 * total:
        term *= x / (a + n)
        total += term
        n += 1
    return total * math.exp(a * math.log(x) - x - math.lgamma(a))


# Published critical values (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.4).
@pytest.mark.parametrize(("df", "alpha", "critical"), [
    (1, 0.05, 3.841), (2, 0.05, 5.991), (5, 0.05, 11.070), (5, 0.001, 20.515),
    (11, 0.05, 19.675), (11, 0.001, 31.264)])
def test_chi2_critical_values_as_tabulated(df: int, alpha: float, critical: float) -> None:
    assert chi2_critical(alpha, df) == pytest.approx(critical, abs=5e-4)


@given(st.integers(1, 40), st.floats(0.01, 150))
def test_chi2_sf_agrees_with_the_incomplete_gamma_series(df: int, x: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(1 - _lower_gamma_series(df / 2, x / 2),
                                           rel=1e-6, abs=1e-12)


def test_total_cells_are_a_distribution_and_each_expects_5_from_min_throws() -> None:
    assert sum(TOTAL_P) == pytest.approx(1)
    assert min(TOTAL_P) * MIN_THROWS >= 5


def _fair(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))


def test_fair_dice_raise_no_alarm_in_30000_throws() -> None:
    watch, rng = DiceWatch(), random.Random(20261126)
    trips = [t for _ in range(30_000) for t in watch.observe(_fair(rng))]
    assert trips == []


def test_a_heavily_loaded_die_trips_its_position_once_and_rearms() -> None:
    watch, rng = DiceWatch(DiceWatchSettings(window=600)), random.Random(7)
    trips = []
    for _ in range(600):
        first = 6 if rng.random() < 0.5 else rng.randint(1, 5)
        trips += watch.observe((first, rng.randint(1, 6), rng.randint(1, 6)))
    checks = [t.check for t in trips]
    assert "die_1_faces" in checks and "faces" in checks
    assert len(checks) == len(set(checks))  # each alerts once while it stays tripped
    assert all(t.p_value < watch.settings.alpha_per_check for t in trips)
    assert "die_1_faces" in watch.tripped
    for _ in range(1200):  # fair again: the window forgets, the check passes and re-arms
        watch.observe(_fair(rng))
    assert "die_1_faces" not in watch.tripped


@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
                min_size=1, max_size=400), st.integers(MIN_THROWS, 300))
def test_the_window_counts_exactly_the_last_throws(throws: list[tuple[int, int, int]],
                                                   window: int) -> None:
    watch = DiceWatch(DiceWatchSettings(window=window))
    for t in throws:
        watch.observe(t)
    fresh = DiceWatch(DiceWatchSettings(window=window))
    for t in throws[-window:]:
        fresh.add(t)
    assert watch.faces == fresh.faces and watch.totals == fresh.totals
    assert list(watch.throws) == throws[-window:]


@pytest.mark.parametrize("bad", [(0, 1, 2), (1, 2, 7), (1, 2), (1, 2, 3, 4)])
def test_a_throw_that_is_not_three_dice_is_refused(bad: tuple[int, ...]) -> None:
    with pytest.raises(DiceWatchError, match="three dice 1-6"):
        DiceWatch().add(bad)


@pytest.mark.parametrize(("window", "rate", "message"), [
    (50, 1e-6, "window"), (True, 1e-6, "window"), (600, 0.5, "false_alarm_rate"),
    (600, 0.0, "false_alarm_rate"), (600, "1e-6", "false_alarm_rate")])
def test_settings_out_of_range_are_refused(window: object, rate: object, message: str) -> None:
    with pytest.raises(DiceWatchError, match=message):
        DiceWatchSettings(window=window, false_alarm_rate=rate)  # type: ignore[arg-type]


def test_bonferroni_split_over_every_check() -> None:
    s = DiceWatchSettings(false_alarm_rate=8e-6)
    assert len(CHECKS) == 8 and s.alpha_per_check == pytest.approx(1e-6)
