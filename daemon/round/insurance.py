"""Insurance Plus's windows at a baccarat table (IP 4, 5.3, 5.13; decision D15): a window
opens after the cards that offer it, the Dealer closes it before the next card; a card
drawn past an open window closes it, and Insurance that may not have been offered is the
Pit's (5.13.1: offered late, its payout capped; 5.13.2: after an outcome, not at all).
The squeeze waiver (IP 3.14) is declared per round. A part of BaccaratTable
(baccarat.py), with its own folds: the windows change only by folding their records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from daemon.games import insurance_plus
from daemon.games.baccarat import Deal, deal
from daemon.games.cards import Card
from daemon.games.decided import decided_bets
from daemon.games.model import GameRules
from daemon.round.effects import Alert, CommandRefusedError, Effect
from daemon.round.lifecycle import Folded, RoundLifecycle
from daemon.round.records import (
    BettingOpened,
    InsuranceClosed,
    InsuranceOffered,
    InsuranceOfferedLate,
    Kinds,
    NextCard,
    Result,
    SqueezeDeclared,
)


class InsuranceWindows(RoundLifecycle):
    """The insurance windows of the round in play, and the right to them."""

    RECORDS: ClassVar[Kinds] = (InsuranceOffered, InsuranceOfferedLate, InsuranceClosed,
                                SqueezeDeclared, NextCard)

    def _init_insurance(self, game: GameRules[Any], offered: bool) -> None:
        # IP 4.2.2: a private table where the House allowed no Insurance (config).
        self.insurance_offered = game.has_insurance and offered
        self.squeeze_waiver = False  # IP 3.14, declared by the Pit for this round
        self.late_windows: set[str] = set()  # IP 5.13.1: offered late by the Pit
        self.insurance_window: str | None = None  # the window now open
        self.insurance_offers: list[dict[str, Any]] = []

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        out = super().commands(by, args)
        if self.game.has_insurance:
            out["close_insurance"] = lambda: self.close_insurance(by)
            out["declare_squeeze"] = lambda: self.declare_squeeze(by, args.get("round_id"))
        return out

    # -- the fold ---------------------------------------------------------------------

    def _fold_betting_opened(self, r: Folded[BettingOpened]) -> None:
        super()._fold_betting_opened(r)
        self.squeeze_waiver, self.late_windows = False, set()

    def _fold_squeeze_declared(self, r: Folded[SqueezeDeclared]) -> None:
        self.squeeze_waiver = True

    def _fold_insurance_offered_late(self, r: Folded[InsuranceOfferedLate]) -> None:
        self.late_windows.add(r.record.window)

    def _fold_insurance_offered(self, r: Folded[InsuranceOffered]) -> None:
        self.insurance_window = r.record.window
        self.insurance_offers = list(r.record.offers)

    def _fold_insurance_closed(self, r: Folded[InsuranceClosed]) -> None:
        self.insurance_window, self.insurance_offers = None, []

    def _fold_result(self, r: Folded[Result]) -> None:
        if self.round is not None and self.round.round_id == r.round_id:
            self.insurance_window, self.insurance_offers = None, []
        super()._fold_result(r)

    # -- commands and decisions ---------------------------------------------------------

    def close_insurance(self, by: str = "dealer") -> list[Effect]:
        """Insurance Plus: close the open window; the next card is then announced."""
        if self.round is None or self.insurance_window is None:
            raise CommandRefusedError("no insurance window is open")
        rid, window = self.round.round_id, self.insurance_window
        return [self._rec(InsuranceClosed(window, by), rid),
                self._rec(NextCard(deal(self.round.cards).next_card.value), rid)]

    def declare_squeeze(self, by: str, round_id: str | None = None) -> list[Effect]:
        """IP 3.14: the House let the Seated Player with the highest Bet squeeze (or see
        exposed) the Banker Hand's third card before the Player Hand's is opened; every
        Player's right to insure after the Player Hand's third card is waived for the
        round. An open window after that card closes; none opens later."""
        if not self.insurance_offered:
            raise CommandRefusedError("this table offers no Insurance (IP 4.2.2): there is "
                                      "no right to waive")
        if self.round is None or self.state != self.PLAY:
            raise CommandRefusedError("the squeeze is declared in a round being dealt (the "
                                      f"table is {self.state})")
        self._check_round(round_id)
        rnd = self.round
        if self.squeeze_waiver:
            raise CommandRefusedError("the squeeze is already declared for this round")
        d = deal(rnd.cards)
        if d.complete or len(d.banker) > 2:
            raise CommandRefusedError("the Banker Hand's third card has been drawn: too late "
                                      "to declare the squeeze (IP 3.14)")
        out: list[Effect] = [self._rec(SqueezeDeclared(by, "3.14"), rnd.round_id)]
        if self.insurance_window == insurance_plus.PLAYER_THIRD_CARD:
            out += [self._rec(InsuranceClosed(self.insurance_window,
                                              "squeeze waiver (3.14)"), rnd.round_id),
                    self._rec(NextCard(d.next_card.value), rnd.round_id)]
        return out

    def _insurance_not_offered(self, d: Deal, card: Card, draw_no: int,
                               rid: str | None) -> list[Effect]:
        """IP 5.13.1 before an outcome is established, 5.13.2 after (decision D15). Under
        5.13.1 the Pit offers the window late, its payout capped at the Original Bet:
        recorded, so that the result carries the cap."""
        assert self.round is not None
        decided = decided_bets(self.game, self.layout, [*self.round.cards, card])
        established = d.complete or {"player", "banker"} <= decided.keys()
        irregular = self.game.irregularity("insurance_not_offered_after_outcome" if established
                                           else "insurance_not_offered_before_outcome")
        alert = Alert(irregular.code, irregular.clause,
                      f"draw {draw_no}: {card.code} was drawn while the {self.insurance_window} "
                      "insurance window was open; the Dealer had not closed it, so Insurance "
                      "may not have been offered" + (" (an outcome is established)"
                                                     if established else ""), rid)
        if established:
            return [alert]
        assert self.insurance_window is not None
        return [alert, self._rec(InsuranceOfferedLate(self.insurance_window, irregular.clause),
                                 rid)]

    def _card_past_window(self, d: Deal, card: Card, draw_no: int,
                          rid: str | None) -> list[Effect]:
        """A card drawn while a window is open closes it (IP 5.3: whoever has not bet
        insurance before the next card forgoes it). The Dealer never closed the window,
        so it may never have been offered (D15). Nothing while no window is open."""
        if self.insurance_window is None:
            return []
        return [*self._insurance_not_offered(d, card, draw_no, rid),
                self._rec(InsuranceClosed(self.insurance_window, "next card drawn"), rid)]

    def _offer_insurance(self, d: Deal) -> list[Effect]:
        """The window the cards dealt open, if any (none where no Insurance is offered)."""
        assert self.round is not None
        offers = insurance_plus.offers_for_deal(d, squeeze_waiver=self.squeeze_waiver) \
            if self.insurance_offered else []
        if not offers:
            return []
        return [self._rec(InsuranceOffered(offers[0].window, [o.as_dict() for o in offers]),
                          self.round.round_id)]
