"""The authenticated broker link, end to end, with a real Mosquitto: TLS with a CA and
certificates made at test time, client certificates, passwords, and the shipped ACL.

- the daemon connects over TLS with its certificate and a password from a credential;
- a client of another table cannot publish into this table's topics (the ACL);
- a forged command is denied, and a genuine one is carried out and names its signer;
- a tampered result is rejected by the consumer's check, the genuine one accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from daemon.config import parse_config
from daemon.security.signing import SignatureError
from daemon.service import TableService
from hil.broker import Mosquitto
from tests.integration.secured_broker import USERS, secured_broker
from tests.keys import STRANGER_KEY, TABLE_KEYRING, commands, signed, signing
from tests.pki import Pki

ROOT = Path(__file__).resolve().parents[2]


def client(broker: Mosquitto, pki: Pki, user: str, **kw: Any) -> aiomqtt.Client:
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    ctx.load_cert_chain(str(pki.dir / f"{user}.pem"), str(pki.dir / f"{user}.key"))
    return aiomqtt.Client("127.0.0.1", broker.port, username=user, password=USERS[user],
                          tls_context=ctx, identifier=f"test-{user}", **kw)


class Inbox:
    def __init__(self) -> None:
        self.items: list[tuple[str, bytes]] = []

    async def listen(self, c: aiomqtt.Client) -> None:
        async for m in c.messages:
            raw = m.payload if isinstance(m.payload, bytes) else b""
            self.items.append((str(m.topic), raw))

    async def wait(self, match: Callable[[str, dict[str, Any]], bool],
                   timeout: float = 10) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for topic, raw in self.items:
                    body: dict[str, Any] = json.loads(raw)
                    if match(topic, body):
                        return body
                await asyncio.sleep(0.05)


def tls_table(work: Path, broker: Mosquitto, pki: Pki, files: Path, table: str,
              replay_user: str | None = None) -> TableService:
    """A Tai Sai table logging in over TLS as ``table`` (and its replay process as
    ``replay_user``), passwords from systemd credentials, commanded by
    pit-supervisor-1."""
    principal = commands()["principals"]["pit-boss"]
    creds = work / "creds"
    creds.mkdir()
    login = {"password_file": "credential:mqtt-password"}
    (creds / "mqtt-password").write_text(USERS[table] + "\n", encoding="utf-8")
    if replay_user is not None:
        login |= {"replay_username": replay_user,
                  "replay_password_file": "credential:mqtt-replay-password"}
        (creds / "mqtt-replay-password").write_text(USERS[replay_user] + "\n",
                                                    encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CREDENTIALS_DIRECTORY", str(creds))
        return TableService(parse_config({
            "table": {"id": table, "game": "tai-sai-open-cover", "layout": "E"},
            "devices": {"tumbler": "socket://127.0.0.1:9", "serials": {"tumbler": "TM0001"}},
            "broker": {"url": f"mqtts://127.0.0.1:{broker.port}", "username": table,
                       **login, "ca_file": str(pki.ca_file),
                       "cert_file": str(files / f"{table}.pem"),
                       "key_file": str(files / f"{table}.key")},
            "journal": {"path": str(work / "j.db")},
            "signing": signing(),
            "commands": {"principals": {"pit-supervisor-1": principal}}}))


async def test_tls_acl_signed_commands_and_results(tmp_path: Path) -> None:
    async with secured_broker(tmp_path) as (broker, pki, files):
        service = tls_table(tmp_path, broker, pki, files, "ts-1")
        daemon = asyncio.create_task(service.run())
        inbox = Inbox()
        try:
            async with client(broker, pki, "settlement") as settle, \
                    client(broker, pki, "ts-2") as other, \
                    client(broker, pki, "pit-supervisor-1") as sup:
                await settle.subscribe("tables/#", qos=1)
                listener = asyncio.create_task(inbox.listen(settle))
                online = await inbox.wait(lambda t, b: t == "tables/ts-1/status"
                                          and b["state"] == "online")
                TABLE_KEYRING.verify(online)

                # Another table's client: its writes into ts-1's topics never arrive.
                forged = {"type": "result", "round_id": "fake", "seq": 999, "winner": "x"}
                await other.publish("tables/ts-1/results", json.dumps(forged), qos=1)
                await other.publish("tables/ts-1/cmd/open_betting",
                                    signed("ts-1", "open_betting", "o1"), qos=1)
                await other.publish("tables/ts-2/results", json.dumps(forged), qos=1)
                await inbox.wait(lambda t, b: t == "tables/ts-2/results")  # its own: allowed
                assert not [t for t, _ in inbox.items if t == "tables/ts-1/results"]

                # A forged command is denied; a genuine one runs and names its signer.
                await sup.publish("tables/ts-1/cmd/open_betting",
                                  signed("ts-1", "open_betting", "f1", key=STRANGER_KEY), qos=1)
                denied = await inbox.wait(lambda t, b: t == "tables/ts-1/replies"
                                          and b["id"] == "f1")
                assert denied["error"]["code"] == "denied"
                await inbox.wait(lambda t, b: t == "tables/ts-1/alerts"
                                 and b["code"] == "command_denied")
                await sup.publish("tables/ts-1/cmd/open_betting",
                                  signed("ts-1", "open_betting", "c1"), qos=1)
                opened = await inbox.wait(lambda t, b: t == "tables/ts-1/replies"
                                          and b["id"] == "c1")
                assert opened["ok"]
                await sup.publish("tables/ts-1/cmd/void_round",
                                  signed("ts-1", "void_round", "c2", reason="table bumped",
                                         round_id=opened["round_id"]), qos=1)
                assert (await inbox.wait(lambda t, b: t == "tables/ts-1/replies"
                                         and b["id"] == "c2"))["ok"]
                result = await inbox.wait(lambda t, b: t == "tables/ts-1/results")
                assert result["void_reason"]["detail"] == "voided by pit-supervisor-1: " \
                                                          "table bumped"
                TABLE_KEYRING.verify(result)
                tampered = {**result, "status": "valid"}
                with pytest.raises(SignatureError, match="bad signature"):
                    TABLE_KEYRING.verify(tampered)
                # The open_betting that ts-2 sent (o1) never reached the table.
                assert not [b for t, b in inbox.items if t == "tables/ts-1/replies"
                            and json.loads(b)["id"] == "o1"]
                listener.cancel()
        finally:
            await service.publisher.stop()
            await asyncio.sleep(0.2)
            daemon.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await daemon


async def test_without_certificate_or_password_the_broker_refuses(tmp_path: Path) -> None:
    async with secured_broker(tmp_path) as (broker, pki, _):
        ctx = ssl.create_default_context(cafile=str(pki.ca_file))
        # The broker refuses at once (a TLS alert), but the client only gives up when its
        # CONNACK wait times out: 3 s, not aiomqtt's default 10 s, as for plaintext below.
        no_cert = aiomqtt.Client("127.0.0.1", broker.port, username="ts-1",
                                 password=USERS["ts-1"], tls_context=ctx, timeout=3)
        with pytest.raises(aiomqtt.MqttError):
            async with no_cert:
                pass
        bad_password = client(broker, pki, "ts-1")
        bad_password._client.username_pw_set("ts-1", "wrong")
        with pytest.raises(aiomqtt.MqttError):
            async with bad_password:
                pass
        plaintext = aiomqtt.Client("127.0.0.1", broker.port, username="ts-1",
                                   password=USERS["ts-1"], timeout=3)
        with pytest.raises(aiomqtt.MqttError):
            async with plaintext:
                pass


async def test_the_shipped_broker_config_with_a_replay_user_of_its_own(
        tmp_path: Path) -> None:
    """systemd/mosquitto/: use_username_as_clientid (one connection per user) and the
    shipped ACL with its block for bac-07-replay. The table and its replay process each
    log in as their own user: the table stays online on one session, and a consumer's
    replay request is answered."""
    async with secured_broker(tmp_path, "use_username_as_clientid true\n") as (
            broker, pki, files):
        service = tls_table(tmp_path, broker, pki, files, "bac-07", "bac-07-replay")
        daemon = asyncio.create_task(service.run())
        inbox = Inbox()
        try:
            async with client(broker, pki, "settlement") as settle:
                await settle.subscribe("tables/bac-07/status", qos=1)
                await settle.subscribe("tables/bac-07/replay/to/settlement", qos=1)
                listener = asyncio.create_task(inbox.listen(settle))
                await inbox.wait(lambda t, b: t == "tables/bac-07/status"
                                 and b["state"] == "online")
                async with asyncio.timeout(20):
                    await service.replays.subscribed.wait()
                await settle.publish("tables/bac-07/replay/request", json.dumps(
                    {"id": "r1", "reply_to": "settlement", "from_msg_seq": 1}), qos=1)
                mark = await inbox.wait(lambda t, b: b.get("type") == "replay")
                TABLE_KEYRING.verify(mark)
                assert mark["error"] is None and mark["count"] >= 1, mark
                listener.cancel()
            assert service.publisher.stats.connects == 1  # never thrown off
            assert service.replays.conflict is None
        finally:
            await service.publisher.stop()
            daemon.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await daemon
