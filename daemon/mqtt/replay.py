"""Replay requests: a consumer that missed messages asks for them again, from the journal.

Request, on ``{prefix}/{table}/replay/request`` (unsigned: read-only consumers have no
key, and everything sent back is the table's own signed messages)::

    {"id": "any 1-64 chars", "reply_to": "name", "from_msg_seq": 120,
     "to_msg_seq": 180, "topics": ["results"], "journal_id": "..."}

``to_msg_seq``, ``topics`` (any of events, results, alerts, replies, devices) and
``journal_id`` (the journal the requester knows) are optional. The answer goes to
``{prefix}/{table}/replay/to/{reply_to}``: the stored messages, byte for byte as first
published (same ``msg_seq``, same signature), in order, then one signed ``replay``
marker that says what was sent and where to continue.

Bounds, so that no requester can make the table work for it more than this: a request
of more than ``MAX_REQUEST`` bytes is dropped before it is read at all; at most
``MAX_MESSAGES`` messages and ``MAX_BYTES`` bytes per answer (``next_msg_seq`` says
where to continue); requests are taken at ``RATE`` per second with bursts of ``BURST``
for all requesters together, and at ``PER_RATE`` (bursts of ``PER_BURST``) for each
requester, named by its ``reply_to`` (neither Mosquitto nor NATS tells the table which
broker user published a request), so that one requester cannot take the whole budget;
one that comes faster is answered ``busy`` (at most one such answer a second; the rest
are dropped). A request that cannot be answered (too large, not JSON, no valid
``reply_to``) is dropped and counted.

An answer's messages are paid for too: each requester has ``PER_MESSAGE_RATE`` messages
a second (bursts of ``PER_MESSAGE_BURST``), all together ``MESSAGE_RATE`` (bursts of
``MESSAGE_BURST``). A request is admitted only while its requester's share and the
table's each hold the most its answer can send (its range, at most ``MAX_MESSAGES``),
which is set aside for it; what the answer did not send is given back. Counting
requests alone let one requester have 500 messages a second sent for it, a quarter of
the daemon's time taken from the rounds (docs/performance.md, "Replay under a flood").
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from daemon.errors import InputError

MAX_REQUEST = 1024  # bytes
MAX_SEQ = 2**63 - 1  # the largest msg_seq SQLite's INTEGER holds
MAX_MESSAGES = 500
MAX_BYTES = 512 * 1024
# The table's budget, and each requester's share of it: a flood under one name leaves
# three quarters of it to everyone else (docs/performance.md, "Replay under a flood").
RATE, BURST = 4.0, 10.0
PER_RATE, PER_BURST = 1.0, 5.0
# Messages sent in answers: a requester may fetch two full answers at once, then 100
# messages a second (a table sends a few a second: catching up is still quick).
PER_MESSAGE_RATE, PER_MESSAGE_BURST = 100.0, 2.0 * MAX_MESSAGES
MESSAGE_RATE, MESSAGE_BURST = 250.0, 4.0 * MAX_MESSAGES
MAX_REQUESTERS = 1024  # buckets kept, the least recently heard forgotten first
MAX_WAITING = 8  # admitted requests waiting their turn; more are answered busy
TOPICS = ("events", "results", "alerts", "replies", "devices")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ReplayError(InputError, ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ReplayRequest:
    id: str
    reply_to: str
    first: int
    last: int | None
    topics: tuple[str, ...]
    journal_id: str | None


@dataclass(frozen=True)
class Head:
    """What admission reads of a request: where to answer, and the range asked (None:
    not a valid number, which ``parse`` refuses)."""

    reply_to: str
    first: int | None
    last: int | None

    def most(self, newest: int) -> int:
        """The most messages its answer can send, with ``newest`` the table's last."""
        if self.first is None:
            return 0
        last = newest if self.last is None else min(self.last, newest)
        return max(0, min(MAX_MESSAGES, last - self.first + 1))


def _number(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_SEQ \
        else None


def head_of(payload: bytes) -> Head | None:
    """Where a refusal can go, if anywhere, and the range. A payload over
    ``MAX_REQUEST`` goes nowhere, unread: parsing it first let a request of 100 MB cost
    the table 270 MB."""
    if len(payload) > MAX_REQUEST:
        return None
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError):  # any bytes are data (issue 25)
        return None
    if not isinstance(body, dict):
        return None
    name = body.get("reply_to")
    if not isinstance(name, str) or not NAME.match(name):
        return None
    return Head(name, _number(body.get("from_msg_seq")), _number(body.get("to_msg_seq")))


