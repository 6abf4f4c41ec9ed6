"""The Pit's holds at a baccarat table: no result is published on a guess.

A complete deal with cards that left the shoe together waits for the Pit's order (D17,
``confirm_order``); a deal with a draw the table cannot trust waits for the Pit's
reconstruction (D18, ``reconstruct_deal``); the Pit may hold a deal itself
(``hold_round``). Each hold has its own id (RoundLifecycle.hold_id), which the answer
names, so that a hold is answered once. A settled round whose draw is read again as
another card is disputed (D23): the next round waits until the Pit confirms the result
(``confirm_result``) or corrects it (``void_settled_round``). A part of BaccaratTable
(baccarat.py), with its own folds: the holds change only by folding their records.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from daemon.games.baccarat import Deal, deal
from daemon.games.cards import Card, parse_card
from daemon.games.decided import decided_bets
from daemon.games.errors import DealError
from daemon.games.model import Consequence
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Effect
from daemon.round.insurance import InsuranceWindows
from daemon.round.lifecycle import Folded
from daemon.round.records import (
    CardCarried,
    CardDrawn,
    DealReconstructed,
    Kinds,
    OrderConfirmed,
    Result,
    ResultConfirmed,
    ResultDisputed,
    ResultHeld,
    TechnicalInterruption,
)
from daemon.round.shoe import UNKNOWN, Finding, parse_or_none
from daemon.round.shoe_custody import ShoeCustody
from firmware_protocols import shoe as shoe_proto

Read = tuple[int, str | None]  # a draw of the round: its number, its card if trusted


class PitHolds(ShoeCustody, InsuranceWindows):
    """Results held for the Pit, the Pit's answers, and disputed results."""

    RECORDS: ClassVar[Kinds] = (ResultHeld, OrderConfirmed, DealReconstructed, ResultDisputed,
                                ResultConfirmed, TechnicalInterruption)

    def _init_pit_holds(self) -> None:
        # The last settled round and its draws: a later read of one of them that disagrees
        # holds the table until the Pit confirms or corrects that result (decision D23).
        self.last_settled: tuple[str, list[int]] | None = None
        self.disputed: dict[str, Any] | None = None

    @abstractmethod
    def settle(self) -> list[Effect]:
        """The table's: settle the round in hand, whose deal is complete."""

    @abstractmethod
    def _after_card(self, d: Deal) -> list[Effect]:
        """The table's: after the Pit's answer completes a deal's order, the insurance
        window, the next card, or the result."""

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        return {**super().commands(by, args),
                "confirm_order": lambda: self.confirm_order(by, args.get("swap"),
                                                            args.get("round_id"),
                                                            args.get("hold")),
                "reconstruct_deal": lambda: self.reconstruct_deal(
                    by, args.get("cards", "").split(), args.get("round_id"),
                    args.get("hold")),
                "hold_round": lambda: self.hold_round(by, args.get("reason", ""),
                                                      args.get("round_id")),
                "confirm_result": lambda: self.confirm_result(by, args.get("round_id", ""))}

    def events_lost(self, device: str, first: int, last: int) -> list[Effect]:
        """Shoe events lost mid-deal may have been draws: held for the Pit like a skipped
        draw (D18), never dealt on a guess (issue 24)."""
        out = super().events_lost(device, first, last)
        rnd = self.round
        if device != "shoe" or rnd is None or self.state != self.PLAY or rnd.held is not None:
            return out
        reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards, strict=True)]
        return out + self._hold_reads(reads, [f"{last - first + 1} shoe event(s) never "
                                              f"arrived (numbers {first}-{last}): a card "
                                              "may have left the shoe unrecorded"])

    # -- the fold -----------------------------------------------------------------------

    def _fold_result_held(self, r: Folded[ResultHeld]) -> None:
        if self.round is None:
            return
        rnd = self.round
        # A journal from before hold ids (version 1): each result_held was a hold of its own.
        hold_id = r.record.hold_id or self.hold_id(rnd.round_id, rnd.holds + 1)
        if hold_id != rnd.hold_id:
            rnd.holds += 1
        rnd.hold_id = hold_id
        rnd.held = r.record.reason
        rnd.reads = [(int(n), c) for n, c in r.record.reads]
        taken = {n for n, _ in rnd.reads}
        self.carried = [c for c in self.carried if c[1] not in taken]

    def _fold_order_confirmed(self, r: Folded[OrderConfirmed]) -> None:
        if self.round is None:
            return
        rnd, swap, draws = self.round, r.record.swap, r.record.draws
        if draws is not None:  # the Pit's order may take a carried card of the pair, or not
            rnd.draws = list(draws)
            if self.shoe is not None:  # the Pit's order is the shoe's, for the reveal too
                for n, c in zip(rnd.draws, r.record.cards, strict=True):
                    self.shoe.record(n, c)
            self.carried = [c for c in self.carried if c[1] not in rnd.draws]
            self.pairs -= set(rnd.draws)
        elif swap:  # version 1, before the order could change the deal: a swap of its own
            a, b = (rnd.draws.index(int(x)) for x in swap.split(","))
            rnd.draws[a], rnd.draws[b] = rnd.draws[b], rnd.draws[a]
        rnd.cards = [parse_card(c) for c in r.record.cards]
        rnd.held = None
        if draws is not None:  # the Pit has set the order: no double waits for it any more
            rnd.doubles = []

    def _fold_deal_reconstructed(self, r: Folded[DealReconstructed]) -> None:
        if self.round is None:
            return
        rnd = self.round
        rnd.cards = [parse_card(c) for c in r.record.cards]
        rnd.draws = list(r.record.draws)
        rnd.held, rnd.reads, rnd.doubles = None, [], []
        self.carried = [c for c in self.carried if c[1] not in rnd.draws]
        if self.shoe is not None:
            for n, c in zip(rnd.draws, r.record.cards, strict=True):
                self.shoe.record(n, c)

    def _fold_result_disputed(self, r: Folded[ResultDisputed]) -> None:
        self.disputed = dict(r.body)  # as journalled: the checkpoint holds it so

    def _fold_result_confirmed(self, r: Folded[ResultConfirmed]) -> None:
        self.disputed = None

    def _fold_technical_interruption(self, r: Folded[TechnicalInterruption]) -> None:
        if self.round is not None and r.record.decision == "pit":
            self.round.interrupted = True

    def _fold_card_drawn(self, r: Folded[CardDrawn]) -> None:
        super()._fold_card_drawn(r)  # the shoe's record first: it judges the read
        rnd = self.round
        if self.shoe is None or rnd is None or rnd.held is None:
            return
        # D18: a read that arrives while the Pit holds the round is one more fact the
        # reconstruction is checked against; two that disagree leave the draw unread.
        n = r.record.draw_no
        code = self.shoe.read(n) or UNKNOWN
        trusted = code != UNKNOWN and r.record.confidence >= self.confidence_floor
        rnd.reads = [(m, (code if trusted and c is None else
                          None if c is not None and c != code else c)) if m == n
                     else (m, c) for m, c in rnd.reads]

    def _fold_result(self, r: Folded[Result]) -> None:
        rnd = self.round
        if rnd is not None and rnd.round_id == r.round_id:
            self.last_settled = (rnd.round_id, list(rnd.draws)) \
                if r.record.valid else None
        if self.disputed is not None and r.record.voids == self.disputed["round_id"]:
            self.disputed = None
        super()._fold_result(r)

    # -- holds and the Pit's answers -------------------------------------------------------

    def _settle_or_hold(self) -> list[Effect]:
        """A complete deal is settled, unless cards left the shoe together (D17): their
        order is the Pit's to determine (RWS 5.11, MBS 5.8.2), so the result waits."""
        assert self.round is not None
        if not self.round.doubles:
            return self.settle()
        return self.hold()

    def hold(self, hold_id: str | None = None) -> list[Effect]:
        """D17: a complete deal with a double draw waits for the Pit's order."""
        assert self.round is not None
        rnd = self.round
        double = self.game.irregularity("simultaneous_draw")
        draws = ", ".join(str(n) for n in rnd.doubles)
        order = " ".join(f"{n}:{c.code}" for n, c in zip(rnd.draws, rnd.cards, strict=True))
        hold_id = hold_id or self.hold_id(self.round.round_id, self.round.holds + 1)
        reads: list[list[Any]] = [[n, c.code] for n, c in zip(rnd.draws, rnd.cards,
                                                                 strict=True)]
        return [self._rec(ResultHeld(hold_id, "simultaneous_draw", list(rnd.doubles),
                                     double.clause, order, reads), rnd.round_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(double.code, double.clause,
                      f"the deal is complete, but draw(s) {draws} left the shoe with another "
                      f"card; as read, the order is {order}. The result waits for the Pit: "
                      f"confirm_order (hold {hold_id}; with swap to exchange two cards), or "
                      "void_round", rnd.round_id)]

    def hold_again(self) -> list[Effect]:
        """A held result after a restart: held still, and announced again (result_held,
        the gate locked, the alert), so whoever plays the Pit sees what it owes."""
        rnd = self.round
        assert rnd is not None and rnd.held is not None
        if rnd.held == "simultaneous_draw":
            return self.hold(rnd.hold_id)
        return self._hold_reads(list(rnd.reads), ["restarted with the result held for the "
                                                  "Pit"], rnd.held, rnd.hold_id)

    def _hold_reads(self, reads: list[Read], doubts: list[str], reason: str = "reads",
                    hold_id: str | None = None) -> list[Effect]:
        """A draw of this deal has no trustworthy read: nothing is dealt on a guess. The
        gate locks and the result waits for the Pit (decision D18): reconstruct_deal with
        the round's cards in order, or void_round. ``reason`` "pit": the Pit held it."""
        assert self.round is not None
        rid = self.round.round_id
        pit = self.game.irregularity("unresolved_irregularity")
        order = " ".join(f"{n}:{c or UNKNOWN}" for n, c in reads)
        hold_id = hold_id or self.hold_id(self.round.round_id, self.round.holds + 1)
        return [self._rec(ResultHeld(hold_id, reason, [], pit.clause, order,
                                     [[n, c] for n, c in reads]), rid),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(pit.code, pit.clause,
                      "; ".join(doubts) + f". As read, the deal is {order}. Nothing is "
                      "settled on a guess: the result waits for the Pit: reconstruct_deal "
                      f"(hold {hold_id}) with the round's cards in order, or void_round",
                      rid)]

    def hold_round(self, by: str, reason: str, round_id: str | None = None) -> list[Effect]:
        """The Pit holds a deal the controller cannot see is wrong: a card on the table whose
        read never arrived (the last card's read lost). The hold is the obligation the
        Pit's reconstruct_deal or void_round then answers (decision D18)."""
        rnd = self.round
        if rnd is None or self.state != self.PLAY:
            raise CommandRefusedError(f"there is no deal to hold (the table is {self.state})")
        self._check_round(round_id)
        if rnd.held is not None:
            raise CommandRefusedError(f"the round is already held for the Pit (hold "
                                      f"{rnd.hold_id})")
        if not reason.strip():
            raise CommandRefusedError("a hold needs a reason")
        reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards, strict=True)]
        return self._hold_reads(reads, [f"held by {by}: {reason}"], "pit")

    def confirm_order(self, by: str, swap: str | None = None,
                      round_id: str | None = None, hold: str | None = None
                      ) -> list[Effect]:
        """The Pit's order for a held round (D17); ``swap``: "6,7" exchanges two cards. The
        order the Pit determines stands however it changes the deal (RWS 5.11, MBS
        5.8.2.2): a card of the pair that the deal no longer takes is carried to the next
        deal (RWS 5.8); a deal that now needs more cards goes on."""
        rnd = self.round
        if rnd is None or self.state != self.PLAY:
            raise CommandRefusedError("no result is waiting for the order of its cards")
        self._check_round(round_id)
        self.answering(hold, required=True)
        if rnd.held != "simultaneous_draw":
            raise CommandRefusedError(f"hold {rnd.hold_id} waits for the round's cards, not "
                                      "for an order: reconstruct_deal or void_round")
        cards, draws = list(rnd.cards), list(rnd.draws)
        # The other card of a pair read after the deal was complete waits in the carried
        # list; the Pit's order may put it in this deal.
        pairs = [(c, n) for c, n in self.carried if n in self.pairs and c is not None]
        cards += [c for c, _ in pairs]
        draws += [n for _, n in pairs]
        if swap is not None:
            try:
                a, b = (draws.index(int(x)) for x in swap.split(","))
            except ValueError:
                raise CommandRefusedError(f"swap takes two draw numbers of this round, from "
                                          f"{draws}; got {swap!r}") from None
            cards[a], cards[b] = cards[b], cards[a]
        k = next((i for i in range(1, len(cards) + 1) if self._takes(cards[:i])), None)
        if k is None and not self._takes(cards, complete=False):
            raise CommandRefusedError(
                "in that order the Table of Play does not take these cards: void the round "
                "instead")
        k = k or len(cards)
        rid = rnd.round_id
        out: list[Effect] = [self._rec(OrderConfirmed(
            by, swap, rnd.hold_id, [c.code for c in cards[:k]], draws[:k]), rid)]
        excess = self.game.irregularity("excess_card")
        for card, n in zip(cards[k:], draws[k:], strict=True):
            if n in {m for _, m in self.carried}:
                continue  # already waiting for the next deal
            out += [self._rec(CardCarried(card.code, n, 1), rid),
                    Alert(excess.code, excess.clause, f"in the Pit's order the deal does not "
                          f"take {card.code} (draw {n}): it is the next deal's", rid)]
        d = deal(cards[:k])
        if d.complete:
            return out + self.settle()
        return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                *self._after_card(d)]

    def reconstruct_deal(self, by: str, cards: list[str], round_id: str | None = None,
                         hold: str | None = None) -> list[Effect]:
        """The Pit's reconstruction of a held deal (RWS 5.8, MBS 5.8; decision D18): every
        card of the round in the order it was dealt; "--" at an unread draw that opens the
        round says that card was not this deal's (it closed with the round before). Each
        card is checked: a card of the set, no more copies than the shoe holds, the same as
        every trustworthy read at its draw (late reads too), and the Table of Play takes
        them all in that order. Cards past the reads are the cards carried while the deal
        was held, in order, then draws the shoe never reported. Dealing then goes on, or
        the round is settled."""
        rnd, shoe = self.round, self.shoe
        if rnd is None or shoe is None or self.state != self.PLAY:
            raise CommandRefusedError(f"there is no deal to reconstruct (the table is "
                                      f"{self.state})")
        self._check_round(round_id)
        self.answering(hold, required=True)
        if rnd.held == "simultaneous_draw":
            raise CommandRefusedError(f"hold {rnd.hold_id} waits for the order of a double "
                                      "draw: confirm_order or void_round")
        reads: list[Read] = list(rnd.reads)
        skip = 0  # leading unread draws the Pit says were not this deal's
        while skip < min(len(cards), len(reads)) and cards[skip] == "--":
            if reads[skip][1] is not None:
                raise CommandRefusedError(f"draw {reads[skip][0]} was read as "
                                          f"{reads[skip][1]}: it is a card of this deal")
            skip += 1
        cards, closed, reads = cards[skip:], [n for n, _ in reads[:skip]], reads[skip:]
        parsed: list[Card] = []
        for c in cards:
            card = parse_or_none(c)
            if card is None:
                raise CommandRefusedError(f"{c!r} is not a card code like 9H, TD, KS")
            parsed.append(card)
        if len(parsed) < len(reads):
            raise CommandRefusedError(f"the round has {len(reads)} draws "
                                      f"({' '.join(f'{n}:{c or UNKNOWN}' for n, c in reads)});"
                                      f" the reconstruction gives {len(parsed)} cards")
        self._check_reads(reads, parsed)
        draws = self._reconstructed_draws(reads, parsed)
        counts = dict(shoe.counts)
        for n, card in zip(draws, parsed, strict=True):  # the shoe as it would be, whole
            old = shoe.read(n)
            if old is not None and old in counts:
                counts[old] -= 1
            counts[card.code] = counts.get(card.code, 0) + 1
        for n, card in zip(draws, parsed, strict=True):
            # D24: the Pit may confirm the card the reader saw although the shoe's record
            # then holds one copy too many (an earlier read was wrong: the reveal shows it).
            if counts[card.code] > shoe.certificate.decks and card.code != shoe.read(n):
                raise CommandRefusedError(f"{card.code} would be seen {counts[card.code]} "
                                          f"times in a {shoe.certificate.decks}-deck shoe")
        if not self._takes(parsed, complete=False):
            raise CommandRefusedError(f"the Table of Play does not take these {len(parsed)} "
                                      "cards in this order: void the round instead")
        out: list[Effect] = []
        k = len(rnd.cards)
        if self.insurance_window is not None and len(parsed) > k:
            # A card was drawn past the open window (it is what the Pit reconstructs):
            # insurance may not have been offered (IP 5.3, 5.13; decision D15).
            out += self._card_past_window(deal(parsed[:k + 1]), parsed[k], draws[k],
                                          rnd.round_id)
        out.append(self._rec(DealReconstructed(by, rnd.hold_id, [c.code for c in parsed],
                                               draws, closed), rnd.round_id))
        if rnd.interrupted and not decided_bets(self.game, self.layout, rnd.cards):
            none_yet = self.game.irregularity("technical_interruption_no_outcome")
            if none_yet.consequence is Consequence.VOID:
                return out + self._void(Finding(none_yet, "restarted, and the Pit's "
                                                "reconstruction establishes no outcome"))
        d = deal(rnd.cards)
        if d.complete:
            return out + self.settle()
        if self.insurance_window is not None:
            return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False))]
        return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                *self._after_card(d)]

    def _check_reads(self, reads: list[Read], parsed: list[Card]) -> None:
        """Every trustworthy read binds its draw; cards that left the shoe together (a
        double draw) bind only as a pair: their order is the Pit's (RWS 5.11, MBS 5.8.2)."""
        assert self.round is not None
        doubles = set(self.round.doubles)
        for i, ((n, read), card) in enumerate(zip(reads, parsed, strict=False)):
            if read is None or read == card.code:
                continue
            pair = [j for j in (i - 1, i + 1) if 0 <= j < min(len(reads), len(parsed))
                    and {n, reads[j][0]} <= doubles and abs(reads[j][0] - n) == 1]
            if not any(sorted(c for c in (read, reads[j][1]) if c) ==
                       sorted(parsed[k].code for k in (i, j) if (reads[k][1] is not None))
                       for j in pair):
                raise CommandRefusedError(f"draw {n} was read as {read}; the reconstruction "
                                          f"puts {card.code} there (a different order?)")

    def _reconstructed_draws(self, reads: list[Read], parsed: list[Card]) -> list[int]:
        """The draw number of each reconstructed card: the reads' own, then the cards
        carried while the deal was held (RWS 5.8: drawn past the locked gate, they are
        its next cards; each checked against its read), then draws never reported."""
        assert self.shoe is not None
        draws = [n for n, _ in reads]
        waiting = [(c, n) for c, n in self.carried if n > max(draws, default=0)]
        fresh = max([self.shoe.last_draw_no, *draws]) + 1
        for card in parsed[len(reads):]:
            # The Pit names the card it put in the deal: a carried card read as that card,
            # else one carried unread; the others stay carried (RWS 5.8: the next deal's).
            match = next((i for i, (c, _) in enumerate(waiting)
                          if c is not None and c.code == card.code), None)
            if match is None:
                match = next((i for i, (c, _) in enumerate(waiting) if c is None), None)
            if match is None:
                draws.append(fresh)
                fresh += 1
            else:
                draws.append(waiting.pop(match)[1])
        return draws

    @staticmethod
    def _takes(cards: list[Card], complete: bool = True) -> bool:
        """Whether the Table of Play takes exactly these cards in this order."""
        try:
            d = deal(cards)
        except DealError:
            return False
        return len(d.cards) == len(cards) and (d.complete or not complete)

    # -- disputed results (D23) ------------------------------------------------------------

    def _dispute(self, round_id: str, msg: shoe_proto.CardDrawn, first: str) -> list[Effect]:
        """Decision D23: a draw of the round just settled, read again as another card. The
        published result may be wrong, and RWS 5.6 lets it stand only once the next round
        has commenced: so the next round waits until the Pit confirms the result
        (confirm_result) or corrects it (void_settled_round)."""
        pit = self.game.irregularity("unresolved_irregularity")
        return [self._rec(ResultDisputed(round_id, msg.draw_no, first, msg.card,
                                         msg.confidence, pit.clause), round_id),
                Alert(pit.code, pit.clause,
                      f"draw {msg.draw_no} of round {round_id}, published with {first}, was "
                      f"read again as {msg.card}: the next round waits for the Pit: "
                      "confirm_result, or void_settled_round to correct it", round_id)]

    def confirm_result(self, by: str, round_id: str) -> list[Effect]:
        """The Pit's word that a disputed result stands as published (decision D23)."""
        d = self.disputed
        if d is None:
            raise CommandRefusedError("no published result waits for the Pit")
        if round_id != d["round_id"]:
            raise CommandRefusedError(f"round {round_id} is not the disputed round "
                                      f"({d['round_id']})")
        return [self._rec(ResultConfirmed(by, d["draw_no"], d["first"]), round_id)]

    def void_settled_round(self, by: str, round_id: str, reason: str,
                           code: str | None = None) -> list[Effect]:
        """Baccarat has no clause that reaches back (RWS 5.6, MBS 5.1.2): only the round
        whose result is disputed, before the next round commences, is corrected, under
        the Shift Manager's clause (decision D23)."""
        d = self.disputed
        if d is None or round_id != d["round_id"]:
            return super().void_settled_round(by, round_id, reason, code)
        if not reason.strip():
            raise CommandRefusedError("a correction needs a reason")
        irregular = self.game.irregularity("unresolved_irregularity")
        if code not in (None, irregular.code):
            raise CommandRefusedError(f"a disputed result is corrected under "
                                      f"{irregular.code} ({irregular.clause}); got {code!r}")
        return self._corrected(by, round_id, irregular, reason)
