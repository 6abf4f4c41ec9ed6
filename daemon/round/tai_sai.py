"""The Tai Sai table as a state machine (transitions).

    idle --open_betting--> betting_open --close_betting--> tumbling --(result|void)--> idle

The tumbler is armed only after "No more bets" (Tai Sai 3.6, 5.5.3) and disarmed again
once it activates. The controller counts the tumbles itself: one per Tumble message
after an activation in the round's armed play, bound to an arm the tumbler confirmed;
the tumbler's own count is only cross-checked. The engine's judge_throw then decides:
5.5.3, 5.5.1 and 5.5.2 void first; an unconfirmed arm, a count that disagrees, an
unreadable die or a read under the table's confidence floor are the Pit's (5.14): the
throw is held (``throw_held``, with its own hold id) and the tumbler disarmed. A held throw
stays held through tumbler reconnects and restarts, and nothing the tumbler reports is a
throw of the round until the Pit answers that hold: void_round, or throw_again (re-armed).

An event outside a live exchange voids and settles nothing: it is journalled and alerted.
Until the protocol carries event identities, the controller knows an exchange only by what
it has seen this round: a 5.5.3 early activation is one the tumbler itself reports as
disarmed during betting (the table disarmed it at open_betting); an activation reporting
armed during betting, tumbles with no activation of this round and dice settling with none
are an earlier round's events re-sent (or a disarm the tumbler missed), and the round is
kept as it was. Every valid throw feeds the dice watch (daemon/games/dice_watch.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from daemon.games.dice_watch import DiceWatch, DiceWatchSettings
from daemon.games.model import GameRules
from daemon.games.tai_sai_open_cover import ThrowFacts, judge_throw
from daemon.results import RoundContext, tai_sai_result, void_result
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    RoundResult,
)
from daemon.round.lifecycle import BETTING, IDLE, Folded
from daemon.round.records import (
    AwaitingTumble,
    BettingOpened,
    Dice,
    Kinds,
    Result,
    RoundRecord,
    Tumble,
    TumblerActivated,
    TumblerArmed,
)
from daemon.round.throw_holds import ThrowHolds
from firmware_protocols import common as common_proto
from firmware_protocols import tumbler as tumbler_proto
from firmware_protocols.wire import Message

TUMBLING = "tumbling"


class TaiSaiTable(ThrowHolds):
    PLAY = TUMBLING
    HOLD_SEP = "/hold-"
    RECORDS: ClassVar[Kinds] = (TumblerArmed, AwaitingTumble, TumblerActivated, Tumble, Dice)
    RECORDED = (common_proto.Door, common_proto.Fault)

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, *,
                 clock: Callable[[], float], new_round_id: Callable[[], str],
                 confidence_floor: int = 90,
                 dice_watch: DiceWatchSettings | None = None) -> None:
        super().__init__(table_id, game, layout, clock, new_round_id)
        self.confidence_floor = confidence_floor
        self.watch = DiceWatch(dice_watch)
        self.activated_early = False
        # Per round, from "No more Bets": arms the tumbler confirmed, activations seen.
        # Each activation uses one arm; a confirmation may be read just after it.
        self.arms = 0
        self.activations = 0
        self.activation_armed = False  # the tumbler's own flag on the last activation
        self.settled_activations = 0  # activations whose dice have settled
        self.tumbles = 0  # counted by the controller since the last activation
        self.device_tumbles = 0  # the tumbler's count, last reported
        self.throw: dict[str, Any] | None = None  # the "dice" record of the round's throw
        self._init_throw_holds()

    # -- what the service dispatches ------------------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return {tumbler_proto.Activated: self.activated, tumbler_proto.Tumble: self.tumble,
                tumbler_proto.Settled: self.settled}

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        # The Pit's answers may name the hold they answer (its hold id): an answer to a
        # hold already answered (a redelivered alert answered twice) is refused.
        hold = args.get("hold")
        return {**super().commands(by, args), "end_shoe": lambda: self.end_shoe(by),
                "new_shoe": lambda: self.end_shoe(by),
                "void_round": lambda: self.void_round(
                    args.get("reason", ""), by,
                    args.get("irregularity", "unresolved_irregularity"), hold=hold),
                "throw_again": lambda: self.throw_again(by, hold)}

    def command_answered(self, device: str, msg: Message) -> list[Effect]:
        """The tumbler confirmed an Arm: a throw can only be bound to a confirmed arm."""
        if isinstance(msg, tumbler_proto.Arm) and msg.armed and self.round is not None \
                and self.state == TUMBLING:
            return [self._rec(TumblerArmed(), self.round.round_id)]
        return []

    def device_fault(self, msg: Message, detail: str) -> list[Effect]:
        """Dice, tilts or flags out of range: the throw has no outcome the controller can
        trust; while a throw is awaited, the Pit's (5.14): void, or throw again."""
        out = super().device_fault(msg, detail)
        if isinstance(msg, tumbler_proto.Settled) and self.round is not None and \
                self.state == TUMBLING:
            if self.hold is not None:
                return [*out, self._held_still("dice out of range settled")]
            return [*out, *self._hold(f"the tumbler reported a throw out of range ({detail})")]
        return out

    def events_lost(self, device: str, first: int, last: int) -> list[Effect]:
        """Tumbler events lost while a throw is awaited may have been its activation,
        tumbles or dice: the throw is the Pit's (5.14), never a guess (issue 24)."""
        out = super().events_lost(device, first, last)
        if device != "tumbler" or self.round is None or self.state != TUMBLING:
            return out
        what = f"{last - first + 1} tumbler event(s) never arrived (numbers {first}-{last})"
        if self.hold is not None:
            return [*out, self._held_still(what)]
        return [*out, *self._hold(what)]

    # -- the fold ---------------------------------------------------------------------

    def _fold_betting_opened(self, r: Folded[BettingOpened]) -> None:
        super()._fold_betting_opened(r)
        self.activated_early, self.throw = False, None
        self.arms = self.activations = self.tumbles = self.device_tumbles = 0
        self.settled_activations = 0
        self.activation_armed = False

    def _in_play(self, r: Folded[RoundRecord]) -> bool:
        """The record belongs to the round's live exchange: its play, no throw held."""
        return self.round is not None and self.round.round_id == r.round_id and \
            self.state == TUMBLING and self.hold is None

    def _fold_tumbler_armed(self, r: Folded[TumblerArmed]) -> None:
        if self._in_play(r):
            self.arms += 1

    def _fold_tumbler_activated(self, r: Folded[TumblerActivated]) -> None:
        if self.state == BETTING:
            # The tumbler says it was disarmed, as open_betting left it: the Dealer's early
            # press, and the throw that follows is void (5.5.3). Armed, it is no activation
            # of this round (see the module's docstring).
            if not r.record.armed:
                self.activated_early = True
        elif self._in_play(r):
            self.activations += 1
            self.activation_armed = r.record.armed
            self.tumbles = self.device_tumbles = 0

    def _fold_tumble(self, r: Folded[Tumble]) -> None:
        # Tumbles during betting follow an early activation (already void) or none of this
        # round (re-sent): neither counts.
        if self._in_play(r) and self.activations:
            self.tumbles += 1
            self.device_tumbles = r.record.count

    def _fold_dice(self, r: Folded[Dice]) -> None:
        if self.round is not None and self.round.round_id == r.round_id and self.hold is None:
            self.throw = dict(r.body)  # as journalled: judge_throw reads it after a restart
            if r.record.activated:
                self.settled_activations = self.activations

    def _new_throw(self) -> None:
        self.throw = None  # the hold answered: a new arm, activation and tumbles
        self.arms = self.activations = self.settled_activations = 0

    def _fold_result(self, r: Folded[Result]) -> None:
        super()._fold_result(r)  # the round's hold closes with it (throw_holds.py)
        if r.record.valid and r.record.dice is not None:
            self.watch.add([int(d) for d in r.record.dice])

    # -- commands ---------------------------------------------------------------------

    def open_betting(self) -> list[Effect]:
        opened = self._begin()
        return [opened, DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

    def close_betting(self) -> list[Effect]:
        closed = self._close()
        # The tumbler is armed only after "No more bets" (5.5.3).
        return [closed, DeviceCommand("tumbler", tumbler_proto.Arm(0, True)),
                self._rec(AwaitingTumble(), closed.round_id)]

    def void_round(self, reason: str, by: str, code: str = "unresolved_irregularity",
                   *, hold: str | None = None) -> list[Effect]:
        self._check_answer(hold)
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
        """Armed exactly while a throw is awaited and none is held for the Pit: for a
        tumbler that has just (re)connected, which comes up disarmed after a reboot."""
        return DeviceCommand("tumbler", tumbler_proto.Arm(
            0, self.state == TUMBLING and self.hold is None))

    def activated(self, msg: tumbler_proto.Activated) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        state = self.state
        out: list[Effect] = [self._rec(TumblerActivated(msg.source, msg.armed), rid)]
        pit = self.game.irregularity("unresolved_irregularity")
        if state == BETTING:
            if not msg.armed:
                return out  # 5.5.3: the throw that follows is void
            return [*out, Alert(pit.code, pit.clause, "the tumbler reports an armed "
                                "activation while bets are open, although it was disarmed "
                                "for them: an earlier round's event re-sent, or a disarm it "
                                "missed; no round is voided; if the dice were thrown now, "
                                "void the round (5.5.3)", rid)]
        if state == TUMBLING and self.hold is not None:
            return [*out, self._held_still("an activation")]
        if state == TUMBLING:
            if msg.armed:
                return out
            # After "No more Bets", so not 5.5.3; but the tumbler did not know it was
            # armed (a lost Arm, a reboot): its dice will not be a result on their own.
            return [*out, Alert(pit.code, pit.clause, "the tumbler reports it was not armed "
                                "when activated after \"No more Bets\": its dice go to the "
                                "Pit; check the tumbler's arming", rid)]
        return [*out, Alert(pit.code, pit.clause, "the tumbler was activated while no round "
                            "is open: no round is affected; its dice are not a result", rid)]

    def tumble(self, msg: tumbler_proto.Tumble) -> list[Effect]:
        return [self._rec(Tumble(msg.count), self.round.round_id if self.round else None)]

    def settled(self, msg: tumbler_proto.Settled) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        flat = [f == 1 and t <= tumbler_proto.FLAT_TILT_LIMIT_DECIDEG
                for f, t in zip(msg.flat, msg.tilt, strict=True)]
        if self.state == TUMBLING and self.hold is not None:
            return [self._held_still(f"dice {list(msg.dice)} settled")]
        if self.state == BETTING and not self.activated_early:
            pit = self.game.irregularity("unresolved_irregularity")
            return [Alert(pit.code, pit.clause, f"the dice {list(msg.dice)} settled while "
                          "bets are open with no activation of this round: an earlier "
                          "round's events re-sent; no round is voided; if the dice were "
                          "thrown now, void the round (5.5.3)", rid)]
        dice = Dice(list(msg.dice), list(msg.tilt), flat, msg.confidence)
        if self.state != TUMBLING or self.settled_activations >= self.activations:
            # Dice that settled with no activation of their own in this round's play.
            dice = replace(dice, tumbles=0, device_tumbles=0, activated=False, armed=False)
        else:
            dice = replace(dice, tumbles=self.tumbles, device_tumbles=self.device_tumbles,
                           activated=True,
                           armed=self.activation_armed and self.arms >= self.activations)
        return [self._rec(dice, rid), *self.judge_throw()]

    def judge_throw(self) -> list[Effect]:
        """The round's throw, as folded from its "dice" record: a result, a void, or the
        Pit's call (also after a restart, Tai Sai 5.4.1)."""
        b = self.throw
        if b is None or self.round is None or self.state == IDLE or self.hold is not None:
            return []
        dice = tuple(int(d) for d in b["dice"])
        if self.state == TUMBLING and not self.activated_early and \
                not b.get("activated", True):
            return self._hold(f"the dice {list(dice)} settled with no activation seen after "
                              "\"No more Bets\" (a lost activation, or an earlier throw "
                              "re-sent): they are not a result")
        facts = ThrowFacts(
            activated_before_no_more_bets=self.activated_early or self.state == BETTING,
            armed=bool(b.get("armed", True)), tumbles=int(b["tumbles"]),
            device_tumbles=int(b.get("device_tumbles", b["tumbles"])),
            flat=tuple(bool(f) for f in b["flat"]), dice=dice,
            confidence=int(b.get("confidence", 100)))
        verdict = judge_throw(facts, self.confidence_floor)
        if verdict.void is not None:
            detail = (verdict.void.summary if verdict.void.code ==
                      "activated_before_no_more_bets" else
                      f"{facts.tumbles} tumble(s) counted, flat {list(facts.flat)}")
            return self._void(verdict.void.code, detail, dice)
        if verdict.throw is None:
            return self._hold(verdict.pit or "")
        rid = self.round.round_id
        payload = tai_sai_result(self._context(), verdict.throw, facts.tumbles,
                                 list(facts.flat), self.clock())
        out: list[Effect] = [self._result(rid, payload),
                             DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]
        return out + [Alert("dice_watch", "", t.detail, rid) for t in self.watch.check()]

    # -- technical interruption (Tai Sai 5.4) --------------------------------------------

    def technical_interruption(self) -> list[Effect]:
        """Tai Sai 5.4: the outcome is established once the dice rest (5.4.1); before
        that, the round is void (5.4.2)."""
        rnd = self.round
        if rnd is None:
            return []
        if self.hold is not None:  # the Pit still owes its answer: the hold is kept
            return [self._held_still("the table restarted"), self.arm_command()]
        if self.throw is None or rnd.closed_at is None:
            return self._void("technical_interruption_no_outcome",
                              "restarted before the dice came to rest")
        again = self.judge_throw()
        if not any(isinstance(e, RoundResult) and e.facts.status == "valid"
                   for e in again):
            return again  # a void by its own clause, or held for the Pit (5.14)
        established = self.game.irregularity("technical_interruption_outcome_established")
        return [Alert(established.code, established.clause,
                      "restarted after the dice came to rest: settling", rnd.round_id),
                *again]

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
