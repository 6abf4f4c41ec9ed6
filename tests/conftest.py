"""Suite-wide settings.

Hypothesis's per-example deadline is a timed assertion: on a loaded two-core machine a
correct example can take longer than 200 ms, and the run then fails as "flaky" for a
reason that says nothing about the code. Time is measured by bench/, not by tests.
"""

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
