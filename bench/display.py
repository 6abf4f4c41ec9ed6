"""Benchmark: what the display spends per message and per push, in one process.

Run: .venv/bin/python -m bench.display [--hands 80] [--repeat 200]

- verify + apply: ``Display.receive`` of one signed result (JSON parse, Ed25519
  verification, de-duplication, state), per message;
- derive: ``roads.derive`` of a whole shoe (all five roads and the next-hand marks);
- view: one table's whole view as pushed to the browsers (roads, counters, last
  results), and its JSON size.

Medians of ``--repeat`` runs; the machine is shared, so only medians are printed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.display.roads import derive
from daemon.display.view import Display
from daemon.security.signing import Keyring, Signer

AT = "2026-11-26T10:00:00.000Z"


def shoe(hands: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for seq in range(1, hands + 1):
        winner = rng.choices(["banker", "player", "tie"], [0.458, 0.446, 0.096])[0]
        cards = [{"card": rng.choice("A23456789TJQK") + rng.choice("SHDC"), "hand": h,
                  "position": p} for p in (1, 2) for h in ("player", "banker")]
        out.append({"type": "result", "schema": "tabled/result/1", "round_id": f"r{seq}",
                    "seq": seq, "table": "t1", "game": "tiger-buffalo", "layout": "P",
                    "shoe_id": "s1", "shuffle_id": 1, "status": "valid", "cards": cards,
                    "player_total": 5, "banker_total": 6 if winner == "banker" else 4,
                    "natural": False, "winner": winner,
                    "bets": [{"bet": winner, "result": "win", "pays": "1:1", "line": "x",
                              "clause": "4.1.1"}],
                    "opened_at": AT, "closed_at": AT, "settled_at": AT, "replayed": False})
    return out


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hands", type=int, default=80)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(1)
    key = Ed25519PrivateKey.generate()
    signer, ring = Signer(key), Keyring.of([key.public_key()])
    results = shoe(args.hands, rng)
    wire = [signer.seal(r).encode() for r in results]

    receive: list[float] = []
    views: list[float] = []
    size = 0
    for _ in range(max(1, args.repeat // 20)):
        d = Display(ring)
        for raw in wire:
            t0 = time.perf_counter()
            d.receive("tables/t1/results", raw, AT)
            receive.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        body = json.dumps(d.tables["t1"].view())
        views.append(time.perf_counter() - t0)
        size = len(body)
    roads = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        derive(results)
        roads.append(time.perf_counter() - t0)
    print(f"display, a shoe of {args.hands} results:")
    print(f"  verify + apply one result: median {median_us(receive):.0f} us")
    print(f"  derive the five roads of the shoe: median {median_us(roads):.0f} us")
    print(f"  one table's view as pushed (JSON): median {median_us(views):.0f} us, "
          f"{size / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
