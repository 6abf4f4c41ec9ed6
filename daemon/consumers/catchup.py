"""Catch-up under contract v2 (docs/mqtt.md, "Catch-up: the snapshot and replays"): which
messages of a table the display has, which it lacks, and the replay requests that
fetch them. Pure: no I/O; the clock is passed in.

Per journal: the message numbers (``msg_seq``) received; where tracking starts (0 for a
journal met live; the ``as_of_msg_seq`` of the snapshot the display joined at, which
stands for everything before it); and the numbers given up on (a replay came back
without them: pruned by the table's retention). A gap is a number after the start, up
to the newest known, that is none of these. Two kinds of request:

- ``shoe``: joined mid-shoe by a snapshot, the shoe's results from its ``shoe_loaded``
  (``shoe.loaded_msg_seq``) to the snapshot, topic ``results`` only, so the roads start
  at the shoe's first hand;
- ``gap``: every topic, for a gap in the numbers.

One request at a time per table, asked again after ``RETRY`` seconds without an answer;
an answer's marker moves a ``shoe`` request on (``next_msg_seq``) and settles a ``gap``
request (what it did not bring is lost).

Bounded (issue 26: a display started after its table stopped asked every 3 s for ever):
nothing is asked while the table's status says it is offline, nobody being there to
answer; and after ``MAX_ASKS`` requests in a row without an answer (a table killed whose
will the broker has not sent yet, a broker that denies the table its replay topics) it
stops. Either way ``stalled`` says why, and it asks again when the table comes back (a
status "online" of a new session, or after "offline").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

RETRY = 3.0  # seconds without a marker before a request is asked again
MAX_SPAN = 5000  # numbers looked through per gap search: a bound on the work per message
MAX_SEEN = 200_000  # message numbers kept per journal for de-duplication
MAX_ASKS = 4  # requests in a row without an answer before it stops asking


@dataclass
class Journal:
    start: int = 0
    seen: set[int] = field(default_factory=set)
    lost: set[int] = field(default_factory=set)
    newest: int = 0

    def missing(self) -> list[tuple[int, int]]:
        gaps: list[tuple[int, int]] = []
        low = max(self.start + 1, self.newest - MAX_SPAN)
        for n in range(low, self.newest + 1):
            if n not in self.seen and n not in self.lost:
                if gaps and gaps[-1][1] == n - 1:
                    gaps[-1] = (gaps[-1][0], n)
                else:
                    gaps.append((n, n))
        return gaps


@dataclass
class CatchUp:
    table: str
    journals: dict[str, Journal] = field(default_factory=dict)
    current: str | None = None  # the newest journal
    shoe_wanted: tuple[int, int] | None = None  # (from, to) msg_seq of a shoe's results
    pending: dict[str, tuple[str, int, int, float]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    offline: bool = False  # the table's status says offline: no one to answer
    session: int | None = None  # of the table's last status
    unanswered: int = 0  # requests in a row that got no answer

    def status(self, state: object, session: object) -> None:
        """The table's status: while offline nothing is asked; back online (after
        "offline", or a new session) it asks again from scratch."""
        was_offline, self.offline = self.offline, state == "offline"
        new_session = isinstance(session, int) and session != self.session
        if isinstance(session, int):
            self.session = session
        if self.offline:
            self.pending.clear()  # nobody will answer them
        elif was_offline or new_session:
            self.unanswered = 0

    def stalled(self) -> str | None:
        """Why it does not ask for what it lacks, or None while it can ask."""
        if self.offline:
            return "the table is offline"
        if self.unanswered >= MAX_ASKS:
            return f"the table answered none of {MAX_ASKS} replay requests"
        return None

    def journal(self, jid: str) -> Journal:
        if jid not in self.journals:
            self.journals[jid] = Journal()
            self.current = jid
        return self.journals[jid]

    def saw(self, jid: str, msg_seq: int) -> bool:
        """Records a numbered message; False if it was seen before. (One from before the
        snapshot joined at is new too: the shoe's results come so.)"""
        j = self.journal(jid)
        if msg_seq in j.seen:
            return False
        j.seen.add(msg_seq)
        j.newest = max(j.newest, msg_seq)
        if len(j.seen) > MAX_SEEN:  # days of messages: forget the oldest half
            floor = j.newest - MAX_SEEN // 2
            j.seen = {n for n in j.seen if n > floor}
            j.lost = {n for n in j.lost if n > floor}
            j.start = max(j.start, floor)
        return True

    def joined(self, snapshot: dict[str, Any], results_in_shoe: int) -> None:
        """A snapshot: the first of its journal is where tracking starts; and if the
        display lacks results of the snapshot's shoe, they are wanted."""
        jid, as_of = snapshot.get("journal_id"), snapshot.get("as_of_msg_seq")
        if not isinstance(jid, str) or not isinstance(as_of, int):
            return
        # Joining (the first journal met, by its snapshot): tracking starts there. A new
        # journal met while following another is wanted whole, though its snapshot may
        # come before its first messages (one of which may have been lost).
        joining = not self.journals
        new = jid not in self.journals
        j = self.journal(jid)
        if new and joining:
            j.start = as_of
        j.newest = max(j.newest, as_of)
        shoe = snapshot.get("shoe") or {}
        loaded, hand = shoe.get("loaded_msg_seq"), shoe.get("hand")
        if isinstance(loaded, int) and isinstance(hand, int) and results_in_shoe < hand \
                and self.shoe_wanted is None:
            self.shoe_wanted = (loaded, as_of)

    def shoe_complete(self) -> None:
        self.shoe_wanted = None

    def next_request(self, now: float) -> dict[str, Any] | None:
        """The replay request to send now (without ``reply_to``), or None."""
        for rid, (_, _, _, sent) in list(self.pending.items()):
            if now - sent < RETRY:
                return None  # one at a time
            del self.pending[rid]
            self.unanswered += 1
        jid = self.current
        if jid is None or self.stalled():
            return None
        if self.shoe_wanted is not None:
            kind, (low, high), topics = "shoe", self.shoe_wanted, ["results"]
        else:
            gaps = self.journals[jid].missing()
            if not gaps:
                return None
            kind, (low, high), topics = "gap", gaps[0], None
        rid = f"{kind}-{self.table}-{next(self._ids)}"
        self.pending[rid] = (kind, low, high, now)
        req: dict[str, Any] = {"id": rid, "from_msg_seq": low, "to_msg_seq": high,
                               "journal_id": jid}
        if topics:
            req["topics"] = topics
        return req

    def answered(self, marker: dict[str, Any]) -> None:
        """A replay marker (``type: replay``): the request it ends is done or goes on."""
        rid = marker.get("id")
        if not isinstance(rid, str) or rid not in self.pending:
            return  # another consumer's answer, or one already given up on
        kind, low, high, _ = self.pending.pop(rid)
        self.unanswered = 0
        nxt = marker.get("next_msg_seq")
        error = marker.get("error")
        jid = self.current
        if kind == "shoe":
            self.shoe_wanted = (nxt, high) if isinstance(nxt, int) and not error else None
            return
        if isinstance(nxt, int) and not error:
            return  # the rest of the gap is asked for next time round
        if jid is not None and (error or nxt is None):
            j = self.journals[jid]
            j.lost.update(n for n in range(low, high + 1) if n not in j.seen)

    def lost(self) -> int:
        return sum(len(j.lost) for j in self.journals.values())

    def gaps(self) -> list[tuple[int, int]]:
        return self.journals[self.current].missing() if self.current else []
