"""Attacks on the replay process (daemon/replay/) through real processes: a real daemon
with simulated devices, its replay process and a real Mosquitto. Each test here shows a
defect found by the attack (it fails on the code it was written against)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import aiomqtt

from hil.broker import Mosquitto
from hil.process import DaemonProcess
from hil.rig import SimRig
from tests.reliability.harness import Table, deal, sim_table
from tests.replay_process import replay_process, stat
from tests.wait import until


async def ask(t: Table, rid: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """One replay request from msg_seq 1; its marker, or None if none came in time."""
    async with aiomqtt.Client("127.0.0.1", t.broker.port) as c:
        await c.subscribe(f"{t.rig.base}/replay/to/{rid}", qos=1)
        await c.publish(f"{t.rig.base}/replay/request", json.dumps(
            {"id": rid, "reply_to": rid, "from_msg_seq": 1}), qos=1)
        try:
            async with asyncio.timeout(timeout):
                async for m in c.messages:
                    body: dict[str, Any] = json.loads(bytes(m.payload))
                    if body.get("type") == "replay" and body.get("id") == rid:
                        return body
        except TimeoutError:
            return None
    return None


async def answered_within(t: Table, seconds: float) -> bool:
    """Asked every 2 s, as the docs tell a consumer to (wait, then ask again)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    n = 0
    while loop.time() < end:
        n += 1
        if await ask(t, f"probe{n}") is not None:
            return True
    return False


async def test_two_quick_broker_restarts_are_not_an_identity_conflict(
        tmp_path: Path) -> None:
    """A broker restarted twice (a config change, an upgrade, a crash loop) with the
    table's own user on an ordinary broker (no use_username_as_clientid): the replay
    process is taken for one that throws the table off its session, stopped until a
    reload, and the table alerts replay_identity_conflict, though nothing conflicted.
    Replay requests then go unanswered for good. The two restarts need not be close:
    the first one's suspicion is never cleared while the replay process stays logged
    in, so the second one, however much later, completes the "two logins in a row"."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        assert await answered_within(t, 20)
        for _ in range(2):
            t.broker.stop()
            t.broker.start()
            await asyncio.sleep(10)  # both reconnected; the table idles on
        assert await answered_within(t, 20), "replay requests unanswered after the restarts"
        assert "replay_identity_conflict" not in t.daemon.log()


async def request(t: Table, body: dict[str, Any], timeout: float = 5.0
                  ) -> tuple[list[bytes], dict[str, Any] | None]:
    """One replay request: the answer's messages (raw) and its marker (None: none came)."""
    got: list[bytes] = []
    async with aiomqtt.Client("127.0.0.1", t.broker.port) as c:
        await c.subscribe(f"{t.rig.base}/replay/to/{body['reply_to']}", qos=1)
        await c.publish(f"{t.rig.base}/replay/request", json.dumps(body), qos=1)
        try:
            async with asyncio.timeout(timeout):
                async for m in c.messages:
                    raw = bytes(m.payload)
                    b = json.loads(raw)
                    if b.get("type") == "replay" and b.get("id") == body["id"]:
                        return got, b
                    got.append(raw)
        except TimeoutError:
            pass
    return got, None


async def test_a_from_msg_seq_past_sqlite_integers_is_answered(tmp_path: Path) -> None:
    """from_msg_seq 2**63 passes the request's check (an integer >= 1) but overflows
    SQLite's INTEGER in the replay process's journal read: the answer's task dies
    ("Task exception was never retrieved ... OverflowError") and the requester gets no
    marker at all, neither bad_request nor an empty answer; nothing counts it either.
    2**63 - 1 is answered (count 0)."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        assert await answered_within(t, 20)
        _, marker = await request(t, {"id": "edge-ok", "reply_to": "edge",
                                      "from_msg_seq": 2**63 - 1})
        assert marker is not None and marker["count"] == 0
        await asyncio.sleep(1.1)  # the requester's share refills
        _, marker = await request(t, {"id": "edge", "reply_to": "edge",
                                      "from_msg_seq": 2**63})
        assert marker is not None, "no answer to from_msg_seq 2**63"
        assert "OverflowError" not in t.daemon.log()


async def test_one_broker_restart_just_after_the_replay_process_logged_in(
        tmp_path: Path) -> None:
    """A single broker restart within a second after the replay process logged in (a
    replay process just started again, or just started with the daemon), on an ordinary
    broker: the table's lost session is counted against that login, and the replay
    process's own reconnection a moment later against it once more; two "logins in a
    row" from one outage, and the replay process is stopped for good
    (replay_identity_conflict)."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        assert await answered_within(t, 20)

        def logins() -> int:
            return t.broker.log.read_text().count(" as tabled-sim-1-replay ")

        before = logins()
        pid = replay_process(t)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # started again within a second or so (docs)
        await until(lambda: logins() > before, 20, poll=0.005)
        t.broker.stop()
        t.broker.start()
        await asyncio.sleep(3)
        assert await answered_within(t, 20), "replay requests unanswered after one restart"
        assert "replay_identity_conflict" not in t.daemon.log()


