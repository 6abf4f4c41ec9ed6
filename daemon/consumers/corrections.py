"""A table's results with its corrections applied (docs/mqtt.md, "Corrections"): the one
rule, shared by the display's page and ``tabled watch``. Pure: no I/O.

A correction (``type: correction``, on ``results`` beside the results, numbered from the
same ``seq``) voids a round already settled; the round then reads as void with the
correction's reason, and the correction's own number is no gap in the results."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def apply_corrections(ordered: Iterable[dict[str, Any]]
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Results (one journal's, in seq order) with each correction applied -- the
    corrected round void, with the correction's reason and ``corrected`` (its seq, by) --
    and the corrections themselves. A correction whose result is not here yet waits."""
    everything = list(ordered)
    fixes = [r for r in everything if r.get("type") == "correction"]
    by_round = {str(c.get("corrects")): c for c in fixes}
    out = []
    for r in everything:
        if r.get("type") == "correction":
            continue
        fix = by_round.get(str(r.get("round_id")))
        out.append(r if fix is None else
                   {**r, "status": "void", "void_reason": fix.get("void_reason"),
                    "corrected": {"seq": fix["seq"], "by": fix.get("by")}})
    return out, fixes
