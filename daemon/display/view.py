"""What the display knows of each table: only verified payloads, each applied once.

``Display.receive`` takes a message as it came off the broker (topic, raw bytes). Every
payload must be the canonical bytes a table publishes, signed by a trusted key, and name
the table of its topic (docs/mqtt.md, "Signatures"; ``daemon.consumers.verify.accept``); anything
else is refused, kept in ``refused`` with the reason, and shown on the page. Nothing
here does I/O: the server feeds it.

De-duplication. Results are applied once per (journal_id, seq), and every numbered
message once per (journal_id, msg_seq): a copy sent again is byte-identical (contract
v2). The events the page uses are idempotent besides (a card is placed at its hand and
position, a draw count is a maximum), so a late copy changes nothing.

Catch-up (docs/display.md, "Catch-up"): gaps in result ``seq`` are listed in ``gaps``;
the retained snapshot is taken at ``apply_snapshot``, and ``catchup`` asks the table
by replay for what is missing; ``fetched`` counts what the answers brought.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from daemon.consumers.backlog import backlog_text
from daemon.consumers.fold import TableFold
from daemon.consumers.verify import accept
from daemon.display.dice import dice_stats
from daemon.display.pit import PitWaits
from daemon.display.roads import derive
from daemon.games.cards import POINT_VALUE
from daemon.round.kinds import display_view
from daemon.security.signing import Keyring, SignatureError, shown

MAX_REFUSED = 50
MAX_ALERTS = 50
MAX_RESULTS = 2000  # a day at a busy table; older results leave the statistics
LAST_RESULTS = 12
SHOWN_ALERTS = 20


@dataclass
class Refusal:
    at: str
    topic: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"at": self.at, "topic": self.topic, "reason": self.reason}


def _card_view(c: Mapping[str, Any]) -> dict[str, Any]:
    return {"card": c["card"], "hand": c["hand"], "position": c["position"]}


def baccarat_total(cards: list[dict[str, Any]], hand: str) -> int:
    """The hand's point total so far, for the round in progress (the result has its own)."""
    return sum(POINT_VALUE[c["card"][0]] for c in cards if c["hand"] == hand) % 10


