"""The journal's records, typed: one frozen dataclass per kind a table journals, in one
registry (``KINDS``), each serialising itself for the journal (``body``) and read back
from it (``read``) through its upcasters.

- A kind is folded by the tables that write it (lifecycle.py, ``_fold_<kind>``) unless
  it is declared ``FOLDED = False`` (journal-only: it changes no table state, e.g.
  ``next_card``); a table that declares a kind it writes without a fold for it is
  refused when its class is made (``RoundLifecycle.__init_subclass__``), and so is a
  fold named after no kind.
- A kind the registry does not know is refused by the fold, live and in replay
  (``UnknownRecordError``): only the kinds the service journals for itself (``SERVICE``)
  and the devices' reports it journals as they come are passed over.
- Reading is as lenient as the folds always were: a field no fold needs has a default,
  so a body an earlier release wrote without it still reads.
- A record's body is what the journal has held for its kind since its current version:
  the field names are the body's keys, fields marked ``OMIT`` are left out at their
  default (as the bodies always left them out). A result's record is the journal's own
  since version 2 (before, it was the published payload): the wire's names are not its.
- A body in an earlier shape is brought to the current one by upcasters
  (``upcast_v<N>_v<N+1>``, keyed by kind and version, as the eventsourcing library
  does), before the record is made: a fold sees the current shape only. Bodies carry
  no version of their own (the journal's bytes stay as they were), so each kind with
  more than one version says how to tell its versions apart (``_VERSION_OF``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from daemon.errors import TabledError
from daemon.results import VALID, CorrectionFacts, RoundFacts
from firmware_protocols import shoe, shuffler, tumbler


class RecordError(TabledError, ValueError):
    """A journal record this release cannot read: never silently ignored."""


class UnknownRecordError(RecordError):
    """A journal record of a kind no part of the daemon writes."""


# A field left out of the body at its default, as its kind's body always left it out.
OMIT = {"omit": True}


@dataclass(frozen=True)
class RoundRecord:
    """A record a table decides on: journalled, published on the events topic, folded."""

    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1  # of the body's shape; earlier ones are upcast (below)
    FOLDED: ClassVar[bool] = True  # False: journal-only, no table state follows from it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.KIND in KINDS or cls.KIND in SERVICE:
            raise TypeError(f"record kind {cls.KIND!r} is declared twice")
        KINDS[cls.KIND] = cls

    def body(self) -> dict[str, Any]:
        """The record's body as the journal holds it."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
                else f.default
            if f.metadata.get("omit") and value == default:
                continue
            out[f.name] = value
        return out

    @classmethod
    def read(cls, body: Mapping[str, Any]) -> Self:
        """The record a journalled body holds, brought to the current shape."""
        return cls.of(upcast(cls.KIND, body))

    @classmethod
    def of(cls, current: Mapping[str, Any]) -> Self:
        """The record a body of the current shape holds."""
        names = _names(cls)
        try:
            return cls(**{k: v for k, v in current.items() if k in names})
        except TypeError as exc:  # a field every body of the kind has is missing
            raise RecordError(f"a {cls.KIND} record this release cannot read "
                              f"({exc}): {dict(current)}"[:300]) from exc


_NAMES: dict[type[RoundRecord], frozenset[str]] = {}


def _names(cls: type[RoundRecord]) -> frozenset[str]:
    """A kind's field names (looked up once: a restart reads every record since the checkpoint)."""
    if cls not in _NAMES:
        _NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return _NAMES[cls]


KINDS: dict[str, type[RoundRecord]] = {}
Kinds = tuple[type[RoundRecord], ...]  # the kinds a part of a table writes

# Kinds the service journals for itself (daemon/service.py, daemon/security/authority.py), which no
# table folds; and kinds earlier releases journalled that a journal may still hold.
SERVICE = frozenset({
    "started", "journal_started", "journal_recovered", "device", "reply", "alert",
    "command", "command_refused", "config_reloaded", "config_reload_refused",
    "mqtt_connected", "mqtt_disconnected", "card_out_of_round",
})


def device_report(kind: str) -> bool:
    """A device's report the service journals as it came (``{device}_{message}``)."""
    return kind in _DEVICE_REPORTS


_DEVICE_REPORTS = frozenset(f"{cat.device}_{cls.NAME}"
                            for cat in (shoe.CATALOGUE, shuffler.CATALOGUE, tumbler.CATALOGUE)
                            for cls in cat.by_id.values())


