"""The physical table driving the pure baccarat core, step by random step.

The dealer deals by the Table of Play while the gate is open and sometimes forces a card
past a locked gate (RWS 5.8); the reader reports each card through its faults
(reader.py); the Pit knows the truth and answers every hold it is told of through
``result_held`` (sometimes twice, sometimes late); the table restarts at random steps
(its journal folded into a fresh core, ``technical_interruption`` applied). Every record
and result goes through the judge as it is emitted.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round import checkpoint
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import (
    Alert,
    CommandRefusedError,
    DeviceCommand,
    Effect,
    Record,
    RoundResult,
)
from daemon.round.lifecycle import IDLE
from daemon.round.recovery import restore
from firmware_protocols import common as common_proto
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.model import reader
from tests.model.judge import Judge, ModelViolationError, Obligations
from tests.model.physical import DECK_SET, DECKS, PhysicalRound, PhysicalShoe, PhysicalTable, takes
from tests.unit.round.parts import Row

# The dealer's and the Pit's own irregularities.
FORCED_CARD = "forced_card"  # a card forced past the locked gate: beside the shoe (5.8)
FORCED_INTO_HELD_DEAL = "forced_into_held_deal"  # ... put on the held deal, which wants it
PIT_TWICE = "pit_twice"  # a result_held delivered twice: the Pit answers both
PIT_UNPROMPTED = "pit_unprompted"  # a reconstruction sent while nothing is held

FAULT_KINDS = (*reader.ONE_CARD, *reader.TWO_CARDS, FORCED_CARD, FORCED_INTO_HELD_DEAL,
               PIT_TWICE, PIT_UNPROMPTED)
GAMES = ("tiger-buffalo", "tiger-buffalo-insurance-plus", "tiger-baccarat")
CHECKPOINT_EVERY = 25  # rounds: a restart folds from the latest checkpoint (as the journal)
MAX_CARRIED = 3  # the dealer forces no more than this many cards in a row
SHOE_RESERVE = 20  # the shoe is ended with this many cards left (no shoe runs empty)


@dataclass
class Delivery:
    """A result_held the Pit was told of: ``seq`` is the record's place in the journal."""

    seq: int
    round_id: str
    body: dict[str, Any]


@dataclass
class Rates:
    fault: float = 0.15  # per card the dealer draws
    forced: float = 0.03  # per step while the gate is locked
    twice: float = 0.3  # per result_held
    unprompted: float = 0.02  # per step while a round is dealt
    restart: float = 0.03  # per step


@dataclass
class Stats:
    rounds: int = 0
    steps: int = 0
    restarts: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)


def snapshot(t: BaccaratTable) -> Any:
    """All of the core's state a command could change."""
    r = t.round
    return (t.state, None if r is None else (
        r.round_id, r.closed_at, [c.code for c in r.cards], list(r.draws), list(r.doubles),
        r.held, list(r.reads)),
        [(c.code if c else None, n) for c, n in t.carried], t.insurance_window,
        None if t.shoe is None else (list(t.shoe.drawn), t.shoe.last_draw_no),
        sorted(t.awaiting_order), list(t.published.items()))


