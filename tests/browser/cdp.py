"""Headless Debian chromium driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands in on fd 3, replies and events out on fd 4, each a
JSON message ended by a NUL byte). Standard library only; no browser download.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, proc: subprocess.Popen[bytes], to_chrome: int, from_chrome: int,
                 profile: Path) -> None:
        self.proc = proc
        self._out = os.fdopen(to_chrome, "wb", buffering=0)
        self._in = from_chrome
        self.profile = profile
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.session: str | None = None
        self._reader: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=256 * 1024 * 1024)  # a screenshot is one message
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(self._in, "rb", buffering=0))
        while True:
            try:
                raw = await reader.readuntil(b"\0")
            except asyncio.IncompleteReadError:
                break
            msg = json.loads(raw[:-1])
            fut = self._waiting.pop(msg.get("id", -1), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(CdpError("chromium closed the pipe"))

    async def send(self, method: str, params: dict[str, Any] | None = None, *,
                   page: bool = True, timeout: float = 30) -> dict[str, Any]:
        n = next(self._ids)
        msg: dict[str, Any] = {"id": n, "method": method, "params": params or {}}
        if page and self.session:
            msg["sessionId"] = self.session
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[n] = fut
        self._out.write(json.dumps(msg).encode() + b"\0")
        reply = await asyncio.wait_for(fut, timeout)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    async def open(self, url: str, width: int = 1920, height: int = 1080) -> None:
        target = await self.send("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = await self.send("Target.attachToTarget",
                                   {"targetId": target["targetId"], "flatten": True},
                                   page=False)
        self.session = attached["sessionId"]
        await self.viewport(width, height)
        await self.send("Page.enable")
        await self.send("Page.navigate", {"url": url})

    async def viewport(self, width: int, height: int) -> None:
        await self.send("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1,
                         "mobile": False})

    async def evaluate(self, expression: str) -> Any:
        out = await self.send("Runtime.evaluate", {"expression": expression,
                                                   "returnByValue": True,
                                                   "awaitPromise": True})
        if "exceptionDetails" in out:
            raise CdpError(f"page script failed: {out['exceptionDetails']}")
        return out.get("result", {}).get("value")

    async def until(self, expression: str, timeout: float = 30) -> Any:
        """Waits until the expression is truthy in the page; returns its value."""
        last: Any = None
        try:
            async with asyncio.timeout(timeout):
                while True:
                    with contextlib.suppress(CdpError):
                        # An element comes back as {}: count it as found.
                        last = await self.evaluate(
                            f"(() => {{ const v = ({expression}); "
                            f"return v instanceof Node ? true : v; }})()")
                        if last:
                            return last
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise AssertionError(f"page never showed {expression!r} (last: {last!r})") from None

    async def screenshot(self, path: Path) -> None:
        # A target in the background draws no frames, and a screenshot waits for one.
        await self.send("Page.bringToFront")
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.send("Browser.close", page=False, timeout=5)
        try:
            await asyncio.to_thread(self.proc.wait, 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait)
        if self._reader is not None:
            self._reader.cancel()
        with contextlib.suppress(OSError):
            self._out.close()
        shutil.rmtree(self.profile, ignore_errors=True)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is not installed: bash scripts/setup.sh dev installs it")
    profile = Path(tempfile.mkdtemp(prefix="tabled-chromium-"))
    to_r, to_w = os.pipe()      # we write commands, chromium reads them on fd 3
    from_r, from_w = os.pipe()  # chromium writes on fd 4, we read

    def child_fds() -> None:
        # Out of the way first: either pipe end may itself be fd 3 or 4.
        r, w = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
        os.dup2(r, 3)
        os.dup2(w, 4)

    # close_fds=False: it would close 3 and 4 after preexec_fn; every other descriptor
    # Python opened is non-inheritable anyway.
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        close_fds=False, preexec_fn=child_fds,  # noqa: PLW1509 - before exec only
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_r)
    os.close(from_w)
    browser = Browser(proc, to_w, from_r, profile)
    browser._reader = asyncio.create_task(browser._read())
    try:
        yield browser
    finally:
        await browser.close()
