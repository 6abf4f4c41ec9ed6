"""What a table is doing, as its signed MQTT payloads tell it: the model behind
``tabled watch`` and the view of ``tabled simulate``. No I/O here.

Every payload is verified against the trusted keys before it changes anything; one that
does not verify is only counted (with its reason), never shown. Fields this model does not
know are ignored, so a newer table's payloads (more fields) still show.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from typing import Any

from daemon.signing import Keyring, SignatureError

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
WIDTH = 100  # columns a line may take
PHASES = {"betting_opened": "betting open", "betting_reopened": "betting open",
          "betting_closed": "no more bets", "awaiting_tumble": "waiting for the tumble",
          "result_held": "held for the pit (double draw)",
          "insurance_offered": "insurance open", "insurance_closed": "dealing",
          "next_card": "dealing", "card": "dealing", "tumble": "tumbling"}


def card_text(code: str) -> str:
    return code[0].replace("T", "10") + SUITS.get(code[1:2], code[1:])


def fit(line: str, width: int = WIDTH) -> str:
    return line if len(line) <= width else line[:width - 1] + "…"


@dataclass
class TableState:
    table: str
    status: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    round_id: str | None = None
    phase: str = "idle"
    cards: list[tuple[str, str]] = field(default_factory=list)  # (hand, card code)
    dice: list[int] = field(default_factory=list)
    tumbles: int = 0
    results: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=12))
    alerts: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=6))
    last_seq: int = 0
    missing: list[int] = field(default_factory=list)  # result seqs skipped over
    duplicates: int = 0  # results seen again (at least once delivery)
    replayed: int = 0  # copies re-sent from the table's outbox after an outage or restart
    last_replayed_at: str = ""

    def apply(self, kind: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Take one verified payload; returns a result that is new (not a duplicate)."""
        if body.get("replayed"):
            self.replayed += 1
            self.last_replayed_at = str(body.get("at") or body.get("settled_at") or "")
        if kind == "status":
            self.status = body
        elif kind == "devices":
            self.devices[str(body.get("name", "?"))] = body
        elif kind == "alerts":
            self.alerts.append(body)
        elif kind == "events" and not body.get("replayed"):
            self._event(body)
        elif kind == "results":
            return self._result(body)
        return None

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
        seq = int(r.get("seq", 0))
        if seq <= self.last_seq:
            self.duplicates += 1
            if seq in self.missing:  # a late copy fills its gap
                self.missing.remove(seq)
            else:
                return None
        else:
            self.missing += range(self.last_seq + 1, seq) if self.last_seq else []
            self.last_seq = seq
        self.results.append(r)
        if r.get("round_id") == self.round_id:
            self.round_id, self.phase = None, "idle"
        return r

    def backlog_line(self) -> str:
        """How far the table's outbox is behind, as its status last said (contract v2)."""
        return backlog_text(self.status)

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
    head = f"#{r.get('seq', '?'):<4} {str(r.get('round_id', ''))[-8:]:<8}"
    if r.get("status") == "void":
        v = r.get("void_reason") or {}
        return fit(f"{head}  VOID clause {v.get('clause')} ({v.get('code')}): "
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


def backlog_text(status: dict[str, Any]) -> str:
    """A status's ``backlog`` in words: the messages the table has stored and the broker
    has not yet acknowledged, and since when the oldest of them waits."""
    b = status.get("backlog")
    if not isinstance(b, dict):
        why = ("the table is offline: its will cannot know" if status.get("state") == "offline"
               else "not published by this table" if status else "no status yet")
        return f"outbox backlog: unknown ({why})"
    as_of = str(status.get("at") or "")[11:19]
    n = int(b.get("messages") or 0)
    if not n:
        return f"outbox backlog: none (as of {as_of})"
    return (f"outbox backlog: {n} message{'s' if n != 1 else ''} not yet published, oldest "
            f"msg_seq {b.get('oldest_msg_seq')} stored {str(b.get('oldest_at') or '')[11:19]}"
            f" (as of {as_of})")


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
        if kind == "cmd":
            return None  # commands are someone's request, not the table's word
        try:
            body = json.loads(payload)
            if not isinstance(body, dict):
                raise SignatureError("not a JSON object")
            self.keyring.verify(body)
        except (ValueError, SignatureError) as exc:
            self.rejected += 1
            self.last_rejection = f"{topic}: {exc}"
            return None
        state = self.tables.setdefault(table, TableState(table))
        result = state.apply(kind, body)
        return (state, result) if result is not None else None
