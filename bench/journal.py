"""Benchmark: journal commit latency (WAL, synchronous=FULL) on this machine's disk.

Run: .venv/bin/python -m bench.journal [--n N]
Times append (event + one outbox entry) and record_result, each one fsync'd
transaction. Prints p50/p99; writes bench/results/journal.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.figures import percentile, save
from daemon.store.journal import Journal, Publish


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as d:
        j = Journal(Path(d) / "bench.db")
        for name in ("append event + outbox", "record_result"):
            samples = []
            for n in range(args.n):
                t0 = time.perf_counter()
                if name == "record_result":
                    j.record_result(f"r{n}", {"n": n, "replayed": False}, "t/results",
                                    record={})
                else:
                    j.append("card", {"n": n}, round_id=f"r{n}",
                             publish=(Publish("t/events", {"n": n}),))
                samples.append((time.perf_counter() - t0) * 1000)
            row = {"case": name, "n": args.n, "p50_ms": round(statistics.median(samples), 3),
                   "p99_ms": round(percentile(samples, 99), 3)}
            rows.append(row)
            print(f"{name:<24} p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  "
                  f"(n={args.n})")
        j.close()
    save("journal", rows)


if __name__ == "__main__":
    main()