@dataclass
class DisplayedTable(TableFold):
    """One table as the page shows it: the shared fold (fold.py), the round, the shoe, the
    alerts and what waits for the Pit."""

    alerts: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_ALERTS))
    round: dict[str, Any] = field(default_factory=dict)
    shoe: dict[str, Any] = field(default_factory=dict)
    fetched: int = 0  # new messages that came in replay answers
    snapshot: dict[str, Any] | None = None
    round_msg: int = 0  # msg_seq of the newest event applied to the round view
    shoe_msg: int = 0  # msg_seq of the shoe counters' newest event
    pit: PitWaits = field(default_factory=PitWaits)  # what waits for the Pit (pit.py)

    KEPT_RESULTS: ClassVar[int] = MAX_RESULTS

    # ---- applying verified payloads ----

    def apply(self, kind: str, name: str, body: dict[str, Any]) -> bool:
        """Applies one verified payload; False if it changed nothing (a duplicate)."""
        if not self.fresh(kind, body):
            return False
        if kind == "status":
            return self.take_status(body)
        if kind == "devices":
            return self.take_device(name, body)
        if kind == "results":
            return self._result(body) | self.pit.result(body)
        if kind == "alerts":
            return self._alert(body)
        if kind == "events":
            return self._event(body) | self.pit.event(body, self.game())
        if kind == "snapshot":
            return self.apply_snapshot(body)
        if kind == "replies":  # the table's answers, shown to the Pit who sent them
            return self.pit.reply(body)
        return False  # topics a later contract adds

    def _result(self, body: dict[str, Any]) -> bool:
        if not self.take_result(body):
            return False
        if body.get("type") == "correction":
            return True  # applied where the results are read: ``corrected``
        if self.round.get("round_id") == body.get("round_id"):
            self.round["phase"] = "settled"
            self.round["result"] = body
        journal = body.get("journal_id") if isinstance(body.get("journal_id"), str) else None
        seq = int(body["seq"])
        newest = seq >= max((s for j, s in self.results if j == journal), default=0)
        if newest and body.get("shoe_id") and body.get("shoe_id") != self.shoe.get("shoe_id"):
            # A result from a shoe the display never saw loaded (it joined mid-shoe); a
            # late copy of an older shoe's result does not take the roads back to it.
            self.shoe = {"shoe_id": body.get("shoe_id")}
        return True

    def _alert(self, body: dict[str, Any]) -> bool:
        ident = (body.get("code"), body.get("round_id"), body.get("at"), body.get("detail"))
        for a in self.alerts:
            if (a.get("code"), a.get("round_id"), a.get("at"), a.get("detail")) == ident:
                self.duplicates += 1
                return False
        self.alerts.appendleft(body)
        return True

    def _event(self, body: dict[str, Any]) -> bool:
        kind, rid = body.get("event"), body.get("round_id")
        msg = body.get("msg_seq") if type(body.get("msg_seq")) is int else None
        if type(body.get("draw_no")) is int and kind in ("card_drawn", "card", "cut_card"):
            # Draws so far: v1 reports every draw as card_drawn, v2 a placed one as card.
            self.shoe["dealt"] = max(body["draw_no"], self.shoe.get("dealt") or 0)
        if kind in ("shoe_loaded", "cut_card", "shoe_ended"):
            if msg is not None and msg < self.shoe_msg:
                return False  # a replayed older shoe event: the newer state stands
            self.shoe_msg = msg or self.shoe_msg
            if kind == "shoe_loaded":
                self.shoe = {"shoe_id": body.get("shoe_id"), "cards": body.get("cards"),
                             "dealt": 0, "cut_card": False}
            elif kind == "cut_card":
                self.shoe["cut_card"] = True
            else:
                self.shoe["ended"] = body.get("why") or True
            return True
        if kind == "card_drawn":
            return True
        older = msg is not None and msg < self.round_msg
        if older and rid != self.round.get("round_id"):
            return False  # an older round's event, replayed: not the round shown
        if kind == "card" and rid is not None:
            # Additive and idempotent: a card missed and replayed late still belongs.
            rnd = self._ensure_round(rid)
            cards = [c for c in rnd["cards"] if (c["hand"], c["position"]) !=
                     (body.get("hand"), body.get("position"))]
            rnd["cards"] = sorted([*cards, _card_view(body)],
                                  key=lambda c: (c["position"], c["hand"] != "player"))
            if not older:
                rnd["phase"] = "dealing"
                if "next" in body:  # v2: the card carries the card required next
                    rnd["needed"] = body["next"]
                self.round_msg = msg or self.round_msg
            return True
        if older:
            return False  # a phase that has moved on since
        phase = self._phase(kind, rid, body)
        if phase and msg is not None:
            self.round_msg = msg
        return phase

    def _phase(self, kind: Any, rid: Any, body: dict[str, Any]) -> bool:
        r = self.round
        if kind == "betting_opened":
            if r.get("round_id") != rid:
                self.round = {"round_id": rid, "phase": "betting", "cards": [],
                              "shoe_id": body.get("shoe_id")}
            else:
                r["phase"] = "betting"  # MBS 5.9: betting reopened in the same round
        elif rid is None or (r.get("round_id") not in (None, rid)):
            return False  # an event of another round than the one shown (a late replay)
        elif kind == "betting_closed":
            self._ensure_round(rid)["phase"] = "dealing"
        elif kind == "betting_reopened":
            self._ensure_round(rid).update(phase="betting", cards=[], needed=None)
        elif kind == "next_card":
            self._ensure_round(rid)["needed"] = body.get("needed")
        elif kind in ("result_held", "throw_held"):
            self._ensure_round(rid)["phase"] = "held for the pit"
        elif kind == "order_confirmed":
            self._ensure_round(rid)["phase"] = "dealing"
        elif kind in ("awaiting_tumble", "throw_again"):
            self._ensure_round(rid)["phase"] = "awaiting tumble"
        elif kind == "tumble":
            self._ensure_round(rid).update(phase="tumbling", tumbles=body.get("count"))
        elif kind == "dice":
            self._ensure_round(rid).update(dice=body.get("dice"), tumbles=body.get("tumbles"),
                                           flat=body.get("flat"))
        elif kind == "technical_interruption":
            self._ensure_round(rid).update(phase="technical interruption",
                                           detail=body.get("detail"))
        else:
            return False
        return True

    def _ensure_round(self, rid: str) -> dict[str, Any]:
        if self.round.get("round_id") != rid:  # joined mid-round: the rest is unknown
            self.round = {"round_id": rid, "phase": "dealing", "cards": [], "partial": True}
        return self.round

    def apply_snapshot(self, body: dict[str, Any]) -> bool:
        """Contract v2's retained snapshot: the table as of ``as_of_msg_seq``. Its shoe
        counters and open round are taken unless the display has newer news already;
        the shoe's earlier results are asked for by replay (``catchup``)."""
        jid, as_of = body.get("journal_id"), body.get("as_of_msg_seq")
        if not isinstance(jid, str) or type(as_of) is not int:
            return False
        known = self.catchup.journals.get(jid)
        newer_known = known is not None and known.newest > as_of
        last = self.snapshot
        if last is not None and last.get("journal_id") == jid and \
                int(last.get("as_of_msg_seq", 0)) > as_of:
            return False
        self.snapshot = body
        shoe = body.get("shoe") if isinstance(body.get("shoe"), dict) else None
        in_shoe = sum(1 for r in self.results.values()
                      if shoe and r.get("shoe_id") == shoe.get("shoe_id")
                      and r.get("type") != "correction")
        self.catchup.joined(body, in_shoe)
        if newer_known:
            return True
        if shoe is not None:
            self.shoe = {"shoe_id": shoe.get("shoe_id"), "cards": shoe.get("cards"),
                         "dealt": shoe.get("dealt"), "left": shoe.get("left"),
                         "cut_card": self.shoe.get("cut_card", False)
                         if self.shoe.get("shoe_id") == shoe.get("shoe_id") else False}
            self.shoe_msg = as_of
        rnd = body.get("round")
        if isinstance(rnd, dict) and rnd.get("round_id"):
            phase = ("held for the pit" if rnd.get("held") else
                     "betting" if rnd.get("betting") else
                     {"tumbling": "tumbling"}.get(str(body.get("state")), "dealing"))
            cards = [_card_view(c) for c in rnd.get("cards") or []
                     if isinstance(c, dict) and _bad_card(c) is None]
            self.round = {"round_id": rnd["round_id"], "phase": phase,
                          "cards": sorted(cards, key=lambda c: (c["position"],
                                                                c["hand"] != "player")),
                          **({"dice": rnd["dice"]} if _bad_dice(rnd.get("dice")) is None
                             else {})}
            self.round_msg = as_of
        return True

    # ---- what the page shows ----

    def gaps(self) -> list[tuple[int, int]]:
        seqs = [int(r["seq"]) for r in self.ordered_results()]
        return [(a + 1, b - 1) for a, b in itertools.pairwise(seqs) if b > a + 1]

    def game(self) -> str | None:
        for src in (self.status, *self.results.values()):
            if src and src.get("game"):
                return str(src["game"])
        return None

    def view(self) -> dict[str, Any]:
        results, fixes = self.corrected()
        game = self.game()
        out: dict[str, Any] = {
            "table": self.table, "game": game, "status": self.status,
            "devices": self.devices,
            "alerts": [{k: a.get(k) for k in ("code", "clause", "detail", "round_id", "at")}
                       for a in itertools.islice(self.alerts, SHOWN_ALERTS)],
            "round": self._round_view(), "gaps": self.gaps(),
            "corrections": [_correction_view(c) for c in fixes[-LAST_RESULTS:]][::-1],
            "counters": {"results": len(results) + len(fixes), "duplicates": self.duplicates,
                         "fetched": self.fetched},
            # Contract v2: messages missing by msg_seq (being fetched by replay), and
            # those the table no longer had (pruned) when asked.
            "msg_gaps": self.catchup.gaps(), "lost": self.catchup.lost(),
            # Whether it can ask for them, and if not why (the table offline, or silent).
            "catchup": {"asking": self.catchup.stalled() is None,
                        "why": self.catchup.stalled()},
            "last_results": [_result_view(r) for r in results[-LAST_RESULTS:]][::-1],
            # The table's outbox backlog, as its status last said (absent: the will, or
            # a table from before contract v2 published it).
            "backlog": (self.status or {}).get("backlog"),
            "backlog_text": backlog_text(self.status or {}),
            "pit": self.pit.view(game),
        }
        if display_view(game) == "dice":
            out["dice"] = dice_stats(results)
            # A display that joined late has only some of the throws: how many of how many.
            out["dice"]["seen"] = self._seen(len(results) + len(fixes))
            # The table's own dice watch, where it has one (an alert `dice_watch`, no
            # clause): the latest, beside the display's test.
            out["dice"]["table_watch"] = next(
                (a for a in self.alerts if a.get("code") == "dice_watch"), None)
        else:
            shoe_id = self.shoe.get("shoe_id") or (results[-1].get("shoe_id")
                                                   if results else None)
            in_shoe = [r for r in results if r.get("shoe_id") == shoe_id]
            out["roads"] = derive(in_shoe).as_dict()
            out["shoe"] = self._shoe_view(shoe_id, in_shoe)
        return out

    def _seen(self, held: int) -> dict[str, int]:
        """Results of the current journal held, of those the table published (the newest
        seq known, from a result or the snapshot), and how many of them are missing."""
        newest = max((s for j, s in self.results if j == self.journal_id), default=0)
        snap = self.snapshot or {}
        if type(snap.get("last_result_seq")) is int and \
                snap.get("journal_id") in (self.journal_id, None):
            newest = max(newest, snap["last_result_seq"])
        return {"results": held, "published": newest, "missing": max(newest - held, 0)}

    def _hands(self, shoe_id: Any, in_shoe: list[dict[str, Any]]) -> int:
        """The shoe's results so far: those held, or, when the display joined by a
        snapshot and lacks earlier ones, the snapshot's count and those after it."""
        snap = self.snapshot or {}
        shoe = snap.get("shoe") if isinstance(snap.get("shoe"), dict) else None
        as_of = snap.get("as_of_msg_seq")
        if shoe is None or shoe.get("shoe_id") != shoe_id or type(shoe.get("hand")) is not int \
                or type(as_of) is not int:
            return len(in_shoe)
        after = sum(1 for r in in_shoe if type(r.get("msg_seq")) is int and r["msg_seq"] > as_of)
        return max(len(in_shoe), int(shoe["hand"]) + after)

    def _not_fetched(self, shoe_id: Any, in_shoe: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The shoe's earlier results it wants but cannot ask for now: how many, and why."""
        why = self.catchup.stalled()
        if self.catchup.shoe_wanted is None or why is None:
            return None
        snap = self.snapshot or {}
        shoe: dict[str, Any] = snap["shoe"] if isinstance(snap.get("shoe"), dict) else {}
        hand, as_of = shoe.get("hand"), snap.get("as_of_msg_seq")
        if shoe.get("shoe_id") != shoe_id or type(hand) is not int or type(as_of) is not int:
            return {"results": None, "why": why}
        held = sum(1 for r in in_shoe if type(r.get("msg_seq")) is int and r["msg_seq"] <= as_of)
        return {"results": max(hand - held, 0), "why": why}

    def _shoe_view(self, shoe_id: Any, in_shoe: list[dict[str, Any]]) -> dict[str, Any]:
        cards, dealt = self.shoe.get("cards"), self.shoe.get("dealt")
        left = self.shoe.get("left")
        if left is None and isinstance(cards, int) and isinstance(dealt, int):
            left = cards - dealt
        # The shoe's start was not seen (the display joined mid-shoe): its roads begin at
        # the first result seen, and the page must say so.
        joined = in_shoe[0]["seq"] if in_shoe and "cards" not in self.shoe else None
        not_fetched = self._not_fetched(shoe_id, in_shoe)
        if not_fetched is not None:  # wanted, but nobody to ask: the roads start late
            joined = in_shoe[0]["seq"] if in_shoe else None
        elif self.catchup.shoe_wanted is not None:
            joined = None  # being fetched (contract v2): "catching_up" says so
        return {"shoe_id": shoe_id, "hands": self._hands(shoe_id, in_shoe), "cards": cards,
                "dealt": dealt,
                "left": left, "cut_card": self.shoe.get("cut_card", False),
                "ended": self.shoe.get("ended"), "joined_at": joined,
                "catching_up": self.catchup.shoe_wanted is not None and not_fetched is None,
                "not_fetched": not_fetched}

    def _round_view(self) -> dict[str, Any]:
        r = dict(self.round)
        cards = r.get("cards") or []
        if cards:
            r["player_total"] = baccarat_total(cards, "player")
            r["banker_total"] = baccarat_total(cards, "banker")
        if "result" in r:
            r["result"] = _result_view(r["result"])
        return r


def _correction_view(c: Mapping[str, Any]) -> dict[str, Any]:
    v = c.get("void_reason") or {}
    return {"seq": c.get("seq"), "corrects": c.get("corrects"), "by": c.get("by"),
            "clause": v.get("clause"), "code": v.get("code"), "at": c.get("settled_at")}


def _result_view(r: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("seq", "round_id", "status", "winner", "player_total", "banker_total", "natural",
            "dice", "total", "shoe_id", "settled_at")
    out = {k: r[k] for k in keep if k in r}
    out["cards"] = [_card_view(c) for c in r.get("cards") or []]
    out["wins"] = [{"bet": b["bet"], "pays": b.get("pays")} for b in r.get("bets") or []
                   if b.get("result") == "win"]
    if r.get("void_reason"):
        v = r["void_reason"]
        out["void"] = {"clause": v.get("clause"), "code": v.get("code"),
                       "detail": v.get("detail")}
    if r.get("corrected"):
        out["corrected"] = r["corrected"]
    return out


KINDS = ("status", "devices", "events", "results", "alerts", "replies", "snapshot", "replay")
# A replayed message's topic is the answer's; its type says where it was first published.
REPLAYED_KINDS = {"result": "results", "correction": "results", "event": "events",
                  "alert": "alerts", "reply": "replies", "device": "devices"}
CARD = re.compile(r"^[A2-9TJQK][SHDC]$")


def _bad_card(c: Any) -> str | None:
    if not isinstance(c, dict) or not isinstance(c.get("card"), str) or \
            not CARD.match(c["card"]):
        return f"a card that is not a card code: {c!r:.80}"
    if c.get("hand") not in ("player", "banker") or c.get("position") not in (1, 2, 3):
        return f"a card without a hand and position 1-3: {c!r:.80}"
    return None


def _bad_dice(dice: Any) -> str | None:
    if not (isinstance(dice, list) and len(dice) == 3 and
            all(type(d) is int and 1 <= d <= 6 for d in dice)):
        return f"dice that are not three numbers 1-6: {dice!r:.80}"
    return None


def malformed(kind: str, body: Mapping[str, Any]) -> str | None:
    """What in a signed payload the page cannot draw (a table that breaks its own
    schema): the display refuses it rather than guess. None if it can be drawn."""
    if kind == "results":
        if type(body.get("seq")) is not int:
            return "a result without an integer seq"
        if body.get("type") == "correction":
            if not isinstance(body.get("corrects"), str) or body.get("status") != "void":
                return "a correction that does not name the round it voids"
            return None
        if body.get("status") == "valid" and "dice" in body:
            return _bad_dice(body["dice"])
        if body.get("status") == "valid":
            if body.get("winner") not in ("player", "banker", "tie"):
                return f"a result whose winner is {body.get('winner')!r:.40}"
            if not all(type(body.get(k)) is int and 0 <= body[k] <= 9
                       for k in ("player_total", "banker_total")):
                return "a result without totals 0-9"
            cards = body.get("cards")
            if not isinstance(cards, list):
                return "a result without a list of cards"
            return next((bad for bad in map(_bad_card, cards) if bad), None)
        if body.get("status") != "void":
            return f"a result whose status is {body.get('status')!r:.40}"
    if kind == "events":
        if body.get("event") == "card":
            return _bad_card(body)
        if body.get("event") == "dice":
            return _bad_dice(body.get("dice"))
        if body.get("event") == "card_drawn" and type(body.get("draw_no")) is not int:
            return "a card_drawn without an integer draw_no"
    return None


class Display:
    """Every table the display sees, from raw broker messages."""

    def __init__(self, keyring: Keyring, prefix: str = "tables",
                 tables: set[str] | None = None) -> None:
        self.keyring = keyring
        self.prefix = prefix.rstrip("/")
        self.only = tables or None
        self.tables: dict[str, DisplayedTable] = {}
        self.refused: deque[Refusal] = deque(maxlen=MAX_REFUSED)
        self.refused_total = 0
        self.verified = 0  # payloads whose signature a trusted key verified

    def _refuse(self, at: str, topic: str, reason: str) -> None:
        self.refused_total += 1
        self.refused.appendleft(Refusal(at, shown(topic, 200), reason))

    def receive(self, topic: str, raw: bytes, at: str) -> str | None:
        """Applies one broker message. Returns the table whose view changed, "" when only
        the refusals changed, or None when nothing did."""
        parts = topic.split("/")
        head = self.prefix.split("/")
        if parts[:len(head)] != head or len(parts) < len(head) + 2:
            return None
        table, kind, *rest = parts[len(head):]
        if self.only is not None and table not in self.only:
            return None
        if kind == "cmd" or kind not in KINDS:
            return None  # commands are the pit's words, not the table's
        if kind == "replay" and rest[:1] != ["to"]:
            return None  # requests (ours and others'): not the table's words
        if not raw:
            # A retained topic cleared (contract v2 clears devices no longer configured).
            # An empty message carries no signature, so a device is not dropped on its
            # word: it is shown as cleared, and whoever cleared it is the broker's to say.
            view = self.tables.get(table)
            if kind == "devices" and view is not None and rest:
                view.devices["/".join(rest)] = {
                    "state": "cleared", "detail": "retained state cleared (empty, unsigned)"}
                return table
            return None
        try:
            body = accept(raw, table, self.keyring)
        except SignatureError as exc:
            self._refuse(at, topic, str(exc))
            return ""
        self.verified += 1
        name = "/".join(rest)
        topic_kind = kind
        if kind == "replay":
            # A replay answer: stored messages exactly as first published, then a marker.
            if body.get("type") == "replay":
                view = self.tables.get(table)
                if view is not None:
                    view.catchup.answered(body)
                return table if view is not None else None
            kind = REPLAYED_KINDS.get(str(body.get("type")), "")
            name = str(body.get("name", "")) if kind == "devices" else ""
            if not kind:
                return None
        bad = malformed(kind, body)
        if bad is not None:
            self._refuse(at, topic, f"signed but malformed: {bad}")
            return ""
        view = self.tables.setdefault(table, DisplayedTable(table))
        if not view.apply(kind, name, body):
            return None
        if topic_kind == "replay":
            view.fetched += 1
        return table

    def refused_view(self) -> dict[str, Any]:
        return {"total": self.refused_total, "last": [r.as_dict() for r in self.refused]}

    def view(self) -> dict[str, Any]:
        return {"tables": {t: v.view() for t, v in sorted(self.tables.items())},
                "refused": self.refused_view()}
