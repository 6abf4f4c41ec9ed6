"""What waits for the Pit at one table, from the table's own signed messages only.

The Pit page (``static/pit.html``) shows, per table, each hold the table announced and
not yet cleared, with exactly the commands the table takes for it now (docs/mqtt.md,
decisions D17, D18, D21, D23 in docs/games.md):

- ``result_held`` after a double draw (D17): ``confirm_order`` (optionally a swap) or
  ``void_round``, each naming the hold;
- ``result_held`` for reads (or held by the Pit, ``hold_round``; D18): ``reconstruct_deal``
  or ``void_round``, each naming the hold;
- ``throw_held`` (Tai Sai 5.14): ``throw_again`` or ``void_round``, each naming the hold;
- ``result_disputed`` (D23): ``confirm_result`` or ``void_settled_round`` of that round;
- a settled round, where the game voids one (Tai Sai 5.6): ``void_settled_round`` under
  the game's causes, of a round the page picks from the table's published results;
- a round being dealt at a table of a game with Insurance (Insurance Plus 3.14):
  ``declare_squeeze``, from "No more bets" until the Banker Hand's third card is drawn,
  the squeeze is declared, or the round is held or interrupted (the engine's own window).

A hold clears only on the table's word: the event that answers it, the round's result,
or (a dispute) the next round opening. Replies to the Pit's commands are kept by id, so
the page shows the table's answer to what it sent. Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from daemon.games import GAMES
from daemon.games.cards import POINT_VALUE, RANKS, SUITS
from daemon.games.table_of_play import banker_draws, player_draws

MAX_REPLIES = 50

ACTIONS = {
    "simultaneous_draw": ("confirm_order", "void_round"),
    "reads": ("reconstruct_deal", "void_round"),
    "pit": ("reconstruct_deal", "void_round"),
    "throw": ("throw_again", "void_round"),
    "disputed": ("confirm_result", "void_settled_round"),
    "squeeze": ("declare_squeeze",),
}
# Events that answer a hold by naming it (``hold``).
ANSWERS = ("deal_reconstructed", "order_confirmed", "throw_again")
# Events after which the table no longer deals the round on (IP 3.14 is refused then).
NOT_DEALING = ("squeeze_declared", "result_held", "throw_held", "betting_reopened",
               "technical_interruption")


def table_of_play() -> dict[str, Any]:
    """The Table of Play as data for the page's check of a reconstruction, taken from the
    engine (one encoding of the rule): whether the Player draws, by both two-card totals,
    and whether the Banker draws, by both totals and the Player's third card (or none)."""
    return {
        "ranks": RANKS, "suits": SUITS, "points": dict(POINT_VALUE),
        "player": [[player_draws(p, b) for b in range(10)] for p in range(10)],
        "banker": [[[banker_draws(p, b, t) for t in (*range(10), None)] for b in range(10)]
                   for p in range(10)],
    }


@dataclass
class PitWaits:
    holds: dict[str, dict[str, Any]] = field(default_factory=dict)  # hold id -> the hold
    replies: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)

    def event(self, body: dict[str, Any], game: str | None = None) -> bool:
        """One of the table's events; ``game``: the table's game, as it says it."""
        kind, rid = body.get("event"), body.get("round_id")
        squeeze = self._squeeze(kind, rid, body, game)
        return self._held(kind, rid, body) or squeeze

    def _squeeze(self, kind: Any, rid: Any, body: dict[str, Any], game: str | None) -> bool:
        """IP 3.14: offered while the table deals a round of a game with Insurance and the
        Banker Hand's third card is still to come (baccarat.py's declare_squeeze)."""
        if kind == "betting_closed" and isinstance(rid, str) and game in GAMES and \
                GAMES[game].has_insurance:
            self.holds[f"squeeze:{rid}"] = {
                "key": f"squeeze:{rid}", "hold": None, "round_id": rid, "kind": "squeeze",
                "clause": "3.14", "actions": list(ACTIONS["squeeze"])}
            return True
        third = kind == "card" and body.get("hand") == "banker" and body.get("position") == 3
        if third or kind in NOT_DEALING:
            return self.holds.pop(f"squeeze:{rid}", None) is not None
        return False

    def _held(self, kind: Any, rid: Any, body: dict[str, Any]) -> bool:
        if kind == "result_held" and isinstance(body.get("hold_id"), str):
            reason = str(body.get("reason"))
            self.holds[body["hold_id"]] = {
                "key": body["hold_id"], "hold": body["hold_id"], "round_id": rid, "kind": reason,
                "clause": body.get("clause"), "order": body.get("order"),
                "reads": body.get("reads") or [], "doubles": body.get("doubles") or [],
                "actions": list(ACTIONS.get(reason, ("void_round",)))}
            return True
        if kind == "throw_held" and isinstance(body.get("hold_id"), str):
            self.holds[body["hold_id"]] = {
                "key": body["hold_id"], "hold": body["hold_id"], "round_id": rid, "kind": "throw",
                "clause": body.get("clause"), "why": body.get("why"),
                "actions": list(ACTIONS["throw"])}
            return True
        if kind == "result_disputed" and isinstance(rid, str):
            self.holds[f"disputed:{rid}"] = {
                "key": f"disputed:{rid}", "hold": None, "round_id": rid, "kind": "disputed",
                "clause": body.get("clause"),
                "draw_no": body.get("draw_no"), "first": body.get("first"),
                "again": body.get("again"), "actions": list(ACTIONS["disputed"])}
            return True
        if kind in ANSWERS and isinstance(body.get("hold"), str):
            return self.holds.pop(body["hold"], None) is not None
        if kind in {"result_confirmed", "betting_opened"}:
            # D23: the dispute is answered, or the next round opened (it stands).
            return self._drop(lambda h: h["kind"] == "disputed")
        return False

    def result(self, body: dict[str, Any]) -> bool:
        """A round's result clears what was held in that round; a correction, the dispute
        of the round it corrects."""
        rounds = {body.get("round_id"), body.get("corrects")} - {None}
        return self._drop(lambda h: h["round_id"] in rounds)

    def reply(self, body: dict[str, Any]) -> bool:
        cid = body.get("id")
        if not isinstance(cid, str):
            return False
        self.replies[cid] = {k: body.get(k) for k in ("id", "command", "ok", "error",
                                                       "state", "round_id")}
        self.replies.move_to_end(cid)
        while len(self.replies) > MAX_REPLIES:
            self.replies.popitem(last=False)
        return True

    def _drop(self, which: Any) -> bool:
        gone = [k for k, h in self.holds.items() if which(h)]
        for k in gone:
            del self.holds[k]
        return bool(gone)

    def view(self, game: str | None = None) -> dict[str, Any]:
        """What waits, the replies, and the causes under which the table voids a round
        already settled (``void_settled_round``, e.g. Tai Sai 5.6), from the game's rules."""
        corrects = list(GAMES[game].voids_settled_rounds()) if game in GAMES else []
        return {"holds": list(self.holds.values()), "replies": list(self.replies.values()),
                "corrects": corrects}
