"""A table's outbox backlog, as its status says it (contract v2), in words: shown the same
by the display and the watch."""

from __future__ import annotations

from typing import Any


def backlog_text(status: dict[str, Any]) -> str:
    """A status's ``backlog`` in words: the messages the table has stored and the broker
    has not yet acknowledged, and since when the oldest of them waits."""
    b = status.get("backlog")
    if not isinstance(b, dict):
        why = ("the table is offline: its will cannot know" if status.get("state") == "offline"
               else "not published by this table" if status else "no status yet")
        return f"outbox backlog: unknown ({why})"
    as_of = str(status.get("at") or "")[11:19]
    n = b.get("messages") or 0
    if type(n) is not int:  # the schema says an integer; anything else is not drawn
        return f"outbox backlog: unknown (not a number of messages, as of {as_of})"
    if not n:
        return f"outbox backlog: none (as of {as_of})"
    return (f"outbox backlog: {n} message{'s' if n != 1 else ''} not yet published, oldest "
            f"msg_seq {b.get('oldest_msg_seq')} stored {str(b.get('oldest_at') or '')[11:19]}"
            f" (as of {as_of})")
