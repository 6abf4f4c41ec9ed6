"""Suite-wide settings.

Hypothesis's per-example deadline is a timed assertion: on a loaded two-core machine a
correct example can take longer than 200 ms, and the run then fails as "flaky" for a
reason that says nothing about the code. Time is measured by bench/, not by tests.
"""

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from hil.broker import Mosquitto

settings.register_profile("tabled", deadline=None)
settings.load_profile("tabled")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    """A private Mosquitto on a free loopback port, for one test (the shared broker on
    1883 is never touched); stopped, and its data removed, after the test."""
    b = Mosquitto(tmp_path)
    b.start()
    yield b
    b.cleanup()


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs a CLI command in this process sets up logging for the whole
    process (`tabled doctor` sets the root level to CRITICAL): put it back, so a later
    test's caplog still sees what its code logs, whatever order the workers run in."""
    root = logging.getLogger()
    level, before = root.level, set(root.handlers)
    yield
    root.setLevel(level)
    # pytest attaches its own capture handlers afresh for each phase: leave those alone.
    for handler in root.handlers[:]:
        if handler not in before and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
