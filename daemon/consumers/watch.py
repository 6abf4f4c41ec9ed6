"""What a table is doing, as its signed MQTT payloads tell it: the model behind
``tabled watch`` and the view of ``tabled simulate``. No I/O here.

Every payload is checked as the contract says (``daemon.consumers.verify.accept``: the canonical
bytes, a trusted signature, the table of its topic) before it changes anything; one that
is refused is only counted (with its reason), never shown. Fields this model does not
know are ignored, so a newer table's payloads (more fields) still show.

Contract v2 (docs/mqtt.md), by the display's fold, not a second copy of it
(daemon/consumers/fold.py): a message is new once per (journal_id, msg_seq) and gaps are in
msg_seq; results are kept per (journal_id, seq), and a correction voids the round it
names; a late will of an older session is not news. The watch asks for no replays: it
shows the gaps.
"""

from __future__ import annotations

import collections
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar

from daemon.consumers.backlog import backlog_text
from daemon.consumers.fold import TableFold
from daemon.consumers.verify import accept
from daemon.security.signing import Keyring, SignatureError, shown

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
WIDTH = 100  # columns a line may take
KEPT_RESULTS = 500  # results (and corrections) kept per table, the newest
PHASES = {"betting_opened": "betting open", "betting_reopened": "betting open",
          "betting_closed": "no more bets", "awaiting_tumble": "waiting for the tumble",
          "result_held": "held for the pit (double draw)",
          "insurance_offered": "insurance open", "insurance_closed": "dealing",
          "next_card": "dealing", "card": "dealing", "tumble": "tumbling",
          # Between shoes: a shuffle takes 3 s to minutes, not "idle" (issue 26).
          "shuffler_shuffle_started": "shuffling a new shoe",
          "shuffle_certified": "shuffle certified: loading the shoe",
          "shoe_loaded": "shoe loaded", "shoe_ended": "shoe ended: a new shoe is needed"}


def card_text(code: str) -> str:
    return code[0].replace("T", "10") + SUITS.get(code[1:2], code[1:])


def fit(line: str, width: int = WIDTH) -> str:
    return line if len(line) <= width else line[:width - 1] + "…"


@dataclass
class TableState(TableFold):
    """One table as the watch shows it: the shared fold (daemon/consumers/fold.py) and the
    round under way, in a line."""

    round_id: str | None = None
    phase: str = "idle"
    cards: list[tuple[str, str]] = field(default_factory=list)  # (hand, card code)
    dice: list[int] = field(default_factory=list)
    tumbles: int = 0
    alerts: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=6))
    _joined: set[str] = field(default_factory=set)  # journals whose snapshot was taken

    KEPT_RESULTS: ClassVar[int] = KEPT_RESULTS

    def apply(self, kind: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Take one verified payload; returns a result or correction that is new."""
        if not self.fresh(kind, body):
            return None
        if kind == "status":
            self.take_status(body)
        elif kind == "devices":
            self.take_device(str(body.get("name", "?")), body)
        elif kind == "alerts":
            self.alerts.append(body)
        elif kind == "events":
            self._event(body)
        elif kind == "snapshot":
            self._snapshot(body)
        elif kind == "results":
            return self._result(body)
        return None

    def _snapshot(self, body: dict[str, Any]) -> None:
        """The first snapshot of a journal met only by retained messages: what came
        before it is not a gap (the watch joined there); later ones change nothing."""
        jid, as_of = body.get("journal_id"), body.get("as_of_msg_seq")
        if not isinstance(jid, str) or type(as_of) is not int or jid in self._joined:
            return
        self._joined.add(jid)
        j = self.catchup.journals.get(jid)
        if j is None or max(j.seen, default=0) <= as_of:
            # No shoe to fetch: the watch asks for nothing (results_in_shoe: as if all).
            self.catchup.joined(body, results_in_shoe=sys.maxsize)
            self.catchup.journal(jid).start = max(self.catchup.journal(jid).start, as_of)

    def _event(self, e: dict[str, Any]) -> None:
        name = str(e.get("event", ""))
        if e.get("round_id") and e["round_id"] != self.round_id and name in (
                "betting_opened", "betting_closed", "card", "next_card", "awaiting_tumble"):
            self.round_id, self.cards, self.dice, self.tumbles = e["round_id"], [], [], 0
        if name == "betting_reopened":
            self.cards = []
        if name in PHASES:
            self.phase = PHASES[name]
        if name == "card":
            self.cards.append((str(e.get("hand", "?")), str(e.get("card", "??"))))
        elif name == "tumble":
            self.tumbles = int(e.get("count", self.tumbles + 1))
        elif name == "dice":
            self.dice = [int(d) for d in e.get("dice", [])]
            self.phase = "dice read"

    def _result(self, r: dict[str, Any]) -> dict[str, Any] | None:
        if not self.take_result(r):
            return None
        if r.get("type") != "correction" and r.get("round_id") == self.round_id:
            self.round_id, self.phase = None, "idle"
        return r

    def shown_results(self) -> list[dict[str, Any]]:
        """The newest journal's results in seq order, corrections applied (the corrected
        round void), each correction in its place."""
        results, fixes = self.corrected()
        return sorted([*results, *fixes], key=lambda r: int(r["seq"]))

    def missing(self) -> list[tuple[int, int]]:
        """Message numbers of the newest journal not received (msg_seq ranges)."""
        return self.catchup.gaps()

    def numbers_line(self) -> str:
        jid = self.catchup.current
        if jid is None:
            return f"duplicates {self.duplicates}; no numbered message yet"
        line = (f"journal {jid}; last msg_seq {self.catchup.journals[jid].newest}; "
                f"duplicates {self.duplicates}")
        gaps = self.missing()
        if gaps:
            line += "; MISSING msg_seq " + ", ".join(
                str(a) if a == b else f"{a}-{b}" for a, b in gaps[:6])
        return line

    def backlog_line(self) -> str:
        """How far the table's outbox is behind, as its status last said (contract v2)."""
        return backlog_text(self.status or {})

    def live_line(self) -> str:
        """The round under way, in one line."""
        if self.round_id is None:
            return fit(f"{self.table}: {self.phase}")
        what = f"{self.table} round {self.round_id[-8:]}: {self.phase}"
        if self.dice:
            what += f"; dice {' '.join(map(str, self.dice))}"
        elif self.tumbles:
            what += f"; {self.tumbles} tumbles"
        if self.cards:
            for hand in ("player", "banker"):
                cards = [card_text(c) for h, c in self.cards if h == hand]
                what += f"; {hand[0].upper()} {' '.join(cards) or '-'}"
        return fit(what)


