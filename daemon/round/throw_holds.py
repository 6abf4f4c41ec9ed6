"""Throws held for the Pit at a Tai Sai table (5.14): a throw the controller cannot judge
(an unconfirmed arm, a count that disagrees, an unreadable die, a read under the
confidence floor) is held under its own hold id and the tumbler disarmed; nothing the
tumbler reports is a throw of the round until the Pit answers that hold: void_round, or
throw_again (re-armed). A part of TaiSaiTable (tai_sai.py), with its own folds.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Effect
from daemon.round.lifecycle import Folded, RoundLifecycle
from daemon.round.records import BettingOpened, Kinds, Result, ThrowAgain, ThrowHeld
from firmware_protocols import tumbler as tumbler_proto


class ThrowHolds(RoundLifecycle):
    """The throw held for the Pit, and the Pit's answers to it."""

    RECORDS: ClassVar[Kinds] = (ThrowHeld, ThrowAgain)

    def _init_throw_holds(self) -> None:
        # The throw held for the Pit (5.14): its hold id, until the Pit answers it; and how
        # many holds this round has raised, so that a hold id names one obligation only and
        # an answer to an earlier one is known as already answered.
        self.hold: str | None = None
        self.holds = 0

    @abstractmethod
    def _new_throw(self) -> None:
        """The table's: the Pit answered with a new arming; the throw starts again from its
        own arm, activation and tumbles."""

    # -- the fold ---------------------------------------------------------------------

    def _fold_betting_opened(self, r: Folded[BettingOpened]) -> None:
        super()._fold_betting_opened(r)
        self.hold, self.holds = None, 0

    def _fold_throw_held(self, r: Folded[ThrowHeld]) -> None:
        if self.round is not None and self.round.round_id == r.round_id:
            self.hold = r.record.hold_id
            self.holds += 1

    def _fold_throw_again(self, r: Folded[ThrowAgain]) -> None:
        if self.round is not None and self.round.round_id == r.round_id and \
                self.state == self.PLAY:  # the hold answered; a new arming
            self.hold = None
            self._new_throw()

    def _fold_result(self, r: Folded[Result]) -> None:
        super()._fold_result(r)
        if self.round is None:
            self.hold = None  # the round is over: its hold with it

    # -- the Pit's answers ----------------------------------------------------------------

    def throw_again(self, by: str, hold: str | None = None) -> list[Effect]:
        """The Pit's other answer to a throw it holds (5.14): the dice are thrown again in
        the same round, after a fresh arm the tumbler must confirm."""
        self._check_answer(hold)
        if self.round is None or self.state != self.PLAY or self.hold is None:
            raise CommandRefusedError("no throw of this round is waiting for the Pit")
        rid = self.round.round_id
        return [self._rec(ThrowAgain(by, self.hold), rid),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, True))]

    def _check_answer(self, hold: str | None) -> None:
        """An answer naming a hold answers that one only: the open hold, or none. A hold
        id names its round and its number there (RoundLifecycle.hold_id), so an earlier
        one of this round or one of a round already over is known as answered without
        keeping a list."""
        if hold is None or hold == self.hold:
            return
        named = self.hold_of(hold)
        if named is not None and ((self.round is not None and named[0] == self.round.round_id
                                   and 1 <= named[1] <= self.holds)
                                  or named[0] in self.published):
            raise CommandRefusedError(f"hold {hold} was already answered")
        raise CommandRefusedError(f"hold {hold} is not open" + (
            f" (the open hold is {self.hold})" if self.hold else " (no throw is held)"))

    def _hold(self, why: str) -> list[Effect]:
        """The throw goes to the Pit (5.14) under a new hold id; the tumbler is disarmed so
        that no press is a throw until the Pit answers (throw_again re-arms it)."""
        assert self.round is not None
        rid = self.round.round_id
        pit = self.game.irregularity("unresolved_irregularity")
        hold = self.hold_id(rid, self.holds + 1)
        return [self._rec(ThrowHeld(hold, pit.clause, why), rid),
                Alert(pit.code, pit.clause, f"{why}: the throw is held (hold {hold}) until the "
                      "Pit answers: void_round or throw_again", rid),
                DeviceCommand("tumbler", tumbler_proto.Arm(0, False))]

    def _held_still(self, what: str) -> Alert:
        """Something happened while a throw is held: the hold stands, and says so."""
        assert self.round is not None
        pit = self.game.irregularity("unresolved_irregularity")
        return Alert(pit.code, pit.clause, f"{what} while the throw is held (hold "
                     f"{self.hold}): no throw of the round until the Pit answers that hold: "
                     "void_round or throw_again", self.round.round_id)
