"""Spec, "Resuming" and "A full queue": a device and a host driven as in the field, over a
line one direction of which (or both) is dead for 10 s. Every event arrives once, in
order, and none is lost (tests/unit/protocols/outage.py runs the scenarios)."""

from __future__ import annotations

import pytest

from tests.unit.protocols.outage import SCENARIOS, run


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_resuming_across_a_chain_of_sessions_sends_nothing_twice(scenario: str,
                                                                 seed: int) -> None:
    """host-to-device dead: the device's link fails and its RST reaches the host, whose
    RSTACK is lost; the host's handshake then ends that session, which carried nothing.
    Its next RST named that empty session, so the device re-sent everything it held:
    6-7 duplicates and 1 reordering in each seed. Now it names the last session that
    carried anything."""
    outcome = run(scenario, seed)
    assert outcome.device_failures + outcome.host_sessions > 1  # the outage did end a session
    assert (outcome.duplicates, outcome.reorderings, outcome.lost) == (0, 0, 0), outcome
    assert outcome.arrivals == list(range(1, outcome.sent + 1))
