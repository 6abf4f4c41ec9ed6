"""A device driver running as a task for the length of a test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from daemon.drivers.device import DeviceDriver


@contextlib.asynccontextmanager
async def running(driver: DeviceDriver) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(driver.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
