"""Tai Sai statistics over a run of published throws: big/small, odd/even, totals, hot
and cold numbers, and a dice watch. Pure: no I/O, no clock.

Big is a total of 11-17 and small 4-10, odd and even likewise, a triple being none of
them (RWS Tai Sai, Appendix A: "except Triple"). The dice watch is the display's own
test, not the table's: a chi-square test of the six faces against a fair die, raised
once there are enough throws for it to mean something (docs/display.md, "Dice watch").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Chi-square, 5 degrees of freedom: the value a fair die exceeds with probability 0.001.
CHI2_DF5_P001 = 20.515
# Each face is expected 3n/6 = n/2 times; a chi-square test wants at least 5 per face.
MIN_THROWS_FOR_WATCH = 30
LAST_THROWS = 20


def _is_triple(dice: Sequence[int]) -> bool:
    return dice[0] == dice[1] == dice[2]


def dice_stats(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Statistics over valid Tai Sai results, oldest first."""
    throws = [r for r in results if r.get("status") == "valid" and "dice" in r]
    faces = dict.fromkeys(range(1, 7), 0)
    totals = dict.fromkeys(range(3, 19), 0)
    counts = {"big": 0, "small": 0, "odd": 0, "even": 0, "triple": 0}
    for r in throws:
        dice = [int(d) for d in r["dice"]]
        for d in dice:
            faces[d] += 1
        total = sum(dice)
        totals[total] += 1
        if _is_triple(dice):
            counts["triple"] += 1
            continue
        counts["big" if total >= 11 else "small"] += 1
        counts["odd" if total % 2 else "even"] += 1
    n = len(throws)
    by_count = sorted(faces, key=lambda f: (-faces[f], f))
    # Hot and cold: the most and least frequent faces; none until a face differs.
    spread = n > 0 and faces[by_count[0]] != faces[by_count[-1]]
    hot = [f for f in by_count if faces[f] == faces[by_count[0]]] if spread else []
    cold = [f for f in by_count if faces[f] == faces[by_count[-1]]] if spread else []
    expected = 3 * n / 6
    chi2 = sum((faces[f] - expected) ** 2 / expected for f in faces) if n else 0.0
    watch = "too few throws" if n < MIN_THROWS_FOR_WATCH else (
        "ALERT" if chi2 > CHI2_DF5_P001 else "ok")
    # A throw voided afterwards by a correction (damaged dice, Tai Sai 5.6) stays in the
    # list of throws, struck out, and leaves the statistics.
    shown = [r for r in results if "dice" in r and (r.get("status") == "valid"
                                                   or r.get("corrected"))]
    return {
        "throws": n,
        "last": [{"seq": r["seq"], "dice": r["dice"], "total": sum(r["dice"]),
                  "triple": _is_triple(r["dice"]),
                  "voided": (r.get("void_reason") or {}).get("clause") if r.get("corrected")
                  else None} for r in shown[-LAST_THROWS:]][::-1],
        "counts": counts, "faces": faces, "totals": totals, "hot": hot, "cold": cold,
        # Two decimals as text: the page shows it, and floats stay out of the payloads.
        "watch": {"state": watch, "chi2": f"{chi2:.2f}", "limit": f"{CHI2_DF5_P001:.2f}",
                  "min_throws": MIN_THROWS_FOR_WATCH},
    }
