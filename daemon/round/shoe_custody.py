"""Shoe custody at a baccarat table: from a certified shuffle to the reveal of its order.

A shuffle is certified (or refused) by its commitment; a shoe is loaded only from a
certified shuffle; every draw is recorded in the shoe's record (shoe.py), which judges
each read (a repeat, a gap, one copy too many); the cut card ends the shoe after the
round in play (MBS 3.22); an ended shoe's order is asked of the shuffler and checked
against every card dealt (card switching). Cards drawn while no deal takes them are
carried to the next deal, first, in order (RWS 5.8). A part of BaccaratTable
(baccarat.py), with its own folds: the custody changes only by folding its records.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from daemon.games.cards import Card, parse_card
from daemon.games.model import Consequence
from daemon.round import reveal
from daemon.round.effects import Alert, CommandRefusedError, DeviceCommand, Effect
from daemon.round.lifecycle import BETTING, IDLE, Folded, RoundLifecycle
from daemon.round.records import (
    BettingClosed,
    CardCarried,
    CardDrawn,
    CutCard,
    CutCardFirstCard,
    DrawRepeated,
    Kinds,
    Result,
    ShoeEnded,
    ShoeLoaded,
    ShoeRefused,
    ShuffleCertified,
    ShuffleRefused,
    ShuffleVerificationFailed,
    ShuffleVerified,
)
from daemon.round.shoe import UNKNOWN, Certificate, Finding, Shoe, certify, parse_or_none
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import shuffler as shuffler_proto
from firmware_protocols.wire import Message

MAX_CARRIED = 6
# Verified reveals kept to compare later chunks with: the shoe just ended and the one
# before (a shuffler reveals the shoe it was asked for, soon after its end).
REVEALS_KEPT = 2


class ShoeCustody(RoundLifecycle):
    """The shuffle, the shoe, its record of every draw, the cards carried, the reveal."""

    # Kept in memory only (round/checkpoint.py): verified reveals (their chunks are not
    # journalled) and the disclosures already alerted; a restart forgets both.
    TRANSIENT: ClassVar[frozenset[str]] = frozenset({"revealed", "disclosed"})

    RECORDS: ClassVar[Kinds] = (ShuffleCertified, ShuffleRefused, ShoeRefused, ShoeLoaded,
                                CardDrawn, DrawRepeated, CardCarried, CutCard,
                                CutCardFirstCard, ShoeEnded, ShuffleVerified,
                                ShuffleVerificationFailed)

    def _init_custody(self, decks: int, confidence_floor: int) -> None:
        self.decks = decks
        # A read below this confidence (percent) is not trusted: the Pit reconstructs it.
        self.confidence_floor = confidence_floor
        self.certificate: Certificate | None = None
        self.shoe: Shoe | None = None
        self.shoe_id: str | None = None
        self.shoe_ending = False  # the cut card came out (MBS 3.22: finish, then end)
        # RWS 5.8: cards drawn outside a deal are used in the next one, first, in order
        # (None: a card whose read is not trusted; the next deal is held for the Pit).
        self.carried: list[tuple[Card | None, int]] = []
        # The other card of a double draw, read once the deal was complete as read: carried
        # (it may be this deal's in the Pit's order), and closed with the round if voided.
        self.pairs: set[int] = set()
        # The draw a voided deal was waiting for: its read, if it comes, may be that
        # deal's card (read late) or the next deal's (forced past the locked gate).
        self.void_gap: int | None = None
        # Cards carried while the round in play was held (RWS 5.8: its own or the next's).
        self.held_carried: set[int] = set()
        # Ended shoes wait here for the shuffler to reveal their order (card switching).
        self.awaiting_order: dict[int, tuple[Shoe, list[shuffler_proto.OrderChunk]]] = {}
        # The newest verified reveals, kept to tell a shuffler that reveals another order
        # afterwards (issue 24) from one that repeats itself; transient, like the chunks (a
        # restart forgets them), and alerted once each (then forgotten).
        self.revealed: dict[int, tuple[Shoe, list[shuffler_proto.OrderChunk]]] = {}
        # Shuffles whose order a shuffler sent while still in play, alerted once each
        # (transient, like the chunks: a restart may alert again).
        self.disclosed: set[int] = set()

    @abstractmethod
    def _void(self, finding: Finding) -> list[Effect]:
        """The table's: void the round in play under the finding's clause."""

    # -- what the service dispatches ------------------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return {**super().device_handlers(),
                shoe_proto.ShoeLoaded: self.shoe_loaded, shoe_proto.CutCard: self.cut_card,
                shoe_proto.ShoeEmpty: self.shoe_empty,
                shuffler_proto.ShuffleComplete: self.shuffle_complete,
                shuffler_proto.OrderChunk: self.order_chunk}

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        return {**super().commands(by, args),
                "end_shoe": lambda: self.end_shoe(by), "new_shoe": self.new_shoe}

    # -- the fold -----------------------------------------------------------------------

    def _fold_shuffle_certified(self, r: Folded[ShuffleCertified]) -> None:
        b = r.record
        self.certificate = Certificate(b.shuffle_id, b.decks, bytes.fromhex(b.commitment),
                                       b.protocol_version)

    def _fold_shuffle_refused(self, r: Folded[ShuffleRefused]) -> None:
        self.certificate = None

    def _fold_shoe_refused(self, r: Folded[ShoeRefused]) -> None:
        self.certificate = None
        self.shoe, self.shoe_id = None, None

    def _fold_shoe_loaded(self, r: Folded[ShoeLoaded]) -> None:
        if self.certificate is None:
            return
        self.shoe = Shoe(self.game, self.certificate, r.record.deck_set)
        self.shoe_id, self.shoe_ending, self.certificate = r.record.shoe_id, False, None

    def _fold_card_drawn(self, r: Folded[CardDrawn]) -> None:
        if self.shoe is None:
            return
        n, code = r.record.draw_no, r.record.card
        before = self.shoe.read(n)
        if parse_or_none(code) is None:
            code = UNKNOWN
        if before is not None and before not in (UNKNOWN, code):
            code = UNKNOWN  # two reads of one draw disagree: the Pit says which
        self.shoe.record(n, code)
        rnd = self.round
        if rnd is not None and self.state == self.PLAY and r.record.double_draw and \
                n not in rnd.doubles:
            rnd.doubles.append(n)  # the order of a pair is the Pit's, dealt or not (D17)

    def _fold_card_carried(self, r: Folded[CardCarried]) -> None:
        code, n = r.record.card, r.record.draw_no
        self.carried.append((parse_or_none(code) if code else None, n))
        if self.round is not None and self.state == self.PLAY and self.round.held is not None:
            self.held_carried.add(n)
        if r.record.pair_of is not None:
            self.pairs.add(n)

    def _fold_cut_card(self, r: Folded[CutCard]) -> None:
        self.shoe_ending = True

    def _fold_shoe_ended(self, r: Folded[ShoeEnded]) -> None:
        if self.shoe is not None:  # reveal the order so card switching can be checked
            self.awaiting_order[self.shoe.certificate.shuffle_id] = (self.shoe, [])
        self.shoe, self.shoe_id, self.shoe_ending = None, None, False

    def _fold_shuffle_verified(self, r: Folded[ShuffleVerified]) -> None:
        sid = r.record.shuffle_id
        waited = self.awaiting_order.pop(sid, None)
        if waited is not None and waited[1]:  # its chunks: live (a restart has none)
            newest = [k for k in self.revealed if k != sid][-(REVEALS_KEPT - 1):]
            self.revealed = {**{k: self.revealed[k] for k in newest}, sid: waited}

    def _fold_shuffle_verification_failed(self, r: Folded[ShuffleVerificationFailed]
                                          ) -> None:
        self.awaiting_order.pop(r.record.shuffle_id, None)

    def _fold_betting_closed(self, r: Folded[BettingClosed]) -> None:
        super()._fold_betting_closed(r)
        self.void_gap = None  # the next deal takes cards: what comes now is its own

    def _fold_result(self, r: Folded[Result]) -> None:
        rnd = self.round
        if rnd is not None and rnd.round_id == r.round_id:
            self.void_gap = None
            if not r.record.valid and self.shoe is not None and \
                    self.state == self.PLAY:
                self.void_gap = self.shoe.last_draw_no + 1
            if not r.record.valid:  # its draws close with it (a pair too)
                self.carried = [c for c in self.carried if c[1] not in self.pairs]
                # A card forced past the gate while this deal was held may lie in it or
                # wait for the next (RWS 5.8): voided, only the Pit can say which ('--').
                self.carried = [(None, n) if n in self.held_carried else (c, n)
                                for c, n in self.carried]
                if self.shoe is not None:  # a pair's order was never determined: unknown
                    for n in rnd.doubles:
                        if self.shoe.read(n) is not None:
                            self.shoe.record(n, UNKNOWN)
            self.held_carried = set()
            self.pairs = set()
        super()._fold_result(r)

    # -- commands and device events ------------------------------------------------------

    def new_shoe(self) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"finish the round first (the table is {self.state})")
        return [DeviceCommand("shuffler", shuffler_proto.StartShuffle(0, self.decks))]

    def end_shoe(self, by: str) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"finish the round first (the table is {self.state})")
        return self._end_shoe(f"ended by {by}")

    def shuffle_complete(self, msg: shuffler_proto.ShuffleComplete,
                         protocol_version: int = 2) -> list[Effect]:
        """``protocol_version``: of the shuffler's session that delivered it, which says
        which commitment it made (shuffler.md)."""
        cert, findings = certify(self.game, self.decks, msg, protocol_version)
        if cert is None:
            return [self._rec(ShuffleRefused(msg.shuffle_id)),
                    *(Alert(f.irregularity.code, f.clause, f.detail) for f in findings)]
        # Before v3 the record names no version: v2's commitment.
        version = cert.protocol_version \
            if cert.protocol_version >= shuffler_proto.COMMITMENT_V3_FROM else 2
        return [self._rec(ShuffleCertified(cert.shuffle_id, cert.decks,
                                           cert.commitment.hex(), version))]

    def shoe_loaded(self, msg: shoe_proto.ShoeLoaded) -> list[Effect]:
        out: list[Effect] = []
        if self.state != IDLE:
            out = self._void(Finding(self.game.irregularity("deck_shortage_or_excess"),
                                     "a shoe was loaded in the middle of a round"))
        shoe, findings = Shoe.load(self.game, self.certificate, msg)
        if shoe is None:
            return [*out, self._rec(ShoeRefused(msg.cards, msg.deck_set)),
                    *(Alert(f.irregularity.code, f.clause, f.detail) for f in findings)]
        shoe_id = f"{self.table_id}-shoe-{shoe.certificate.shuffle_id}"
        return [*out, self._rec(ShoeLoaded(shoe_id, shoe.certificate.shuffle_id, msg.cards,
                                           msg.deck_set))]

    def cut_card(self, msg: shoe_proto.CutCard) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        out: list[Effect] = [self._rec(CutCard(msg.draw_no), rid)]
        if self.round is not None and self.state == self.PLAY and not self.round.cards and \
                any(i.code == "cut_card_first_card" for i in self.game.irregularities):
            # MBS 3.22.1: table management offers the withdrawal; the round goes on.
            first = self.game.irregularity("cut_card_first_card")
            out += [self._rec(CutCardFirstCard(msg.draw_no, first.clause), rid),
                    Alert(first.code, first.clause, "the cutting card came out as the first "
                          "card of this round: in HLGA the Dealer may allow Players to "
                          "withdraw their wagers; the round is completed, then the shoe "
                          "ends (3.22)", rid)]
        return out

    def shoe_empty(self, msg: shoe_proto.ShoeEmpty) -> list[Effect]:
        out: list[Effect] = []
        if self.round is not None and self.state != IDLE:  # betting open too: no deal
            out += self._void(Finding(self.game.irregularity("insufficient_cards"),
                                      f"the shoe ran out after {msg.draw_no} cards"))
        return out + self._end_shoe("the shoe is empty")

    def _end_shoe(self, why: str) -> list[Effect]:
        shoe, shoe_id = self.shoe, self.shoe_id
        out: list[Effect] = [self._rec(ShoeEnded(shoe_id, why))]
        if shoe is not None:  # reveal the order so card switching can be checked
            out.append(DeviceCommand("shuffler", shuffler_proto.RequestOrder(
                0, shoe.certificate.shuffle_id)))
        return out

    def reveal_commands(self) -> list[DeviceCommand]:
        """Ask again for every order still owed: for a shuffler that has just
        (re)connected, since a reveal cut short (line noise, a reboot) would otherwise
        leave a shoe unverified. The chunks already received are kept: they are placed by
        position, so the second reveal's repeats of them change nothing."""
        in_play = self._shuffles_in_play()
        return [DeviceCommand("shuffler", shuffler_proto.RequestOrder(0, sid))
                for sid in self.awaiting_order if sid not in in_play]

    def _shuffles_in_play(self) -> dict[int, str]:
        """The shuffles whose order must stay secret: the shoe being dealt, and a shuffle
        certified for the next shoe. Only an ended shoe's order is ever asked for; a
        shuffler that reused an id still owed is not asked until that id is out of play."""
        out = {}
        if self.certificate is not None:
            out[self.certificate.shuffle_id] = "certified and not yet dealt"
        if self.shoe is not None:
            out[self.shoe.certificate.shuffle_id] = "being dealt"
        return out

    def _order_disclosed(self, shuffle_id: int, state: str) -> list[Effect]:
        """The shuffler sent the order of a shuffle in play, unasked: whoever reads the
        line, or the daemon's frame dumps, knows the cards to come. Never used as a reveal;
        whether the shoe can still be dealt is the Pit's to decide."""
        if shuffle_id in self.disclosed:
            return []
        self.disclosed.add(shuffle_id)
        return [Alert("shuffle_order_disclosed", "",
                      f"the shuffler sent the order of shuffle {shuffle_id}, which is "
                      f"{state}, without being asked: the cards to come are known to "
                      "whoever reads the line; the Pit decides whether the shoe is dealt "
                      "(end_shoe)")]

    def _after_verification(self, msg: shuffler_proto.OrderChunk) -> list[Effect]:
        """A chunk of a reveal already decided. The same order again (the line, a reveal
        asked again): nothing new. Another order for a verified shoe: the verification
        stands (the commitment, made before dealing, binds the order verified), but a
        shuffler that reveals two orders is not an honest one; before issue 24 it passed
        as one. Alerted once, for the Pit."""
        kept = self.revealed.get(msg.shuffle_id)
        if kept is None:
            return []  # failed already, or forgotten (a restart, older shoes)
        findings = kept[0].recanted(kept[1], msg)
        if findings:
            del self.revealed[msg.shuffle_id]
        return [Alert(f.irregularity.code, f.clause, f.detail) for f in findings]

    def order_chunk(self, msg: shuffler_proto.OrderChunk) -> list[Effect]:
        """Collect a revealed order; once it is whole, or contradicts itself or the
        certified shoe, check the dealt cards against it. (The chunks are not journalled:
        a reveal cut short is asked for again.)"""
        if msg.shuffle_id not in self.awaiting_order:
            state = self._shuffles_in_play().get(msg.shuffle_id)
            if state is not None:
                return self._order_disclosed(msg.shuffle_id, state)
            return self._after_verification(msg)
        # An id both owed and in play (a shuffler that reused it) is taken as the reveal
        # owed, as before; the table never asks for it while it is in play.
        shoe, chunks = self.awaiting_order[msg.shuffle_id]
        if msg in chunks:
            return []  # delivered twice, or revealed again: nothing new
        chunks.append(msg)
        got = reveal.assemble(msg.shuffle_id, chunks)
        if got.order is None and not got.contradictions \
                and got.total == shoe.certificate.decks * 52:
            return []  # more to come
        check = shoe.verify_order(chunks)
        if not check.findings:
            return [self._rec(ShuffleVerified(msg.shuffle_id, check.cards_checked))]
        return [self._rec(ShuffleVerificationFailed(msg.shuffle_id, len(check.findings))),
                *[Alert(f.irregularity.code, f.clause, f.detail) for f in check.findings]]

    # -- reads and carried cards ---------------------------------------------------------

    def _doubts(self, msg: shoe_proto.CardDrawn, before: str | None,
                expected: int) -> list[str]:
        """Why this draw's read cannot be dealt as it is (empty: it can)."""
        n, doubts = msg.draw_no, []
        if before is not None:
            doubts.append(f"draw {n} was read as {before}, and again as {msg.card}"
                          if before != UNKNOWN else
                          f"draw {n}, recorded with no read, arrived late as {msg.card}")
        elif n > expected:
            doubts.append(f"draw {n} follows draw {expected - 1}: "
                          + (f"draw {expected}" if n == expected + 1 else
                             f"draws {expected}-{n - 1}") + " left the shoe unread")
        if parse_or_none(msg.card) is None:
            doubts.append(f"draw {n}: the reader saw {msg.card!r}, not a card")
        elif msg.confidence < self.confidence_floor:
            doubts.append(f"draw {n}: {msg.card} read at {msg.confidence}% confidence, "
                          f"below the floor of {self.confidence_floor}%")
        elif self._excess(msg):
            assert self.shoe is not None
            excess = self.game.irregularity("deck_shortage_or_excess")
            doubts.append(f"draw {n}: {msg.card} would be seen {self.shoe.counts[msg.card] + 1}"
                          f" times in a {self.shoe.certificate.decks}-deck shoe: an excess "
                          f"card (void_round, irregularity {excess.code}, {excess.clause}) or "
                          "a misread, of this draw or an earlier one")
        return doubts

    def _excess(self, msg: shoe_proto.CardDrawn) -> bool:
        """D24: the read would make its card one copy too many in the shoe."""
        card = parse_or_none(msg.card)
        if self.shoe is None or card is None:
            return False
        # Asked before or after this read is folded into the shoe: it is counted once.
        seen = self.shoe.counts[card.code] - (self.shoe.read(msg.draw_no) == card.code)
        return seen + 1 > self.shoe.certificate.decks

    def _trusted(self, msg: shoe_proto.CardDrawn) -> bool:
        """A read the table deals on: a card, at or above the floor, not one too many."""
        return parse_or_none(msg.card) is not None and \
            msg.confidence >= self.confidence_floor and not self._excess(msg)

    def _out_of_deal(self, msg: shoe_proto.CardDrawn, findings: list[Finding],
                     doubts: list[str], expected: int, rid: str | None) -> list[Effect]:
        """A card drawn while no deal takes cards (architecture.md: carried cards): idle,
        betting open, or a result held for the Pit (RWS 5.8, IP 5.7)."""
        voiding = [f for f in findings if f.irregularity.consequence is Consequence.VOID]
        if voiding and self.state == BETTING:  # e.g. a card of another set during betting
            return self._void(voiding[0])
        out: list[Effect] = [Alert(f.irregularity.code, f.clause, f.detail, rid)
                             for f in findings]
        excess = self.game.irregularity("excess_card")
        where = {IDLE: "idle", BETTING: "open for betting"}.get(self.state,
                                                                "holding a result for the Pit")
        if voiding:
            return out
        if doubts:
            pit = self.game.irregularity("unresolved_irregularity")
            held = self.round is not None and self.round.held is not None and \
                msg.draw_no in {n for n, _ in self.round.reads}
            out.append(Alert(pit.code, pit.clause, "; ".join(doubts) + f", while the table is "
                             f"{where}: " + ("the hold's reconstruction is checked against "
                                             "it" if held else "the Pit decides which read "
                                             "stands"), rid))
            if msg.draw_no <= expected - 1:
                return out  # a draw already recorded: nothing more left the shoe
        unknown = list(range(expected, msg.draw_no)) if msg.draw_no > expected else []
        # After a void, a read of the draw that deal waited for, or of any later one, may be
        # its card (read late) or the next deal's: only the Pit can tell ('--' in its
        # reconstruction if it was the voided deal's).
        after_void = self.void_gap is not None and msg.draw_no >= self.void_gap
        card = parse_card(msg.card) if self._trusted(msg) and not after_void else None
        for n, c in [*((n, None) for n in unknown), (msg.draw_no, card)]:
            if len(self.carried) >= MAX_CARRIED:
                return [*out, Alert(excess.code, excess.clause,
                                    f"draw {n} drawn while the table is {where}; "
                                    f"{MAX_CARRIED} cards are already waiting", rid)]
            pair = self.round is not None and msg.double_draw and n == msg.draw_no and \
                n - 1 in self.round.doubles
            out += [self._rec(CardCarried(c.code if c else None, n, len(self.carried) + 1,
                                          n - 1 if pair else None), rid),
                    Alert(excess.code, excess.clause,
                          f"card {c.code if c else f'(draw {n}, unread)'} drawn while the "
                          f"table is {where}: it will be card {len(self.carried)} of the "
                          "next deal", rid)]
        return out
