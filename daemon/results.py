"""The published round result, built from the rules engine's settlement.

One shape for every game (schema ``daemon/mqtt/schemas/result.schema.json``):
identification, status, the game-specific outcome, and every offered bet's result.
A void round carries ``void_reason`` (code and clause) and returns every bet. The
journal adds ``round_id`` and ``seq`` when it records the result, and ``journal_id`` and
``msg_seq`` when it seals it (``daemon/mqtt/envelope.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from daemon.games.baccarat import Deal, coup_of
from daemon.games.model import GameRules, Irregularity
from daemon.games.outcome import BetResult, Result
from daemon.games.settle import settle_coup, settle_throw
from daemon.games.tai_sai import Throw
from daemon.mqtt.envelope import schema_id
from daemon.timestamps import iso

SCHEMA_ID = schema_id("result")
CORRECTION_SCHEMA_ID = schema_id("correction")

# The clause that returns every bet of a void round, per game.
VOID_RETURNS = {"tiger-buffalo": "5.16", "tiger-buffalo-insurance-plus": "5.16",
                "tiger-baccarat": "5.1.1", "tai-sai-open-cover": "5.12"}


@dataclass(frozen=True)
class RoundContext:
    table: str
    game: GameRules[Any]
    layout: str
    shoe_id: str | None
    shuffle_id: int | None
    opened_at: float
    closed_at: float | None


def _base(ctx: RoundContext, status: str, settled_at: float) -> dict[str, Any]:
    return {
        "type": "result", "schema": SCHEMA_ID, "table": ctx.table, "game": ctx.game.id,
        "layout": ctx.layout, "shoe_id": ctx.shoe_id, "shuffle_id": ctx.shuffle_id,
        "status": status, "opened_at": iso(ctx.opened_at), "closed_at": iso(ctx.closed_at),
        "settled_at": iso(settled_at),
        # The table's reading of text that reads two ways (D2): a consumer can tell which.
        "rules": ctx.game.readings(),
    }


def _bets(results: Sequence[BetResult]) -> list[dict[str, Any]]:
    return [r.as_dict() for r in results]


def baccarat_result(ctx: RoundContext, deal: Deal, settled_at: float, *,
                    squeeze_waiver: bool = False, insurance_offered: bool = True,
                    late_windows: frozenset[str] = frozenset()) -> dict[str, Any]:
    coup = coup_of([d.card for d in deal.cards])
    out = _base(ctx, "valid", settled_at)
    out.update({
        "cards": [d.as_dict() for d in deal.cards],
        "player_total": coup.player_total, "banker_total": coup.banker_total,
        "natural": coup.natural, "winner": coup.winner,
        "bets": _bets(settle_coup(ctx.game, ctx.layout, coup, squeeze_waiver=squeeze_waiver,
                                  insurance_offered=insurance_offered,
                                  late_windows=late_windows)),
    })
    return out


def tai_sai_result(ctx: RoundContext, throw: Throw, tumbles: int, flat: Sequence[bool],
                   settled_at: float) -> dict[str, Any]:
    out = _base(ctx, "valid", settled_at)
    out.update({
        "dice": list(throw.dice), "tumbles": tumbles, "flat": list(flat), "total": throw.total,
        "bets": _bets(settle_throw(ctx.game, ctx.layout, throw)),
    })
    return out


def void_result(ctx: RoundContext, reason: Irregularity, settled_at: float, *,
                detail: str = "", deal: Deal | None = None,
                dice: Sequence[int] | None = None) -> dict[str, Any]:
    """Tiger Buffalo 5.16 / Tai Sai 5.12: a void round returns every bet."""
    out = _base(ctx, "void", settled_at)
    out["void_reason"] = {"code": reason.code, "clause": reason.clause,
                          "text": reason.summary, "detail": detail}
    if deal is not None:
        out["cards"] = [d.as_dict() for d in deal.cards]
    if dice is not None:
        out["dice"] = list(dice)
    clause = VOID_RETURNS[ctx.game.id]
    out["bets"] = [BetResult(name, Result.PUSH, None, "returned: the round is void", clause)
                   .as_dict() for name in ctx.game.offered_names(ctx.layout)]
    return out


def correction_round_id(round_id: str) -> str:
    """The key a correction is journalled under: one correction per round, its own seq."""
    return f"{round_id}/correction"


def correction_result(table: str, game: GameRules[Any], layout: str, corrects: str,
                      reason: Irregularity, detail: str, by: str, settled_at: float
                      ) -> dict[str, Any]:
    """The Pit voids a round already published (e.g. Tai Sai 5.6, damaged dice): a new
    message on ``results`` naming the round it voids; the original stays in the journal."""
    clause = VOID_RETURNS[game.id]
    return {
        "type": "correction", "schema": CORRECTION_SCHEMA_ID, "table": table,
        "game": game.id, "layout": layout, "corrects": corrects, "status": "void",
        "void_reason": {"code": reason.code, "clause": reason.clause, "text": reason.summary,
                        "detail": detail},
        "by": by,
        "bets": [BetResult(name, Result.PUSH, None, "returned: the round is void", clause)
                 .as_dict() for name in game.offered_names(layout)],
        "settled_at": iso(settled_at),
    }
