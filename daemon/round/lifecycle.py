"""The round lifecycle every table shares (transitions):

    idle --open_betting--> betting_open --close_betting--> <play> --(result|void)--> idle

``<play>`` is "dealing" for baccarat and "tumbling" for Tai Sai.

One interpreter of the journal (docs/architecture.md, "The fold"): a table's state
changes only by folding a journal record. A command or device message *decides* which
records follow from it; each is folded as it is made (``_rec``, ``_result``), and a
restart folds the same records read back from the journal (``replay``). What a record
means is therefore written once, in the table that writes it; what it holds is its
typed record (records.py), which refuses a kind nothing writes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from transitions import Machine

from daemon.games.cards import Card
from daemon.games.model import GameRules, Irregularity
from daemon.results import (
    VALID,
    VOID,
    CorrectionFacts,
    RoundFacts,
    correction_result,
    correction_round_id,
)
from daemon.round import checkpoint, records
from daemon.round.effects import (
    AS_RECORDED,
    Alert,
    CommandRefusedError,
    Effect,
    Publishes,
    Record,
    RoundResult,
)
from daemon.round.records import RoundRecord
from firmware_protocols.wire import Message

IDLE, BETTING = "idle", "betting_open"
# How many published rounds a Pit correction can still reach (about a week of play).
SETTLED_KEPT = 10_000


@dataclass
class RoundData:
    round_id: str
    opened_at: float
    closed_at: float | None = None
    cards: list[Card] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)  # each card's draw number, in order
    doubles: list[int] = field(default_factory=list)  # draws the shoe flagged double
    # A result held for the Pit: "simultaneous_draw" (D17) or "reads" (a draw without a
    # trustworthy read), with every draw of the round as [draw_no, card or None].
    held: str | None = None
    reads: list[tuple[int, str | None]] = field(default_factory=list)
    # Each hold has its own id (RoundLifecycle.hold_id), which the Pit's answer names, so that a
    # second answer to one hold (a redelivered result_held answered twice) is refused.
    hold_id: str | None = None
    holds: int = 0
    # Restarted with the outcome depending on cards the table cannot trust: the Pit's
    # reconstruction decides between 5.4.1 and 5.4.2 (RWS 5.4).
    interrupted: bool = False


R_co = TypeVar("R_co", bound=RoundRecord, covariant=True)


class Folded(Generic[R_co]):
    """A journal record as the fold sees it, live or replayed: its typed record, and the
    body it was read from (brought to the current shape) for the folds that keep it."""

    __slots__ = ("at", "body", "kind", "record", "round_id")

    def __init__(self, record: R_co, body: dict[str, Any], round_id: str | None,
                 at: float) -> None:
        self.record, self.body, self.round_id, self.at = record, body, round_id, at
        self.kind = record.KIND

    @staticmethod
    def read(kind: str, body: Mapping[str, Any], round_id: str | None,
             at: float) -> Folded[RoundRecord] | None:
        """A journalled record; None for a kind the service journals for itself (no
        table folds it); UnknownRecordError for a kind nothing writes."""
        cls = records.kind_of(kind)
        if cls is None:
            return None
        current = records.upcast(kind, body)  # as journalled, in the current shape
        return Folded(cls.of(current), current, round_id, at)


class RoundLifecycle(ABC):
    PLAY: ClassVar[str]
    # The kinds of record each part writes; each that is folded has its _fold_<kind> in
    # the part (checked when the class is made, __init_subclass__).
    RECORDS: ClassVar[records.Kinds] = (
        records.BettingOpened, records.BettingClosed, records.Result, records.Checkpoint)
    # A hold's id is its round's id and its number in that round, so that an answer names
    # one hold, and an answer to an earlier hold is known as answered. Each table keeps
    # the separator its journals and published payloads have always carried (baccarat
    # "<round_id>:<n>", Tai Sai "<round_id>/hold-<n>"); both are read as they are.
    HOLD_SEP: ClassVar[str]
    state: str  # set by transitions

    def __init__(self, table_id: str, game: GameRules[Any], layout: str,
                 clock: Callable[[], float], new_round_id: Callable[[], str]) -> None:
        """``clock`` and ``new_round_id`` come from outside: the core does no I/O, reads
        no clock and draws no random numbers of its own."""
        game.check_layout(layout)
        self.table_id, self.game, self.layout = table_id, game, layout
        self.clock = clock
        self.new_round_id = new_round_id
        self.round: RoundData | None = None
        # Published results the Pit may still correct: round_id -> status ("valid"/"void").
        self.published: OrderedDict[str, str] = OrderedDict()
        self.machine = Machine(model=self, states=[IDLE, BETTING, self.PLAY], initial=IDLE,
                               auto_transitions=False, transitions=[
                                   ["to_betting", IDLE, BETTING],
                                   ["to_play", BETTING, self.PLAY],
                                   ["reopen", self.PLAY, BETTING],  # MBS 5.9
                                   ["to_idle", [BETTING, self.PLAY], IDLE],
                               ])

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse, at import, a fold named after no kind this table writes, and a kind it
        writes that changes its state but has no fold."""
        super().__init_subclass__(**kwargs)
        kinds = {r.KIND: r for c in cls.__mro__ for r in c.__dict__.get("RECORDS", ())}
        for name in cls.__dict__:
            kind = name.removeprefix("_fold_")
            if name.startswith("_fold_") and (kind not in kinds or not kinds[kind].FOLDED):
                raise TypeError(f"{cls.__name__}.{name} folds no kind it writes (declared "
                                f"in RECORDS, daemon/round/records.py)")
        for kind, r in kinds.items():
            if r.FOLDED and not hasattr(cls, f"_fold_{kind}"):
                raise TypeError(f"{cls.__name__} writes {kind!r} with no _fold_{kind} (a "
                                "kind that changes no state is declared FOLDED = False)")
        cls._kinds = frozenset(kinds)

    _kinds: ClassVar[frozenset[str]]

    def _go(self, trigger: str) -> None:
        self.machine.events[trigger].trigger(self)

    # -- what a table declares to the service -------------------------------------------

    def device_handlers(self) -> dict[type[Message], Callable[[Any], list[Effect]]]:
        """The device messages this table acts on, each with its handler."""
        return {}

    # Device messages journalled as they came (tamper, doors, faults), not acted on.
    RECORDED: ClassVar[tuple[type[Message], ...]] = ()

    def commands(self, by: str, args: dict[str, str]
                 ) -> dict[str, Callable[[], list[Effect]]]:
        """The commands this table takes, bound to who gave them and their arguments."""
        def void() -> list[Effect]:
            self.answering(args.get("hold"), required=False)
            return self.void_round(args.get("reason", ""), by,
                                   args.get("irregularity", "unresolved_irregularity"))

        return {"open_betting": self.open_betting, "close_betting": self.close_betting,
                "void_round": void,
                "status": lambda: [],
                "void_settled_round": lambda: self.void_settled_round(
                    by, args.get("round_id", ""), args.get("reason", ""),
                    args.get("irregularity"))}

    @abstractmethod
    def open_betting(self) -> list[Effect]:
        """Each game's own: what opening or closing betting means at its table."""

    @abstractmethod
    def close_betting(self) -> list[Effect]:
        """Each game's own: what opening or closing betting means at its table."""

    @abstractmethod
    def void_round(self, reason: str, by: str,
                   code: str = "unresolved_irregularity") -> list[Effect]:
        """Each game's own: the Pit voids the round in play under ``code``'s clause."""

    def device_ready(self, device: str) -> list[Any]:
        return []

    def command_answered(self, device: str, msg: Message) -> list[Effect]:
        """A device accepted a command this table sent (e.g. the tumbler confirmed an Arm)."""
        return []

    def events_lost(self, device: str, first: int, last: int) -> list[Effect]:
        """Events ``first``-``last`` of ``device`` never arrived (protocol version 3 numbers
        them): an alert. A table whose round depends on what they may have said holds that
        round for the Pit, as it holds a skipped draw: never a guess."""
        count = last - first + 1
        return [Alert("device_events_lost", "",
                      f"{count} event(s) of the {device} never arrived (its numbers "
                      f"{first}-{last}): what they said is unknown",
                      self.round.round_id if self.round else None)]

    def device_fault(self, msg: Message, detail: str) -> list[Effect]:
        """A device message with a field outside its documented range (the driver checked
        it against firmware_protocols' LIMITS): journalled as an alert with the raw frame.
        A table whose round depends on the message sends that round to the Pit."""
        return [Alert("device_value_out_of_range", "", detail,
                      self.round.round_id if self.round else None)]

    # -- the fold -----------------------------------------------------------------------

    def fold(self, r: Folded[RoundRecord]) -> None:
        """Apply one journal record to the table: the only way its state changes. A kind
        of another table's (its journal was another game's) changes nothing here."""
        if r.record.FOLDED and r.kind in self._kinds:
            getattr(self, f"_fold_{r.kind}")(r)

    def replay(self, records: Iterable[Any]) -> None:
        """A restart: fold the records given, in order (JournalRecord or alike): the
        journal from its latest checkpoint on (Journal.records_for_recovery).
        A kind nothing writes is refused (UnknownRecordError), never passed over."""
        for r in records:
            folded = Folded.read(r.kind, r.body, r.round_id, r.at)
            if folded is not None:
                self.fold(folded)

    @abstractmethod
    def technical_interruption(self) -> list[Effect]:
        """Each game's own clause for the round open when the table stopped (RWS 5.4,
        MBS 5.17, Tai Sai 5.4), decided from the folded state after ``replay``; no round
        open: nothing. Called by recovery.restore only."""

    def _rec(self, record: RoundRecord, round_id: str | None = None,
             event: Publishes = AS_RECORDED) -> Record:
        """A record this table decided on, folded now as a restart will fold it; published
        as ``event`` (effects.Record)."""
        if record.KIND not in self._kinds:
            raise TypeError(f"{type(self).__name__} does not declare {record.KIND!r} in "
                            "RECORDS")
        rec = Record(record.KIND, record.body(), round_id, event)
        self.fold(Folded(record, rec.body, round_id, self.clock()))
        return rec

    def _result(self, round_id: str, facts: RoundFacts | CorrectionFacts) -> RoundResult:
        """The round's result (journalled as kind "result", published as the wire layer
        makes it of the same facts), folded like any record."""
        record = records.Result.of_facts(facts)
        self.fold(Folded(record, record.body(), round_id, self.clock()))
        return RoundResult(round_id, facts, record)

    def _fold_checkpoint(self, r: Folded[records.Checkpoint]) -> None:
        """The table as it was when the checkpoint was written (round/checkpoint.py): a
        restart folds from the latest one, and retention prunes the records before it."""
        checkpoint.apply(self, r.record.state)

    def _fold_betting_opened(self, r: Folded[records.BettingOpened]) -> None:
        assert r.round_id is not None
        self.round = RoundData(r.round_id, r.at)
        self._go("to_betting")

    def _fold_betting_closed(self, r: Folded[records.BettingClosed]) -> None:
        if self.round is not None and self.round.round_id == r.round_id:
            self.round.closed_at = r.at
            self._go("to_play")

    def _fold_result(self, r: Folded[records.Result]) -> None:
        if r.record.voids is not None:  # a correction of a round already published
            self.published[r.record.voids] = "corrected"
            return
        if r.round_id is not None:
            self.published[r.round_id] = VALID if r.record.valid else VOID
            self.published.move_to_end(r.round_id)
            while len(self.published) > SETTLED_KEPT:
                self.published.popitem(last=False)
        if self.round is not None and self.round.round_id == r.round_id:
            self.round = None
            self._go("to_idle")

    def void_settled_round(self, by: str, round_id: str, reason: str,
                           code: str | None = None) -> list[Effect]:
        """The Pit voids a round whose result is already published, under a clause that
        reaches back (Tai Sai 5.6: "all affected Rounds of play shall be Voided"). The
        correction goes out on ``results`` with its own seq; the original stays."""
        reaching = self.game.voids_settled_rounds()
        if not reaching:
            raise CommandRefusedError(
                f"no clause of {self.game.id} voids a round already settled (earlier "
                "outcomes stand): only the round in play can be voided")
        code = code or (reaching[0] if len(reaching) == 1 else None)
        if code not in reaching:
            raise CommandRefusedError(f"a settled round is voided only under "
                                      f"{', '.join(reaching)}; got {code!r}")
        if self.round is not None and round_id == self.round.round_id:
            raise CommandRefusedError(f"round {round_id} is in play: use void_round")
        status = self.published.get(round_id)
        if status is None:
            raise CommandRefusedError(f"round {round_id} has no published result this table "
                                      f"still holds (the last {SETTLED_KEPT} rounds)")
        if status != "valid":
            raise CommandRefusedError(f"round {round_id} is already void"
                                      + (" (corrected)" if status == "corrected" else ""))
        if not reason.strip():
            raise CommandRefusedError("a correction needs a reason")
        return self._corrected(by, round_id, self.game.irregularity(code), reason)

    # -- shared parts of commands ---------------------------------------------------------

    def _corrected(self, by: str, round_id: str, irregular: Irregularity, reason: str
                   ) -> list[Effect]:
        """A round already published, voided by ``by`` under ``irregular``: the alert, and
        the correction's own result."""
        detail = f"corrected by {by}: {reason}"
        payload = correction_result(self.table_id, self.game, self.layout, round_id,
                                    irregular, detail, by, self.clock())
        return [Alert(irregular.code, irregular.clause, f"round {round_id}, already "
                      f"published, is void: {detail}", round_id),
                self._result(correction_round_id(round_id), payload)]

    def hold_id(self, round_id: str, n: int) -> str:
        """The id of hold ``n`` (from 1) of round ``round_id``."""
        return f"{round_id}{self.HOLD_SEP}{n}"

    def hold_of(self, hold: str) -> tuple[str, int] | None:
        """The round and number a hold id names; None if it is not one of this table's."""
        round_id, sep, n = hold.rpartition(self.HOLD_SEP)
        return (round_id, int(n)) if sep and n.isdigit() else None

    def _check_round(self, round_id: str | None) -> None:
        """A command naming a round names the round in play."""
        assert self.round is not None
        if round_id is not None and round_id != self.round.round_id:
            raise CommandRefusedError(f"round {round_id} is not the round in play "
                                      f"({self.round.round_id})")

    def answering(self, hold: str | None, *, required: bool) -> None:
        """The Pit's answer names the hold it answers (its ``hold_id``): one answer per hold.
        A second answer to a hold (a redelivered result_held answered twice, a stale tool)
        and an answer when nothing is held are refused, and change nothing."""
        rnd = self.round
        held = rnd is not None and rnd.held is not None
        if hold is None:  # the command layer requires it; a direct call answers the open one
            if required and (rnd is None or rnd.held is None):
                raise CommandRefusedError("nothing is held for the Pit: there is nothing "
                                          "to answer")
            return
        if rnd is not None and hold == rnd.hold_id:
            if not held:
                raise CommandRefusedError(f"hold {hold} was already answered")
            return
        if rnd is not None and rnd.held is not None:
            raise CommandRefusedError(f"hold {hold} is not the open hold ({rnd.hold_id}): "
                                      "already answered, or of another round")
        raise CommandRefusedError(f"hold {hold} is not open: nothing is held for the Pit")

    def _begin(self, shoe_id: str | None = None) -> Record:
        """open_betting's common part: a new round, betting open."""
        if self.state != IDLE:
            raise CommandRefusedError(f"a round is already {self.state}")
        return self._rec(records.BettingOpened(shoe_id), self.new_round_id())

    def _close(self) -> Record:
        """close_betting's common part: "No more bets"."""
        if self.state != BETTING or self.round is None:
            raise CommandRefusedError(f"betting is not open (the table is {self.state})")
        return self._rec(records.BettingClosed(), self.round.round_id)