class Rig:
    def __init__(self, game: str, seed: int, kinds: frozenset[str],
                 rates: Rates | None = None, restarts: bool = True) -> None:
        unknown = kinds - set(FAULT_KINDS)
        assert not unknown, f"no fault kind {sorted(unknown)}"
        self.game, self.kinds, self.rates = game, kinds, rates or Rates()
        self.restarts = restarts
        self.rng = random.Random(seed)
        self.ids = itertools.count(1)
        self.now = 1.0e9
        self.seq = 0
        self.journal: list[Row] = []
        self.published: dict[str, dict[str, Any]] = {}  # each round's result, as published
        self.trace: list[str] = []
        self.physical = PhysicalTable()
        self.judge = Judge(game, self.physical, self.trace)
        self.stats = Stats()
        self.core = self.new_table()
        self.gate_open = False
        self.late: list[reader.Sent] = []
        self.deliveries: list[Delivery] = []
        self.answered: dict[str, int] = {}  # round -> seq of the Pit's accepted answer
        self.reveals: list[fp.OrderChunk] = []
        self.shoes: dict[int, PhysicalShoe] = {}
        self.next_shuffle = 1
        self.pending_faults: list[str] = []  # faults while no round: the next round's
        self.new_shoe()

    def new_table(self) -> BaccaratTable:
        return BaccaratTable("t", get_game(self.game), "A", DECKS, clock=lambda: self.now,
                             new_round_id=lambda: f"r{next(self.ids)}")

    def log(self, line: str) -> None:
        self.trace.append(line)
        if len(self.trace) > 200:
            del self.trace[:100]

    # -- the core, as the service drives it ---------------------------------------------

    def apply(self, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, Record):
                self.record(e.kind, e.body, e.round_id)
            elif isinstance(e, RoundResult):
                self.record("result", e.record.body(), e.round_id, results_payload(e.facts))
            elif isinstance(e, DeviceCommand):
                self.device_command(e.message)
            elif isinstance(e, Alert):
                self.log(f"    alert {e.code} ({e.clause}): {e.detail[:160]}")

    def record(self, kind: str, body: dict[str, Any], round_id: str | None,
               published: dict[str, Any] | None = None) -> None:
        """Journal a record; a result's ``published`` payload goes to the judge (and is
        stored with the messages, not journalled: the journal keeps the table's record)."""
        self.seq += 1
        self.journal.append(Row(kind, body, round_id, self.now))
        if kind == "result":
            assert round_id is not None and published is not None
            body = self.published[round_id] = published
        self.log(f"    {kind} {round_id or ''} "
                 + (body.get("status", "") + " " + " ".join(c["card"] for c in body.get(
                     "cards", [])) if kind == "result" else str(body)[:160]))
        if kind == "result":
            assert round_id is not None
            self.judge.result(round_id, body)
            rnd = self.physical.round
            if body.get("type") != "correction" and rnd is not None and \
                    rnd.round_id == round_id:
                self.stats.outcomes[str(body["status"])] += 1
                self.stats.rounds += 1
                self.physical.round = None  # a void round's cards are put away too
            return
        self.judge.record(kind, body, round_id)
        if kind == "betting_opened":
            assert round_id is not None
            self.physical.round = PhysicalRound(round_id, faults=self.pending_faults)
            self.pending_faults = []
        elif kind == "result_held" and round_id is not None:
            self.deliveries.append(Delivery(self.seq, round_id, body))
            if PIT_TWICE in self.kinds and self.rng.random() < self.rates.twice:
                self.fault(PIT_TWICE)  # redelivered (at least once)
                self.deliveries.append(Delivery(self.seq, round_id, body))

    def device_command(self, msg: Any) -> None:
        if isinstance(msg, sp.LockGate):
            self.gate_open = not msg.locked
        elif isinstance(msg, fp.RequestOrder):
            shoe = self.shoes.get(msg.shuffle_id)
            if shoe is not None:  # a reveal asked again starts again
                self.reveals = [c for c in self.reveals if c.shuffle_id != msg.shuffle_id]
                self.reveals += shoe.reveal()
        elif isinstance(msg, fp.StartShuffle):
            shoe = PhysicalShoe.shuffled(self.next_shuffle, self.rng)
            self.next_shuffle += 1
            self.shoes[shoe.shuffle_id] = shoe
            self.physical.shoe = shoe
            self.device(shoe.complete_message())
            self.device(sp.ShoeLoaded(len(shoe.order), DECK_SET))

    def device(self, msg: Any) -> None:
        """A device message, through the driver's range check."""
        problems = common_proto.out_of_range(msg)
        self.log(f"  device {type(msg).__name__} "
                 + (f"{msg.draw_no} {msg.card} {msg.confidence}%"
                    f"{' double' if msg.double_draw else ''}"
                    if isinstance(msg, sp.CardDrawn) else ""))
        if problems:
            self.apply(self.core.device_fault(msg, "; ".join(problems)))
        else:
            self.apply(self.core.device_handlers()[type(msg)](msg))

    def send(self, sent: list[reader.Sent]) -> None:
        shoe = self.physical.shoe
        for n, msg in sent:
            if shoe is not None:
                self.physical.heard.add((shoe.shuffle_id, n))
            self.device(msg)

    def command(self, name: str, args: dict[str, str] | None = None,
                by: str = "pit") -> list[Effect]:
        self.log(f"  {by}: {name} {args or ''}")
        return self.core.commands(by, args or {})[name]()

    # -- faults -------------------------------------------------------------------------

    def fault(self, kind: str) -> None:
        self.stats.faults[kind] += 1
        self.log(f"  FAULT {kind}")
        if self.physical.round is not None:
            self.physical.round.faults.append(kind)
        else:
            self.pending_faults.append(kind)

    def maybe(self, kinds: tuple[str, ...], rate: float) -> str | None:
        on = [k for k in kinds if k in self.kinds]
        if on and self.rng.random() < rate:
            return self.rng.choice(on)
        return None

    # -- the steps ----------------------------------------------------------------------

    def actions(self) -> list[tuple[float, str, Callable[[], None]]]:
        p, core, rnd = self.physical, self.core, self.physical.round
        held = self.live_deliveries()
        out: list[tuple[float, str, Callable[[], None]]] = []
        if self.late:
            out.append((1.0, "late read", self.deliver_late))
        if self.reveals:
            out.append((1.0, "order chunk", self.reveal))
        if self.deliveries:
            out.append((2.0, "pit answers", self.pit_answer))
        if rnd is None and core.disputed is not None:
            out.append((5.0, "pit answers a disputed result", self.pit_dispute))
        elif rnd is None:
            if core.state == IDLE and not self.late and not self.deliveries:
                assert p.shoe is not None
                if p.shoe.remaining <= SHOE_RESERVE and not p.carried:
                    out.append((5.0, "new shoe", self.end_shoe))
                elif p.shoe.remaining > SHOE_RESERVE or p.carried:  # carried: used first
                    out.append((5.0, "open betting", self.open_betting))
        elif not rnd.dealing:
            out.append((5.0, "close betting", self.close_betting))
        elif core.insurance_window is not None and core.round is not None and \
                core.round.held is None and not held:
            out.append((5.0, "close insurance", self.close_insurance))
        elif self.gate_open and p.needs_card():
            out.append((5.0, "draw", self.draw))
        elif not held and not self.late and not self.deliveries:
            out.append((1.0, "pit voids a stuck round", self.pit_void_stuck))
        if not self.gate_open and p.shoe is not None and len(p.carried) < MAX_CARRIED and \
                p.shoe.remaining > SHOE_RESERVE:
            kinds = (FORCED_CARD, FORCED_INTO_HELD_DEAL) if held and p.needs_card() else \
                (FORCED_CARD,)
            kind = self.maybe(kinds, 1.0)
            if kind is not None:
                out.append((self.rates.forced, "force", lambda: self.force(kind)))
        if PIT_UNPROMPTED in self.kinds and rnd is not None and rnd.dealing and not held:
            out.append((self.rates.unprompted, "pit unprompted", self.pit_unprompted))
        return out

    def step(self) -> None:
        self.now += 1.0
        self.stats.steps += 1
        if self.restarts and self.rng.random() < self.rates.restart:
            self.restart()
            return
        acts = self.actions()
        if not acts:
            raise ModelViolationError("the table never stops", "nothing can happen next: "
                                 f"core {self.core.state}, gate open {self.gate_open}",
                                 self.trace)
        weights = [w for w, _, _ in acts]
        self.rng.choices(acts, weights)[0][2]()

    def run(self, rounds: int) -> Stats:
        idle_steps = 0
        while self.stats.rounds < rounds:
            before = self.stats.rounds
            self.step()
            idle_steps = 0 if self.stats.rounds > before else idle_steps + 1
            if idle_steps > 500:
                raise ModelViolationError("the table never stops", "500 steps without a result",
                                     self.trace)
        self.drain()
        self.judge.finish()
        return self.stats

    def drain(self) -> None:
        """Whatever is still in flight arrives, and the Pit answers what it owes."""
        while self.late or self.deliveries or self.physical.round is not None:
            acts = [a for a in self.actions() if a[1] not in ("force", "pit unprompted")]
            if not acts:
                raise ModelViolationError("the table never stops", "nothing can happen next",
                                     self.trace)
            acts[0][2]()
            self.now += 1.0

    # -- the dealer -----------------------------------------------------------------------

    def open_betting(self) -> None:
        if self.stats.rounds % CHECKPOINT_EVERY == 0:
            self.compact()
        self.apply(self.command("open_betting", by="dealer"))

    def close_betting(self) -> None:
        self.physical.close_betting()
        self.apply(self.command("close_betting", by="dealer"))

    def close_insurance(self) -> None:
        self.apply(self.command("close_insurance", by="dealer"))

    def draw(self) -> None:
        p = self.physical
        assert p.shoe is not None and p.round is not None
        kinds = reader.ONE_CARD + reader.TWO_CARDS
        fault = self.maybe(kinds, self.rates.fault)
        n = p.shoe.take()
        p.round.draws.append(n)
        if fault in reader.TWO_CARDS:
            second = p.shoe.order[n] if n < len(p.shoe.order) else None
            if second is not None and p.needs_card() and takes([*p.deal_codes(), second]):
                self.fault(fault)
                p.round.draws.append(p.shoe.take())
                self.send(reader.report_double(n, p.shoe.card(n), second,
                                               fault == reader.SWAPPED_DOUBLE))
                return
            fault = None
        if fault is not None:
            self.fault(fault)
        now, late = reader.report(n, p.shoe.card(n), fault, self.rng)
        self.late += late
        self.send(now)

    def force(self, kind: str) -> None:
        """RWS 5.8: a card forced past the locked gate; read cleanly (its fault is the
        dealer's, so that it is the only one)."""
        p = self.physical
        assert p.shoe is not None
        self.fault(kind)
        n = p.shoe.take()
        if kind == FORCED_INTO_HELD_DEAL:
            assert p.round is not None
            p.round.draws.append(n)
        else:
            p.carried.append(n)
        self.send([(n, reader.drawn(n, p.shoe.card(n)))])

    def deliver_late(self) -> None:
        sent = self.late.pop(self.rng.randrange(len(self.late)))
        self.send([sent])

    def reveal(self) -> None:
        self.device(self.reveals.pop(0))

    def end_shoe(self) -> None:
        self.apply(self.command("end_shoe", by="dealer"))
        self.new_shoe()

    def new_shoe(self) -> None:
        self.apply(self.command("new_shoe", by="dealer"))

    # -- the Pit ----------------------------------------------------------------------------

    def live(self, d: Delivery) -> bool:
        """A hold the Pit has not answered yet, of the round still in play."""
        rnd = self.physical.round
        return rnd is not None and rnd.round_id == d.round_id and \
            d.seq > self.answered.get(d.round_id, 0)

    def live_deliveries(self) -> bool:
        return any(self.live(d) for d in self.deliveries)

    def obligation_args(self, d: Delivery) -> dict[str, str]:
        args = {"round_id": d.round_id}
        if "hold_id" in d.body:
            args["hold"] = str(d.body["hold_id"])
        return args

    def pit_answer(self) -> None:
        d = self.deliveries.pop(0)
        live = self.live(d)
        args = self.obligation_args(d)
        truth = self.physical.deal_codes()
        reads = [(int(n), str(c)) for n, c in d.body.get("reads", [])]
        wrong = [i for i, (_, c) in enumerate(reads) if i >= len(truth) or truth[i] != c]
        if d.body.get("reason") == "simultaneous_draw" and len(reads) == len(truth) and \
                len(wrong) in (0, 2):
            name = "confirm_order"  # as read, or with the one pair exchanged
            if wrong:
                args["swap"] = f"{reads[wrong[0]][0]},{reads[wrong[1]][0]}"
        else:  # every card of the deal, in its true order
            name = "reconstruct_deal"
            rnd = self.physical.round
            mine = set(rnd.draws) if rnd is not None else {n for n, _ in reads}
            # An unread draw that opens the reads but was another round's: "--" (D18).
            lead = next((i for i, (n, _) in enumerate(reads) if n in mine), len(reads))
            args["cards"] = " ".join(["--"] * lead + truth)
        if not live:
            self.refused(name, args, f"a second answer to the hold of {d.round_id} "
                                     f"(result_held #{d.seq})")
            return
        try:
            effects = self.command(name, args)
        except CommandRefusedError as exc:
            self.log(f"    refused: {exc}")
            void = {**self.obligation_args(d), "reason": f"the Pit cannot set it right: {exc}"}
            effects = self.command("void_round", void)
        self.answered[d.round_id] = self.seq
        self.apply(effects)

    def refused(self, name: str, args: dict[str, str], what: str) -> None:
        """A Pit command that answers nothing: refused, and nothing changes."""
        before, records = snapshot(self.core), self.seq
        try:
            effects = self.command(name, args)
        except CommandRefusedError as exc:
            self.log(f"    refused: {exc}")
            if snapshot(self.core) != before or self.seq != records:
                raise ModelViolationError("a command that answers nothing changes nothing",
                                     f"{what} was refused but changed the table",
                                     self.trace) from None
            return
        self.apply(effects)
        raise ModelViolationError("a command that answers nothing is refused",
                             f"{what}: {name} was accepted", self.trace)

    def pit_unprompted(self) -> None:
        rnd = self.physical.round
        assert rnd is not None
        self.fault(PIT_UNPROMPTED)
        self.refused("reconstruct_deal", {"round_id": rnd.round_id,
                                          "cards": " ".join(self.physical.deal_codes())},
                     "a reconstruction with nothing held")

    def pit_void_stuck(self) -> None:
        """The deal waits for a card that is already on the table (its read was lost)
        and the core holds nothing: the Pit holds the round (D18), and answers its own
        hold with the reconstruction. (A void here would leave the lost draw for the next
        round to meet as a gap: with protocol v2 the core cannot tell whose it was.)"""
        rnd = self.physical.round
        assert rnd is not None
        self.apply(self.command("hold_round", {"round_id": rnd.round_id, "reason":
                                               "the table waits for a card already dealt"}))

    def pit_dispute(self) -> None:
        """D23: a later read contradicts the result just published; the Pit, who sees the
        card, confirms it or corrects it before the next round commences."""
        d = self.core.disputed
        assert d is not None and self.physical.shoe is not None
        true = self.physical.shoe.order[int(d["draw_no"]) - 1]
        if d["first"] == true:
            self.apply(self.command("confirm_result", {"round_id": d["round_id"]}))
        else:
            self.apply(self.command("void_settled_round", {
                "round_id": d["round_id"], "reason": f"draw {d['draw_no']} was {true}"}))

    # -- restarts ---------------------------------------------------------------------------

    def obligations(self) -> Obligations:
        r = self.core.round
        return Obligations(r.round_id if r else None, r is not None and r.held is not None,
                           self.core.insurance_window,
                           frozenset(self.core.awaiting_order))

    def restart(self) -> None:
        """The process dies between two steps; a new one folds the journal and resolves
        the open round (technical interruption), then the devices reconnect."""
        self.stats.restarts += 1
        self.log("  RESTART")
        before = self.obligations()
        heard = self.physical.heard_in_deal()
        rnd = self.physical.round
        if rnd is not None:
            rnd.faults.append("restart")
        self.core = self.new_table()
        records = len(self.journal)
        self.apply(restore(self.core, list(self.journal)))
        self.apply([*self.core.device_ready("shoe"), *self.core.device_ready("shuffler")])
        settled = any(r.kind == "result" and r.round_id == before.round_id
                      for r in self.journal[records:])
        result = self.published.get(before.round_id or "", {}) if settled else {}
        void = result.get("void_reason") if result.get("status") == "void" else None
        self.judge.restarted(before, self.obligations(), void, heard)

    def compact(self) -> None:
        """A checkpoint, as the daemon's journal writes one: the records before it go."""
        body = checkpoint.make(self.core, self.new_table)
        self.journal = [Row("checkpoint", body, None, self.now)]
