"""How tabled writes a moment in what it publishes and signs: ISO 8601, UTC, to the
millisecond, with ``Z`` (the contract's ``date-time`` fields; docs/mqtt.md)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ts: float | None) -> str | None:
    """``ts`` (seconds since the epoch) as the contract writes it; None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")
