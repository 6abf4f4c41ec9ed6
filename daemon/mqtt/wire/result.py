"""A round's result on the wire: ``daemon/mqtt/schemas/result.schema.json``.

One shape for every game: identification, status, the game's outcome, and every offered
bet's result. A void round carries ``void_reason`` (code and clause) and returns every
bet. The journal adds ``round_id`` and ``seq`` when it records the result, and
``journal_id`` and ``msg_seq`` when it seals it (``daemon/mqtt/envelope.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daemon.games.baccarat import DealtCard
from daemon.games.outcome import BetResult
from daemon.mqtt.envelope import schema_id
from daemon.results import CoupOutcome, RoundFacts, ThrowOutcome, VoidOutcome, VoidReason
from daemon.timestamps import iso

TYPE = "result"
SCHEMA_ID = schema_id(TYPE)


def payload(facts: RoundFacts) -> dict[str, Any]:
    ctx = facts.ctx
    out: dict[str, Any] = {
        "type": TYPE, "schema": SCHEMA_ID, "table": ctx.table, "game": ctx.game.id,
        "layout": ctx.layout, "shoe_id": ctx.shoe_id, "shuffle_id": ctx.shuffle_id,
        "status": facts.status, "opened_at": iso(ctx.opened_at),
        "closed_at": iso(ctx.closed_at), "settled_at": iso(facts.settled_at),
        # The table's reading of text that reads two ways (D2): a consumer can tell which.
        "rules": ctx.game.readings(),
    }
    o = facts.outcome
    if isinstance(o, CoupOutcome):
        out.update({"cards": cards(o.cards), "player_total": o.player_total,
                    "banker_total": o.banker_total, "natural": o.natural,
                    "winner": o.winner})
    elif isinstance(o, ThrowOutcome):
        out.update({"dice": list(o.dice), "tumbles": o.tumbles, "flat": list(o.flat),
                    "total": o.total})
    else:
        out.update(void(o))
    out["bets"] = bets(facts.bets)
    return out


def void(o: VoidOutcome) -> dict[str, Any]:
    out: dict[str, Any] = {"void_reason": void_reason(o.reason)}
    if o.cards is not None:
        out["cards"] = cards(o.cards)
    if o.dice is not None:
        out["dice"] = list(o.dice)
    return out


def void_reason(r: VoidReason) -> dict[str, str]:
    """The schema's ``void_reason``, shared with a correction's."""
    i = r.irregularity
    return {"code": i.code, "clause": i.clause, "text": i.summary, "detail": r.detail}


def cards(dealt: Sequence[DealtCard]) -> list[dict[str, str | int]]:
    return [d.as_dict() for d in dealt]


def bets(results: Sequence[BetResult]) -> list[dict[str, Any]]:
    """The schema's ``bets``, shared with a correction's."""
    return [r.as_dict() for r in results]
