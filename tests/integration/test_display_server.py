"""The display server over real sockets: a private Mosquitto, signed payloads published
with aiomqtt, the page and its event stream read as a browser would (raw HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt

from daemon.cli.main import main
from daemon.display.server import serve
from daemon.display.view import Display
from daemon.security.signing import Signer, public_key_text
from hil.broker import Mosquitto, free_port
from tests.keys import TABLE_KEY, TABLE_KEYRING
from tests.unit.display.payloads import result, snapshot, v2

SIGNER = Signer(TABLE_KEY)


@contextlib.asynccontextmanager
async def running(tmp_path: Path) -> AsyncIterator[tuple[int, int]]:
    broker = Mosquitto(tmp_path)
    broker.start()
    port = free_port()
    ready = asyncio.Event()
    task = asyncio.create_task(serve(Display(TABLE_KEYRING), ("127.0.0.1", broker.port),
                                     ("127.0.0.1", port), ready=ready))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        yield port, broker.port
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        broker.cleanup()


async def get(port: int, request: bytes) -> tuple[str, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode(), body


async def sse_events(reader: asyncio.StreamReader) -> AsyncIterator[tuple[str, Any]]:
    while True:
        block = await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)
        lines = dict(line.split(": ", 1) for line in block.decode().splitlines()
                     if ": " in line and not line.startswith(":"))
        if "event" in lines:
            yield lines["event"], json.loads(lines["data"])


async def test_the_page_its_parts_and_nothing_else(tmp_path: Path) -> None:
    async with running(tmp_path) as (port, _):
        head, body = await get(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith("HTTP/1.1 200") and b"/display.js" in body
        assert "Content-Security-Policy: default-src 'none'; script-src 'self'" in head
        # The page names no address outside the display itself.
        for part in ("/", "/display.js", "/display.css"):
            _, text = await get(port, f"GET {part} HTTP/1.1\r\n\r\n".encode())
            assert b"http://" not in text and b"https://" not in text and b"//cdn" not in text
        head, _ = await get(port, b"GET /../../etc/passwd HTTP/1.1\r\n\r\n")
        assert head.startswith("HTTP/1.1 404")
        head, _ = await get(port, b"POST /events HTTP/1.1\r\n\r\n")
        assert head.startswith("HTTP/1.1 405")


async def test_the_event_stream_pushes_verified_changes_and_refusals(tmp_path: Path) -> None:
    async with running(tmp_path) as (port, broker_port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /events HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert b"Content-Type: text/event-stream" in head
        events = sse_events(reader)
        kind, first = await anext(events)
        assert kind == "all" and first["tables"] == {}
        while not first.get("broker", {}).get("connected"):  # subscribed
            kind, first = await anext(events)
            if kind == "meta":
                first = {"broker": first["broker"]}
        async with aiomqtt.Client("127.0.0.1", broker_port) as client:
            await client.publish("tables/t1/results", SIGNER.seal(result(1)), qos=1)
            forged = {**json.loads(SIGNER.seal(result(2))), "winner": "player"}
            await client.publish("tables/t1/results", json.dumps(forged), qos=1)
        seen: dict[str, Any] = {}
        while "table" not in seen or "meta" not in seen:
            kind, data = await anext(events)
            seen[kind] = data
        assert [c["hand"]["seq"] for c in seen["table"]["roads"]["bead_plate"]] == [1]
        assert seen["meta"]["refused"]["total"] == 1
        assert "bad signature" in seen["meta"]["refused"]["last"][0]["reason"]
        writer.close()


def test_a_bad_key_file_is_a_clear_error(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "k.pub"
    bad.write_text("not a key")
    code = main(["display", "--broker", "mqtt://127.0.0.1:1", "--key", str(bad)])
    assert code == 2 and "not a public key" in capsys.readouterr().err


async def test_v2_catch_up_over_the_broker_snapshot_then_replay(tmp_path: Path) -> None:
    # Plays the table's side of contract v2 (docs/mqtt.md on branch wt/contract): a
    # retained snapshot mid-shoe, then answers the display's replay request.
    async with running(tmp_path) as (port, broker_port), \
            aiomqtt.Client("127.0.0.1", broker_port) as table:
        await table.subscribe("tables/t1/replay/request", qos=1)
        await table.publish("tables/t1/snapshot", SIGNER.seal(snapshot(300, 2, 100, [])),
                            qos=1, retain=True)
        async with asyncio.timeout(15):
            async for m in table.messages:
                req = json.loads(m.payload if isinstance(m.payload, bytes) else b"{}")
                break
        assert (req["from_msg_seq"], req["to_msg_seq"], req["topics"]) == (100, 300,
                                                                          ["results"])
        answer = f"tables/t1/replay/to/{req['reply_to']}"
        for seq, msg in ((1, 150), (2, 250)):
            await table.publish(answer, SIGNER.seal(v2(result(seq), msg)), qos=1)
        await table.publish(answer, SIGNER.seal(v2(
            {"type": "replay", "table": "t1", "id": req["id"], "from_msg_seq": 100,
             "to_msg_seq": 300, "count": 2, "next_msg_seq": None, "first_available": 1,
             "last_msg_seq": 300, "error": None}, None)), qos=1)
        async with asyncio.timeout(15):
            while True:
                _, body = await get(port, b"GET /state HTTP/1.1\r\n\r\n")
                t1 = json.loads(body)["tables"].get("t1", {})
                if not t1.get("shoe", {}).get("catching_up", True):
                    break
                await asyncio.sleep(0.1)
        assert [c["hand"]["seq"] for c in t1["roads"]["bead_plate"]] == [1, 2]
        assert t1["shoe"]["left"] == 356


def test_a_password_never_crosses_the_network_in_the_clear(tmp_path: Path,
                                                           capsys: Any) -> None:
    key, secret = tmp_path / "k.pub", tmp_path / "pw"
    key.write_text(public_key_text(TABLE_KEY.public_key()))
    secret.write_text("s3cret\n")
    code = main(["display", "--broker", "mqtt://192.0.2.1:1883", "--key", str(key),
                 "--username", "display", "--password-file", str(secret)])
    assert code == 2 and "in the clear" in capsys.readouterr().err
    code = main(["display", "--broker", "mqtts://192.0.2.1", "--key", str(key),
                 "--ca-file", str(tmp_path / "missing-ca.pem")])
    assert code == 2 and "missing-ca.pem" in capsys.readouterr().err
