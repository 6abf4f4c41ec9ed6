"""A broker session that keeps being dropped once established.

The usual cause is another client connecting with the table's client id: the broker
then drops the older session, the table reconnects and drops the other, and commands
sent meanwhile are lost (issue 12). The broker config binds client ids to usernames
(``use_username_as_clientid``, docs/operations.md#security); this watch is the table's
own evidence when that is missing or bypassed: an alert when ``threshold`` established
sessions end within ``window`` seconds, at most one per window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SessionWatch:
    clock: Callable[[], float]
    client_id: str
    window: float = 60.0
    threshold: int = 3
    _lost: deque[float] = field(default_factory=deque)
    _alerted_at: float | None = None

    def lost(self, reason: str) -> str | None:
        """An established session ended; the alert's detail when it is time for one."""
        now = self.clock()
        self._lost.append(now)
        while self._lost and now - self._lost[0] > self.window:
            self._lost.popleft()
        if len(self._lost) < self.threshold:
            return None
        if self._alerted_at is not None and now - self._alerted_at < self.window:
            return None
        self._alerted_at = now
        return (f"the broker ended this table's session {len(self._lost)} times in "
                f"{self.window:.0f} s (last: {reason[:200]}): another client may be "
                f"connecting as {self.client_id!r}; bind client ids to usernames "
                "(use_username_as_clientid, docs/operations.md#security)")
