"""What happens at the table, on the wire: ``daemon/mqtt/schemas/event.schema.json``.

An event is a journal record the table published, its body's fields the record's, under
the envelope written here (``payload``). Which records are published, and as what, is
``plan``'s: one published event per card (contract v2).

The round core records three things per card -- the draw as the shoe reported it
(``card_drawn``), the card placed in a hand (``card``) and the card the rules require
next (``next_card``) -- and the journal keeps all three, as recovery reads them. Only
one is published: a ``card`` event with the draw's fields, the hand and position, and
``next`` (the card required next, or null when the deal is complete or waits for
something else: insurance, the Pit). A draw that is not placed in a hand (out of a deal,
repeated, unreadable) is still published as ``card_drawn``; a ``next_card`` that follows
no card (the first card of a deal, after insurance closes, after a restart) as itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from daemon.mqtt.envelope import stamp
from daemon.round.effects import DeviceCommand, Effect, Record
from daemon.timestamps import iso

TYPE = "event"
Published = tuple[str, dict[str, Any]] | None  # (event kind, body), or journal only


def plan(effects: Sequence[Effect]) -> dict[int, Published]:
    """For each Record of ``effects`` (by index): the event to publish for it, or None
    when it is folded into a card event."""
    out: dict[int, Published] = {}
    records = [(i, e) for i, e in enumerate(effects) if isinstance(e, Record)]
    for n, (i, e) in enumerate(records):
        if i in out:
            continue
        if e.kind == "card_drawn" and _placed_later(records[n + 1:], e):
            out[i] = None  # published with its card
            continue
        if e.kind != "card":
            out[i] = (e.kind, e.body)
            continue
        drawn = next((r for _, r in reversed(records[:n]) if r.kind == "card_drawn"
                      and r.body.get("draw_no") == e.body.get("draw_no")
                      and r.round_id == e.round_id and not e.body.get("carried")), None)
        body: dict[str, Any] = {**(drawn.body if drawn else {}), **e.body, "next": None}
        follower = _next_record(effects, i)
        if follower is not None and follower[1].kind == "next_card" and \
                follower[1].round_id == e.round_id:
            body["next"] = follower[1].body["needed"]
            out[follower[0]] = None
        out[i] = ("card", body)
    return out


def _placed_later(later: Sequence[tuple[int, Record]], drawn: Record) -> bool:
    return any(r.kind == "card" and r.body.get("draw_no") == drawn.body.get("draw_no")
               and r.round_id == drawn.round_id and not r.body.get("carried")
               for _, r in later)


def _next_record(effects: Sequence[Effect], i: int) -> tuple[int, Record] | None:
    """The record right after effects[i], past device commands only."""
    for j in range(i + 1, len(effects)):
        e = effects[j]
        if isinstance(e, Record):
            return j, e
        if not isinstance(e, DeviceCommand):
            return None
    return None


def payload(kind: str, body: Mapping[str, Any], round_id: str | None, at: float,
            table: str) -> dict[str, Any]:
    """Event ``kind`` of ``round_id`` (None: of no round) with its ``body``, at ``at``."""
    return stamp({"type": TYPE, "event": kind, "round_id": round_id, "at": iso(at), **body},
                 table)
