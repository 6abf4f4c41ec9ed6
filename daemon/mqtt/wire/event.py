"""What happens at the table, on the wire: ``daemon/mqtt/schemas/event.schema.json``.

An event is a journal record the table published, under the envelope written here
(``payload``). What is published for a record is the table's decision, carried by the
record (``effects.Record.event``), and mapped here (``published``): the record as
recorded (its kind, its body's fields), or a card's one event (contract v2), or nothing.

The round core records three things per card -- the draw as the shoe reported it
(``card_drawn``), the card placed in a hand (``card``) and the card the rules require
next (``next_card``) -- and the journal keeps all three, as recovery reads them. Only
one is published: a ``card`` event (``card``) with the draw's fields, the hand and
position, and ``next`` (the card required next, or null when the deal is complete or
waits for something else: insurance, the Pit). A draw that is not placed in a hand (out
of a deal, repeated, unreadable) is still published as ``card_drawn``; a ``next_card``
that follows no card (the first card of a deal, after insurance closes, after a restart)
as itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.mqtt.envelope import stamp
from daemon.round.effects import CardEvent, Record
from daemon.timestamps import iso

TYPE = "event"
Published = tuple[str, dict[str, Any]] | None  # (event kind, body), or journal only


def published(r: Record) -> Published:
    """The event published for ``r``, as the table decided: None for a record that is
    journalled only (its facts go out in a card's event)."""
    if r.event is None:
        return None
    if isinstance(r.event, CardEvent):
        return "card", card(r.event)
    return r.kind, r.body


def card(e: CardEvent) -> dict[str, Any]:
    """A card placed in a hand, with the draw it came from and the card required next."""
    dealt, drawn = e.dealt, e.drawn
    out: dict[str, Any] = {"card": dealt.card, "hand": dealt.hand,
                           "position": dealt.position, "draw_no": dealt.draw_no,
                           "next": None if e.next is None else e.next.needed}
    if drawn is not None:  # a carried card's draw was published as it came
        out.update({"confidence": drawn.confidence, "deck_set": drawn.deck_set,
                    "double_draw": drawn.double_draw, "face_up": drawn.face_up})
    if dealt.double_draw:
        out["double_draw"] = True
    if dealt.carried:
        out["carried"] = True
    return out


def payload(kind: str, body: Mapping[str, Any], round_id: str | None, at: float,
            table: str) -> dict[str, Any]:
    """Event ``kind`` of ``round_id`` (None: of no round) with its ``body``, at ``at``."""
    return stamp({"type": TYPE, "event": kind, "round_id": round_id, "at": iso(at), **body},
                 table)
