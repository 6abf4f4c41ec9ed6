"""`tabled doctor` through its process, one test per check, against the real thing: a
simulated device behind a real pty, a real Mosquitto (with TLS and passwords where the
check is about them), a read-only and a full journal file system (tmpfs), the kernel's
clock state, key files with their modes (issue 16)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.cli.doctor import (
    TIME_ERROR,
    Severity,
    check_clock,
    check_device,
    check_device_node,
    check_libusb,
    clock_state,
    tabled_holding,
)
from daemon.drivers.device_url import SerialUrl
from daemon.security.signing import private_key_pem, public_key_text
from daemon.service import DEVICES
from firmware_protocols.framing import PROTOCOL_VERSION
from hil.broker import Mosquitto, free_port
from hil.device import SimDevice
from hil.ports import PtyPort
from hil.shoe import ShoeSim
from hil.tumbler import TumblerSim
from tests.integration.secured_broker import USERS, secured_broker
from tests.pki import Pki


class Table:
    """A Tai Sai table's files: its config (rewritten per test), keys, journal folder."""

    def __init__(self, work: Path, broker_port: int) -> None:
        self.work = work
        self.key = work / "signing.pem"
        self.key.write_bytes(private_key_pem(Ed25519PrivateKey.generate()))
        self.key.chmod(0o600)
        self.journal = work / "journal" / "journal.db"
        self.journal.parent.mkdir()
        self.tumbler = work / "tumbler"
        self.broker: dict[str, str | list[str]] = {"url": f"mqtt://127.0.0.1:{broker_port}"}
        self.principal = public_key_text(Ed25519PrivateKey.generate().public_key())
        self.config = work / "table.toml"
        self.serial = "TM0001"  # the simulated tumbler's

    def write(self) -> Path:
        broker = "\n".join(f"{k} = {json.dumps(v)}" for k, v in self.broker.items())
        self.config.write_text(
            f'[table]\nid = "ts-1"\ngame = "tai-sai-open-cover"\nlayout = "E"\n'
            f'[devices]\ntumbler = "serial://{self.tumbler}?baud=115200"\n'
            f'serials = {{ tumbler = "{self.serial}" }}\n'
            f"[broker]\n{broker}\n"
            f'[journal]\npath = "{self.journal}"\n'
            f'[signing]\nkey_file = "{self.key}"\n'
            f'[commands.principals.pit]\nkey = "{self.principal}"\n', encoding="utf-8")
        return self.config


async def doctor(table: Table) -> tuple[int, dict[str, str]]:
    """Exit status, and each line by what it checks ('device tumbler', 'broker', ...)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "daemon", "doctor", "--config", str(table.write()),
        "--device-timeout", "4", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert b"Traceback" not in err, err.decode()
    lines = {}
    for line in out.decode().splitlines():
        head, _, _ = line.partition(": ")
        lines[head[6:]] = line
    assert proc.returncode is not None
    return proc.returncode, lines


async def doctor_with(table: Table, device: SimDevice) -> tuple[int, dict[str, str]]:
    """``doctor``, with ``device`` behind the table's tumbler port while it runs."""
    port = PtyPort(device, link=table.tumbler)
    await port.start()
    try:
        return await doctor(table)
    finally:
        await port.stop()


@pytest.fixture
async def table(tmp_path: Path, broker: Mosquitto) -> AsyncIterator[Table]:
    t = Table(tmp_path, broker.port)
    port = PtyPort(TumblerSim(speed=50), link=t.tumbler)
    await port.start()
    yield t
    await port.stop()


async def test_a_healthy_table_is_all_ok_but_maybe_the_clock(table: Table) -> None:
    rc, lines = await doctor(table)
    assert set(lines) == {"config", "libusb", "device tumbler node", "device tumbler",
                          "broker", "broker ACL", "journal", "clock", "signing.key_file",
                          "keys"}
    not_ok = {k: v for k, v in lines.items() if not v.startswith("OK")}
    assert set(not_ok) <= {"clock"}, not_ok
    assert "a tumbler, model" in lines["device tumbler"]
    assert f"protocol version {PROTOCOL_VERSION}" in lines["device tumbler"]
    assert lines["broker"].endswith("anonymously, plain MQTT")
    assert rc == (1 if not_ok else 0)


