"""tabled under a real systemd (PID 1), as installed by scripts/install.sh: run inside a
booted container by scripts/systemd-check.sh, never on a table.

It points the installed unit at simulated devices and a private broker, then checks what
only systemd can show: READY=1 (``systemctl start`` returns when the table can play),
STATUS, the sandbox letting the daemon reach its journal, credential and devices, the
replay process running in it and answering, the watchdog restarting a frozen daemon,
Restart=on-failure after SIGKILL, a clean stop, RestartPreventExitStatus=2 for a bad
config, journald filing each line at the priority it carries, and ``systemctl reload``
mid-round revoking a principal while the round goes on. Rounds are dealt before and
after each restart; every result must be signed, with ``seq`` 1..n, no gaps and no
duplicates.

The one change to the shipped unit is a drop-in allowing pseudo-terminals (char-pts):
the simulated shoe is on a pty where a real one is on /dev/ttyUSB*.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiomqtt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.signing import private_key_pem, public_key_text
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.errors import ToolFailedError
from hil.process import to_toml
from hil.rig import SimRig

UNIT = "tabled.service"
WORK = Path("/srv/tabled-sim")  # not /tmp: the unit has PrivateTmp=yes
DROP_IN = Path("/etc/systemd/system/tabled.service.d/simulated-shoe.conf")


def sh(*args: str, check: bool = True, timeout: float = 120) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise ToolFailedError(f"{' '.join(args)} failed ({proc.returncode}): "
                           f"{proc.stdout}{proc.stderr}")
    return proc.stdout.strip()


def show(prop: str) -> str:
    return sh("systemctl", "show", "-p", prop, "--value", UNIT)


async def ash(*args: str, check: bool = True, timeout: float = 120) -> str:
    """sh() off the event loop, which runs the simulators systemd's daemon talks to."""
    return await asyncio.to_thread(sh, *args, check=check, timeout=timeout)


def say(text: str) -> None:
    print(f"systemd-check: {text}", flush=True)


class Check:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.seqs: list[int] = []

    def expect(self, ok: bool, what: str) -> None:
        say(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)


async def deal(rig: SimRig, rounds: int, check: Check) -> None:
    dealer = rig.dealer(betting_seconds=0.0)
    async with asyncio.timeout(120):
        async with dealer.session():
            for _ in range(rounds):
                result = await dealer.resume_round()
                rig.keyring.verify(result)  # raises if unsigned or not the table's key
                check.seqs.append(int(result["seq"]))


