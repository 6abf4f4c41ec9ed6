"""The shoe's reader: what it reports for a card, through a fault. Its faults are its own:
the true card is always the physical table's; the reader only says something about it.

A report is a list of (true draw number, message) sent now, and a list sent late (a lost
read re-sent after a link reset, a true card re-sent after a wrong read). Draw numbers
out of range go through the driver's range check to ``device_fault``.
"""

from __future__ import annotations

import random

from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.model.physical import DECK_SET

Sent = tuple[int, sp.CardDrawn]

# One card, one fault.
WRONG_READ = "wrong_read"  # another card at 99%; the true card re-sent, at once or late
REPEAT_SAME = "repeat_same"  # the read sent twice (a link reset hands it back)
REPEAT_OTHER = "repeat_other"  # the true read, then the same draw as another card
SKIPPED_NUMBER = "skipped_number"  # the read is lost: the next draw number skips it
LATE = "late"  # the read is lost, then re-sent late
NUMBER_ZERO = "number_zero"  # draw number 0 (out of range: device_fault)
NUMBER_OUT_OF_RANGE = "number_out_of_range"  # draw number past MAX_DRAW_NO (device_fault)
UNREADABLE = "unreadable"  # "??"
LOW_CONFIDENCE = "low_confidence"  # the true card, below the confidence floor
# Two cards that left the shoe together (the dealer's double draw).
DOUBLE_DRAW = "double_draw"  # flagged, read in their true order
SWAPPED_DOUBLE = "swapped_double"  # flagged, read in the wrong order

ONE_CARD = (WRONG_READ, REPEAT_SAME, REPEAT_OTHER, SKIPPED_NUMBER, LATE, NUMBER_ZERO,
            NUMBER_OUT_OF_RANGE, UNREADABLE, LOW_CONFIDENCE)
TWO_CARDS = (DOUBLE_DRAW, SWAPPED_DOUBLE)


def drawn(n: int, card: str, confidence: int = 99, double: bool = False) -> sp.CardDrawn:
    return sp.CardDrawn(n, card, confidence, DECK_SET, double, False)


def other_than(card: str, rng: random.Random) -> str:
    return rng.choice([c for c in fp.INVENTORY_ORDER if c != card])


def report(n: int, card: str, fault: str | None,
           rng: random.Random) -> tuple[list[Sent], list[Sent]]:
    """What the reader sends for true draw ``n`` (``card``), now and late."""
    true = drawn(n, card)
    if fault is None or fault in (DOUBLE_DRAW, SWAPPED_DOUBLE):
        return [(n, true)], []
    if fault == WRONG_READ:
        wrong = (n, drawn(n, other_than(card, rng)))
        return ([wrong, (n, true)], []) if rng.random() < 0.5 else ([wrong], [(n, true)])
    if fault == REPEAT_SAME:
        return [(n, true), (n, true)], []
    if fault == REPEAT_OTHER:
        return [(n, true), (n, drawn(n, other_than(card, rng)))], []
    if fault == SKIPPED_NUMBER:
        return [], []
    if fault == LATE:
        return [], [(n, true)]
    if fault == NUMBER_ZERO:
        return [(n, drawn(0, card))], []
    if fault == NUMBER_OUT_OF_RANGE:
        return [(n, drawn(sp.MAX_DRAW_NO + 1 + rng.randrange(100), card))], []
    if fault == UNREADABLE:
        return [(n, drawn(n, "??", 0))], []
    if fault == LOW_CONFIDENCE:
        return [(n, drawn(n, card, rng.randrange(0, 60)))], []
    raise ValueError(f"no reader fault {fault!r}")


def report_double(n: int, first: str, second: str, swapped: bool) -> list[Sent]:
    """Two cards that left together, both flagged; read in their order or swapped."""
    a, b = (second, first) if swapped else (first, second)
    return [(n, drawn(n, a, double=True)), (n + 1, drawn(n + 1, b, double=True))]