def kind_of(kind: str) -> type[RoundRecord] | None:
    """The record class of ``kind``; None for a kind journalled by the service; else
    UnknownRecordError (a misspelled kind, or a journal of another program)."""
    cls = KINDS.get(kind)
    if cls is None and kind not in SERVICE and not device_report(kind):
        raise UnknownRecordError(f"journal record of unknown kind {kind!r}")
    return cls


# -- the round (lifecycle.py) ---------------------------------------------------------------


@dataclass(frozen=True)
class BettingOpened(RoundRecord):
    KIND = "betting_opened"
    # Baccarat: the shoe the round is dealt from.
    shoe_id: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class BettingClosed(RoundRecord):
    KIND = "betting_closed"


@dataclass(frozen=True)
class Result(RoundRecord):
    """A round's result, or the Pit's correction of a published one, as the table folds
    it. What was published for it (daemon/mqtt/wire/result.py, correction.py) is built
    once from the same facts and stored, sealed, with the journal's messages; this is the
    journal's own record of it, in its own names, so that a field renamed on the wire
    leaves the journal as it is (tests/unit/test_wire_rename.py)."""

    KIND = "result"
    VERSION = 2  # version 1, before issue 27: the published payload (upcast_result_v1_v2)
    valid: bool  # False: a void round, or a correction (which voids the round it names)
    dice: list[int] | None = field(default=None, metadata=OMIT)  # the throw's (Tai Sai)
    voids: str | None = field(default=None, metadata=OMIT)  # a correction: the round it voids

    @classmethod
    def of_facts(cls, facts: RoundFacts | CorrectionFacts) -> Result:
        """The record of a result the table decided on (daemon/results.py)."""
        if isinstance(facts, CorrectionFacts):
            return cls(False, voids=facts.corrects)
        return cls(facts.status == VALID, None if facts.dice is None else list(facts.dice))


@dataclass(frozen=True)
class Checkpoint(RoundRecord):
    """The table's folded state (checkpoint.py, which reads its own formats)."""

    KIND = "checkpoint"
    state: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return self.state

    @classmethod
    def of(cls, current: Mapping[str, Any]) -> Self:
        return cls(dict(current))


# -- shoe custody (shoe_custody.py) ----------------------------------------------------------


@dataclass(frozen=True)
class ShuffleCertified(RoundRecord):
    KIND = "shuffle_certified"
    shuffle_id: int
    decks: int
    commitment: str  # hex
    protocol_version: int = field(default=2, metadata=OMIT)  # absent: v2's commitment (shuffler.md)


@dataclass(frozen=True)
class ShuffleRefused(RoundRecord):
    KIND = "shuffle_refused"
    shuffle_id: int = 0


@dataclass(frozen=True)
class ShoeRefused(RoundRecord):
    KIND = "shoe_refused"
    cards: int = 0
    deck_set: int = 0


@dataclass(frozen=True)
class ShoeLoaded(RoundRecord):
    KIND = "shoe_loaded"
    shoe_id: str
    shuffle_id: int
    cards: int
    deck_set: int


@dataclass(frozen=True)
class CardDrawn(RoundRecord):
    """A draw as the shoe reported it, trusted or not."""

    KIND = "card_drawn"
    draw_no: int
    card: str
    confidence: int = 0
    deck_set: int = 0
    double_draw: bool = False
    face_up: bool = False


@dataclass(frozen=True)
class DrawRepeated(RoundRecord):
    """Exactly a draw already recorded, sent again: one card left the shoe, once."""

    KIND = "draw_repeated"
    FOLDED = False
    draw_no: int = 0
    card: str = ""


@dataclass(frozen=True)
class CardCarried(RoundRecord):
    KIND = "card_carried"
    card: str | None  # None: its read is not trusted
    draw_no: int
    position_in_next_deal: int = 0
    pair_of: int | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class CutCard(RoundRecord):
    KIND = "cut_card"
    draw_no: int = 0


@dataclass(frozen=True)
class CutCardFirstCard(RoundRecord):
    """MBS 3.22.1: named after its irregularity's code."""

    KIND = "cut_card_first_card"
    FOLDED = False
    draw_no: int = 0
    clause: str = ""


@dataclass(frozen=True)
class ShoeEnded(RoundRecord):
    KIND = "shoe_ended"
    shoe_id: str | None = None
    why: str = ""


