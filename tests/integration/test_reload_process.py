"""Reload without interruption (issue 29, Build 3): ``tabled run`` as its own process,
SIGHUP (what ``systemctl reload tabled`` sends) mid-round. The round goes on and is
published whole, a revoked key is refused from the next command, what changed and who
may now command the table is journalled, and a config that changes what cannot change
mid-round is refused with the reason, the running config kept."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.signing import public_key_text
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.process import DaemonProcess, to_toml
from hil.rig import SimRig
from tests.wait import until


def journalled(db: Path, kind: str) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        return [json.loads(b) for (b,) in con.execute(
            "SELECT body FROM journal WHERE kind=? ORDER BY id", (kind,))]
    finally:
        con.close()


def kinds(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [str(k) for (k,) in con.execute("SELECT kind FROM journal ORDER BY id")]
    finally:
        con.close()


async def reload_with(daemon: DaemonProcess, config: dict[str, Any], db: Path,
                      kind: str) -> dict[str, Any]:
    """Write the config, SIGHUP the daemon, and wait for the journal to say what it did."""
    before = len(journalled(db, kind))
    daemon.config_path.write_text(to_toml(config), encoding="utf-8")
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    await until(lambda: len(journalled(db, kind)) > before, timeout=20)
    return journalled(db, kind)[-1]


async def test_issue_29_a_reload_mid_round_revokes_a_key_from_the_next_command_and_the_round_goes_on(  # noqa: E501
        tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    rig = SimRig(tmp_path, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50,
                 seed=11)
    await rig.start()
    supervisor = Ed25519PrivateKey.generate()
    config = rig.config()
    config["commands"]["principals"]["pit-supervisor-2"] = {
        "key": public_key_text(supervisor.public_key()), "allow": ["status"]}
    db = tmp_path / "journal.db"
    daemon = DaemonProcess(config, tmp_path)
    daemon.start()
    try:
        dealer = rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
        pit = SimDealer(rig.broker[0], rig.broker[1], rig.base, supervisor, reply_timeout=5.0)
        async with dealer.session(), pit.session():
            await dealer.deal_round()
            # Mid-round: betting closed, two cards out.
            for name in ("open_betting", "close_betting"):
                assert (await dealer.command(name))["ok"]
            round_id = dealer.round_id
            for _ in range(2):
                await dealer._draw()
            assert (await pit.command("status"))["ok"]

            # Revoked, and the log level changed, in one reload.
            revoked = json.loads(json.dumps(config))
            del revoked["commands"]["principals"]["pit-supervisor-2"]
            revoked["log"] = {"level": "WARNING"}
            done = await reload_with(daemon, revoked, db, "config_reloaded")
            assert done["revoked"] == ["pit-supervisor-2"]
            assert sorted(done["changed"]) == ["commands.principals", "log.level"]
            assert list(done["principals"]) == ["sim-dealer"]  # who may command it now

            answer = await pit.command("status")
            assert not answer["ok"] and answer["error"]["code"] == "denied", answer
            assert "unknown key" in answer["error"]["message"]

            # A config that changes the game is refused whole: the dealer's key still
            # works, and the game is the one in play.
            other = {**revoked, "table": {**revoked["table"], "game": "tiger-baccarat",
                                          "layout": "A"},
                     "commands": config["commands"]}
            refused = await reload_with(daemon, other, db, "config_reload_refused")
            assert any(r.startswith("table.game: cannot change while the table runs")
                       for r in refused["reasons"]), refused
            assert not (await pit.command("status"))["ok"]  # still revoked

            # The round in play goes on to its result, uninterrupted.
            result = await dealer.resume_round()
            assert result["round_id"] == round_id and result["status"] == "valid", result
            assert (await dealer.deal_round())["status"] == "valid"
        assert daemon.running() and daemon.starts == 1
        journal = kinds(db)
        assert not any(k.startswith("technical_interruption") for k in journal)
        assert journal.count("started") == 1
        # WARNING from the reload on: the info lines (cards, results) stop in the log.
        log = daemon.log()
        after = log[log.index("config reloaded"):]
        assert '"event": "result"' not in after, after[-2000:]
    finally:
        daemon.stop()
        await rig.stop()
        broker.cleanup()
