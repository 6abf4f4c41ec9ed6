"""Shoe validation: a certified shuffle, a shoe bound to it, and every card checked.

What "validated" means for cards (shared/ARCHITECTURE.md), with the clause each check
reports (codes are looked up in the game's own section-5 table, so MBS reports its
numbering):

- the shoe was loaded from a shuffle the shuffler certified: randomness self-check
  passed (not_shuffled: RWS 5.5.5, MBS 5.1), exactly N decks of 52 (deck_shortage_or_excess:
  RWS 5.5.2, MBS 5.1), no foreign cards (card_not_of_set: RWS 5.5.1, MBS 5.1);
- every card drawn is a real card (card_not_of_set), of the deck set loaded
  (card_not_of_set), and no card appears more times than there are decks
  (deck_shortage_or_excess);
- a double draw is reported (simultaneous_draw: RWS 5.11, MBS 5.8); a face-up card too
  (face_up_card: RWS 5.10, MBS 5.6), and play continues;
- at shoe end, the revealed order must match the shuffler's commitment, and the cards
  drawn must be that order's first cards (order_altered for MBS 5.2; for RWS, card
  switching is an incorrect card in the deck, 5.5.2).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from daemon.games.cards import Card, parse_card
from daemon.games.errors import CardCodeError
from daemon.games.model import GameRules, Irregularity
from daemon.round import reveal
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import shuffler as shuffler_proto

UNKNOWN = "??"  # a draw that left the shoe with no trustworthy read


def parse_or_none(code: str) -> Card | None:
    try:
        return parse_card(code)
    except CardCodeError:
        return None


@dataclass(frozen=True)
class Finding:
    """An irregularity found in the cards, with what exactly was seen."""

    irregularity: Irregularity
    detail: str

    @property
    def clause(self) -> str:
        return self.irregularity.clause


@dataclass(frozen=True)
class OrderCheck:
    """A revealed order checked: the findings, and how many drawn cards were compared with
    it (a draw without a trustworthy read, "??", compares nothing and is not counted)."""

    findings: list[Finding]
    cards_checked: int


@dataclass(frozen=True)
class Certificate:
    shuffle_id: int
    decks: int
    commitment: bytes
    # The protocol version of the shuffler's session when it committed: it says which
    # commitment (shuffler.md) the reveal is checked against. Journals older than v3
    # commitments certified none but v2's.
    protocol_version: int = 2


def _inventory_detail(inventory: tuple[int, ...], decks: int) -> str:
    parts = []
    for code, n in zip(shuffler_proto.INVENTORY_ORDER, inventory, strict=True):
        if n < decks:
            parts.append(f"missing {decks - n} x {code}")
        elif n > decks:
            parts.append(f"{n - decks} extra {code}")
    return "; ".join(parts)


def certify(game: GameRules[Any], decks: int, done: shuffler_proto.ShuffleComplete,
            protocol_version: int = 2) -> tuple[Certificate | None, list[Finding]]:
    """A certificate for the shuffle, made in a session of ``protocol_version``, or the
    findings that refuse it."""
    findings = []
    if not done.rng_ok:
        findings.append(Finding(game.irregularity("not_shuffled"),
                                f"shuffle {done.shuffle_id}: the shuffler's randomness "
                                "self-check failed"))
    if done.foreign_cards:
        findings.append(Finding(game.irregularity("card_not_of_set"),
                                f"shuffle {done.shuffle_id}: {done.foreign_cards} card(s) "
                                "not of the set"))
    if done.decks != decks:
        findings.append(Finding(game.irregularity("deck_shortage_or_excess"),
                                f"shuffle {done.shuffle_id} is of {done.decks} decks; the "
                                f"table plays {decks}"))
    elif done.inventory != (decks,) * 52:
        findings.append(Finding(game.irregularity("deck_shortage_or_excess"),
                                f"shuffle {done.shuffle_id}: "
                                f"{_inventory_detail(done.inventory, decks)}"))
    if findings:
        return None, findings
    return Certificate(done.shuffle_id, done.decks, done.commitment, protocol_version), []


@dataclass
class Shoe:
    """A shoe loaded from a certified shuffle; checks each card as it is drawn."""

    game: GameRules[Any]
    certificate: Certificate
    deck_set: int
    drawn: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    last_draw_no: int = 0

    @classmethod
    def load(cls, game: GameRules[Any], certificate: Certificate | None,
             loaded: shoe_proto.ShoeLoaded) -> tuple[Shoe | None, list[Finding]]:
        if certificate is None:
            return None, [Finding(game.irregularity("not_shuffled"),
                                  "the shoe was loaded without a certified shuffle")]
        expected = certificate.decks * 52
        if loaded.cards != expected:
            return None, [Finding(game.irregularity("deck_shortage_or_excess"),
                                  f"the shoe holds {loaded.cards} cards; shuffle "
                                  f"{certificate.shuffle_id} certified {expected}")]
        return cls(game, certificate, loaded.deck_set), []

    def read(self, draw_no: int) -> str | None:
        """The card recorded for a draw number; "??" where none was read; None if that
        draw has not happened."""
        return self.drawn[draw_no - 1] if 1 <= draw_no <= len(self.drawn) else None

    def findings(self, msg: shoe_proto.CardDrawn) -> list[Finding]:
        """What one drawn card shows, before it is recorded (no state changes). Gaps and
        repeats of draw numbers are the table's to judge (they hold a result)."""
        g = self.game
        findings = []
        try:
            card = parse_card(msg.card)
        except CardCodeError:
            card = None  # unreadable: the table holds the round for the Pit
        if card is not None and msg.deck_set != self.deck_set:
            findings.append(Finding(g.irregularity("card_not_of_set"),
                                    f"draw {msg.draw_no}: {msg.card} has the back of deck set "
                                    f"{msg.deck_set:#x}; the shoe is set {self.deck_set:#x}"))
        if card is not None and self.counts[card.code] + 1 > self.certificate.decks:
            findings.append(Finding(g.irregularity("deck_shortage_or_excess"),
                                    f"draw {msg.draw_no}: {card.code} seen "
                                    f"{self.counts[card.code] + 1} times in a "
                                    f"{self.certificate.decks}-deck shoe"))
        if msg.double_draw:
            findings.append(Finding(g.irregularity("simultaneous_draw"),
                                    f"draw {msg.draw_no}: two cards left the shoe together"))
        if msg.face_up:
            findings.append(Finding(g.irregularity("face_up_card"),
                                    f"draw {msg.draw_no}: {msg.card} left the shoe face up"))
        return findings

    def record(self, draw_no: int, code: str) -> None:
        """Draw ``draw_no`` was ``code`` ("??": unknown). Draws skipped are unknown until
        the Pit supplies them; a draw recorded again (the Pit's reconstruction) replaces
        what was there."""
        while len(self.drawn) < draw_no:
            self.drawn.append(UNKNOWN)
        old = self.drawn[draw_no - 1]
        if old in self.counts:
            self.counts[old] -= 1
        self.drawn[draw_no - 1] = code
        with contextlib.suppress(CardCodeError):
            self.counts[parse_card(code).code] += 1
        self.last_draw_no = max(self.last_draw_no, draw_no)

    def check_card(self, msg: shoe_proto.CardDrawn) -> list[Finding]:
        """Findings for one drawn card, then the card recorded (whatever they are)."""
        findings = self.findings(msg)
        expected = self.last_draw_no + 1
        if msg.draw_no != expected:
            findings.insert(0, Finding(self.game.irregularity("unresolved_irregularity"),
                                       f"draw {msg.draw_no} follows draw {expected - 1}"))
        if parse_or_none(msg.card) is None:
            findings.insert(0, Finding(self.game.irregularity("unresolved_irregularity"),
                                       f"draw {msg.draw_no}: the reader saw {msg.card!r} "
                                       f"(confidence {msg.confidence}%)"))
        self.record(msg.draw_no, msg.card)
        return findings

    def _order_irregularity(self) -> Irregularity:
        code = "order_altered" if any(
            i.code == "order_altered" for i in self.game.irregularities) else \
            "deck_shortage_or_excess"
        return self.game.irregularity(code)

    def recanted(self, verified: Iterable[shuffler_proto.OrderChunk],
                 again: shuffler_proto.OrderChunk) -> list[Finding]:
        """A chunk after this shoe's order was verified from ``verified``: a finding if it
        reveals another order (the shuffler says two different things about a shoe it
        committed to), none if it repeats the order."""
        cid = self.certificate.shuffle_id
        got = reveal.assemble(cid, [*verified, again])
        if not got.contradictions:
            return []
        return [Finding(self._order_irregularity(),
                        f"shuffle {cid}: the shuffler revealed another order after shuffle "
                        f"{cid} was verified: " + "; ".join(got.contradictions[:5]))]

    def verify_order(self, chunks: Iterable[shuffler_proto.OrderChunk]) -> OrderCheck:
        """At shoe end: the revealed order against the certified shoe, the commitment and
        the cards drawn. Nothing is verified before the order is known to be the whole
        certified shoe: a shuffler that committed to 4 cards and claimed 416 in its
        inventory would otherwise have 4 cards checked and the rest taken on trust (v2's
        commitment does not bind the number of cards; the host binds it here, and v3's
        binds the decks and the total too)."""
        irregularity = self._order_irregularity()
        cid, decks = self.certificate.shuffle_id, self.certificate.decks

        def failed(detail: str) -> OrderCheck:
            return OrderCheck([Finding(irregularity, f"shuffle {cid}: {detail}")], 0)

        got = reveal.assemble(cid, chunks)
        expected = decks * 52
        if got.total is not None and got.total != expected:
            return failed(f"the revealed order has {got.total} cards; the shuffle was "
                          f"certified as {decks} decks ({expected} cards)")
        if got.contradictions:
            return failed("the shuffler revealed two different orders: "
                          + "; ".join(got.contradictions[:5]))
        if got.order is None or got.nonce is None:
            return failed(f"the revealed order is incomplete ({expected - got.missing} "
                          f"of {expected} cards)" if got.total is not None else
                          "the revealed order is incomplete (0 cards)")
        order = list(got.order)
        if shuffler_proto.commitment_for(self.certificate.protocol_version, cid, decks,
                                         got.nonce, order) != self.certificate.commitment:
            return failed("the revealed order does not match the commitment made before "
                          "dealing")
        if shuffler_proto.inventory_of(order) != (decks,) * 52:
            return failed(f"the committed order is not {decks} decks of 52: "
                          f"{_inventory_detail(shuffler_proto.inventory_of(order), decks)}")
        if len(self.drawn) > len(order):
            return failed(f"{len(self.drawn)} draws from a shuffle of {len(order)} cards")
        compared = [(i, got_, want) for i, (got_, want) in
                    enumerate(zip(self.drawn, order[:len(self.drawn)], strict=True))
                    if got_ != UNKNOWN]
        wrong = [f"draw {i + 1}: {got_} where the shuffle put {want}"
                 for i, got_, want in compared if got_ != want]
        if wrong:
            return failed("cards off the committed order: " + "; ".join(wrong[:10])
                          + (f" (+{len(wrong) - 10} more)" if len(wrong) > 10 else ""))
        return OrderCheck([], len(compared))