# -- device nodes and devices ---------------------------------------------------------------

async def test_a_missing_device_node_fails_with_the_fix(tmp_path: Path, broker: Mosquitto
                                                         ) -> None:
    table = Table(tmp_path, broker.port)
    rc, lines = await doctor(table)
    assert rc == 2
    assert lines["device tumbler node"].startswith(f"FAIL  device tumbler node: "
                                                   f"{table.tumbler} does not exist")
    assert "udev rules" in lines["device tumbler node"]
    assert "device tumbler" not in lines  # nothing to ask


async def test_a_device_node_that_is_not_a_serial_device(tmp_path: Path, broker: Mosquitto
                                                        ) -> None:
    table = Table(tmp_path, broker.port)
    table.tumbler.write_text("a file, not a device")
    rc, lines = await doctor(table)
    assert rc == 2 and "is not a character device" in lines["device tumbler node"]


async def test_a_device_node_the_service_user_cannot_open(tmp_path: Path) -> None:
    port = PtyPort(TumblerSim(), link=tmp_path / "tumbler")
    await port.start()
    try:
        os.chmod(os.path.realpath(port.link or ""), 0o600)
        os.chown(os.path.realpath(port.link or ""), 0, 0)
        nobody = pwd.getpwnam("nobody")
        finding = check_device_node("tumbler", SerialUrl(str(port.link)), nobody)
        assert finding.severity == Severity.FAIL
        assert "cannot be opened by the service user nobody" in finding.detail
        assert 'GROUP="tabled", MODE="0660"' in finding.detail
        os.chmod(os.path.realpath(port.link or ""), 0o666)
        assert check_device_node("tumbler", SerialUrl(str(port.link)),
                                 nobody).severity == Severity.OK
    finally:
        await port.stop()


async def test_the_wrong_device_on_the_port(tmp_path: Path, broker: Mosquitto) -> None:
    table = Table(tmp_path, broker.port)
    rc, lines = await doctor_with(table, ShoeSim())  # a shoe where the tumbler should be
    assert rc == 2
    assert "is a shoe, not a tumbler" in lines["device tumbler"], lines
    assert lines["device tumbler node"].startswith("OK")


async def test_a_device_speaking_another_protocol_version(tmp_path: Path, broker: Mosquitto
                                                          ) -> None:
    table = Table(tmp_path, broker.port)
    rc, lines = await doctor_with(table, TumblerSim(protocol_version=PROTOCOL_VERSION + 1))
    assert rc == 2
    assert f"speaks protocol version {PROTOCOL_VERSION + 1}" in lines["device tumbler"]
    assert "update its firmware" in lines["device tumbler"]


async def test_a_device_with_another_serial_number(tmp_path: Path) -> None:
    """Another table's tumbler (or a swapped one) answers with its own serial number."""
    port = PtyPort(TumblerSim(), link=tmp_path / "tumbler")
    await port.start()
    try:
        url = SerialUrl(str(port.link))
        good = await check_device("tumbler", url, *DEVICES["tumbler"], timeout=4)
        assert good.severity == Severity.OK, good
        serial = good.detail.split("serial ")[1].split(",")[0]
        finding = await check_device("tumbler", url, *DEVICES["tumbler"], timeout=4,
                                     expected_serial="TU9999")
    finally:
        await port.stop()
    assert finding.severity == Severity.FAIL
    assert finding.detail.startswith(f"answered with serial {serial}, but the config expects "
                                     "TU9999")


