"""One shuffle's order as its shuffler reveals it: chunks assembled by position.

The line may deliver a chunk twice, and a reveal cut short (a reconnection, a restart:
chunks are not journalled) is asked for again while the first one's chunks may still
arrive. So chunks are idempotent: each card is placed at its position in the order
(``offset`` + its index in the chunk); the same card at the same position again changes
nothing, another card there is a contradiction. Summing chunk lengths instead counted a
repeated chunk twice and failed an honest shoe (issue #24). Pure: no I/O, no clause; the
shoe (shoe.py) judges what an assembled order or a contradiction means.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from firmware_protocols import shuffler as shuffler_proto


@dataclass(frozen=True)
class Assembled:
    """What the chunks received so far say. ``order`` is set once every position from 0 to
    ``total`` - 1 is known and nothing contradicts; ``contradictions`` name each place where
    the shuffler said two different things."""

    total: int | None
    nonce: bytes | None
    order: tuple[str, ...] | None
    contradictions: tuple[str, ...]
    missing: int


def assemble(shuffle_id: int, chunks: Iterable[shuffler_proto.OrderChunk]) -> Assembled:
    """The order the chunks of ``shuffle_id`` reveal, in any arrival order, repeats allowed."""
    total: int | None = None
    nonce: bytes | None = None
    cards: dict[int, str] = {}
    contradictions: list[str] = []
    for c in chunks:
        if c.shuffle_id != shuffle_id:
            continue
        if total is None:
            total, nonce = c.total, c.nonce
        if c.total != total:
            contradictions.append(f"one chunk says the order has {total} cards, another "
                                  f"{c.total}")
        if c.nonce != nonce:
            contradictions.append(f"the chunk at offset {c.offset} carries another nonce")
        for i, card in enumerate(c.cards):
            pos = c.offset + i
            if pos >= c.total:
                contradictions.append(f"the chunk at offset {c.offset} runs past its total "
                                      f"of {c.total} cards")
                break
            seen = cards.setdefault(pos, card)
            if seen != card:
                contradictions.append(f"position {pos + 1} revealed as {seen} and as {card}")
    missing = 0 if total is None else total - len(cards)
    complete = total is not None and missing == 0 and not contradictions
    order = tuple(cards[i] for i in range(total)) if complete and total is not None else None
    return Assembled(total, nonce, order, tuple(dict.fromkeys(contradictions)), missing)
