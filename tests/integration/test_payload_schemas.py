"""Every payload the daemon publishes validates against the schema shipped for its topic."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from daemon.config import parse_config
from daemon.mqtt.envelope import out_of_band
from daemon.round.effects import Alert
from daemon.security.signing import Keyring, load_private_key
from daemon.service import TableService
from hil.broker import Mosquitto
from hil.simulate import simulate
from tests import schemas
from tests.keys import TABLE_KEY, TABLE_KEYRING, commands, signed, signing
from tests.schemas import SCHEMAS


def schema_for(topic: str, payload: dict[str, Any] | None = None) -> str:
    return schemas.schema_for(topic.split("/", 2)[2], payload or {})


# Every game, each with a layout of its own; layouts of a game differ only in the bets of
# a result (names the result schema's pattern covers), not in which payloads go out.
GAMES_RUN = [("tiger-buffalo", "C", 8, 10), ("tiger-buffalo-insurance-plus", "C", 8, 10),
             ("tiger-baccarat", "E", 8, 10), ("tai-sai-open-cover", "A", None, 12)]


@pytest.mark.parametrize(("game", "layout", "decks", "rounds"), GAMES_RUN,
                         ids=[g[0] for g in GAMES_RUN])
async def test_every_published_payload_matches_its_schema(
        tmp_path: Path, game: str, layout: str, decks: int | None, rounds: int) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    seen: list[tuple[str, dict[str, Any]]] = []
    try:
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            await client.subscribe("tables/sim-1/#", qos=1)

            async def listen() -> None:
                async for m in client.messages:
                    raw = m.payload if isinstance(m.payload, bytes) else b"{}"
                    seen.append((str(m.topic), json.loads(raw)))

            listener = asyncio.create_task(listen())
            await simulate(game, layout, decks, rounds, workdir=tmp_path,
                           broker=("127.0.0.1", broker.port), speed=50, out=io.StringIO())
            await asyncio.sleep(0.3)
            listener.cancel()
    finally:
        broker.cleanup()
    table_key = load_private_key(tmp_path / "signing.pem")
    ring = Keyring.of([table_key.public_key()])
    kinds = set()
    numbered: dict[int, dict[str, Any]] = {}
    assert schemas.problems([(t.split("/", 2)[2], p) for t, p in seen]) == []
    for topic, payload in seen:
        if "/cmd/" not in topic:  # everything the table publishes is signed by it
            ring.verify(payload)
        name = schema_for(topic, payload)
        kinds.add(name)
        if name != "command":
            assert payload["schema"] == f"tabled/{name}/2" and payload["table"] == "sim-1"
        if payload.get("msg_seq") is not None:  # a re-sent copy is the same message
            assert numbered.setdefault(payload["msg_seq"], payload) == payload
    # one journal numbered every message, on every topic, with no gap
    assert {p["journal_id"] for _, p in seen if "journal_id" in p} == {
        next(p["journal_id"] for _, p in seen if "journal_id" in p)}
    assert sorted(numbered) == list(range(1, max(numbered) + 1))
    assert {"status", "device", "event", "result", "reply", "command", "snapshot"} <= kinds
    events = [p for t, p in seen if t.endswith("/events")]
    results = [p for t, p in seen if t.endswith("/results")]
    assert len(results) == rounds
    if game.startswith("tai-sai"):
        assert {"betting_opened", "betting_closed", "awaiting_tumble", "tumbler_armed",
                "tumbler_activated", "tumble", "dice"} <= {p["event"] for p in events}
        return
    assert {"shuffle_certified", "shoe_loaded", "betting_opened", "betting_closed",
            "next_card", "card"} <= {p["event"] for p in events}
    # One event per card (issue 15: v1 sent card_drawn, card and next_card): the draw as
    # read, its hand and position, and the card required next; a deal's first prompt and
    # an insurance window's are the only next_card events left.
    cards = [p for p in events if p["event"] == "card"]
    assert not [p for p in events if p["event"] == "card_drawn"]
    assert all({"confidence", "hand", "position", "next"} <= set(p) for p in cards)
    assert len(cards) == sum(len(r["cards"]) for r in results)
    prompts = [p for p in events if p["event"] == "next_card"]
    assert len(prompts) <= len(results) + sum(p["event"] == "insurance_offered"
                                              for p in events)


async def test_alert_and_error_reply_payloads(tmp_path: Path) -> None:
    cfg = parse_config({
        "table": {"id": "t1", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        "devices": {"shoe": "socket://127.0.0.1:9", "shuffler": "socket://127.0.0.1:9",
                    "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "journal": {"path": str(tmp_path / "j.db")},
        "signing": signing(), "commands": commands(),
    })
    service = TableService(cfg)
    service.apply([Alert("card_not_of_set", "5.5.1", "draw 3: back of set 0xbad", "r-1"),
                   Alert("device_command_failed", "", "lock_gate to shoe failed")])
    answers = [service.execute("close_betting", signed("t1", "close_betting", "a",
                                                       round_id="t1-none")),
               service.execute("open_betting", b"{broken"),
               # denied, with an alert
               service.execute("open_betting", b'{"id": "unsigned"}'),
               service.execute("close_betting", signed("t1", "close_betting", "b",
                                                       round_id="t1-none"))]
    # Replies to unauthenticated input go out directly (not journalled): checked here.
    published = [(e.topic, json.loads(e.payload)) for e in service.journal.pending()]
    published += [("tables/t1/replies", json.loads(service.publisher._wire(out_of_band(
        a, "t1", service.journal.journal_id)))) for a in answers[1:3]]  # as publish_now sends
    names = [schema_for(t) for t, _ in published]
    assert names.count("alert") == 3 and names.count("reply") == 4
    for topic, wire in published:  # the stored bytes are what goes on the wire
        assert TABLE_KEYRING.verify(wire) == service.cfg.signer.kid
        SCHEMAS[schema_for(topic, wire)].validate(wire)
    numbered = [p["msg_seq"] for _, p in published if p["msg_seq"] is not None]
    assert numbered == list(range(1, len(numbered) + 1))
    assert service.cfg.signer.key.public_key() == TABLE_KEY.public_key()
