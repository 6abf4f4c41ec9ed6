"""The round lifecycle every table shares (transitions):

    idle --open_betting--> betting_open --close_betting--> <play> --(result|void)--> idle

``<play>`` is "dealing" for baccarat and "tumbling" for Tai Sai.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from transitions import Machine

from daemon.games.cards import Card
from daemon.games.model import GameRules
from daemon.round.effects import CommandRefusedError

IDLE, BETTING = "idle", "betting_open"


@dataclass
class RoundData:
    round_id: str
    opened_at: float
    closed_at: float | None = None
    cards: list[Card] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)  # each card's draw number, in order
    doubles: list[int] = field(default_factory=list)  # draws the shoe flagged double


class RoundLifecycle:
    PLAY: ClassVar[str]
    state: str  # set by transitions

    def __init__(self, table_id: str, game: GameRules[Any], layout: str,
                 clock: Callable[[], float] = time.time,
                 new_round_id: Callable[[], str] | None = None) -> None:
        game.check_layout(layout)
        self.table_id, self.game, self.layout = table_id, game, layout
        self.clock = clock
        self.new_round_id = new_round_id or (lambda: f"{table_id}-{uuid.uuid4().hex[:12]}")
        self.round: RoundData | None = None
        self.machine = Machine(model=self, states=[IDLE, BETTING, self.PLAY], initial=IDLE,
                               auto_transitions=False, transitions=[
                                   ["to_betting", IDLE, BETTING],
                                   ["to_play", BETTING, self.PLAY],
                                   ["reopen", self.PLAY, BETTING],  # MBS 5.9
                                   ["to_idle", [BETTING, self.PLAY], IDLE],
                               ])

    def _go(self, trigger: str) -> None:
        self.machine.events[trigger].trigger(self)

    def _begin(self) -> RoundData:
        """open_betting's common part: a new round, betting open."""
        if self.state != IDLE:
            raise CommandRefusedError(f"a round is already {self.state}")
        self.round = RoundData(self.new_round_id(), self.clock())
        self._go("to_betting")
        return self.round

    def _close(self) -> RoundData:
        """close_betting's common part: "No more bets"."""
        if self.state != BETTING or self.round is None:
            raise CommandRefusedError(f"betting is not open (the table is {self.state})")
        self.round.closed_at = self.clock()
        self._go("to_play")
        return self.round

    def _finish(self) -> None:
        self.round = None
        self._go("to_idle")
