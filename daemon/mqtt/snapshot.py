"""The table's retained snapshot: a fold over the messages the table publishes.

It is built from the published payloads themselves (the contract, not the state
machines), so it says exactly what a consumer that had seen every message would know:
the open round with its cards or dice so far, the shoe's counters, the last result.
It is updated in the transaction that stores each message (journal meta ``snapshot``),
so after a restart it is what was committed, and ``as_of_msg_seq`` is exact: the
snapshot covers every message up to it and none after. Its payload is written by
``daemon/mqtt/wire/snapshot.py``.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from daemon.games.baccarat import deal
from daemon.games.cards import parse_cards
from daemon.games.errors import RulesError


@dataclass
class Shoe:
    shoe_id: str
    shuffle_id: int | None
    cards: int  # in the shoe when loaded
    dealt: int = 0  # draws reported so far (every card_drawn)
    hand: int = 0  # results of this shoe so far; the next round is hand + 1
    loaded_msg_seq: int = 0  # replay from here to rebuild the shoe's roads
    first_result_seq: int | None = None


@dataclass
class OpenRound:
    round_id: str
    opened_at: str
    betting: bool = True
    held: bool = False
    cards: list[dict[str, Any]] = field(default_factory=list)
    dice: list[int] | None = None


@dataclass
class TableView:
    as_of_msg_seq: int = 0
    shoe: Shoe | None = None
    round: OpenRound | None = None
    last_result_seq: int | None = None
    last_result_msg_seq: int | None = None

    def fold(self, p: dict[str, Any]) -> None:
        """One published payload (with its msg_seq), in msg_seq order."""
        self.as_of_msg_seq = max(self.as_of_msg_seq, int(p.get("msg_seq") or 0))
        kind = p.get("type")
        if kind == "result":
            self.last_result_seq = int(p["seq"])
            self.last_result_msg_seq = int(p["msg_seq"])
            if self.shoe is not None and p.get("shoe_id") == self.shoe.shoe_id:
                self.shoe.hand += 1
                if self.shoe.first_result_seq is None:
                    self.shoe.first_result_seq = self.last_result_seq
            if self.round is not None and p.get("round_id") == self.round.round_id:
                self.round = None
            return
        if kind != "event":
            return
        event = p.get("event")
        if event == "shoe_loaded":
            self.shoe = Shoe(p["shoe_id"], p.get("shuffle_id"), int(p["cards"]),
                             loaded_msg_seq=int(p["msg_seq"]))
        elif event == "shoe_ended":
            self.shoe = None
        elif event in ("card_drawn", "card") and self.shoe is not None and \
                "confidence" in p:  # a draw as read (a carried card's came earlier)
            self.shoe.dealt += 1
        if event in ("shoe_loaded", "shoe_ended", "card_drawn"):
            return
        if event == "betting_opened":
            self.round = OpenRound(p["round_id"], p["at"])
        elif self.round is None or p.get("round_id") != self.round.round_id:
            return
        elif event == "betting_closed":
            self.round.betting = False
        elif event == "betting_reopened":
            self.round.betting, self.round.held, self.round.cards = True, False, []
        elif event == "card":
            self.round.cards.append({k: p[k] for k in ("card", "hand", "position")})
        elif event == "deal_reconstructed":  # the Pit's cards replace the reads
            with contextlib.suppress(RulesError):
                self.round.cards = [dict(c.as_dict())
                                    for c in deal(parse_cards(p["cards"])).cards]
            self.round.held = False
        elif event in ("order_confirmed", "throw_again"):  # the Pit answered the hold
            self.round.held = False
        elif event in ("result_held", "throw_held"):
            self.round.held = True
        elif event == "dice":
            self.round.dice = list(p["dice"])

    def dumps(self) -> str:
        # Written at every commit: plain dicts, not asdict's deep copy, which was the
        # daemon's largest Python cost per card (docs/performance.md).
        return json.dumps({**vars(self), "shoe": None if self.shoe is None else
                           vars(self.shoe), "round": None if self.round is None
                           else vars(self.round)}, separators=(",", ":"), sort_keys=True)

    @classmethod
    def loads(cls, text: str | None) -> TableView:
        if not text:
            return cls()
        d = json.loads(text)
        return cls(d["as_of_msg_seq"], None if d["shoe"] is None else Shoe(**d["shoe"]),
                   None if d["round"] is None else OpenRound(**d["round"]),
                   d["last_result_seq"], d["last_result_msg_seq"])
