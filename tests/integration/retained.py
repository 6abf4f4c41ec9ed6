"""What a broker holds retained under a pattern, read by a fresh subscriber."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiomqtt


async def retained(port: int, pattern: str) -> dict[str, dict[str, Any]]:
    """What a consumer connecting now is given: the retained messages only."""
    out: dict[str, dict[str, Any]] = {}
    async with aiomqtt.Client("127.0.0.1", port) as client:
        await client.subscribe(pattern, qos=1)
        try:
            async with asyncio.timeout(1.0):
                async for m in client.messages:
                    assert m.retain
                    out[str(m.topic)] = json.loads(bytes(m.payload))
        except TimeoutError:
            pass
    return out