async def test_a_device_other_than_the_pinned_serial(table: Table) -> None:
    """[devices.serials] pins the tumbler's serial number; another tumbler is refused."""
    table.serial = "TM9999"
    rc, lines = await doctor(table)
    assert rc == 2
    assert lines["device tumbler"].startswith("FAIL"), lines
    assert "TM0001" in lines["device tumbler"] and "TM9999" in lines["device tumbler"]


async def test_a_silent_device(tmp_path: Path, broker: Mosquitto) -> None:
    table = Table(tmp_path, broker.port)
    master, slave = os.openpty()  # a port with nothing behind it
    table.tumbler.symlink_to(os.ttyname(slave))
    try:
        rc, lines = await doctor(table)
    finally:
        os.close(master)
        os.close(slave)
    assert rc == 2
    assert "no answer to IDENTIFY" in lines["device tumbler"], lines
    assert "powered on" in lines["device tumbler"] or "cable" in lines["device tumbler"]


async def test_a_device_the_running_service_owns_is_not_asked(table: Table) -> None:
    """IDENTIFY to a device a live table is using would take its frames: doctor says so
    and leaves it alone; the service keeps running."""
    config = table.write()
    service = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "daemon", "run", "--config", str(config), "--log-level", "error",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        for _ in range(600):  # until it has the port open (a loaded machine: a while)
            if tabled_holding(str(table.tumbler)):
                break
            await asyncio.sleep(0.1)
        assert tabled_holding(str(table.tumbler)) == [service.pid]
        rc, lines = await doctor(table)
        assert rc >= 1
        assert lines["device tumbler"].startswith(
            f"WARN  device tumbler: not asked: {table.tumbler} is in use by tabled run (pid "
            f"{service.pid})"), lines
        assert service.returncode is None
    finally:
        service.terminate()
        await service.wait()


# -- libusb ------------------------------------------------------------------------------------

def test_libusb_present_here_and_missing_where_pyusb_cannot_find_it() -> None:
    assert check_libusb(True).severity == Severity.OK
    missing = check_libusb(True, find_library=lambda name: None)
    assert missing.severity == Severity.FAIL and "apt-get install libusb-1.0-0" in missing.detail
    assert check_libusb(False, find_library=lambda name: None).severity == Severity.WARN


def test_install_sh_installs_libusb() -> None:
    script = (Path(__file__).resolve().parents[2] / "scripts" / "install.sh").read_text()
    assert "libusb-1.0-0" in script


# -- the broker --------------------------------------------------------------------------------

async def test_broker_refusing_connections(table: Table) -> None:
    table.broker["url"] = f"mqtt://127.0.0.1:{free_port()}"
    rc, lines = await doctor(table)
    assert rc == 2
    assert "cannot connect" in lines["broker"] and "is the broker running" in lines["broker"]


@pytest.fixture
async def tls_table(table: Table, tmp_path: Path) -> AsyncIterator[tuple[Table, Pki]]:
    async with secured_broker(tmp_path) as (
            b, pki, files):
        password = tmp_path / "mqtt-password"
        password.write_text(USERS["ts-1"])
        password.chmod(0o600)
        client_key = tmp_path / "ts-1.key"
        shutil.copy(files / "ts-1.key", client_key)
        client_key.chmod(0o600)
        table.broker = {"url": f"mqtts://127.0.0.1:{b.port}", "username": "ts-1",
                        "password_file": str(password), "ca_file": str(pki.ca_file),
                        "cert_file": str(files / "ts-1.pem"), "key_file": str(client_key)}
        yield table, pki


async def test_broker_with_tls_and_credentials(tls_table: tuple[Table, Pki]) -> None:
    table, _ = tls_table
    rc, lines = await doctor(table)
    assert lines["broker"].startswith("OK    broker: connected to mqtts://127.0.0.1:")
    assert lines["broker"].endswith("as ts-1, TLS verified")
    assert lines["broker.password_file"].startswith("OK")
    assert lines["broker.key_file"].startswith("OK")

    Path(str(table.broker["password_file"])).write_text("wrong")
    rc, lines = await doctor(table)
    assert rc == 2 and "refused the connection as ts-1" in lines["broker"], lines

    other = Pki(Path(tempfile.mkdtemp(prefix="t16-pki-")))  # a CA that did not sign it
    try:
        table.broker["ca_file"] = str(other.ca_file)
        rc, lines = await doctor(table)
    finally:
        shutil.rmtree(other.dir, ignore_errors=True)
    assert rc == 2 and "TLS failed" in lines["broker"] and "broker.ca_file" in lines["broker"]