@dataclass(frozen=True)
class ShuffleVerified(RoundRecord):
    KIND = "shuffle_verified"
    shuffle_id: int
    cards_checked: int = 0


@dataclass(frozen=True)
class ShuffleVerificationFailed(RoundRecord):
    KIND = "shuffle_verification_failed"
    shuffle_id: int
    findings: int = 0


# -- the baccarat round (baccarat.py) ----------------------------------------------------------


@dataclass(frozen=True)
class CardDealt(RoundRecord):
    """A card dealt into the round's deal."""

    KIND = "card"
    card: str
    hand: str
    position: int
    draw_no: int
    double_draw: bool = field(default=False, metadata=OMIT)
    carried: bool = field(default=False, metadata=OMIT)


@dataclass(frozen=True)
class NextCard(RoundRecord):
    KIND = "next_card"
    FOLDED = False
    needed: str = ""


@dataclass(frozen=True)
class BettingReopened(RoundRecord):
    """MBS 5.9 (D16): betting reopens in the same round; the cards drawn stay in the deal."""

    KIND = "betting_reopened"
    VERSION = 2
    clause: str = ""
    by: str = ""
    cards_kept: list[str] = field(default_factory=list)
    # Version 1, before D16: the round's cards were set aside and its deal started again.
    deal_restarted: bool = field(default=False, metadata=OMIT)


# -- insurance windows (insurance.py) --------------------------------------------------------


@dataclass(frozen=True)
class InsuranceOffered(RoundRecord):
    KIND = "insurance_offered"
    window: str
    offers: list[dict[str, Any]]


@dataclass(frozen=True)
class InsuranceOfferedLate(RoundRecord):
    KIND = "insurance_offered_late"
    window: str
    clause: str = ""


@dataclass(frozen=True)
class InsuranceClosed(RoundRecord):
    KIND = "insurance_closed"
    window: str = ""
    by: str = ""


@dataclass(frozen=True)
class SqueezeDeclared(RoundRecord):
    KIND = "squeeze_declared"
    by: str = ""
    clause: str = ""


# -- the Pit's holds (pit_holds.py) -----------------------------------------------------------


@dataclass(frozen=True)
class ResultHeld(RoundRecord):
    KIND = "result_held"
    VERSION = 2
    hold_id: str | None = None  # None: version 1, before holds had ids
    reason: str = "simultaneous_draw"
    doubles: list[int] = field(default_factory=list)
    clause: str = ""
    order: str = ""
    reads: list[list[Any]] = field(default_factory=list)  # [draw_no, card or None]


@dataclass(frozen=True)
class OrderConfirmed(RoundRecord):
    KIND = "order_confirmed"
    VERSION = 2
    by: str = ""
    swap: str | None = None
    hold: str | None = None
    cards: list[str] = field(default_factory=list)
    draws: list[int] | None = None  # None: version 1, a swap of the round's own draws


@dataclass(frozen=True)
class DealReconstructed(RoundRecord):
    KIND = "deal_reconstructed"
    VERSION = 2
    by: str = ""
    hold: str | None = None  # None: version 1, before holds had ids
    cards: list[str] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)
    # Leading unread draws the Pit says were not this deal's.
    closed: list[int] = field(default_factory=list, metadata=OMIT)


@dataclass(frozen=True)
class ResultDisputed(RoundRecord):
    KIND = "result_disputed"
    round_id: str
    draw_no: int
    first: str
    again: str = ""
    confidence: int = 0
    clause: str = ""


@dataclass(frozen=True)
class ResultConfirmed(RoundRecord):
    KIND = "result_confirmed"
    by: str = ""
    draw_no: int = 0
    card: str = ""


@dataclass(frozen=True)
class TechnicalInterruption(RoundRecord):
    KIND = "technical_interruption"
    clause: str = ""
    decision: str = ""  # "continue" | "pit"
    detail: str = ""


# -- Tai Sai (tai_sai.py, throw_holds.py) ---------------------------------------------------


@dataclass(frozen=True)
class AwaitingTumble(RoundRecord):
    KIND = "awaiting_tumble"
    FOLDED = False


@dataclass(frozen=True)
class TumblerArmed(RoundRecord):
    KIND = "tumbler_armed"


