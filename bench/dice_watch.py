"""Benchmark: how many throws the dice watch needs to find a loaded die, and its false alarms.

Run: .venv/bin/python -m bench.dice_watch [--runs N] [--window W] [--rate R] [--fair T]

A die loaded to 1/5 on one face (the other five faces 4/25 each) is thrown with two fair
dice until the watch trips, ``--runs`` times, in two ways: the loaded die always reported
in the same position (dice the tumbler tells apart), and in a random position each throw
(identical dice read left to right). Prints the median and 10th/90th percentile of the
throws to the first alert, which check tripped first, and the share of runs that tripped
within ``--limit`` throws. Then ``--fair`` throws of fair dice count the false alarms, at
the configured rate and at a loose rate of 1e-3 where the bound (alerts <= throws x rate)
can be seen at work. Writes bench/results/dice_watch.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from typing import Any

from bench.figures import percentile, save
from daemon.games.dice_watch import (
    DEFAULT_FALSE_ALARM_RATE,
    DEFAULT_WINDOW,
    DiceWatch,
    DiceWatchSettings,
)

LOADED_FACE = 6
LOADED_P = 0.2


def _loaded(rng: random.Random) -> int:
    if rng.random() < LOADED_P:
        return LOADED_FACE
    return rng.choice([f for f in range(1, 7) if f != LOADED_FACE])


def _throws_to_detect(settings: DiceWatchSettings, rng: random.Random, *, shuffled: bool,
                      limit: int) -> tuple[int | None, str | None]:
    watch = DiceWatch(settings)
    for n in range(1, limit + 1):
        dice = [_loaded(rng), rng.randint(1, 6), rng.randint(1, 6)]
        if shuffled:
            rng.shuffle(dice)
        trips = watch.observe(dice)
        if trips:
            return n, trips[0].check
    return None, None


def _detection(settings: DiceWatchSettings, runs: int, limit: int, seed: int,
               shuffled: bool) -> dict[str, Any]:
    rng = random.Random(seed)
    found: list[int] = []
    first: Counter[str] = Counter()
    for _ in range(runs):
        n, check = _throws_to_detect(settings, rng, shuffled=shuffled, limit=limit)
        if n is not None and check is not None:
            found.append(n)
            first[check] += 1
    row: dict[str, Any] = {"positions": "random" if shuffled else "fixed", "runs": runs,
                           "limit": limit, "detected": len(found),
                           "first_check": dict(first.most_common())}
    if found:
        row |= {"median": statistics.median(found), "p10": percentile(found, 10),
                "p90": percentile(found, 90)}
    return row


def _false_alarms(settings: DiceWatchSettings, throws: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    watch = DiceWatch(settings)
    alerts = 0
    t0 = time.perf_counter()
    for _ in range(throws):
        alerts += len(watch.observe((rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))))
    elapsed = time.perf_counter() - t0
    return {"rate": settings.false_alarm_rate, "window": settings.window, "throws": throws,
            "alerts": alerts, "bound": throws * settings.false_alarm_rate,
            "us_per_throw": round(elapsed / throws * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--rate", type=float, default=DEFAULT_FALSE_ALARM_RATE)
    parser.add_argument("--limit", type=int, default=50_000)
    parser.add_argument("--fair", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = DiceWatchSettings(window=args.window, false_alarm_rate=args.rate)
    print(f"dice watch: window {settings.window} throws, false-alarm rate "
          f"{settings.false_alarm_rate:g} per evaluation; one die loaded to 1/5 on a face")
    rows = []
    for shuffled in (False, True):
        row = _detection(settings, args.runs, args.limit, args.seed, shuffled)
        rows.append(row)
        where = ("random position (identical dice)" if shuffled
                 else "fixed position (dice told apart)")
        if row["detected"]:
            print(f"  {where:<34} median {row['median']:>7.0f} throws (p10 {row['p10']}, "
                  f"p90 {row['p90']}); detected {row['detected']}/{row['runs']} within "
                  f"{row['limit']}; first check {row['first_check']}")
        else:
            print(f"  {where:<34} not detected in {row['runs']} runs of {row['limit']}")
    fair = [_false_alarms(settings, args.fair, args.seed + 1),
            _false_alarms(DiceWatchSettings(settings.window, 1e-3), args.fair, args.seed + 1)]
    for f in fair:
        print(f"  fair dice, rate {f['rate']:g}: {f['alerts']} alert(s) in {f['throws']} "
              f"throws (bound {f['bound']:g}); {f['us_per_throw']} us per throw")
    save("dice_watch", {"window": settings.window,
                        "false_alarm_rate": settings.false_alarm_rate,
                        "loaded": {"face": LOADED_FACE, "p": LOADED_P},
                        "detection": rows, "fair": fair})


if __name__ == "__main__":
    main()