async def test_every_node_of_urls_is_checked(table: Table, broker: Mosquitto) -> None:
    """A dead second node is a failover that will fail when the first node goes."""
    live, dead = f"mqtt://127.0.0.1:{broker.port}", f"mqtt://127.0.0.1:{free_port()}"
    table.broker = {"urls": [live, dead]}
    rc, lines = await doctor(table)
    assert rc == 2, lines
    assert lines[f"broker {live}"].startswith("OK"), lines
    assert lines[f"broker {live} ACL"].startswith("OK"), lines
    assert lines[f"broker {dead}"].startswith(f"FAIL  broker {dead}: {dead}: cannot connect")
    assert f"broker {dead} ACL" not in lines  # nothing to ask


SHIPPED_ACL = Path(__file__).resolve().parents[2] / "systemd" / "mosquitto" / "acl.example"


@contextlib.asynccontextmanager
async def acl_broker(work: Path, acl: str) -> AsyncIterator[Mosquitto]:
    """A Mosquitto with ``acl`` as its acl_file, where the mosquitto user (it drops root
    before reading it) can read it."""
    files = Path(tempfile.mkdtemp(prefix="tabled-acl-"))
    files.chmod(0o755)
    (files / "acl").write_text(acl, encoding="utf-8")
    (files / "acl").chmod(0o644)
    b = Mosquitto(work, extra_conf=f"acl_file {files / 'acl'}\n")
    try:
        b.start()
        yield b
    finally:
        b.cleanup()
        shutil.rmtree(files, ignore_errors=True)


async def test_the_shipped_acl_allows_the_table_everything_it_does(table: Table) -> None:
    async with acl_broker(table.work, SHIPPED_ACL.read_text()) as b:
        table.broker = {"url": f"mqtt://127.0.0.1:{b.port}", "username": "ts-1"}
        _, lines = await doctor(table)
    assert lines["broker ACL"].startswith("OK    broker ACL: 8 publishes and reading its "
                                          "status back allowed"), lines


async def test_an_acl_that_denies_the_table_its_topics_fails_with_the_lines_to_add(
        table: Table) -> None:
    """Issue 26: "OK broker" while the ACL denied the table its command, replay and
    status topics. The table keeps only its results, events, alerts and devices."""
    kept = [line for line in SHIPPED_ACL.read_text().splitlines()
            if not line.startswith("pattern") or
            any(line.endswith(t) for t in ("/results", "/events", "/alerts", "/devices/+"))]
    async with acl_broker(table.work, "\n".join(kept) + "\n") as b:
        table.broker = {"url": f"mqtt://127.0.0.1:{b.port}", "username": "ts-1"}
        rc, lines = await doctor(table)
    assert rc == 2, lines
    assert lines["broker"].startswith("OK"), lines  # it connects: the ACL is the problem
    acl = lines["broker ACL"]
    assert acl.startswith("FAIL  broker ACL: the broker denies the table 4 of what it does; "
                          "fix: add to the broker's ACL: "), acl
    for line in ("pattern readwrite tables/%u/status", "pattern write tables/%u/replies",
                 "pattern write tables/%u/snapshot", "pattern write tables/%u/replay/to/+"):
        assert line in acl, (line, acl)


