"""Benchmark: how long an exact par sheet takes, per game, at 4, 8 and 10 decks.

Run: .venv/bin/python -m bench.par_sheet [--repeat N]
Prints medians (this machine is noisy) and writes bench/results/par_sheet.json.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.figures import save
from daemon.games import get_game
from daemon.games.par_sheet import coup_weights, par_sheet

CASES = [("tiger-buffalo", "P"), ("tiger-buffalo-insurance-plus", "C"),
         ("tiger-baccarat", "A"), ("tai-sai-open-cover", "E")]


def _time_cold(game_id: str, layout: str, decks: int | None) -> float:
    coup_weights.cache_clear()  # measure the whole enumeration, not a cached one
    t0 = time.perf_counter()
    par_sheet(get_game(game_id), layout, decks)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for game_id, layout in CASES:
        for decks in ((None,) if game_id.startswith("tai-sai") else (4, 8, 10)):
            samples = [_time_cold(game_id, layout, decks) for _ in range(args.repeat)]
            med = statistics.median(samples)
            rows.append({"game": game_id, "layout": layout, "decks": decks,
                         "median_s": round(med, 4), "min_s": round(min(samples), 4),
                         "max_s": round(max(samples), 4), "repeat": args.repeat})
            print(f"{game_id:<30} {layout} decks={decks!s:<4} median {med:7.3f} s "
                  f"(min {min(samples):.3f}, max {max(samples):.3f}, n={args.repeat})")
    save("par_sheet", rows)


if __name__ == "__main__":
    main()
