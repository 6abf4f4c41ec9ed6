"""The baccarat table: shoe lifecycle and round lifecycle, as a state machine (transitions).

    idle --open_betting--> betting_open --close_betting--> dealing --(result|void)--> idle

Sans-I/O and synchronous, like the rules engine: each command or device message returns
the effects to apply, in order (journal first, then devices and publishing). The gate
is unlocked only after "No more bets"; the next card needed is announced after every
card; a finished deal is settled by the engine; an irregularity that voids the round
ends it with its clause and returns every bet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from daemon.games import insurance_plus
from daemon.games.baccarat import Deal, deal
from daemon.games.cards import Card, parse_card
from daemon.games.decided import decided_bets
from daemon.games.errors import CardCodeError, DealError
from daemon.games.model import Consequence, GameRules
from daemon.results import RoundContext, baccarat_result, void_result
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
    RoundResult,
)
from daemon.round.lifecycle import IDLE, RoundLifecycle
from daemon.round.shoe import Certificate, Finding, Shoe, certify
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import shuffler as shuffler_proto

DEALING = "dealing"


class BaccaratTable(RoundLifecycle):
    PLAY = DEALING

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, decks: int, *,
                 clock: Callable[[], float] = time.time,
                 new_round_id: Callable[[], str] | None = None) -> None:
        game.check_decks(decks)
        super().__init__(table_id, game, layout, clock, new_round_id)
        self.decks = decks
        self.certificate: Certificate | None = None
        self.shoe: Shoe | None = None
        self.shoe_id: str | None = None
        self.shoe_ending = False  # the cut card came out (MBS 3.22: finish, then end)
        self.insurance_window: str | None = None  # Insurance Plus: the window now open
        # RWS 5.8: cards drawn outside a deal are used in the next one, first, in order.
        self.carried: list[tuple[Card, int]] = []
        # Ended shoes wait here for the shuffler to reveal their order (card switching).
        self.awaiting_order: dict[int, tuple[Shoe, list[shuffler_proto.OrderChunk]]] = {}

    # -- commands (from MQTT or the local CLI) --------------------------------------------

    def device_ready(self, device: str) -> list[DeviceCommand]:
        """What a device that has just (re)connected must be told: it knows nothing of
        the round in progress, nor of an order reveal it was cut off from."""
        if device == "shoe":
            return [self.gate_command()]
        if device == "shuffler":
            return self.reveal_commands()
        return []

    def gate_command(self) -> DeviceCommand:
        """The gate as it should be now: for a shoe that has just (re)connected, which
        comes up locked after a reboot and knows nothing of the round in progress."""
        return DeviceCommand("shoe", shoe_proto.LockGate(0, self.state != DEALING))

    def open_betting(self) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"a round is already {self.state}")
        if self.shoe is None:
            clause = self.game.irregularity("not_shuffled").clause
            raise CommandRefusedError(f"no shoe from a certified shuffle is loaded "
                                      f"(clause {clause})")
        if self.shoe_ending:
            raise CommandRefusedError("the cut card has come out: end the shoe first")
        rid = self._begin().round_id
        return [Record("betting_opened", {"shoe_id": self.shoe_id}, rid),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True))]

    def close_betting(self) -> list[Effect]:
        rnd = self._close()
        rid = rnd.round_id
        # The gate opens only after "No more bets" (RWS 3.8, MBS 3.2).
        out: list[Effect] = [Record("betting_closed", {}, rid),
                             DeviceCommand("shoe", shoe_proto.LockGate(0, False))]
        carried, self.carried = self.carried, []
        for card, draw_no in carried:
            rnd.cards.append(card)
            rnd.draws.append(draw_no)
            placed = deal(rnd.cards).cards[-1]
            out.append(Record("card", {**placed.as_dict(), "draw_no": draw_no,
                                       "carried": True}, rid))
        d = deal(rnd.cards)
        if d.complete:
            return out + self._settle_or_hold()
        return [*out, Record("next_card", {"needed": d.next_card.value}, rid)]

    def void_round(self, reason: str, by: str,
                   code: str = "unresolved_irregularity") -> list[Effect]:
        if self.round is None or self.state == IDLE:
            raise CommandRefusedError("there is no round to void")
        finding = Finding(self.game.irregularity(code), f"voided by {by}: {reason}")
        return self._void(finding)

    def reset_dealing_device(self, by: str) -> list[Effect]:
        """MBS 5.9 (decision D16): the dealing device was reset after "No more bets".
        Betting reopens in the same round, so players may withdraw and bet again; cards
        drawn before the reset are set aside, since new wagers would be placed knowing them."""
        if not any(i.code == "device_reset" for i in self.game.irregularities):
            raise CommandRefusedError(f"the rules of {self.game.id} have no reset of the "
                                      "dealing device")
        if self.state != DEALING or self.round is None:
            raise CommandRefusedError("the dealing device is reset only after \"No more "
                                      f"bets\" (the table is {self.state})")
        reset = self.game.irregularity("device_reset")
        rnd, aside = self.round, [c.code for c in self.round.cards]
        rnd.cards, rnd.draws, rnd.doubles, rnd.closed_at = [], [], [], None
        self._go("reopen")
        detail = (f"the dealing device was reset by {by} after \"No more bets\": players may "
                  "withdraw their wagers, then bet again before \"No more bets\" is "
                  "re-announced; " + (f"cards set aside: {' '.join(aside)}" if aside
                                      else "no card had been drawn"))
        return [Record("betting_reopened", {"clause": reset.clause, "by": by,
                                            "cards_set_aside": aside}, rnd.round_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(reset.code, reset.clause, detail, rnd.round_id)]

    def end_shoe(self, by: str) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"finish the round first (the table is {self.state})")
        return self._end_shoe(f"ended by {by}")

    # -- device events ----------------------------------------------------------------

    def shuffle_complete(self, msg: shuffler_proto.ShuffleComplete) -> list[Effect]:
        cert, findings = certify(self.game, self.decks, msg)
        self.certificate = cert
        if cert is None:
            return [Alert(f.irregularity.code, f.clause, f.detail) for f in findings]
        return [Record("shuffle_certified", {"shuffle_id": cert.shuffle_id,
                                             "decks": cert.decks,
                                             "commitment": cert.commitment.hex()})]

    def shoe_loaded(self, msg: shoe_proto.ShoeLoaded) -> list[Effect]:
        out: list[Effect] = []
        if self.state != IDLE:
            out = self._void(Finding(self.game.irregularity("deck_shortage_or_excess"),
                                     "a shoe was loaded in the middle of a round"))
        shoe, findings = Shoe.load(self.game, self.certificate, msg)
        self.certificate = None  # a certified shuffle loads one shoe only
        if shoe is None:
            self.shoe, self.shoe_id = None, None
            return [*out, *(Alert(f.irregularity.code, f.clause, f.detail) for f in findings)]
        self.shoe = shoe
        self.shoe_id = f"{self.table_id}-shoe-{shoe.certificate.shuffle_id}"
        self.shoe_ending = False
        return [*out, Record("shoe_loaded", {"shoe_id": self.shoe_id,
                                             "shuffle_id": shoe.certificate.shuffle_id,
                                             "cards": msg.cards, "deck_set": msg.deck_set})]

    def card_drawn(self, msg: shoe_proto.CardDrawn) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        drawn = Record("card_drawn", {"draw_no": msg.draw_no, "card": msg.card,
                                      "confidence": msg.confidence, "deck_set": msg.deck_set,
                                      "double_draw": msg.double_draw,
                                      "face_up": msg.face_up}, rid)
        return [drawn, *self._card_drawn(msg, rid)]

    def _card_drawn(self, msg: shoe_proto.CardDrawn, rid: str | None) -> list[Effect]:
        if self.shoe is None:
            unshuffled = self.game.irregularity("not_shuffled")
            return [Alert(unshuffled.code, unshuffled.clause,
                          f"card {msg.card} drawn with no certified shoe loaded", rid)]
        findings = self.shoe.check_card(msg)
        if self.state != DEALING or self.round is None:
            return self._out_of_deal(msg, findings, rid)
        voiding = [f for f in findings if f.irregularity.consequence is Consequence.VOID]
        if voiding:
            return self._void(voiding[0])
        out: list[Effect] = [Alert(f.irregularity.code, f.clause, f.detail, rid)
                             for f in findings]
        try:
            card = parse_card(msg.card)
            d = deal([*self.round.cards, card])
        except (CardCodeError, DealError) as exc:
            excess = self.game.irregularity("excess_card")
            return [*out, Alert(excess.code, excess.clause, str(exc), rid)]
        if self.insurance_window is not None:
            # IP 5.3: whoever has not bet insurance before the next card forgoes it. The
            # Dealer never closed the window, so it may never have been offered (D15).
            out += [Record("insurance_closed", {"window": self.insurance_window,
                                                "by": "next card drawn"}, rid),
                    self._insurance_not_offered(d, card, msg.draw_no, rid)]
            self.insurance_window = None
        self.round.cards.append(card)
        self.round.draws.append(msg.draw_no)
        if msg.double_draw:
            self.round.doubles.append(msg.draw_no)
        placed = d.cards[-1]
        out.append(Record("card", {**placed.as_dict(), "draw_no": msg.draw_no}, rid))
        if not d.complete:
            offers = insurance_plus.offers_for_deal(d) if self.game.has_insurance else []
            if offers:
                self.insurance_window = offers[0].window
                return [*out, Record("insurance_offered", {
                    "window": self.insurance_window,
                    "offers": [o.as_dict() for o in offers]}, rid)]
            return [*out, Record("next_card", {"needed": d.next_card.value}, rid)]
        return out + self._settle_or_hold()

    def _settle_or_hold(self) -> list[Effect]:
        """A complete deal is settled, unless cards left the shoe together (D17): their
        order is the Pit's to determine (RWS 5.11, MBS 5.8.2), so the result waits."""
        assert self.round is not None
        if not self.round.doubles:
            return self.settle()
        return self.hold()

    def hold(self) -> list[Effect]:
        assert self.round is not None
        rnd = self.round
        double = self.game.irregularity("simultaneous_draw")
        draws = ", ".join(str(n) for n in rnd.doubles)
        order = " ".join(f"{n}:{c.code}" for n, c in zip(rnd.draws, rnd.cards, strict=True))
        return [Record("result_held", {"doubles": list(rnd.doubles), "clause": double.clause,
                                       "order": order}, rnd.round_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(double.code, double.clause,
                      f"the deal is complete, but draw(s) {draws} left the shoe with another "
                      f"card; as read, the order is {order}. The result waits for the Pit: "
                      "confirm_order (with swap to exchange two cards), or void_round",
                      rnd.round_id)]

    def confirm_order(self, by: str, swap: str | None = None) -> list[Effect]:
        """The Pit's order for a held round (D17); ``swap``: "6,7" exchanges two cards."""
        rnd = self.round
        if rnd is None or self.state != DEALING or not rnd.doubles or \
                not deal(rnd.cards).complete:
            raise CommandRefusedError("no result is waiting for the order of its cards")
        cards, draws = list(rnd.cards), list(rnd.draws)
        if swap is not None:
            try:
                a, b = (draws.index(int(x)) for x in swap.split(","))
            except ValueError:
                raise CommandRefusedError(f"swap takes two draw numbers of this round, from "
                                          f"{draws}; got {swap!r}") from None
            cards[a], cards[b] = cards[b], cards[a]
            draws[a], draws[b] = draws[b], draws[a]
            try:
                d = deal(cards)
                complete = d.complete and len(d.cards) == len(cards)
            except DealError:
                complete = False
            if not complete:
                raise CommandRefusedError(
                    "in that order the Table of Play does not take exactly these "
                    f"{len(cards)} cards: void the round instead")
        rnd.cards, rnd.draws = cards, draws
        return [Record("order_confirmed", {"by": by, "swap": swap,
                                           "cards": [c.code for c in cards]}, rnd.round_id),
                *self.settle()]

    def _out_of_deal(self, msg: shoe_proto.CardDrawn, findings: list[Finding],
                     rid: str | None) -> list[Effect]:
        """A card drawn while no deal is under way (architecture.md: carried cards)."""
        voiding = [f for f in findings if f.irregularity.consequence is Consequence.VOID]
        if voiding and self.round is not None:  # e.g. a card of another set during betting
            return self._void(voiding[0])
        out: list[Effect] = [Alert(f.irregularity.code, f.clause, f.detail, rid)
                             for f in findings]
        excess = self.game.irregularity("excess_card")
        where = "idle" if self.state == IDLE else "open for betting"
        try:
            card = parse_card(msg.card)
        except CardCodeError:
            return out
        if voiding:
            return out
        if len(self.carried) >= 6:
            return [*out, Alert(excess.code, excess.clause, f"card {msg.card} drawn while the "
                                f"table is {where}; six cards are already waiting", rid)]
        self.carried.append((card, msg.draw_no))
        return [*out,
                Record("card_carried", {"card": card.code, "draw_no": msg.draw_no,
                                        "position_in_next_deal": len(self.carried)}, rid),
                Alert(excess.code, excess.clause,
                      f"card {card.code} drawn while the table is {where}: it will be card "
                      f"{len(self.carried)} of the next deal", rid)]

    def _insurance_not_offered(self, d: Deal, card: Card, draw_no: int,
                               rid: str | None) -> Alert:
        """IP 5.13.1 before an outcome is established, 5.13.2 after (decision D15)."""
        assert self.round is not None
        decided = decided_bets(self.game, self.layout, [*self.round.cards, card])
        established = d.complete or {"player", "banker"} <= decided.keys()
        irregular = self.game.irregularity("insurance_not_offered_after_outcome" if established
                                           else "insurance_not_offered_before_outcome")
        return Alert(irregular.code, irregular.clause,
                     f"draw {draw_no}: {card.code} was drawn while the {self.insurance_window} "
                     "insurance window was open; the Dealer had not closed it, so Insurance "
                     "may not have been offered" + (" (an outcome is established)"
                                                    if established else ""), rid)

    def close_insurance(self, by: str = "dealer") -> list[Effect]:
        """Insurance Plus: close the open window; the next card is then announced."""
        if self.round is None or self.insurance_window is None:
            raise CommandRefusedError("no insurance window is open")
        rid, window = self.round.round_id, self.insurance_window
        self.insurance_window = None
        return [Record("insurance_closed", {"window": window, "by": by}, rid),
                Record("next_card", {"needed": deal(self.round.cards).next_card.value}, rid)]

    def settle(self) -> list[Effect]:
        """Settle the round in hand, whose deal is complete (also after a restart)."""
        assert self.round is not None
        self.insurance_window = None
        rid, d = self.round.round_id, deal(self.round.cards)
        payload = baccarat_result(self._context(), d, self.clock())
        self._finish()
        out: list[Effect] = [RoundResult(rid, payload),
                             DeviceCommand("shoe", shoe_proto.LockGate(0, True))]
        if self.shoe_ending:
            out += self._end_shoe("the cut card came out (MBS 3.22)")
        return out

    def cut_card(self, msg: shoe_proto.CutCard) -> list[Effect]:
        self.shoe_ending = True
        return [Record("cut_card", {"draw_no": msg.draw_no},
                       self.round.round_id if self.round else None)]

    def reveal_commands(self) -> list[DeviceCommand]:
        """Ask again for every order still owed: for a shuffler that has just
        (re)connected, since a reveal cut short (line noise, a reboot) would otherwise
        leave a shoe unverified."""
        out = []
        for sid, (shoe, _) in self.awaiting_order.items():
            self.awaiting_order[sid] = (shoe, [])
            out.append(DeviceCommand("shuffler", shuffler_proto.RequestOrder(0, sid)))
        return out

    def order_chunk(self, msg: shuffler_proto.OrderChunk) -> list[Effect]:
        """Collect a revealed order; when complete, check the dealt cards against it."""
        if msg.shuffle_id not in self.awaiting_order:
            return []
        shoe, chunks = self.awaiting_order[msg.shuffle_id]
        chunks.append(msg)
        if sum(len(c.cards) for c in chunks) < msg.total:
            return []
        del self.awaiting_order[msg.shuffle_id]
        findings = shoe.verify_order(chunks)
        if not findings:
            return [Record("shuffle_verified", {"shuffle_id": msg.shuffle_id,
                                                "cards_checked": len(shoe.drawn)})]
        return [Record("shuffle_verification_failed", {"shuffle_id": msg.shuffle_id,
                                                       "findings": len(findings)}),
                *[Alert(f.irregularity.code, f.clause, f.detail) for f in findings]]

    def shoe_empty(self, msg: shoe_proto.ShoeEmpty) -> list[Effect]:
        out: list[Effect] = []
        if self.round is not None and self.state == DEALING:
            out += self._void(Finding(self.game.irregularity("insufficient_cards"),
                                      f"the shoe ran out after {msg.draw_no} cards"))
        return out + self._end_shoe("the shoe is empty")

    # -- internals --------------------------------------------------------------------

    def _context(self) -> RoundContext:
        assert self.round is not None and self.shoe is not None
        return RoundContext(self.table_id, self.game, self.layout, self.shoe_id,
                            self.shoe.certificate.shuffle_id, self.round.opened_at,
                            self.round.closed_at)

    def _void(self, finding: Finding) -> list[Effect]:
        assert self.round is not None
        self.insurance_window = None
        rid = self.round.round_id
        d = deal(self.round.cards) if self.round.cards else None
        payload = void_result(self._context(), finding.irregularity, self.clock(),
                              detail=finding.detail, deal=d)
        self._finish()
        return [Alert(finding.irregularity.code, finding.clause, finding.detail, rid),
                RoundResult(rid, payload), DeviceCommand("shoe", shoe_proto.LockGate(0, True))]

    def _end_shoe(self, why: str) -> list[Effect]:
        shoe, shoe_id = self.shoe, self.shoe_id
        self.shoe, self.shoe_id, self.shoe_ending = None, None, False
        out: list[Effect] = [Record("shoe_ended", {"shoe_id": shoe_id, "why": why})]
        if shoe is not None:  # reveal the order so card switching can be checked
            sid = shoe.certificate.shuffle_id
            self.awaiting_order[sid] = (shoe, [])
            out.append(DeviceCommand("shuffler", shuffler_proto.RequestOrder(0, sid)))
        return out
