"""The baccarat table's technical interruption (RWS 5.4, MBS 5.17): the round open when
the table stopped, decided from the folded state after a restart (recovery.py). A part
of BaccaratTable (baccarat.py); it folds nothing of its own beyond the Pit's holds'
``technical_interruption`` record, and keeps every obligation open at the interruption.
"""

from __future__ import annotations

from daemon.games.baccarat import deal
from daemon.games.cards import parse_card
from daemon.games.decided import decided_bets
from daemon.games.model import Consequence
from daemon.round import records
from daemon.round.effects import Alert, DeviceCommand, Effect
from daemon.round.pit_holds import PitHolds
from daemon.round.shoe import Finding
from firmware_protocols import shoe as shoe_proto


class TechnicalInterruption(PitHolds):
    """The clause for the round open at a restart, and play going on after it."""
    def technical_interruption(self) -> list[Effect]:
        """The round open at a restart: if any available bet is already decided by the
        cards dealt (decided.py), an outcome is established and play continues (RWS 5.4.1,
        MBS 5.17.2). If not, RWS voids the round (5.4.2); MBS offers players the withdrawal
        of their wagers and the round is concluded (5.17.1), so play continues with that
        offer announced."""
        rnd = self.round
        if rnd is None:
            return []
        established = self.game.irregularity("technical_interruption_outcome_established")
        none_yet = self.game.irregularity("technical_interruption_no_outcome")
        untrusted = [n for n, c in rnd.reads if c is None] if rnd.held in ("reads", "pit") \
            else []
        # A held deal whose every draw now has a trustworthy read (a late read merged) is
        # judged by those reads: they are the cards on the table.
        held_cards = [parse_card(c) for _, c in rnd.reads if c is not None] \
            if rnd.held in ("reads", "pit") and not untrusted and \
            self._takes([parse_card(c) for _, c in rnd.reads if c], complete=False) else []
        decided = decided_bets(self.game, self.layout, held_cards or rnd.cards)
        if rnd.held is not None and not untrusted:
            # Cards carried while the deal was held may be its own (RWS 5.8: the Pit
            # decides): whether an outcome is established may depend on them.
            last = max((n for n, _ in rnd.reads), default=0)
            untrusted = [n for _, n in self.carried if n > last]
        if not decided and untrusted and rnd.held is not None:
            # Whether an outcome is established depends on a card the table cannot trust
            # (e.g. 3S 2H, then 3D unread: Player Pair has won on the table). The Pit's
            # reconstruction decides: 5.4.1 if it establishes one, 5.4.2 if not.
            detail = (f"restarted with {len(rnd.cards)} card(s) trusted and draw(s) "
                      f"{', '.join(map(str, untrusted))} without a trustworthy read or "
                      "carried while the deal was held: whether an outcome is established "
                      "waits for the Pit's reconstruction")
            return [Alert(established.code, established.clause, detail, rnd.round_id),
                    self._rec(records.TechnicalInterruption(
                        f"{established.clause}/{none_yet.clause}", "pit", detail),
                        rnd.round_id),
                    *self.hold_again()]
        if decided:
            detail = (f"restarted with {len(rnd.cards)} card(s) dealt; decided: "
                      + ", ".join(f"{b} {r.value}" for b, r in sorted(decided.items())))
            return self._continue_after_interruption(established.clause, established.code,
                                                     detail)
        detail = f"restarted with {len(rnd.cards)} card(s) dealt; no bet decided yet"
        if none_yet.consequence is not Consequence.VOID:  # MBS 5.17.1: withdrawal offered
            return self._continue_after_interruption(
                none_yet.clause, none_yet.code,
                detail + "; players may withdraw all their wagers")
        return self._void(Finding(none_yet, detail))

    def _continue_after_interruption(self, clause: str, code: str,
                                     detail: str) -> list[Effect]:
        """Play continues; every obligation open at the interruption is kept: a held
        result stays held; an insurance window is offered again with its offers (IP 5.3)."""
        rnd = self.round
        assert rnd is not None
        rid = rnd.round_id
        out: list[Effect] = [Alert(code, clause, detail, rid),
                             self._rec(records.TechnicalInterruption(clause, "continue",
                                                                     detail), rid)]
        if rnd.closed_at is None:
            return out  # betting was still open: it stays open
        if rnd.held is not None:  # the Pit still owes its word: the hold is announced again
            return out + self.hold_again()
        d = deal(rnd.cards)
        if d.complete:  # killed between the last card and its result: settle, or hold (D17)
            return out + self._settle_or_hold()
        if self.insurance_window is not None:
            # IP 5.3: the window was open when the table stopped; its offers stand again,
            # and the Dealer closes it as before (D15).
            window, offers = self.insurance_window, self.insurance_offers
            return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                    self._rec(records.InsuranceOffered(window, offers), rid)]
        return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                self._rec(records.NextCard(d.next_card.value), rid)]
