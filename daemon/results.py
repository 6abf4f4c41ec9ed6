"""A round's result as the round core decides it: typed facts, no wire names.

The rules engine settles the round; this gathers what the table knows of it (its
context, the outcome, every offered bet's result, a void's reason) into frozen
dataclasses. What they are published as -- field names, ``type``, ``schema``, ISO
timestamps -- is the wire layer's (``daemon/mqtt/wire/``, one module per contract
schema); the service journals and publishes that payload. A void round returns every
bet under its game's clause; a correction voids a round already published.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from daemon.games.baccarat import Deal, DealtCard, coup_of
from daemon.games.model import GameRules, Irregularity
from daemon.games.outcome import BetResult, Result
from daemon.games.settle import settle_coup, settle_throw
from daemon.games.tai_sai import Throw

VALID, VOID = "valid", "void"


@dataclass(frozen=True)
class RoundContext:
    table: str
    game: GameRules[Any]
    layout: str
    shoe_id: str | None
    shuffle_id: int | None
    opened_at: float
    closed_at: float | None


@dataclass(frozen=True)
class VoidReason:
    """Why a round is void: the irregularity (its code, clause and text) and what was seen."""

    irregularity: Irregularity
    detail: str


@dataclass(frozen=True)
class CoupOutcome:
    """A baccarat round settled on its cards."""

    cards: tuple[DealtCard, ...]
    player_total: int
    banker_total: int
    natural: bool
    winner: str


@dataclass(frozen=True)
class ThrowOutcome:
    """A Tai Sai round settled on its dice."""

    dice: tuple[int, ...]
    tumbles: int
    flat: tuple[bool, ...]
    total: int


@dataclass(frozen=True)
class VoidOutcome:
    """A void round: its reason, and the cards or dice seen before it was voided."""

    reason: VoidReason
    cards: tuple[DealtCard, ...] | None = None
    dice: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RoundFacts:
    """One round's result."""

    ctx: RoundContext
    outcome: CoupOutcome | ThrowOutcome | VoidOutcome
    bets: tuple[BetResult, ...]
    settled_at: float

    @property
    def status(self) -> str:
        return VOID if isinstance(self.outcome, VoidOutcome) else VALID

    @property
    def dice(self) -> tuple[int, ...] | None:
        return None if isinstance(self.outcome, CoupOutcome) else self.outcome.dice


@dataclass(frozen=True)
class CorrectionFacts:
    """The Pit voids a round already published (e.g. Tai Sai 5.6, damaged dice): the
    original stays in the journal; this names the round it voids."""

    table: str
    game: GameRules[Any]
    layout: str
    corrects: str
    reason: VoidReason
    by: str
    bets: tuple[BetResult, ...]
    settled_at: float

    @property
    def status(self) -> str:
        return VOID


def baccarat_result(ctx: RoundContext, deal: Deal, settled_at: float, *,
                    squeeze_waiver: bool = False, insurance_offered: bool = True,
                    late_windows: frozenset[str] = frozenset()) -> RoundFacts:
    coup = coup_of([d.card for d in deal.cards])
    outcome = CoupOutcome(deal.cards, coup.player_total, coup.banker_total, coup.natural,
                          coup.winner)
    return RoundFacts(ctx, outcome, tuple(settle_coup(
        ctx.game, ctx.layout, coup, squeeze_waiver=squeeze_waiver,
        insurance_offered=insurance_offered, late_windows=late_windows)), settled_at)


def tai_sai_result(ctx: RoundContext, throw: Throw, tumbles: int, flat: Sequence[bool],
                   settled_at: float) -> RoundFacts:
    outcome = ThrowOutcome(tuple(throw.dice), tumbles, tuple(flat), throw.total)
    return RoundFacts(ctx, outcome, tuple(settle_throw(ctx.game, ctx.layout, throw)),
                      settled_at)


def void_result(ctx: RoundContext, reason: Irregularity, settled_at: float, *,
                detail: str = "", deal: Deal | None = None,
                dice: Sequence[int] | None = None) -> RoundFacts:
    """Tiger Buffalo 5.16 / Tai Sai 5.12: a void round returns every bet."""
    outcome = VoidOutcome(VoidReason(reason, detail), None if deal is None else deal.cards,
                          None if dice is None else tuple(dice))
    return RoundFacts(ctx, outcome, _returned(ctx.game, ctx.layout), settled_at)


def _returned(game: GameRules[Any], layout: str) -> tuple[BetResult, ...]:
    """Every offered bet, returned under the game's clause for a void round."""
    clause = game.void_returns()
    return tuple(BetResult(name, Result.PUSH, None, "returned: the round is void", clause)
                 for name in game.offered_names(layout))


def correction_round_id(round_id: str) -> str:
    """The key a correction is journalled under: one correction per round, its own seq."""
    return f"{round_id}/correction"


def correction_result(table: str, game: GameRules[Any], layout: str, corrects: str,
                      reason: Irregularity, detail: str, by: str, settled_at: float
                      ) -> CorrectionFacts:
    """The Pit voids a round already published: every bet of it returned."""
    return CorrectionFacts(table, game, layout, corrects, VoidReason(reason, detail), by,
                           _returned(game, layout), settled_at)
