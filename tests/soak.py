"""Soak runs: CI runs each long reliability run in a bounded form that still checks what
it is for; TABLED_SOAK=1 runs the full one (pyproject's ``soak`` marker)."""

from __future__ import annotations

import os

SOAK = os.environ.get("TABLED_SOAK") == "1"


def scale(bounded: int, full: int) -> int:
    """CI runs the bounded size; TABLED_SOAK=1 runs the full one."""
    return full if SOAK else bounded
