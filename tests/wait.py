"""Waiting on a condition, for tests: poll until it holds, within a bound, instead of a
fixed sleep. The one definition the test files share."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(cond: Callable[[], bool], timeout: float = 20, *,
                poll: float = 0.02) -> None:
    """Return as soon as ``cond()`` holds; TimeoutError after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(poll)