@dataclass(frozen=True)
class TumblerActivated(RoundRecord):
    KIND = "tumbler_activated"
    source: int
    armed: bool


@dataclass(frozen=True)
class Tumble(RoundRecord):
    KIND = "tumble"
    count: int


@dataclass(frozen=True)
class Dice(RoundRecord):
    KIND = "dice"
    dice: list[int]
    tilt: list[int]
    flat: list[bool]
    confidence: int = 100
    tumbles: int = 0
    device_tumbles: int | None = None
    activated: bool = True
    armed: bool = True


@dataclass(frozen=True)
class ThrowHeld(RoundRecord):
    KIND = "throw_held"
    hold_id: str
    clause: str = ""
    why: str = ""


@dataclass(frozen=True)
class ThrowAgain(RoundRecord):
    KIND = "throw_again"
    by: str = ""
    hold: str | None = None


# -- upcasters -----------------------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def upcast_betting_reopened_v1_v2(body: dict[str, Any]) -> dict[str, Any]:
    """Before decision D16 a reset of the dealing device set the round's cards aside and
    its deal started again; since, the cards stay in the deal (``cards_kept``)."""
    rest = {k: v for k, v in body.items() if k != "cards_set_aside"}
    return {**rest, "cards_kept": [], "deal_restarted": True}


def upcast_result_v1_v2(body: dict[str, Any]) -> dict[str, Any]:
    """Before issue 27 the journal's result record was the payload published for it (a
    result or a correction, of contract v1 or v2): read here by the names it was
    published under then, which old journals keep whatever the wire calls them now."""
    out: dict[str, Any] = {"valid": body.get("status", VALID) == VALID}
    if body.get("dice") is not None:
        out["dice"] = [int(d) for d in body["dice"]]
    if body.get("corrects") is not None:  # only a correction names what it corrects
        out["voids"] = str(body["corrects"])
    return out


def upcast_result_held_v1_v2(body: dict[str, Any]) -> dict[str, Any]:
    """Before issue 23 a hold had no id of its own: each result_held was a hold of its own
    (numbered by the fold, which alone knows the round's holds)."""
    return {"hold_id": None, **body}


def upcast_order_confirmed_v1_v2(body: dict[str, Any]) -> dict[str, Any]:
    """Before the Pit's order could change the deal it only swapped two cards of it: no
    ``draws`` (the fold swaps the round's own)."""
    return {**body, "draws": None}


def upcast_deal_reconstructed_v1_v2(body: dict[str, Any]) -> dict[str, Any]:
    """Before issue 23 a reconstruction named no hold: it answered the one open."""
    return {**body, "hold": None}


UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("deal_reconstructed", 1): upcast_deal_reconstructed_v1_v2,
    ("betting_reopened", 1): upcast_betting_reopened_v1_v2,
    ("result_held", 1): upcast_result_held_v1_v2,
    ("result", 1): upcast_result_v1_v2,
    ("order_confirmed", 1): upcast_order_confirmed_v1_v2,
}
_VERSION_OF: dict[str, Callable[[Mapping[str, Any]], int]] = {
    "betting_reopened": lambda b: 1 if "cards_set_aside" in b else 2,
    "result_held": lambda b: 1 if "hold_id" not in b else 2,
    "result": lambda b: 1 if "valid" not in b else 2,
    "order_confirmed": lambda b: 1 if "draws" not in b else 2,
    "deal_reconstructed": lambda b: 1 if "hold" not in b else 2,
}


def upcast(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` brought from the version it was written in to its kind's current one (a
    body of the current version is returned as it is, never changed)."""
    if kind not in _VERSION_OF:  # one version only: the current
        return body if isinstance(body, dict) else dict(body)
    current = dict(body)
    version = _VERSION_OF[kind](body)
    latest = KINDS[kind].VERSION if kind in KINDS else 1
    while version < latest:
        current = UPCASTERS[(kind, version)](current)
        version += 1
    return current


def check_upcasters() -> None:
    """Every kind past version 1 has a step from each earlier version (at import)."""
    for kind, cls in KINDS.items():
        missing = [v for v in range(1, cls.VERSION) if (kind, v) not in UPCASTERS]
        if missing or (cls.VERSION > 1) != (kind in _VERSION_OF):
            raise TypeError(f"record kind {kind!r} (version {cls.VERSION}) lacks upcasters "
                            f"from versions {missing} or a way to tell its versions apart")


check_upcasters()
