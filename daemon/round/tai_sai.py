"""The Tai Sai table as a state machine (transitions).

    idle --open_betting--> betting_open --close_betting--> tumbling --(result|void)--> idle

The tumbler is armed only after "No more bets" (Tai Sai 3.6, 5.5.3) and disarmed again
once it activates. A throw is valid only if the engine's check_throw passes: at least
three tumbles (3.7, 5.5.1), all dice flat (3.8, 5.5.2), not activated before "No more
bets" (5.5.3). A die the camera cannot read is the pit's call (5.14): the round waits,
and the pit voids it or a new throw follows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from daemon.games.model import GameRules
from daemon.games.tai_sai import Throw
from daemon.games.tai_sai_open_cover import check_throw
from daemon.results import RoundContext, tai_sai_result, void_result
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
    RoundResult,
)
from daemon.round.lifecycle import BETTING, IDLE, RoundLifecycle
from firmware_protocols import tumbler as tumbler_proto

TUMBLING = "tumbling"


class TaiSaiTable(RoundLifecycle):
    PLAY = TUMBLING

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, *,
                 clock: Callable[[], float] = time.time,
                 new_round_id: Callable[[], str] | None = None) -> None:
        super().__init__(table_id, game, layout, clock, new_round_id)
        self.activated_early = False
        self.tumbles = 0

    # -- commands ---------------------------------------------------------------------

    def open_betting(self) -> list[Effect]:
        rnd = self._begin()
        self.activated_early, self.tumbles = False, 0
        return [Record("betting_opened", {}, rnd.round_id),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

    def close_betting(self) -> list[Effect]:
        rid = self._close().round_id
        # The tumbler is armed only after "No more bets" (5.5.3).
        return [Record("betting_closed", {}, rid),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, True)),
                Record("awaiting_tumble", {}, rid)]

    def void_round(self, reason: str, by: str,
                   code: str = "unresolved_irregularity") -> list[Effect]:
        if self.round is None or self.state == IDLE:
            raise CommandRefusedError("there is no round to void")
        return self._void(code, f"voided by {by}: {reason}")

    def end_shoe(self, by: str) -> list[Effect]:
        raise CommandRefusedError(f"{self.game.id} is played without a shoe")

    # -- the tumbler ------------------------------------------------------------------

    def device_ready(self, device: str) -> list[DeviceCommand]:
        """What a device that has just (re)connected must be told (see BaccaratTable)."""
        return [self.arm_command()] if device == "tumbler" else []

    def arm_command(self) -> DeviceCommand:
        """Armed exactly while a throw is awaited: for a tumbler that has just
        (re)connected, which comes up disarmed after a reboot."""
        return DeviceCommand("tumbler", tumbler_proto.Arm(0, self.state == TUMBLING))

    def activated(self, msg: tumbler_proto.Activated) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        out: list[Effect] = [Record("tumbler_activated", {"source": msg.source,
                                                          "armed": msg.armed}, rid)]
        if self.state == BETTING:
            self.activated_early = True  # the throw that follows is void (5.5.3)
            return out
        # Neither case below is 5.5.3, which is about activation before "No more Bets":
        # the pit is told (5.14), and no round is voided for it.
        pit = self.game.irregularity("unresolved_irregularity")
        if self.state == TUMBLING:
            self.tumbles = 0
            if msg.armed:
                return out
            # After "No more Bets", so the throw stands; but the tumbler did not know it
            # was armed (a lost Arm, a reboot), which someone must look at.
            return [*out, Alert(pit.code, pit.clause, "the tumbler reports it was not armed "
                                "when activated after \"No more Bets\": the throw stands; "
                                "check the tumbler's arming", rid)]
        return [*out, Alert(pit.code, pit.clause, "the tumbler was activated while no round "
                            "is open: no round is affected; its dice are not a result", rid)]

    def tumble(self, msg: tumbler_proto.Tumble) -> list[Effect]:
        self.tumbles = max(self.tumbles, msg.count)
        return [Record("tumble", {"count": msg.count},
                       self.round.round_id if self.round else None)]

    def settled(self, msg: tumbler_proto.Settled) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        flat = [bool(f) and t <= tumbler_proto.FLAT_TILT_LIMIT_DECIDEG
                for f, t in zip(msg.flat, msg.tilt, strict=True)]
        out: list[Effect] = [Record("dice", {"dice": list(msg.dice), "tilt": list(msg.tilt),
                                             "flat": flat, "confidence": msg.confidence,
                                             "tumbles": self.tumbles}, rid)]
        if self.round is None or self.state == IDLE:
            return out
        if self.activated_early or self.state == BETTING:
            return out + self._void("activated_before_no_more_bets",
                                    "the tumbler was activated before \"No more Bets\"",
                                    msg.dice)
        if 0 in msg.dice:
            irregular = self.game.irregularity("unresolved_irregularity")
            return [*out, Alert(irregular.code, irregular.clause,
                                f"the camera could not read the dice {list(msg.dice)}: "
                                "void the round or throw again", rid)]
        bad = check_throw(self.tumbles, flat, activated_before_no_more_bets=False)
        if bad is not None:
            return out + self._void(bad.code, f"{self.tumbles} tumble(s), flat {flat}",
                                    msg.dice)
        throw = Throw.of(msg.dice)
        payload = tai_sai_result(self._context(), throw, self.tumbles, flat, self.clock())
        self._finish()
        return [*out, RoundResult(rid or "", payload),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

    # -- internals --------------------------------------------------------------------

    def _context(self) -> RoundContext:
        assert self.round is not None
        return RoundContext(self.table_id, self.game, self.layout, None, None,
                            self.round.opened_at, self.round.closed_at)

    def _void(self, code: str, detail: str,
              dice: tuple[int, ...] | None = None) -> list[Effect]:
        assert self.round is not None
        irregular = self.game.irregularity(code)
        rid = self.round.round_id
        payload = void_result(self._context(), irregular, self.clock(), detail=detail,
                              dice=[d for d in dice if 1 <= d <= 6] if dice and
                              all(1 <= d <= 6 for d in dice) else None)
        self._finish()
        return [Alert(irregular.code, irregular.clause, detail, rid), RoundResult(rid, payload),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]