def echoable(rid: object) -> TypeGuard[str]:
    """An id the signed marker can carry: 1-64 characters that UTF-8 can encode (JSON's
    escapes can spell a lone surrogate, which it cannot)."""
    if not isinstance(rid, str) or not 0 < len(rid) <= 64:
        return False
    try:
        rid.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(payload: bytes) -> ReplayRequest:
    if len(payload) > MAX_REQUEST:
        raise ReplayError("bad_request", f"a request has at most {MAX_REQUEST} bytes")
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ReplayError("bad_request", f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ReplayError("bad_request", "a request is a JSON object")
    unknown = set(body) - {"id", "reply_to", "from_msg_seq", "to_msg_seq", "topics",
                           "journal_id"}
    if unknown:
        raise ReplayError("bad_request", f"unknown fields: {', '.join(sorted(unknown))}")
    rid, reply_to = body.get("id"), body.get("reply_to")
    if not echoable(rid):
        raise ReplayError("bad_request", "id: a string of 1-64 characters")
    if not isinstance(reply_to, str) or not NAME.match(reply_to):
        raise ReplayError("bad_request", "reply_to: 1-64 of A-Z a-z 0-9 _ -")
    first, last = body.get("from_msg_seq"), body.get("to_msg_seq")
    for name, v in (("from_msg_seq", first), ("to_msg_seq", last)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)
                              or not 1 <= v <= MAX_SEQ):
            raise ReplayError("bad_request", f"{name}: an integer from 1 to 2**63 - 1")
    if first is None:
        raise ReplayError("bad_request", "from_msg_seq: missing")
    if last is not None and last < first:
        raise ReplayError("bad_request", "to_msg_seq is before from_msg_seq")
    topics = body.get("topics", list(TOPICS))
    if not isinstance(topics, list) or not topics or not set(topics) <= set(TOPICS):
        raise ReplayError("bad_request", f"topics: a non-empty list of {', '.join(TOPICS)}")
    jid = body.get("journal_id")
    if jid is not None and not isinstance(jid, str):
        raise ReplayError("bad_request", "journal_id: a string")
    return ReplayRequest(rid, reply_to, first, last, tuple(topics), jid)


@dataclass
class Bucket:
    """A token bucket: ``rate`` per second, at most ``burst`` at once."""

    rate: float
    burst: float
    clock: Any = time.monotonic
    tokens: float = field(init=False)
    at: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens, self.at = self.burst, self.clock()

    def take(self, n: float = 1) -> bool:
        if self.has(n):
            self.tokens -= n
            return True
        return False

    def has(self, n: float = 1) -> bool:
        """At least ``n`` tokens (refilled up to now)."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return self.tokens >= n

    def give(self, n: float) -> None:
        """Tokens taken and not used, back."""
        self.tokens = min(self.burst, self.tokens + n)


@dataclass
class Share:
    """One requester's: its requests, and the messages sent in its answers."""

    requests: Bucket
    messages: Bucket


class Fair:
    """The table's replay budget shared among requesters: a request is admitted when its
    requester's own buckets and the table's all have a request and the most its answer
    can send, which ``take`` sets aside; ``give_back`` returns what the answer did not
    send. A name heard for the first time starts with full buckets; at most
    ``MAX_REQUESTERS`` are kept."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.table = Share(Bucket(RATE, BURST, clock),
                           Bucket(MESSAGE_RATE, MESSAGE_BURST, clock))
        self._each: OrderedDict[str, Share] = OrderedDict()

    def take(self, requester: str, most: Callable[[], int] = lambda: 0) -> int | None:
        """The messages set aside for an admitted request (``most()``, asked only once
        its request is within the rates), or None: not admitted."""
        own = self._each.pop(requester, None) or Share(
            Bucket(PER_RATE, PER_BURST, self.clock),
            Bucket(PER_MESSAGE_RATE, PER_MESSAGE_BURST, self.clock))
        self._each[requester] = own  # the most recently heard, last
        if len(self._each) > MAX_REQUESTERS:
            self._each.popitem(last=False)
        if not own.requests.take():
            return None
        if not self.table.requests.take():
            own.requests.give(1)  # not served: its own share is not spent
            return None
        # A request refused here has spent its request tokens: ``most`` (a journal read)
        # then runs at most at the request rates, however fast a flooder in debt asks.
        n = most()
        if own.messages.take(n):
            if self.table.messages.take(n):
                return n
            own.messages.give(n)
        return None

    def give_back(self, requester: str, unsent: int) -> None:
        """What an admitted request's answer did not send, back to its requester and
        the table."""
        own = self._each.get(requester)
        if own is not None:
            own.messages.give(unsent)
        self.table.messages.give(unsent)
