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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from daemon.games import insurance_plus
from daemon.games.baccarat import Deal, deal
from daemon.games.cards import Card, parse_card
from daemon.games.decided import decided_bets
from daemon.games.errors import DealError
from daemon.games.model import Consequence, GameRules
from daemon.results import (
    RoundContext,
    baccarat_result,
    correction_result,
    correction_round_id,
    void_result,
)
from daemon.round import reveal
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
)
from daemon.round.lifecycle import BETTING, IDLE, Folded, RoundLifecycle
from daemon.round.shoe import UNKNOWN, Certificate, Finding, Shoe, certify, parse_or_none
from firmware_protocols import common as common_proto
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import shuffler as shuffler_proto
from firmware_protocols.wire import Message

DEALING = "dealing"
# A read below this confidence (percent) is not trusted: the Pit reconstructs the card.
DEFAULT_CONFIDENCE_FLOOR = 80
MAX_CARRIED = 6
# Verified reveals kept to compare later chunks with: the shoe just ended and the one
# before (a shuffler reveals the shoe it was asked for, soon after its end).
REVEALS_KEPT = 2
Read = tuple[int, str | None]  # a draw of the round: its number, its card if trusted


class BaccaratTable(RoundLifecycle):
    PLAY = DEALING
    RECORDED = (shoe_proto.Tamper, common_proto.Door, common_proto.Fault, shoe_proto.Gate,
                shoe_proto.DealerButton, shuffler_proto.ShuffleStarted)

    def __init__(self, table_id: str, game: GameRules[Any], layout: str, decks: int, *,
                 clock: Callable[[], float], new_round_id: Callable[[], str],
                 confidence_floor: int = DEFAULT_CONFIDENCE_FLOOR,
                 insurance_offered: bool = True) -> None:
        game.check_decks(decks)
        super().__init__(table_id, game, layout, clock, new_round_id)
        self.decks = decks
        self.confidence_floor = confidence_floor
        # IP 4.2.2: a private table where the House allowed no Insurance (config).
        self.insurance_offered = game.has_insurance and insurance_offered
        self.squeeze_waiver = False  # IP 3.14, declared by the Pit for this round
        self.late_windows: set[str] = set()  # IP 5.13.1: offered late by the Pit
        self.certificate: Certificate | None = None
        self.shoe: Shoe | None = None
        self.shoe_id: str | None = None
        self.shoe_ending = False  # the cut card came out (MBS 3.22: finish, then end)
        self.insurance_window: str | None = None  # Insurance Plus: the window now open
        self.insurance_offers: list[dict[str, Any]] = []
        # RWS 5.8: cards drawn outside a deal are used in the next one, first, in order
        # (None: a card whose read is not trusted; the next deal is held for the Pit).
        self.carried: list[tuple[Card | None, int]] = []
        # The other card of a double draw, read once the deal was complete as read: carried
        # (it may be this deal's in the Pit's order), and closed with the round if voided.
        self.pairs: set[int] = set()
        # The last settled round and its draws: a later read of one of them that disagrees
        # holds the table until the Pit confirms or corrects that result (decision D23).
        self.last_settled: tuple[str, list[int]] | None = None
        self.disputed: dict[str, Any] | None = None
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

    # -- what the service dispatches ------------------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        return {shoe_proto.CardDrawn: self.card_drawn, shoe_proto.ShoeLoaded: self.shoe_loaded,
                shoe_proto.CutCard: self.cut_card, shoe_proto.ShoeEmpty: self.shoe_empty,
                shuffler_proto.ShuffleComplete: self.shuffle_complete,
                shuffler_proto.OrderChunk: self.order_chunk}

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        out = super().commands(by, args)
        out.update({
            "end_shoe": lambda: self.end_shoe(by), "new_shoe": self.new_shoe,
            "reset_dealing_device": lambda: self.reset_dealing_device(by),
            "confirm_order": lambda: self.confirm_order(by, args.get("swap"),
                                                        args.get("round_id"),
                                                        args.get("hold")),
            "reconstruct_deal": lambda: self.reconstruct_deal(
                by, args.get("cards", "").split(), args.get("round_id"), args.get("hold")),
            "hold_round": lambda: self.hold_round(by, args.get("reason", ""),
                                                  args.get("round_id")),
            "confirm_result": lambda: self.confirm_result(by, args.get("round_id", "")),
        })
        if self.game.has_insurance:
            out["close_insurance"] = lambda: self.close_insurance(by)
            out["declare_squeeze"] = lambda: self.declare_squeeze(by, args.get("round_id"))
        return out

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

    def events_lost(self, device: str, first: int, last: int) -> list[Effect]:
        """Shoe events lost mid-deal may have been draws: held for the Pit like a skipped
        draw (D18), never dealt on a guess. (Issue 24; v3's hook, minimal: the lead owns
        this file.)"""
        out = super().events_lost(device, first, last)
        rnd = self.round
        if device != "shoe" or rnd is None or self.state != DEALING or rnd.held is not None:
            return out
        reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards, strict=True)]
        return out + self._hold_reads(reads, [f"{last - first + 1} shoe event(s) never "
                                              f"arrived (numbers {first}-{last}): a card "
                                              "may have left the shoe unrecorded"])

    # -- the fold: every state change, live and replayed -------------------------------

    def _fold_shuffle_certified(self, r: Folded) -> None:
        b = r.body
        self.certificate = Certificate(b["shuffle_id"], b["decks"],
                                       bytes.fromhex(b["commitment"]),
                                       b.get("protocol_version", 2))

    def _fold_shuffle_refused(self, r: Folded) -> None:
        self.certificate = None

    def _fold_shoe_refused(self, r: Folded) -> None:
        self.certificate = None
        self.shoe, self.shoe_id = None, None

    def _fold_shoe_loaded(self, r: Folded) -> None:
        if self.certificate is None:
            return
        self.shoe = Shoe(self.game, self.certificate, r.body["deck_set"])
        self.shoe_id, self.shoe_ending, self.certificate = r.body["shoe_id"], False, None

    def _fold_card_drawn(self, r: Folded) -> None:
        if self.shoe is None:
            return
        n, code = int(r.body["draw_no"]), str(r.body["card"])
        before = self.shoe.read(n)
        if parse_or_none(code) is None:
            code = UNKNOWN
        if before is not None and before not in (UNKNOWN, code):
            code = UNKNOWN  # two reads of one draw disagree: the Pit says which
        self.shoe.record(n, code)
        rnd = self.round
        if rnd is not None and self.state == DEALING and r.body.get("double_draw") and \
                n not in rnd.doubles:
            rnd.doubles.append(n)  # the order of a pair is the Pit's, dealt or not (D17)
        if rnd is not None and rnd.held is not None:
            # D18: a read that arrives while the Pit holds the round is one more fact the
            # reconstruction is checked against; two that disagree leave the draw unread.
            trusted = code != UNKNOWN and \
                int(r.body.get("confidence", 0)) >= self.confidence_floor
            rnd.reads = [(m, (code if trusted and c is None else
                              None if c is not None and c != code else c)) if m == n
                         else (m, c) for m, c in rnd.reads]

    def _fold_card(self, r: Folded) -> None:
        assert self.round is not None
        n = int(r.body["draw_no"])
        self.round.cards.append(parse_card(r.body["card"]))
        self.round.draws.append(n)
        if r.body.get("double_draw") and n not in self.round.doubles:
            self.round.doubles.append(n)
        if r.body.get("carried"):
            self.carried = [c for c in self.carried if c[1] != n]

    def _fold_card_carried(self, r: Folded) -> None:
        code = r.body["card"]
        self.carried.append((parse_or_none(code) if code else None, int(r.body["draw_no"])))
        if self.round is not None and self.state == DEALING and self.round.held is not None:
            self.held_carried.add(int(r.body["draw_no"]))
        if r.body.get("pair_of") is not None:
            self.pairs.add(int(r.body["draw_no"]))

    def _fold_betting_reopened(self, r: Folded) -> None:
        if self.round is None:
            return
        if "cards_set_aside" in r.body:  # a journal from before D16 was re-decided
            rnd = self.round
            rnd.cards, rnd.draws, rnd.doubles = [], [], []
            rnd.held, rnd.reads = None, []
        self.round.closed_at = None  # MBS 5.9: the cards drawn so far stay in the deal
        self._go("reopen")

    def _fold_betting_closed(self, r: Folded) -> None:
        super()._fold_betting_closed(r)
        self.void_gap = None  # the next deal takes cards: what comes now is its own

    def _fold_betting_opened(self, r: Folded) -> None:
        super()._fold_betting_opened(r)
        self.squeeze_waiver, self.late_windows = False, set()

    def _fold_squeeze_declared(self, r: Folded) -> None:
        self.squeeze_waiver = True

    def _fold_insurance_offered_late(self, r: Folded) -> None:
        self.late_windows.add(str(r.body["window"]))

    def _fold_insurance_offered(self, r: Folded) -> None:
        self.insurance_window = r.body["window"]
        self.insurance_offers = list(r.body["offers"])

    def _fold_insurance_closed(self, r: Folded) -> None:
        self.insurance_window, self.insurance_offers = None, []

    def _fold_result_held(self, r: Folded) -> None:
        if self.round is None:
            return
        rnd = self.round
        # A journal from before hold ids: each result_held was a hold of its own.
        hold_id = str(r.body.get("hold_id") or f"{rnd.round_id}:{rnd.holds + 1}")
        if hold_id != rnd.hold_id:
            rnd.holds += 1
        rnd.hold_id = hold_id
        rnd.held = r.body.get("reason", "simultaneous_draw")
        rnd.reads = [(int(n), c) for n, c in r.body.get("reads", [])]
        taken = {n for n, _ in rnd.reads}
        self.carried = [c for c in self.carried if c[1] not in taken]

    def _fold_order_confirmed(self, r: Folded) -> None:
        if self.round is None:
            return
        rnd, swap = self.round, r.body.get("swap")
        if "draws" in r.body:  # the Pit's order may take a carried card of the pair, or not
            rnd.draws = [int(n) for n in r.body["draws"]]
            if self.shoe is not None:  # the Pit's order is the shoe's, for the reveal too
                for n, c in zip(rnd.draws, r.body["cards"], strict=True):
                    self.shoe.record(n, c)
            self.carried = [c for c in self.carried if c[1] not in rnd.draws]
            self.pairs -= set(rnd.draws)
        elif swap:  # a journal from before the order could change the deal
            a, b = (rnd.draws.index(int(x)) for x in str(swap).split(","))
            rnd.draws[a], rnd.draws[b] = rnd.draws[b], rnd.draws[a]
        rnd.cards = [parse_card(c) for c in r.body["cards"]]
        rnd.held = None
        if "draws" in r.body:  # the Pit has set the order: no double waits for it any more
            rnd.doubles = []

    def _fold_deal_reconstructed(self, r: Folded) -> None:
        if self.round is None:
            return
        rnd = self.round
        rnd.cards = [parse_card(c) for c in r.body["cards"]]
        rnd.draws = [int(n) for n in r.body["draws"]]
        rnd.held, rnd.reads, rnd.doubles = None, [], []
        self.carried = [c for c in self.carried if c[1] not in rnd.draws]
        if self.shoe is not None:
            for n, c in zip(rnd.draws, r.body["cards"], strict=True):
                self.shoe.record(n, c)

    def _fold_result(self, r: Folded) -> None:
        rnd = self.round
        if rnd is not None and rnd.round_id == r.round_id:
            self.insurance_window, self.insurance_offers = None, []
            self.void_gap = None
            if r.body.get("status") == "void" and self.shoe is not None and \
                    self.state == DEALING:
                self.void_gap = self.shoe.last_draw_no + 1
            if r.body.get("status") == "void":  # its draws close with it (a pair too)
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
            self.last_settled = (rnd.round_id, list(rnd.draws)) \
                if r.body.get("status") == "valid" else None
        if self.disputed is not None and r.body.get("corrects") == self.disputed["round_id"]:
            self.disputed = None
        super()._fold_result(r)

    def _fold_result_disputed(self, r: Folded) -> None:
        self.disputed = dict(r.body)

    def _fold_result_confirmed(self, r: Folded) -> None:
        self.disputed = None

    def _fold_technical_interruption(self, r: Folded) -> None:
        if self.round is not None and r.body.get("decision") == "pit":
            self.round.interrupted = True

    def _fold_cut_card(self, r: Folded) -> None:
        self.shoe_ending = True

    def _fold_shoe_ended(self, r: Folded) -> None:
        if self.shoe is not None:  # reveal the order so card switching can be checked
            self.awaiting_order[self.shoe.certificate.shuffle_id] = (self.shoe, [])
        self.shoe, self.shoe_id, self.shoe_ending = None, None, False

    def _fold_shuffle_verified(self, r: Folded) -> None:
        sid = r.body["shuffle_id"]
        waited = self.awaiting_order.pop(sid, None)
        if waited is not None and waited[1]:  # its chunks: live (a restart has none)
            newest = [k for k in self.revealed if k != sid][-(REVEALS_KEPT - 1):]
            self.revealed = {**{k: self.revealed[k] for k in newest}, sid: waited}

    def _fold_shuffle_verification_failed(self, r: Folded) -> None:
        self.awaiting_order.pop(r.body["shuffle_id"], None)

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
        return [self._begin({"shoe_id": self.shoe_id}),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True))]

    def close_betting(self) -> list[Effect]:
        closed = self._close()
        rnd = self.round
        assert rnd is not None
        rid = rnd.round_id
        # The gate opens only after "No more bets" (RWS 3.8, MBS 3.2).
        out: list[Effect] = [closed, DeviceCommand("shoe", shoe_proto.LockGate(0, False))]
        carried = list(self.carried)
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
            out.append(self._rec("card", {**placed.as_dict(), "draw_no": draw_no,
                                          "carried": True}, rid))
        d = deal(rnd.cards)
        if d.complete:
            return out + self._settle_or_hold()
        return [*out, self._rec("next_card", {"needed": d.next_card.value}, rid)]

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
        return [self._rec("betting_reopened", {"clause": reset.clause, "by": by,
                                               "cards_kept": kept}, rnd.round_id),
                DeviceCommand("shoe", shoe_proto.LockGate(0, True)),
                Alert(reset.code, reset.clause, detail, rnd.round_id)]

    def new_shoe(self) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"finish the round first (the table is {self.state})")
        return [DeviceCommand("shuffler", shuffler_proto.StartShuffle(0, self.decks))]

    def end_shoe(self, by: str) -> list[Effect]:
        if self.state != IDLE:
            raise CommandRefusedError(f"finish the round first (the table is {self.state})")
        return self._end_shoe(f"ended by {by}")

    # -- device events ----------------------------------------------------------------

    def shuffle_complete(self, msg: shuffler_proto.ShuffleComplete,
                         protocol_version: int = 2) -> list[Effect]:
        """``protocol_version``: of the shuffler's session that delivered it, which says
        which commitment it made (shuffler.md)."""
        cert, findings = certify(self.game, self.decks, msg, protocol_version)
        if cert is None:
            return [self._rec("shuffle_refused", {"shuffle_id": msg.shuffle_id}),
                    *(Alert(f.irregularity.code, f.clause, f.detail) for f in findings)]
        body: dict[str, Any] = {"shuffle_id": cert.shuffle_id, "decks": cert.decks,
                                "commitment": cert.commitment.hex()}
        if cert.protocol_version >= shuffler_proto.COMMITMENT_V3_FROM:
            body["protocol_version"] = cert.protocol_version  # absent: v2's commitment
        return [self._rec("shuffle_certified", body)]

    def shoe_loaded(self, msg: shoe_proto.ShoeLoaded) -> list[Effect]:
        out: list[Effect] = []
        if self.state != IDLE:
            out = self._void(Finding(self.game.irregularity("deck_shortage_or_excess"),
                                     "a shoe was loaded in the middle of a round"))
        shoe, findings = Shoe.load(self.game, self.certificate, msg)
        if shoe is None:
            return [*out, self._rec("shoe_refused", {"cards": msg.cards,
                                                     "deck_set": msg.deck_set}),
                    *(Alert(f.irregularity.code, f.clause, f.detail) for f in findings)]
        shoe_id = f"{self.table_id}-shoe-{shoe.certificate.shuffle_id}"
        return [*out, self._rec("shoe_loaded", {"shoe_id": shoe_id,
                                                "shuffle_id": shoe.certificate.shuffle_id,
                                                "cards": msg.cards, "deck_set": msg.deck_set})]

    def card_drawn(self, msg: shoe_proto.CardDrawn) -> list[Effect]:
        problems = common_proto.out_of_range(msg)
        if problems:  # the driver rejects these first; never trusted here either
            return self.device_fault(msg, "; ".join(problems))
        rid = self.round.round_id if self.round else None
        body = {"draw_no": msg.draw_no, "card": msg.card, "confidence": msg.confidence,
                "deck_set": msg.deck_set, "double_draw": msg.double_draw,
                "face_up": msg.face_up}
        if self.shoe is None:
            unshuffled = self.game.irregularity("not_shuffled")
            return [self._rec("card_drawn", body, rid),
                    Alert(unshuffled.code, unshuffled.clause,
                          f"card {msg.card} drawn with no certified shoe loaded", rid)]
        before = self.shoe.read(msg.draw_no)
        if before == msg.card:
            # Exactly a draw already recorded: a device re-sending what the link handed
            # back after a reset. One card left the shoe, once.
            return [self._rec("draw_repeated", {"draw_no": msg.draw_no, "card": msg.card},
                              rid)]
        expected = self.shoe.last_draw_no + 1
        # D24: one copy too many is a finding about the reads as much as the cards: this
        # read or an earlier one may be wrong. The Pit, who sees the card, decides.
        findings = [f for f in self.shoe.findings(msg)
                    if f.irregularity.code != "deck_shortage_or_excess"]
        doubts = self._doubts(msg, before, expected)
        out: list[Effect] = [self._rec("card_drawn", body, rid)]
        settled = self.last_settled
        if self.state == IDLE and settled is not None and msg.draw_no in settled[1] and \
                before not in (None, UNKNOWN, msg.card):
            return out + self._dispute(settled[0], msg, str(before))
        if not self._wants_cards():
            return out + self._out_of_deal(msg, findings, doubts, expected, rid)
        return out + self._in_deal(msg, findings, doubts, expected, before)

    def _dispute(self, round_id: str, msg: shoe_proto.CardDrawn, first: str) -> list[Effect]:
        """Decision D23: a draw of the round just settled, read again as another card. The
        published result may be wrong, and RWS 5.6 lets it stand only once the next round
        has commenced: so the next round waits until the Pit confirms the result
        (confirm_result) or corrects it (void_settled_round)."""
        pit = self.game.irregularity("unresolved_irregularity")
        body = {"round_id": round_id, "draw_no": msg.draw_no, "first": first,
                "again": msg.card, "confidence": msg.confidence, "clause": pit.clause}
        return [self._rec("result_disputed", body, round_id),
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
        return [self._rec("result_confirmed", {"by": by, "draw_no": d["draw_no"],
                                               "card": d["first"]}, round_id)]

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
        detail = f"corrected by {by}: {reason}"
        payload = correction_result(self.table_id, self.game, self.layout, round_id,
                                    irregular, detail, by, self.clock())
        return [Alert(irregular.code, irregular.clause, f"round {round_id}, already "
                      f"published, is void: {detail}", round_id),
                self._result(correction_round_id(round_id), payload)]

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

    def _in_deal(self, msg: shoe_proto.CardDrawn, findings: list[Finding],
                 doubts: list[str], expected: int, before: str | None) -> list[Effect]:
        rnd = self.round
        assert rnd is not None
        rid = rnd.round_id
        voiding = [f for f in findings if f.irregularity.consequence is Consequence.VOID]
        if voiding:
            return self._void(voiding[0])
        out: list[Effect] = [Alert(f.irregularity.code, f.clause, f.detail, rid)
                             for f in findings]
        reads: list[Read] = [(n, c.code) for n, c in zip(rnd.draws, rnd.cards, strict=True)]
        if before is not None and msg.draw_no not in rnd.draws:
            # A draw of an earlier round, read again differently: that round's result is
            # published; the Pit must know (RWS 5.18), this deal is not affected.
            pit = self.game.irregularity("unresolved_irregularity")
            return [*out, Alert(pit.code, pit.clause, "; ".join(doubts) + ": not a draw of "
                                "this deal; an earlier result may need the Pit's review",
                                rid)]
        if doubts:
            if before is not None:
                reads = [(n, None if n == msg.draw_no else c) for n, c in reads]
            else:
                trusted = self._trusted(msg)
                reads += [(n, None) for n in range(expected, msg.draw_no)]
                reads.append((msg.draw_no, msg.card if trusted else None))
            return out + self._hold_reads(reads, doubts)
        card = parse_card(msg.card)
        try:
            d = deal([*rnd.cards, card])
        except DealError as exc:
            excess = self.game.irregularity("excess_card")
            return [*out, Alert(excess.code, excess.clause, str(exc), rid)]
        if self.insurance_window is not None:
            # IP 5.3: whoever has not bet insurance before the next card forgoes it. The
            # Dealer never closed the window, so it may never have been offered (D15).
            out += [*self._insurance_not_offered(d, card, msg.draw_no, rid),
                    self._rec("insurance_closed", {"window": self.insurance_window,
                                                   "by": "next card drawn"}, rid)]
        placed = d.cards[-1]
        extra = {"double_draw": True} if msg.double_draw else {}
        out.append(self._rec("card", {**placed.as_dict(), "draw_no": msg.draw_no, **extra},
                             rid))
        return out + self._after_card(d)

    def _after_card(self, d: Deal) -> list[Effect]:
        """After a card is dealt: the insurance window, the next card, or the result."""
        assert self.round is not None
        rid = self.round.round_id
        if d.complete:
            return self._settle_or_hold()
        offers = insurance_plus.offers_for_deal(d, squeeze_waiver=self.squeeze_waiver) \
            if self.insurance_offered else []
        if offers:
            return [self._rec("insurance_offered", {
                "window": offers[0].window, "offers": [o.as_dict() for o in offers]}, rid)]
        return [self._rec("next_card", {"needed": d.next_card.value}, rid)]

    def _settle_or_hold(self) -> list[Effect]:
        """A complete deal is settled, unless cards left the shoe together (D17): their
        order is the Pit's to determine (RWS 5.11, MBS 5.8.2), so the result waits."""
        assert self.round is not None
        if not self.round.doubles:
            return self.settle()
        return self.hold()

    def _new_hold_id(self) -> str:
        assert self.round is not None
        return f"{self.round.round_id}:{self.round.holds + 1}"

    def hold(self, hold_id: str | None = None) -> list[Effect]:
        """D17: a complete deal with a double draw waits for the Pit's order."""
        assert self.round is not None
        rnd = self.round
        double = self.game.irregularity("simultaneous_draw")
        draws = ", ".join(str(n) for n in rnd.doubles)
        order = " ".join(f"{n}:{c.code}" for n, c in zip(rnd.draws, rnd.cards, strict=True))
        hold_id = hold_id or self._new_hold_id()
        return [self._rec("result_held", {
                    "hold_id": hold_id,
                    "reason": "simultaneous_draw", "doubles": list(rnd.doubles),
                    "clause": double.clause, "order": order,
                    "reads": [[n, c.code] for n, c in zip(rnd.draws, rnd.cards, strict=True)]},
                    rnd.round_id),
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
        hold_id = hold_id or self._new_hold_id()
        return [self._rec("result_held", {"hold_id": hold_id, "reason": reason,
                                          "clause": pit.clause,
                                          "order": order, "doubles": [],
                                          "reads": [[n, c] for n, c in reads]}, rid),
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
        if rnd is None or self.state != DEALING:
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
        if rnd is None or self.state != DEALING:
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
        out: list[Effect] = [self._rec("order_confirmed", {
            "by": by, "swap": swap, "hold": rnd.hold_id, "cards": [c.code for c in cards[:k]],
            "draws": draws[:k]}, rid)]
        excess = self.game.irregularity("excess_card")
        for card, n in zip(cards[k:], draws[k:], strict=True):
            if n in {m for _, m in self.carried}:
                continue  # already waiting for the next deal
            out += [self._rec("card_carried", {"card": card.code, "draw_no": n,
                                               "position_in_next_deal": 1}, rid),
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
        if rnd is None or shoe is None or self.state != DEALING:
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
        if self.insurance_window is not None and len(parsed) > len(rnd.cards):
            # A card was drawn past the open window (it is what the Pit reconstructs):
            # insurance may not have been offered (IP 5.3, 5.13; decision D15).
            k = len(rnd.cards)
            out += [*self._insurance_not_offered(deal(parsed[:k + 1]), parsed[k], draws[k],
                                                 rnd.round_id),
                    self._rec("insurance_closed", {"window": self.insurance_window,
                                                   "by": "next card drawn"}, rnd.round_id)]
        out.append(self._rec("deal_reconstructed", {
            "by": by, "hold": rnd.hold_id, "cards": [c.code for c in parsed], "draws": draws,
            **({"closed": closed} if closed else {})}, rnd.round_id))
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

    def _check_round(self, round_id: str | None) -> None:
        assert self.round is not None
        if round_id is not None and round_id != self.round.round_id:
            raise CommandRefusedError(f"round {round_id} is not the round in play "
                                      f"({self.round.round_id})")

    @staticmethod
    def _takes(cards: list[Card], complete: bool = True) -> bool:
        """Whether the Table of Play takes exactly these cards in this order."""
        try:
            d = deal(cards)
        except DealError:
            return False
        return len(d.cards) == len(cards) and (d.complete or not complete)

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
            out += [self._rec("card_carried", {
                        "card": c.code if c else None, "draw_no": n,
                        "position_in_next_deal": len(self.carried) + 1,
                        **({"pair_of": n - 1} if pair else {})}, rid),
                    Alert(excess.code, excess.clause,
                          f"card {c.code if c else f'(draw {n}, unread)'} drawn while the "
                          f"table is {where}: it will be card {len(self.carried)} of the "
                          "next deal", rid)]
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
        return [alert, self._rec("insurance_offered_late", {
            "window": self.insurance_window, "clause": irregular.clause}, rid)]

    def close_insurance(self, by: str = "dealer") -> list[Effect]:
        """Insurance Plus: close the open window; the next card is then announced."""
        if self.round is None or self.insurance_window is None:
            raise CommandRefusedError("no insurance window is open")
        rid, window = self.round.round_id, self.insurance_window
        return [self._rec("insurance_closed", {"window": window, "by": by}, rid),
                self._rec("next_card", {"needed": deal(self.round.cards).next_card.value},
                          rid)]

    def declare_squeeze(self, by: str, round_id: str | None = None) -> list[Effect]:
        """IP 3.14: the House let the Seated Player with the highest Bet squeeze (or see
        exposed) the Banker Hand's third card before the Player Hand's is opened; every
        Player's right to insure after the Player Hand's third card is waived for the
        round. An open window after that card closes; none opens later."""
        if not self.insurance_offered:
            raise CommandRefusedError("this table offers no Insurance (IP 4.2.2): there is "
                                      "no right to waive")
        if self.round is None or self.state != DEALING:
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
        out: list[Effect] = [self._rec("squeeze_declared", {"by": by, "clause": "3.14"},
                                       rnd.round_id)]
        if self.insurance_window == insurance_plus.PLAYER_THIRD_CARD:
            out += [self._rec("insurance_closed", {"window": self.insurance_window,
                                                   "by": "squeeze waiver (3.14)"},
                              rnd.round_id),
                    self._rec("next_card", {"needed": d.next_card.value}, rnd.round_id)]
        return out

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

    def cut_card(self, msg: shoe_proto.CutCard) -> list[Effect]:
        rid = self.round.round_id if self.round else None
        out: list[Effect] = [self._rec("cut_card", {"draw_no": msg.draw_no}, rid)]
        if self.round is not None and self.state == DEALING and not self.round.cards and \
                any(i.code == "cut_card_first_card" for i in self.game.irregularities):
            # MBS 3.22.1: table management offers the withdrawal; the round goes on.
            first = self.game.irregularity("cut_card_first_card")
            out += [self._rec(first.code, {"draw_no": msg.draw_no, "clause": first.clause},
                              rid),
                    Alert(first.code, first.clause, "the cutting card came out as the first "
                          "card of this round: in HLGA the Dealer may allow Players to "
                          "withdraw their wagers; the round is completed, then the shoe "
                          "ends (3.22)", rid)]
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
            return [self._rec("shuffle_verified", {"shuffle_id": msg.shuffle_id,
                                                   "cards_checked": check.cards_checked})]
        return [self._rec("shuffle_verification_failed", {"shuffle_id": msg.shuffle_id,
                                                          "findings": len(check.findings)}),
                *[Alert(f.irregularity.code, f.clause, f.detail) for f in check.findings]]

    def shoe_empty(self, msg: shoe_proto.ShoeEmpty) -> list[Effect]:
        out: list[Effect] = []
        if self.round is not None and self.state != IDLE:  # betting open too: no deal
            out += self._void(Finding(self.game.irregularity("insufficient_cards"),
                                      f"the shoe ran out after {msg.draw_no} cards"))
        return out + self._end_shoe("the shoe is empty")

    # -- technical interruption (RWS 5.4, MBS 5.17) --------------------------------------

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
                    self._rec("technical_interruption", {
                        "clause": f"{established.clause}/{none_yet.clause}",
                        "decision": "pit", "detail": detail}, rnd.round_id),
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
                             self._rec("technical_interruption", {
                                 "clause": clause, "decision": "continue", "detail": detail},
                                 rid)]
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
                    self._rec("insurance_offered", {"window": window, "offers": offers},
                              rid)]
        return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                self._rec("next_card", {"needed": d.next_card.value}, rid)]

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

    def _end_shoe(self, why: str) -> list[Effect]:
        shoe, shoe_id = self.shoe, self.shoe_id
        out: list[Effect] = [self._rec("shoe_ended", {"shoe_id": shoe_id, "why": why})]
        if shoe is not None:  # reveal the order so card switching can be checked
            out.append(DeviceCommand("shuffler", shuffler_proto.RequestOrder(
                0, shoe.certificate.shuffle_id)))
        return out