async def wait_for(predicate: Any, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if await asyncio.to_thread(predicate):
            return time.monotonic() - t0
        await asyncio.sleep(0.2)
    raise TimeoutError(f"not within {timeout:.0f} s")


def configure(rig: SimRig) -> dict[str, Any]:
    """The installed unit, pointed at the simulators: the config, the table's key as its
    credential, and the pty drop-in."""
    sh("systemctl", "stop", UNIT)  # installed and enabled, not yet configured
    shoe_pty = os.path.realpath(WORK / "shoe")
    sh("chgrp", "tabled", shoe_pty)
    os.chmod(shoe_pty, 0o660)
    config = rig.config()
    config["signing"] = {"key_file": "credential:signing-key"}
    config["journal"] = {"path": "/var/lib/tabled/journal.db"}
    Path("/etc/tabled/table.toml").write_text(to_toml(config), encoding="utf-8")
    key = Path("/etc/credstore/tabled/signing-key")
    key.write_bytes(private_key_pem(rig.table_key))
    key.chmod(0o600)
    DROP_IN.parent.mkdir(parents=True, exist_ok=True)
    DROP_IN.write_text("[Service]\nDeviceAllow=char-pts rw\n", encoding="utf-8")
    sh("systemctl", "daemon-reload")
    return config


async def start_and_deal(rig: SimRig, check: Check) -> None:
    t0 = time.monotonic()
    await ash("systemctl", "start", UNIT, timeout=60)  # Type=notify: returns at READY=1
    ready = time.monotonic() - t0
    check.expect(show("ActiveState") == "active", f"READY=1 under systemd after "
                                                  f"{ready:.2f} s (systemctl start)")
    status = show("StatusText")
    check.expect(status.startswith("ready; table sim-1 idle; broker connected"),
                 f"STATUS= reaches systemd: {status!r}")
    await deal(rig, 5, check)
    check.expect(check.seqs == [1, 2, 3, 4, 5], f"5 rounds dealt, seq {check.seqs}")


async def replays_under_the_unit(rig: SimRig, check: Check) -> None:
    """The replay process runs inside the sandbox (a child of the daemon, at its lower
    priority: the unit's system call filter allows setpriority back) and answers."""
    main_pid = show("MainPID")
    children = Path(f"/proc/{main_pid}/task/{main_pid}/children").read_text().split()
    nice = [Path(f"/proc/{c}/stat").read_text().rsplit(")", 1)[1].split()[16]
            for c in children
            if b"daemon.replay.worker" in Path(f"/proc/{c}/cmdline").read_bytes()]
    check.expect(nice == ["10"], f"the replay process runs under the unit at niceness "
                                 f"{nice}")
    answered = None
    async with aiomqtt.Client("127.0.0.1", rig.broker[1]) as c:
        await c.subscribe(f"{rig.base}/replay/to/check", qos=1)
        async with asyncio.timeout(20):
            while answered is None:
                await c.publish(f"{rig.base}/replay/request", json.dumps(
                    {"id": "c", "reply_to": "check", "from_msg_seq": 1,
                     "topics": ["results"]}), qos=1)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(2):
                        async for m in c.messages:
                            body = json.loads(bytes(m.payload))
                            if body.get("type") == "replay":
                                rig.keyring.verify(body)
                                answered = body
                                break
    check.expect(answered["error"] is None and answered["count"] == len(check.seqs),
                 f"a replay request answered under the unit: {answered['count']} results")


async def restarts(rig: SimRig, check: Check) -> None:
    pid = show("MainPID")
    os.kill(int(pid), 19)  # SIGSTOP: a hung daemon, as far as systemd can tell
    took = await wait_for(lambda: show("MainPID") not in ("0", pid)
                    and show("ActiveState") == "active", 90)
    check.expect(show("NRestarts") == "1", f"the watchdog (WatchdogSec=10s) restarted a "
                                           f"frozen daemon; active again after {took:.1f} s")
    await deal(rig, 3, check)
    pid = show("MainPID")
    await ash("systemctl", "kill", "-s", "KILL", UNIT)
    took = await wait_for(lambda: show("MainPID") not in ("0", pid)
                    and show("ActiveState") == "active", 60)
    check.expect(show("NRestarts") == "2", f"Restart=on-failure after SIGKILL; active "
                                           f"again after {took:.1f} s")
    await deal(rig, 3, check)
    check.expect(check.seqs == list(range(1, 12)),
                 f"11 signed results across two restarts, seq {check.seqs}")


async def reload_mid_round(rig: SimRig, config: dict[str, Any], check: Check) -> None:
    """systemctl reload mid-round: a second principal added, then revoked while a round
    is being dealt; the round goes on to its result in the same process."""
    pit_key = Ed25519PrivateKey.generate()
    with_pit = json.loads(json.dumps(config))
    with_pit["commands"]["principals"]["pit-2"] = {
        "key": public_key_text(pit_key.public_key()), "allow": ["status"]}
    pid, restarts = show("MainPID"), show("NRestarts")

    async def reload(cfg: dict[str, Any], count: int) -> None:
        Path("/etc/tabled/table.toml").write_text(to_toml(cfg), encoding="utf-8")
        await ash("systemctl", "reload", UNIT, timeout=30)
        await wait_for(lambda: sh("journalctl", f"_SYSTEMD_UNIT={UNIT}", "-o", "cat",
                                  "--no-pager", check=False).count('"config reloaded"')
                       >= count, 20)

    await reload(with_pit, 1)
    dealer = rig.dealer(betting_seconds=0.0, reply_timeout=10.0)
    pit = SimDealer(rig.broker[0], rig.broker[1], rig.base, pit_key, reply_timeout=10.0)
    async with asyncio.timeout(120), dealer.session(), pit.session():
        allowed = (await pit.command("status"))["ok"]
        for name in ("open_betting", "close_betting"):
            await dealer.command(name)
        round_id = dealer.round_id
        for _ in range(2):
            await dealer._draw()
        t0 = time.monotonic()
        await reload(config, 2)  # pit-2 revoked, two cards into the round
        took = time.monotonic() - t0
        denied = await pit.command("status")
        result = await dealer.resume_round()
    check.expect(allowed and not denied["ok"] and denied["error"]["code"] == "denied",
                 f"systemctl reload mid-round ({took:.2f} s to the journal): a principal "
                 f"added, then revoked: its next command is {denied['error']['code']}")
    check.expect(result["round_id"] == round_id and result["status"] == "valid"
                 and show("MainPID") == pid and show("NRestarts") == restarts
                 and show("ActiveState") == "active",
                 f"the round in play went on to its result ({result['status']}, seq "
                 f"{result['seq']}), same process, no restart")


async def stop_and_misconfigure(config: dict[str, Any], check: Check) -> None:
    await ash("systemctl", "stop", UNIT, timeout=30)
    check.expect(show("Result") == "success" and show("ExecMainStatus") == "0",
                 f"a clean stop: Result={show('Result')}, "
                 f"ExecMainStatus={show('ExecMainStatus')}")
    bad = {**config, "table": {**config["table"], "layout": "Z"}}
    Path("/etc/tabled/table.toml").write_text(to_toml(bad), encoding="utf-8")
    sh("systemctl", "reset-failed", UNIT, check=False)
    await ash("systemctl", "start", UNIT, check=False, timeout=60)
    await asyncio.sleep(3)  # RestartSec=2s: a restart would have begun by now
    log = sh("journalctl", "-u", UNIT, "-n", "30", "--no-pager", check=False)
    check.expect(show("ExecMainStatus") == "2" and show("ActiveState") == "failed"
                 and show("NRestarts") == "0",
                 "a bad config exits 2 and is not restarted (RestartPreventExitStatus=2)")
    check.expect("'Z'" in log, "the journal says exactly why: " + next(
        (line for line in log.splitlines() if "'Z'" in line), "(nothing)"))


def priorities(check: Check) -> None:
    """journald files each daemon line at the priority it carries (daemon/system/logs.py):
    ``-p warning`` keeps exactly the warning and error lines, and drops the info ones."""
    def lines(*more: str) -> list[str]:
        # _SYSTEMD_UNIT: the daemon's own lines, not systemd's about the unit.
        return sh("journalctl", f"_SYSTEMD_UNIT={UNIT}", "-o", "cat", "--no-pager",
                  *more, check=False).splitlines()

    def loud(line: str) -> bool:
        try:
            return json.loads(line).get("level") in ("warning", "error", "critical")
        except ValueError:  # what it writes before logging starts: a bad config, ...
            return True

    every = lines()
    kept = lines("-p", "warning")
    expected = [x for x in every if loud(x)]
    quiet = len(every) - len(expected)
    check.expect(bool(expected) and sorted(kept) == sorted(expected) and quiet > 0,
                 f"journalctl -p warning shows exactly the {len(expected)} warning and "
                 f"error lines of {len(every)}"
                 + ("" if sorted(kept) == sorted(expected) else
                    f"; shown but not loud: {sorted(set(kept) - set(expected))[:3]}; loud "
                    f"but not shown: {sorted(set(expected) - set(kept))[:3]}"))


async def main() -> int:
    check = Check()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    broker = Mosquitto(WORK)
    broker.start()
    rig = SimRig(WORK, "tiger-buffalo", "P", 8, ("127.0.0.1", broker.port), speed=50)
    await rig.start()
    try:
        config = configure(rig)
        await start_and_deal(rig, check)
        await replays_under_the_unit(rig, check)
        await restarts(rig, check)
        await reload_mid_round(rig, config, check)
        await stop_and_misconfigure(config, check)
        priorities(check)
    except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as exc:
        check.expect(False, f"the check stopped: {exc}")
    finally:
        await ash("systemctl", "stop", UNIT, check=False)
        if check.failures:
            print(sh("journalctl", "-u", UNIT, "-n", "60", "--no-pager", check=False),
                  flush=True)
        await rig.stop()
        broker.cleanup()
    if check.failures:
        say(f"{len(check.failures)} failure(s)")
        return 1
    say("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