def result_header(dice: bool) -> str:
    if dice:
        return "seq   round     dice   total  tumbles  winning bets (pays)"
    return "seq   round     player          P  banker          B  winner  winning bets (pays)"


def result_line(r: dict[str, Any]) -> str:
    """One result in at most WIDTH columns; the winning bets are cut with '…' to fit."""
    if r.get("type") == "correction":  # its round_id is "{corrects}/correction"
        v = r.get("void_reason") or {}
        return fit(f"#{r.get('seq', '?'):<4} CORRECTION: round "
                   f"{str(r.get('corrects', ''))[-8:]} void, clause {v.get('clause')} "
                   f"({v.get('code')}), by {r.get('by')}: {v.get('detail', '')}")
    head = f"#{r.get('seq', '?'):<4} {str(r.get('round_id', ''))[-8:]:<8}"
    if r.get("status") == "void":
        v = r.get("void_reason") or {}
        fixed = r.get("corrected")
        by = f"corrected by #{fixed.get('seq')}, " if isinstance(fixed, dict) else ""
        return fit(f"{head}  VOID {by}clause {v.get('clause')} ({v.get('code')}): "
                   f"{v.get('detail', '')}")
    bets = r.get("bets") or []
    wins = ", ".join(f"{b.get('bet')} {b.get('pays')}" for b in bets
                     if b.get("result") == "win")
    if "dice" in r:
        dice = " ".join(map(str, r.get("dice", [])))
        return fit(f"{head}  {dice:<6} {r.get('total', ''):>5}  {r.get('tumbles', ''):>7}  "
                   f"{wins}")

    def hand(name: str) -> str:
        return " ".join(card_text(str(c.get("card"))) for c in r.get("cards", [])
                        if c.get("hand") == name)

    return fit(f"{head}  {hand('player'):<14} {r.get('player_total', ''):>2}  "
               f"{hand('banker'):<14} {r.get('banker_total', ''):>2}  "
               f"{str(r.get('winner', '')).upper():<6}  {wins}")


@dataclass
class Watcher:
    """Tables by id, fed payloads as they arrive on ``{prefix}/{table}/...``."""

    keyring: Keyring
    prefix: str = "tables"
    tables: dict[str, TableState] = field(default_factory=dict)
    rejected: int = 0
    last_rejection: str = ""

    def feed(self, topic: str, payload: bytes) -> tuple[TableState, dict[str, Any]] | None:
        """Verify and apply one message. Returns the table and a new result, if it was one."""
        parts = topic.split("/")
        base = len(self.prefix.split("/"))
        if len(parts) < base + 2 or "/".join(parts[:base]) != self.prefix:
            return None
        table, kind = parts[base], parts[base + 1]
        if kind in ("cmd", "replay"):
            # Commands and replay requests are someone's request, not the table's word;
            # replay answers are old messages addressed to one consumer.
            return None
        try:
            body = accept(payload, table, self.keyring)
        except SignatureError as exc:
            self.rejected += 1
            self.last_rejection = f"{shown(topic, 200)}: {exc}"
            return None
        state = self.tables.setdefault(table, TableState(table))
        result = state.apply(kind, body)
        return (state, result) if result is not None else None
