"""The invariants the physical table holds the core to, checked after every step.

- every ``valid`` result equals the physical deal (cards, hands, positions) once it is
  final (the next round has commenced, RWS 5.6; or the run ended), and names exactly the
  true draws of its round;
- no physical card (true draw) is in two rounds' valid results;
- a fault costs at most its own round: a round in which nothing went wrong is never held
  and never voided;
- every obligation (a held result, an open insurance window, an owed order reveal)
  survives a restart, unless the rules end the round (RWS 5.4.2, and then only if no bet
  is settled by the cards on the table);
- a Pit command that answers nothing is refused and changes nothing (rig.py);
- an honestly dealt shoe passes the check against its committed order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.model.physical import PhysicalRound, PhysicalTable, placed

# RWS 1.21: Player Pair is settled (won or lost) once the Player Hand's first two cards,
# cards 1 and 3 of the deal, are on the table. MBS (Tiger Baccarat) never voids on a
# restart (5.17.1), so only the RWS games are listed.
SETTLED_BY_THREE_CARDS = frozenset({"tiger-buffalo", "tiger-buffalo-insurance-plus"})


class ModelViolationError(AssertionError):
    """An invariant of the physical table broke; ``invariant`` names which."""

    def __init__(self, invariant: str, detail: str, trace: list[str]) -> None:
        self.invariant = invariant
        super().__init__(f"{invariant}: {detail}\n  last steps:\n    "
                         + "\n    ".join(trace[-40:]))


@dataclass
class Obligations:
    round_id: str | None
    held: bool
    insurance_window: str | None
    owed_reveals: frozenset[int]


@dataclass
class Judge:
    game: str
    physical: PhysicalTable
    trace: list[str]
    # The core's own account of which true draws each round used (from its journal).
    draws_of: dict[str, list[int]] = field(default_factory=dict)
    valid_draws: dict[tuple[int, int], str] = field(default_factory=dict)
    not_yet_final: dict[str, str] = field(default_factory=dict)  # round -> what is wrong
    after_void: bool = False  # the last round ended void
    shuffle_of: dict[str, int] = field(default_factory=dict)

    def fail(self, invariant: str, detail: str) -> None:
        raise ModelViolationError(invariant, detail, self.trace)

    # -- records and results, as the core emits them -------------------------------------

    def record(self, kind: str, body: dict[str, Any], round_id: str | None) -> None:
        rnd = self.physical.round
        if kind == "betting_opened":
            for rid, wrong in self.not_yet_final.items():
                self.fail("valid result equals the physical deal",
                          f"round {rid} stands (round {round_id} has commenced): {wrong}")
            if self.physical.shoe is not None and round_id is not None:
                self.shuffle_of[round_id] = self.physical.shoe.shuffle_id
        elif kind == "card" and round_id is not None:
            self.draws_of.setdefault(round_id, []).append(int(body["draw_no"]))
        elif kind in ("deal_reconstructed", "order_confirmed") and round_id is not None \
                and "draws" in body:
            self.draws_of[round_id] = [int(n) for n in body["draws"]]
        elif kind == "result_held" and rnd is not None and rnd.round_id == round_id \
                and rnd.clean and not self.after_void:
            self.fail("a fault costs at most its round",
                      f"round {round_id}, in which nothing went wrong, is held: "
                      f"{body.get('order')}")
        elif kind == "shuffle_verification_failed":
            self.fail("an honest shoe matches its commitment",
                      f"shuffle {body.get('shuffle_id')} failed its order check")

    def result(self, round_id: str, payload: dict[str, Any]) -> None:
        if payload.get("type") == "correction":
            self.not_yet_final.pop(str(payload.get("corrects")), None)
            return
        # Protocol v2: a read that comes after a deal is voided may be that deal's card or
        # the next deal's; the next deal may be held for the Pit's word (never voided).
        self.after_void = payload.get("status") == "void"
        rnd = self.physical.round
        if rnd is None or rnd.round_id != round_id:
            self.fail("results belong to the round in play",
                      f"a result for {round_id} while the table plays "
                      f"{rnd.round_id if rnd else 'no round'}")
            return
        if payload["status"] == "valid":
            self._valid(rnd, payload)
        elif rnd.clean:
            self.fail("a fault costs at most its round",
                      f"round {round_id}, in which nothing went wrong, is void: "
                      f"{payload.get('void_reason', {}).get('detail')}")

    def _valid(self, rnd: PhysicalRound, payload: dict[str, Any]) -> None:
        keys = ("card", "hand", "position")
        got = [tuple(c[k] for k in keys) for c in payload["cards"]]
        want = [(d.card.code, d.hand, d.position)
                for d in placed(self.physical.deal_codes())]
        if got != want:
            self.not_yet_final[rnd.round_id] = (f"published {' '.join(str(c[0]) for c in got)}"
                                                f", the table has "
                                                f"{' '.join(str(w[0]) for w in want)}")
        used = self.draws_of.get(rnd.round_id, [])
        sid = self.shuffle_of.get(rnd.round_id, -1)
        for n in used:
            other = self.valid_draws.get((sid, n))
            if other is not None:
                self.fail("no card is in two rounds",
                          f"draw {n} is in round {other}'s result and in {rnd.round_id}'s")
            self.valid_draws[(sid, n)] = rnd.round_id
        if got == want and sorted(used) != sorted(rnd.draws):
            self.fail("valid result equals the physical deal",
                      f"round {rnd.round_id} names draws {used}; its cards were draws "
                      f"{rnd.draws}")

    def finish(self) -> None:
        """The run is over: whatever stands now is final."""
        for rid, wrong in self.not_yet_final.items():
            self.fail("valid result equals the physical deal", f"round {rid}: {wrong}")

    # -- restarts -------------------------------------------------------------------------

    def restarted(self, before: Obligations, after: Obligations,
                  void_reason: dict[str, Any] | None, heard: int) -> None:
        """``void_reason``: the restart voided the round in play; ``heard``: how many cards
        of its deal the core had been told of (in any form) when it stopped."""
        if not before.owed_reveals <= after.owed_reveals:
            self.fail("obligations survive a restart",
                      f"order reveals owed {sorted(before.owed_reveals)}, after the "
                      f"restart {sorted(after.owed_reveals)}")
        if void_reason is not None:
            if void_reason.get("code") == "technical_interruption_no_outcome" and \
                    self.game in SETTLED_BY_THREE_CARDS and heard >= 3:
                self.fail("obligations survive a restart",
                          f"round {before.round_id} voided under "
                          f"{void_reason.get('clause')} with {heard} cards on the table "
                          "(Player Pair is settled: RWS 5.4.1)")
            return
        if before.round_id != after.round_id:
            return
        if before.held and not after.held:
            self.fail("obligations survive a restart",
                      f"round {before.round_id} was held for the Pit; after the restart "
                      "it is not")
        if before.insurance_window and after.insurance_window != before.insurance_window:
            self.fail("obligations survive a restart",
                      f"the {before.insurance_window} insurance window was open; after the "
                      f"restart: {after.insurance_window}")
