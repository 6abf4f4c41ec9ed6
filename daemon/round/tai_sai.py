"""The Tai Sai table as a state machine (transitions).

    idle --open_betting--> betting_open --close_betting--> tumbling --(result|void)--> idle

The tumbler is armed only after "No more bets" (Tai Sai 3.6, 5.5.3) and disarmed again
once it activates. A throw is valid only if the engine's check_throw passes: at least
three tumbles (3.7, 5.5.1), all dice flat (3.8, 5.5.2), not activated before "No more
bets" (5.5.3). A die the camera cannot read is the pit's call (5.14): the round waits,
and the pit voids it or a new throw follows.
"""

from __future__ import annotations

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
)
from daemon.round.lifecycle import BETTING, IDLE, Folded, RoundLifecycle
from firmware_protocols import common as common_proto
from firmware_protocols import tumbler as tumbler_proto
from firmware_protocols.wire import Message

TUMBLING = "tumbling"


class TaiSaiTable(RoundLifecycle):
    PLAY = TUMBLING
    RECORDED = (common_proto.Door, common_proto.Fault)

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, *,
                 clock: Callable[[], float], new_round_id: Callable[[], str]) -> None:
        super().__init__(table_id, game, layout, clock, new_round_id)
        self.activated_early = False
        self.tumbles = 0
        self.throw: dict[str, Any] | None = None  # the "dice" record of the round's throw

    # -- what the service dispatches ------------------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return {tumbler_proto.Activated: self.activated, tumbler_proto.Tumble: self.tumble,
                tumbler_proto.Settled: self.settled}

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        return {**super().commands(by, args), "end_shoe": lambda: self.end_shoe(by),
                "new_shoe": lambda: self.end_shoe(by)}

    def device_fault(self, msg: Message, detail: str) -> list[Effect]:
        """Dice, tilts or flags out of range: the throw has no outcome the controller can
        trust; while a throw is awaited, the Pit's (5.14): void, or throw again."""
        out = super().device_fault(msg, detail)
        if isinstance(msg, tumbler_proto.Settled) and self.round is not None and \
                self.state == TUMBLING:
            pit = self.game.irregularity("unresolved_irregularity")
            out.append(Alert(pit.code, pit.clause, f"the tumbler reported a throw out of "
                             f"range ({detail}): void the round or throw again",
                             self.round.round_id))
        return out

    # -- the fold ---------------------------------------------------------------------

    def _fold_betting_opened(self, r: Folded) -> None:
        super()._fold_betting_opened(r)
        self.activated_early, self.tumbles, self.throw = False, 0, None

    def _fold_tumbler_activated(self, r: Folded) -> None:
        if self.state == BETTING:
            self.activated_early = True  # the throw that follows is void (5.5.3)
        elif self.state == TUMBLING:
            self.tumbles = 0

    def _fold_tumble(self, r: Folded) -> None:
        self.tumbles = max(self.tumbles, int(r.body["count"]))

    def _fold_dice(self, r: Folded) -> None:
        if self.round is not None and self.round.round_id == r.round_id:
            self.throw = dict(r.body)

    # -- commands ---------------------------------------------------------------------

    def open_betting(self) -> list[Effect]:
        opened = self._begin({})
        return [opened, DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

    def close_betting(self) -> list[Effect]:
        closed = self._close()
        # The tumbler is armed only after "No more bets" (5.5.3).
        return [closed, DeviceCommand("tumbler", tumbler_proto.Arm(0, True)),
                self._rec("awaiting_tumble", {}, closed.round_id)]

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
        state = self.state
        out: list[Effect] = [self._rec("tumbler_activated", {"source": msg.source,
                                                             "armed": msg.armed}, rid)]
        if state == BETTING:
            return out
        # Neither case below is 5.5.3, which is about activation before "No more Bets":
        # the pit is told (5.14), and no round is voided for it.
        pit = self.game.irregularity("unresolved_irregularity")
        if state == TUMBLING:
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
        return [self._rec("tumble", {"count": msg.count},
                          self.round.round_id if self.round else None)]

    def settled(self, msg: tumbler_proto.Settled) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        flat = [bool(f) and t <= tumbler_proto.FLAT_TILT_LIMIT_DECIDEG
                for f, t in zip(msg.flat, msg.tilt, strict=True)]
        return [self._rec("dice", {"dice": list(msg.dice), "tilt": list(msg.tilt),
                                   "flat": flat, "confidence": msg.confidence,
                                   "tumbles": self.tumbles}, rid),
                *self.judge_throw()]

    def judge_throw(self) -> list[Effect]:
        """The round's throw, as folded from its "dice" record: a result, a void, or the
        Pit's call (also after a restart, Tai Sai 5.4.1)."""
        b = self.throw
        if b is None or self.round is None or self.state == IDLE:
            return []
        rid = self.round.round_id
        dice = tuple(int(d) for d in b["dice"])
        flat = [bool(f) for f in b["flat"]]
        if self.activated_early or self.state == BETTING:
            return self._void("activated_before_no_more_bets",
                              "the tumbler was activated before \"No more Bets\"", dice)
        if not all(1 <= d <= 6 for d in dice):
            # 0 is the camera's "unread"; any other value is no face of a die. Either way
            # the controller has no outcome: the Pit's (5.14), never a guess.
            irregular = self.game.irregularity("unresolved_irregularity")
            return [Alert(irregular.code, irregular.clause,
                          f"the camera could not read the dice {list(dice)}: "
                          "void the round or throw again", rid)]
        tumbles = int(b["tumbles"])
        bad = check_throw(tumbles, flat, activated_before_no_more_bets=False)
        if bad is not None:
            return self._void(bad.code, f"{tumbles} tumble(s), flat {flat}", dice)
        throw = Throw.of(dice)
        payload = tai_sai_result(self._context(), throw, tumbles, flat, self.clock())
        return [self._result(rid, payload), DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

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
                              dice=list(dice) if dice and all(1 <= d <= 6 for d in dice)
                              else None)
        return [Alert(irregular.code, irregular.clause, detail, rid), self._result(rid, payload),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]
