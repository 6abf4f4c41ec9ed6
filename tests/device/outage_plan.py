"""Where a one-way outage falls and how long it lasts (issue 24): drawn at random from a
seed, so that many runs try many moments and any one of them can be run again. The seed
is TABLED_OUTAGE_SEED when set; otherwise one per test run (the same on every xdist
worker), and every plan prints it."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from tests.soak import SOAK

SEED_VAR = "TABLED_OUTAGE_SEED"
# How long a cut lasts (s): long enough for the device's link to fail (eight timeouts and
# 5 s of silence) and the host's heartbeat timeout (3.5 s), short enough for the default
# run; the soak run takes the whole 5-30 s.
CUT_S = (6.0, 9.0)
SOAK_CUT_S = (5.0, 30.0)
# Plans per (device, cut): one in the default run, many under TABLED_SOAK=1.
DRAWS = 6 if SOAK else 1

_FRESH = random.SystemRandom().randrange(1 << 32)


def run_seed() -> int:
    text = os.environ.get(SEED_VAR)
    if text:
        return int(text)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # one hex id shared by the workers
    return int(run[:8], 16) if run else _FRESH


@dataclass(frozen=True)
class Plan:
    """One cut: of ``device``'s line, ``cut`` (a pty_proxy CUTS name), starting ``at`` (a
    fraction, 0 to 1, of the stretch the test cuts into: a round, a reveal) and lasting
    ``seconds``; ``rng`` for the test's other choices (the dealer's pace), and
    ``device_seed`` for the emulator's own (its shuffle, its link's jitter)."""

    device: str
    cut: str
    stretch: str  # what it cuts into: "round", "shuffle", "reveal"
    seed: int
    draw: int
    at: float
    seconds: float
    device_seed: int
    rng: random.Random = field(compare=False, repr=False)

    def __str__(self) -> str:
        return (f"{self.device} {self.cut} at {self.at:.3f} of its {self.stretch} for "
                f"{self.seconds:.2f} s ({SEED_VAR}={self.seed}, draw {self.draw})")


def plan(device: str, cut: str, stretch: str, draw: int = 0) -> Plan:
    seed = run_seed()
    # A str seeds the same everywhere (sha512), and each stretch has its own draw.
    rng = random.Random(f"{seed}/{device}/{cut}/{stretch}/{draw}")
    at, seconds = rng.random(), rng.uniform(*(SOAK_CUT_S if SOAK else CUT_S))
    made = Plan(device, cut, stretch, seed, draw, at, seconds, rng.randrange(1, 1 << 31), rng)
    print(f"outage: {made}")
    return made
