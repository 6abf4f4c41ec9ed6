"""Issue 26: `tabled hil run` prints the table's key and how to watch it, so a scenario
can be watched as it plays. Through the real process: the printed command's tabled
exists, and the printed broker and key verify what the table publishes there."""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from pathlib import Path

import aiomqtt

from daemon.consumers.verify import accept
from daemon.security.signing import Keyring, parse_public_key

SCENARIO = Path(__file__).parents[2] / "hil" / "scenarios" / "tiger-buffalo-face-up.json"


async def test_hil_run_prints_the_tables_key_and_how_to_watch_it() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "daemon", "hil", "run", str(SCENARIO), "--speed", "1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(30):
            while not any("mosquitto_sub" in line for line in lines):
                line = (await proc.stdout.readline()).decode()
                assert line, "".join(lines)  # it ended without saying how to watch
                lines.append(line)
        text = "".join(lines)
        watch = re.search(r"watch it: (.*) watch --broker mqtt://([\d.]+):(\d+) --table (\S+)"
                          r" \\\n\s+--key (\S+)", text)
        assert watch, text
        tabled, host, port, table, key = watch.groups()
        assert Path(shlex.split(tabled)[0]).exists(), tabled
        assert f"-p {port} -v -t 'tables/{table}/#'" in text  # the mosquitto_sub line
        keyring = Keyring.of([parse_public_key(key)])
        async with asyncio.timeout(20), \
                aiomqtt.Client(host, int(port)) as client:
            await client.subscribe(f"tables/{table}/status", qos=1)
            async for m in client.messages:
                raw = m.payload if isinstance(m.payload, bytes) else b""
                assert accept(raw, table, keyring)["state"] == "online"
                break
        async with asyncio.timeout(60):
            rest = (await proc.stdout.read()).decode()
            assert await proc.wait() == 0, text + rest
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
