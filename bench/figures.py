"""How the benchmarks compute and keep their figures, written once: the percentile rule
(nearest rank) and where a run's figures go (bench/results/<name>.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

RESULTS = Path(__file__).parent / "results"
N = TypeVar("N", int, float)


def percentile(samples: Sequence[N], p: float) -> N:
    """The ``p``-th percentile (0-100) by nearest rank: a sample that was measured."""
    s = sorted(samples)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def save(name: str, figures: Any) -> Path:
    """Write ``figures`` to bench/results/``name``.json and say so."""
    out = RESULTS / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return out