async def test_the_replay_processs_own_login_is_checked(table: Table) -> None:
    """broker.replay_username (a broker that gives each user one connection): its login
    and its answers' topic, with the shipped ACL's block written for this table; and
    without the block, the lines to add."""
    ours = SHIPPED_ACL.read_text().replace("bac-07", "ts-1")
    for acl, expected in ((ours, "OK    broker replay login: ts-1-replay logs in"),
                          (ours.replace("topic write tables/ts-1/replay/to/+", ""),
                           "FAIL  broker replay login: the broker denies ts-1-replay the "
                           "replay answers; fix: add to the broker's ACL: user ts-1-replay "
                           "/ topic read tables/ts-1/replay/request / topic write "
                           "tables/ts-1/replay/to/+")):
        async with acl_broker(table.work, acl) as b:
            table.broker = {"url": f"mqtt://127.0.0.1:{b.port}", "username": "ts-1",
                            "replay_username": "ts-1-replay"}
            _, lines = await doctor(table)
        assert lines["broker replay login"].startswith(expected), lines


async def test_a_table_that_cannot_read_its_status_back(table: Table) -> None:
    """Writing its status but not reading it back, the table cannot see a late will."""
    acl = SHIPPED_ACL.read_text().replace("pattern readwrite tables/%u/status",
                                          "pattern write tables/%u/status")
    async with acl_broker(table.work, acl) as b:
        table.broker = {"url": f"mqtt://127.0.0.1:{b.port}", "username": "ts-1"}
        rc, lines = await doctor(table)
    assert rc == 2, lines
    assert lines["broker ACL"].endswith("the broker denies the table 1 of what it does; "
                                        "fix: add to the broker's ACL: pattern read "
                                        "tables/%u/status"), lines


# -- the journal -------------------------------------------------------------------------------

async def test_journal_folder_missing(table: Table) -> None:
    table.journal = table.work / "nowhere" / "journal.db"
    rc, lines = await doctor(table)
    assert rc == 2 and "does not exist" in lines["journal"]


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (as root), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


async def test_journal_on_a_read_only_file_system(table: Table, small_fs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    table.journal = small_fs / "journal.db"
    rc, lines = await doctor(table)
    assert rc == 2, lines
    assert lines["journal"].startswith(f"FAIL  journal: cannot write in {small_fs}: "
                                       "Read-only file system")


async def test_journal_on_a_full_file_system(table: Table, small_fs: Path) -> None:
    table.journal = small_fs / "journal.db"
    rc, lines = await doctor(table)
    assert rc == 2, lines
    assert "only 1.0 MB free" in lines["journal"]
    assert "free space" in lines["journal"]
    with open(small_fs / "filler", "wb") as f, pytest.raises(OSError):  # now really full
        f.write(b"\0" * 2 * 2**20)
        f.flush()
    rc, lines = await doctor(table)
    assert rc == 2 and "No space left on device" in lines["journal"], lines


# -- the clock ---------------------------------------------------------------------------------

def test_clock_state_from_the_kernel() -> None:
    state = clock_state()
    assert state is not None and 0 <= state <= TIME_ERROR
    finding = check_clock(state)
    assert finding.severity == (Severity.WARN if state == TIME_ERROR else Severity.OK)
    assert check_clock(TIME_ERROR).detail.startswith("not synchronised")
    assert "timedatectl set-ntp true" in check_clock(TIME_ERROR).detail
    assert check_clock(0).severity == Severity.OK


# -- key files and trusted keys ----------------------------------------------------------------

async def test_a_signing_key_others_can_read(table: Table) -> None:
    table.key.chmod(0o644)
    rc, lines = await doctor(table)
    assert rc == 2
    assert lines["signing.key_file"] == (f"FAIL  signing.key_file: {table.key} has mode 0644: "
                                         f"others can read a secret; fix: chmod 600 "
                                         f"{table.key} (or use a systemd credential)")


async def test_a_trusted_key_from_the_repository(table: Table) -> None:
    published = pytest.importorskip("daemon.security.published_keys")  # issue 12's list
    table.principal = next(iter(published.PUBLISHED))
    rc, lines = await doctor(table)
    assert rc == 2
    found = lines.get("keys") or lines.get("config", "")
    assert found.startswith("FAIL"), lines