async def test_a_killed_daemon_leaves_no_traceback_from_its_replay_process(
        tmp_path: Path) -> None:
    """The daemon SIGKILLed (a crash, the OOM killer) while its replay process is logged
    in: the replay process ends on end of file, as designed, but on its way out it
    writes "subscribed: false" to the daemon's closed pipe and dumps an ExceptionGroup
    traceback (BrokenPipeError) onto the stderr it shares with the daemon (journald,
    or simulate's terminal): an unstructured multi-line record after every crash, in
    the log the operator reads for the crash's cause."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        assert await answered_within(t, 20)  # logged in and subscribed
        pid = replay_process(t)
        assert pid is not None
        t.daemon.kill()
        await until(lambda: stat(pid) is None, 10)
        assert "Traceback" not in t.daemon.log()


async def test_a_range_of_exactly_500_messages_is_complete(tmp_path: Path) -> None:
    """docs/mqtt.md: next_msg_seq is "where to continue, or null when the range is
    complete". A request for exactly 500 messages (from 1 to 500) is answered in full,
    yet its marker says next_msg_seq 501: a consumer that continues from it with the
    same to_msg_seq (tabled display's catch-up does) asks 501..500 and is refused
    bad_request, an extra request out of its one a second."""
    async with sim_table(tmp_path) as t:
        await until(lambda: replay_process(t) is not None, 20)
        while True:  # at least 500 stored messages
            await deal(t, 10)
            _, marker = await request(t, {"id": "n", "reply_to": "edge", "from_msg_seq": 1,
                                          "to_msg_seq": 1})
            assert marker is not None
            if marker["last_msg_seq"] >= 500:
                break
        await asyncio.sleep(1.1)
        got, marker = await request(t, {"id": "e500", "reply_to": "edge",
                                        "from_msg_seq": 1, "to_msg_seq": 500})
        assert marker is not None and marker["error"] is None
        assert marker["count"] == len(got) == 500 and marker["to_msg_seq"] == 500
        assert marker["next_msg_seq"] is None, marker


async def test_a_replay_process_with_its_own_user_is_not_stopped_by_broker_restarts(
        tmp_path: Path) -> None:
    """The configuration the docs prescribe (operations.md: use_username_as_clientid,
    and broker.replay_username for the replay process): its login can never take the
    table's session, yet two broker restarts still stop it as replay_identity_conflict,
    and the alert tells the operator to give it "a broker user of its own", which it
    has."""
    users = {"sim-1": "pw-t", "sim-1-replay": "pw-r", "probe": "pw-p"}
    files = Path(tempfile.mkdtemp(prefix="tabled-attack-"))
    files.chmod(0o755)
    passwd = files / "passwd"
    for i, (u, p) in enumerate(users.items()):
        subprocess.run(["mosquitto_passwd", *(["-c"] if i == 0 else []), "-b", str(passwd),
                        u, p], check=True)
    passwd.chmod(0o644)
    for name in ("sim-1", "sim-1-replay"):
        (tmp_path / name).write_text(users[name] + "\n")
        (tmp_path / name).chmod(0o600)
    broker = Mosquitto(tmp_path, anonymous=False, extra_conf=(
        f"password_file {passwd}\nuse_username_as_clientid true\n"))
    broker.start()
    rig = SimRig(tmp_path, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50,
                 seed=1)
    await rig.start()
    cfg = rig.config()
    cfg["broker"].update(username="sim-1", password_file=str(tmp_path / "sim-1"),
                         replay_username="sim-1-replay",
                         replay_password_file=str(tmp_path / "sim-1-replay"))
    daemon = DaemonProcess(cfg, tmp_path)

    async def answered(seconds: float) -> bool:
        loop = asyncio.get_running_loop()
        end, n = loop.time() + seconds, 0
        while loop.time() < end:
            n += 1
            async with aiomqtt.Client("127.0.0.1", broker.port, username="probe",
                                      password="pw-p") as c:
                await c.subscribe("tables/sim-1/replay/to/probe", qos=1)
                await c.publish("tables/sim-1/replay/request", json.dumps(
                    {"id": f"p{n}", "reply_to": "probe", "from_msg_seq": 1}), qos=1)
                try:
                    async with asyncio.timeout(2):
                        async for m in c.messages:
                            if json.loads(bytes(m.payload)).get("id") == f"p{n}":
                                return True
                except TimeoutError:
                    pass
        return False

    try:
        daemon.start()
        assert await answered(20)
        for _ in range(2):
            broker.stop()
            broker.start()
            await asyncio.sleep(10)
        assert await answered(20), "replay requests unanswered after two broker restarts"
        assert "replay_identity_conflict" not in daemon.log()
    finally:
        daemon.kill()
        await rig.stop()
        broker.cleanup()
        shutil.rmtree(files, ignore_errors=True)
