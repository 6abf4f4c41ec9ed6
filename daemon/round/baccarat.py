"""The baccarat table: shoe lifecycle and round lifecycle, as a state machine (transitions).

    idle --open_betting--> betting_open --close_betting--> dealing --(result|void)--> idle

Sans-I/O and synchronous, like the rules engine: each command or device message returns
the effects to apply, in order (journal first, then devices and publishing). State
changes only by folding records (lifecycle.py): a handler decides, ``_rec`` folds.

The gate is unlocked only after "No more bets"; the next card needed is announced after
every card; a finished deal is settled by the engine; an irregularity that voids the
round ends it with its clause and returns every bet. No result is published on a guess:
a draw without a trustworthy read (a skipped draw number, a repeat with another card, an
unreadable card, a read below the confidence floor) holds the round for the Pit, who
reconstructs the deal (``reconstruct_deal``) or voids it; an exact repeat of a draw (a
device re-sending after a link reset) is journalled and ignored.

The table is made of parts, one module each, each with its own folds (docs/architecture.md):
shoe custody (shoe_custody.py), insurance windows (insurance.py), the Pit's holds
(pit_holds.py) and the technical interruption (technical_interruption.py). What is left
here is the round itself: betting, where each card drawn goes, and the settlement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from daemon.games.baccarat import Deal, deal
from daemon.games.cards import parse_card
from daemon.games.errors import DealError
from daemon.games.model import Consequence, GameRules
from daemon.results import RoundContext, baccarat_result, void_result
from daemon.round.effects import (
    Alert,
    CardEvent,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
)
from daemon.round.lifecycle import IDLE, Folded
from daemon.round.pit_holds import Read
from daemon.round.records import (
    BettingReopened,
    CardDealt,
    CardDrawn,
    DrawRepeated,
    Kinds,
    NextCard,
)
from daemon.round.shoe import UNKNOWN, Finding
from daemon.round.technical_interruption import TechnicalInterruption
from firmware_protocols import common as common_proto
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import shuffler as shuffler_proto
from firmware_protocols.wire import Message

DEALING = "dealing"
# A read below this confidence (percent) is not trusted: the Pit reconstructs the card.
DEFAULT_CONFIDENCE_FLOOR = 80


class BaccaratTable(TechnicalInterruption):
    PLAY = DEALING
    HOLD_SEP = ":"
    RECORDS: ClassVar[Kinds] = (CardDealt, NextCard, BettingReopened)
    RECORDED = (shoe_proto.Tamper, common_proto.Door, common_proto.Fault, shoe_proto.Gate,
                shoe_proto.DealerButton, shuffler_proto.ShuffleStarted)

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, decks: int, *,
                 clock: Callable[[], float], new_round_id: Callable[[], str],
                 confidence_floor: int = DEFAULT_CONFIDENCE_FLOOR,
                 insurance_offered: bool = True) -> None:
        game.check_decks(decks)
        super().__init__(table_id, game, layout, clock, new_round_id)
        self._init_custody(decks, confidence_floor)
        self._init_insurance(game, insurance_offered)
        self._init_pit_holds()

    # -- what the service dispatches ------------------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return {**super().device_handlers(), shoe_proto.CardDrawn: self.card_drawn}

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        return {**super().commands(by, args),
                "reset_dealing_device": lambda: self.reset_dealing_device(by)}

    def device_ready(self, device: str) -> list[DeviceCommand]:
        """What a device that has just (re)connected must be told: it knows nothing of
        the round in progress, nor of an order reveal it was cut off from."""
        if device == "shoe":
            return [self.gate_command()]
        if device == "shuffler":
            return self.reveal_commands()
        return []

    def gate_command(self) -> DeviceCommand:
        """The gate as it should be now: open only while a deal wants cards."""
        return DeviceCommand("shoe", shoe_proto.LockGate(0, not self._wants_cards()))

    def _wants_cards(self) -> bool:
        return self.state == DEALING and self.round is not None and self.round.held is None

    def device_fault(self, msg: Message, detail: str) -> list[Effect]:
        """A card_drawn out of range is a card that left the shoe without a trustworthy
        read: recorded as unread ("??"), so its round is held for the Pit. A draw number
        out of range cannot even be placed: the deal in progress is held."""
        out = super().device_fault(msg, detail)
        if not isinstance(msg, shoe_proto.CardDrawn) or self.shoe is None:
            return out
        if 1 <= msg.draw_no <= shoe_proto.MAX_DRAW_NO:
            return out + self.card_drawn(replace(msg, card=UNKNOWN, confidence=0))
        # A draw number no draw has: a card left the shoe all the same, and the shoe counts
        # draws, so it is the next one. Recorded there, unread, it belongs to the round it
        # left the shoe in, never to the next one (issue 23: a fault costs its own round).
        return out + self.card_drawn(replace(msg, draw_no=self.shoe.last_draw_no + 1,
                                             card=UNKNOWN, confidence=0))

    # -- the fold -----------------------------------------------------------------------

    def _fold_card(self, r: Folded[CardDealt]) -> None:
        assert self.round is not None
        n = r.record.draw_no
        self.round.cards.append(parse_card(r.record.card))
        self.round.draws.append(n)
        if r.record.double_draw and n not in self.round.doubles:
            self.round.doubles.append(n)
        if r.record.carried:
            self.carried = [c for c in self.carried if c[1] != n]

    def _fold_betting_reopened(self, r: Folded[BettingReopened]) -> None:
        if self.round is None:
            return
        if r.record.deal_restarted:  # version 1, before D16: the cards were set aside
            rnd = self.round
            rnd.cards, rnd.draws, rnd.doubles = [], [], []
            rnd.held, rnd.reads = None, []
        self.round.closed_at = None  # MBS 5.9: the cards drawn so far stay in the deal
        self._go("reopen")

    # -- commands (from MQTT or the local CLI) --------------------------------------------

    def open_betting(self) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"a round is already {self.state}")
        if self.disputed is not None:
            d = self.disputed
            raise CommandRefusedError(
                f"round {d['round_id']} waits for the Pit: draw {d['draw_no']} was read as "
                f"{d['first']}, then as {d['again']}; confirm_result or void_settled_round "
                "before the next round commences (RWS 5.6, decision D23)")
        if self.shoe is None:
            clause = self.game.irregularity("not_shuffled").clause
            raise CommandRefusedError(f"no shoe from a certified shuffle is loaded "
                                      f"(clause {clause})")
        if self.shoe_ending:
            raise CommandRefusedError("the cut card has come out: end the shoe first")
        return [self._begin(self.shoe_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True))]

    def close_betting(self) -> list[Effect]:
        closed = self._close()
        rnd = self.round
        assert rnd is not None
        rid = rnd.round_id
        # The gate opens only after "No more bets" (RWS 3.8, MBS 3.2).
        out: list[Effect] = [closed, DeviceCommand("shoe", shoe_proto.LockGate(0, False))]
        carried = list(self.carried)
        last: tuple[CardDealt, Record] | None = None  # the last card carried into the deal
        for i, (card, draw_no) in enumerate(carried):
            if rnd.cards and deal(rnd.cards).complete:
                break  # the rest wait for the deal after this one, still in order
            if card is None:  # a carried card without a trustworthy read: the Pit's
                reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards,
                                                                 strict=True)]
                reads += [(n, c.code if c else None) for c, n in carried[i:]]
                return out + self._hold_reads(reads, [f"carried draw {draw_no} has no "
                                                      "trustworthy read"])
            placed = deal([*rnd.cards, card]).cards[-1]
            dealt = CardDealt(placed.card.code, placed.hand, placed.position, draw_no,
                              carried=True)
            last = (dealt, self._rec(dealt, rid, CardEvent(dealt)))  # its draw went out then
            out.append(last[1])
        d = deal(rnd.cards)
        if d.complete:
            return out + self._settle_or_hold()
        needed = NextCard(d.next_card.value)
        if last is None:  # no card carried: the card required first, on its own
            return [*out, self._rec(needed, rid)]
        # The card required next goes out with the last card carried (its record is last).
        out[-1] = replace(last[1], event=CardEvent(last[0], None, needed))
        return [*out, self._rec(needed, rid, None)]

    def void_round(self, reason: str, by: str,
                   code: str = "unresolved_irregularity") -> list[Effect]:
        if self.round is None or self.state == IDLE:
            raise CommandRefusedError("there is no round to void")
        finding = Finding(self.game.irregularity(code), f"voided by {by}: {reason}")
        return self._void(finding)

    def reset_dealing_device(self, by: str) -> list[Effect]:
        """MBS 5.9 (decision D16): the dealing device was reset after "No more bets".
        Betting reopens in the same round, so players may withdraw and bet again. Cards
        drawn before the reset stay in the deal in the order they were drawn: no clause
        sets a drawn card aside, and 5.2 voids only an order that cannot be
        reconstructed, which the Pit judges (void_round, order_altered)."""
        if not any(i.code == "device_reset" for i in self.game.irregularities):
            raise CommandRefusedError(f"the rules of {self.game.id} have no reset of the "
                                      "dealing device")
        if self.state != DEALING or self.round is None:
            raise CommandRefusedError("the dealing device is reset only after \"No more "
                                      f"bets\" (the table is {self.state})")
        reset = self.game.irregularity("device_reset")
        order = self.game.irregularity("order_altered")
        rnd, kept = self.round, [c.code for c in self.round.cards]
        detail = (f"the dealing device was reset by {by} after \"No more bets\": players may "
                  "withdraw their wagers, then bet again before \"No more bets\" is "
                  "re-announced; " + (f"the cards drawn, {' '.join(kept)}, stay in the deal "
                                      "in that order; if the reset altered the order of the "
                                      "cards so that it cannot be reconstructed, void the "
                                      f"round ({order.clause})" if kept
                                      else "no card had been drawn"))
        return [self._rec(BettingReopened(reset.clause, by, kept), rnd.round_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(reset.code, reset.clause, detail, rnd.round_id)]

    # -- where each card drawn goes -------------------------------------------------------

    def card_drawn(self, msg: shoe_proto.CardDrawn) -> list[Effect]:
        problems = common_proto.out_of_range(msg)
        if problems:  # the driver rejects these first; never trusted here either
            return self.device_fault(msg, "; ".join(problems))
        rid = self.round.round_id if self.round else None
        drawn = CardDrawn(msg.draw_no, msg.card, msg.confidence, msg.deck_set,
                          msg.double_draw, msg.face_up)
        if self.shoe is None:
            unshuffled = self.game.irregularity("not_shuffled")
            return [self._rec(drawn, rid),
                    Alert(unshuffled.code, unshuffled.clause,
                          f"card {msg.card} drawn with no certified shoe loaded", rid)]
        before = self.shoe.read(msg.draw_no)
        if before == msg.card:
            # Exactly a draw already recorded: a device re-sending what the link handed
            # back after a reset. One card left the shoe, once.
            return [self._rec(DrawRepeated(msg.draw_no, msg.card), rid)]
        expected = self.shoe.last_draw_no + 1
        # D24: one copy too many is a finding about the reads as much as the cards: this
        # read or an earlier one may be wrong. The Pit, who sees the card, decides.
        findings = [f for f in self.shoe.findings(msg)
                    if f.irregularity.code != "deck_shortage_or_excess"]
        doubts = self._doubts(msg, before, expected)
        recorded = self._rec(drawn, rid)
        settled = self.last_settled
        if self.state == IDLE and settled is not None and msg.draw_no in settled[1] and \
                before not in (None, UNKNOWN, msg.card):
            return [recorded, *self._dispute(settled[0], msg, str(before))]
        if not self._wants_cards():
            return [recorded, *self._out_of_deal(msg, findings, doubts, expected, rid)]
        return self._in_deal(msg, (drawn, recorded), findings, doubts, expected, before)

    def _in_deal(self, msg: shoe_proto.CardDrawn, draw: tuple[CardDrawn, Record],
                 findings: list[Finding], doubts: list[str], expected: int,
                 before: str | None) -> list[Effect]:
        """A draw while the deal wants cards (``draw``: its record, and the effect that
        journals it): placed in a hand, held for the Pit, or the round voided. Placed, the
        draw is published with its card (``_dealt``), its own record journalled only."""
        drawn, recorded = draw
        rnd = self.round
        assert rnd is not None
        rid = rnd.round_id
        voiding = [f for f in findings if f.irregularity.consequence is Consequence.VOID]
        if voiding:
            return [recorded, *self._void(voiding[0])]
        out: list[Effect] = [Alert(f.irregularity.code, f.clause, f.detail, rid)
                             for f in findings]
        reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards, strict=True)]
        if before is not None and msg.draw_no not in rnd.draws:
            # A draw of an earlier round, read again differently: that round's result is
            # published; the Pit must know (RWS 5.18), this deal is not affected.
            pit = self.game.irregularity("unresolved_irregularity")
            return [recorded, *out, Alert(pit.code, pit.clause, "; ".join(doubts) + ": not "
                                          "a draw of this deal; an earlier result may need "
                                          "the Pit's review", rid)]
        if doubts:
            if before is not None:
                reads = [(n, None if n == msg.draw_no else c) for n, c in reads]
            else:
                trusted = self._trusted(msg)
                reads += [(n, None) for n in range(expected, msg.draw_no)]
                reads.append((msg.draw_no, msg.card if trusted else None))
            return [recorded, *out, *self._hold_reads(reads, doubts)]
        card = parse_card(msg.card)
        try:
            d = deal([*rnd.cards, card])
        except DealError as exc:
            excess = self.game.irregularity("excess_card")
            return [recorded, *out, Alert(excess.code, excess.clause, str(exc), rid)]
        # IP 5.3: a window still open closes with this card (D15).
        out += self._card_past_window(d, card, msg.draw_no, rid)
        placed = d.cards[-1]
        dealt = CardDealt(placed.card.code, placed.hand, placed.position, msg.draw_no,
                          double_draw=msg.double_draw)
        return [replace(recorded, event=None), *out, *self._dealt(dealt, drawn, d)]

    def _dealt(self, dealt: CardDealt, drawn: CardDrawn, d: Deal) -> list[Effect]:
        """A card placed in a hand and what follows it (``_following``). Journalled as
        their records; published as one card event (contract v2), which carries the card
        required next when that is what follows."""
        assert self.round is not None
        rid = self.round.round_id
        card = self._rec(dealt, rid)
        needed, rest = self._following(d)
        return [replace(card, event=CardEvent(dealt, drawn, needed)), *rest,
                *([] if needed is None else [self._rec(needed, rid, None)])]

    def _after_card(self, d: Deal) -> list[Effect]:
        """After the Pit's answer completes a deal's order: what follows its last card,
        the card required next published on its own."""
        assert self.round is not None
        needed, rest = self._following(d)
        return rest if needed is None else [self._rec(needed, self.round.round_id)]

    def _following(self, d: Deal) -> tuple[NextCard | None, list[Effect]]:
        """What follows a card dealt: the card required next (its record not yet made),
        or else the insurance window it opens, or the result."""
        if d.complete:
            return None, self._settle_or_hold()
        offered = self._offer_insurance(d)
        return (None, offered) if offered else (NextCard(d.next_card.value), [])

    def settle(self) -> list[Effect]:
        """Settle the round in hand, whose deal is complete (also after a restart)."""
        assert self.round is not None
        rid, d = self.round.round_id, deal(self.round.cards)
        payload = baccarat_result(self._context(), d, self.clock(),
                                  squeeze_waiver=self.squeeze_waiver,
                                  insurance_offered=self.insurance_offered,
                                  late_windows=frozenset(self.late_windows))
        out: list[Effect] = [self._result(rid, payload),
                             DeviceCommand("shoe", shoe_proto.LockGate(0, True))]
        if self.shoe_ending:
            out += self._end_shoe(self.game.cut_card_text())
        return out

    # -- internals --------------------------------------------------------------------

    def _context(self) -> RoundContext:
        assert self.round is not None and self.shoe is not None
        return RoundContext(self.table_id, self.game, self.layout, self.shoe_id,
                            self.shoe.certificate.shuffle_id, self.round.opened_at,
                            self.round.closed_at)

    def _void(self, finding: Finding) -> list[Effect]:
        assert self.round is not None
        rid = self.round.round_id
        try:
            d = deal(self.round.cards) if self.round.cards else None
        except DealError:
            d = None
        payload = void_result(self._context(), finding.irregularity, self.clock(),
                              detail=finding.detail, deal=d)
        return [Alert(finding.irregularity.code, finding.clause, finding.detail, rid),
                self._result(rid, payload), DeviceCommand("shoe", shoe_proto.LockGate(0, True))]
