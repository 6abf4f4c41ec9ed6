"""bench/delivery.py counts what the driver does on a noisy line, not only what the link
does: a session the driver ends on its heartbeat timeout (no message for 3.5 s)."""

from __future__ import annotations

from bench.delivery import run


def test_the_delivery_bench_counts_the_drivers_heartbeat_timeout() -> None:
    """At BER 1e-2 (version 1, seed 0) the driver ends a session within 10 s, while the
    bench reported 0 link failures there."""
    result = run(1, 1e-2, 10.0, 0)
    assert result["heartbeat_timeouts"] == 1
    assert result["delivered"] == result["sent"] and result["duplicates"] == 0


def test_a_clean_line_ends_no_session() -> None:
    result = run(2, 0.0, 10.0, 0)
    assert result["heartbeat_timeouts"] == result["failures"] == 0
    assert result["delivered"] == result["sent"]
