"""`tabled doctor`: every precondition of a table, one line each, with OK or what is wrong
and how to fix it. For the technician at the table: run it before starting the service,
and after changing a cable, a config or a key.

    OK    journal: /var/lib/tabled is writable, 11.2 GB free
    FAIL  device shoe: /dev/tabled/shoe does not exist; fix: plug the shoe in, check ...

The exit status is the worst severity found: 0 all OK, 1 warnings only, 2 a failure (the
service would not start, or would start and not work).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import pwd
import ssl
import stat
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

import aiomqtt

from daemon.config import TableConfig, resolve_path
from daemon.drivers.device import DeviceDriver, DeviceState, DeviceStatus, Unattended
from daemon.drivers.device_url import SerialUrl, UsbUrl
from daemon.mqtt.broker_config import broker_nodes
from daemon.security.published_keys import published

SERVICE_USER = "tabled"
MIN_FREE = 50 * 2**20  # below this the journal is about to fail: FAIL
LOW_FREE = 500 * 2**20  # below this, a few days of rounds: WARN
TIME_ERROR = 5  # adjtimex(2): the clock is not synchronised


class Severity(IntEnum):
    OK = 0
    WARN = 1
    FAIL = 2


@dataclass(frozen=True)
class Finding:
    severity: Severity
    what: str
    detail: str

    def line(self) -> str:
        return f"{self.severity.name:<4}  {self.what}: {self.detail}"


def ok(what: str, detail: str) -> Finding:
    return Finding(Severity.OK, what, detail)


def warn(what: str, detail: str) -> Finding:
    return Finding(Severity.WARN, what, detail)


def fail(what: str, detail: str) -> Finding:
    return Finding(Severity.FAIL, what, detail)


# -- the machine ---------------------------------------------------------------------------


def check_libusb(needed: bool,
                 find_library: Callable[[str], str | None] = ctypes.util.find_library
                 ) -> Finding:
    """libusb-1.0, which pyusb's backend loads as this does (``find_library``: for a machine
    without it)."""
    name = find_library("usb-1.0")
    problem = "libusb-1.0 is missing"
    if name is not None:
        try:
            ctypes.CDLL(name)
        except OSError as exc:
            problem = f"libusb-1.0 ({name}) cannot be loaded: {exc}"
        else:
            return ok("libusb", f"libusb-1.0 is installed ({name})")
    fix = "fix: apt-get install libusb-1.0-0 (scripts/install.sh does)"
    if needed:
        return fail("libusb", f"{problem} and a USB device is configured; {fix}")
    return warn("libusb", f"{problem} (no USB device is configured); {fix}")


def _user() -> pwd.struct_passwd | None:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(SERVICE_USER)
    return None


def _may_read_write(st: os.stat_result, user: pwd.struct_passwd) -> bool:
    if user.pw_uid == 0:
        return True
    groups = {user.pw_gid, *(g for g in os.getgrouplist(user.pw_name, user.pw_gid))}
    if st.st_uid == user.pw_uid:
        return st.st_mode & 0o600 == 0o600
    if st.st_gid in groups:
        return st.st_mode & 0o060 == 0o060
    return st.st_mode & 0o006 == 0o006


def check_device_node(name: str, url: SerialUrl, user: pwd.struct_passwd | None = None
                      ) -> Finding:
    """The node exists, is a serial device, and the service user (``user``; default the
    system's 'tabled', where it exists) may read and write it."""
    what, path = f"device {name} node", Path(url.path)
    fix_missing = (f"fix: plug the {name} in and check its cable; the udev rules "
                   f"(/etc/udev/rules.d/99-tabled.rules) name it by its serial number "
                   f"(udevadm info --attribute-walk --name=/dev/ttyUSB0)")
    try:
        st = path.stat()
    except FileNotFoundError:
        link = " (a dangling link)" if path.is_symlink() else ""
        return fail(what, f"{path} does not exist{link}; {fix_missing}")
    except OSError as exc:
        return fail(what, f"{path}: {exc.strerror}")
    if not stat.S_ISCHR(st.st_mode):
        return fail(what, f"{path} is not a character device (a serial port); fix: point "
                          f"devices.{name} at the device node")
    mode = f"mode {stat.S_IMODE(st.st_mode):04o}"
    user = user or _user()
    who = user.pw_name if user is not None else None
    if user is not None and not _may_read_write(st, user):
        return fail(what, f"{path} ({mode}) cannot be opened by the service user {who}; fix: "
                          f"the udev rules give it GROUP=\"{SERVICE_USER}\", MODE=\"0660\" "
                          "(udevadm control --reload && udevadm trigger)")
    if not os.access(path, os.R_OK | os.W_OK):
        return fail(what, f"{path} ({mode}) cannot be opened by this user; fix: run as "
                          f"{SERVICE_USER} or root, or see the udev rules")
    return ok(what, f"{path} is a serial device ({mode}), readable and writable"
                    + (f" by {who}" if who else ""))


def _is_tabled_run(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if os.path.basename(arg) == "tabled" or (arg == "-m" and argv[i + 1:i + 2] == ["daemon"]):
            return "run" in argv[i + 1:]
    return False


def tabled_holding(path: str) -> list[int]:
    """The pids of running ``tabled run`` processes that have ``path`` open (from /proc):
    asking their device for IDENTIFY would take frames meant for a live table."""
    target = os.path.realpath(path)
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if not _is_tabled_run(argv):
                continue
            if any(os.path.realpath(fd) == target for fd in (proc / "fd").iterdir()):
                pids.append(int(proc.name))
        except OSError:
            continue  # gone, or not ours to look at
    return pids


async def check_device(name: str, url: Any, catalogue: Any, kind: Any,
                       timeout: float = 5.0, expected_serial: str | None = None) -> Finding:
    """The device answers IDENTIFY as the right kind, with tabled's protocol version, and
    (where the config pins one) the expected serial number."""
    what = f"device {name}"
    if isinstance(url, SerialUrl) and (pids := tabled_holding(url.path)):
        return warn(what, f"not asked: {url.path} is in use by tabled run (pid "
                          f"{', '.join(map(str, pids))}); the service's own view is in "
                          "systemctl status tabled; stop it to check the device here")
    ended = asyncio.Event()
    seen: list[DeviceStatus] = []

    class Handshake(Unattended):
        def device_status(self, status: DeviceStatus) -> None:
            # A lost session is retried until the time is up (a port still settling, a
            # device booting); a handshake, or a device that is the wrong one, is final.
            if status.state in (DeviceState.READY, DeviceState.INCOMPATIBLE,
                                DeviceState.LOST):
                seen.append(DeviceStatus(**{**status.__dict__}))
            if status.state in (DeviceState.READY, DeviceState.INCOMPATIBLE):
                ended.set()

    driver = DeviceDriver(name, url, catalogue, kind, Handshake(),
                          handshake_timeout=min(3.0, timeout * 0.75),
                          backoff_initial=0.1, backoff_max=0.5)
    task = asyncio.create_task(driver.run())
    try:
        async with asyncio.timeout(timeout):
            await ended.wait()
    except TimeoutError:
        pass
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    if not seen:
        return fail(what, f"no answer from {url} within {timeout:g} s; fix: check that the "
                          f"{name} is powered on and its cable is in")
    s = seen[-1]
    detail = s.detail.removeprefix(f"{name}: ")
    if s.state == DeviceState.INCOMPATIBLE:
        return fail(what, f"{detail}; fix: connect the right device, or update its firmware "
                          "to the protocol version tabled speaks")
    if s.state == DeviceState.LOST:
        return fail(what, f"{detail}; fix: check the cable and power, and the URL in "
                          f"devices.{name}")
    expected = expected_serial or getattr(url, "serial", None)
    if expected and s.serial != expected:
        return fail(what, f"answered with serial {s.serial}, but the config expects "
                          f"{expected}; fix: connect this table's own {name}, or correct "
                          f"devices.{name}")
    return ok(what, f"a {name}, model {s.model}, firmware {s.firmware}, serial {s.serial}, "
                    f"protocol version {s.protocol_version}")


def _node_name(url: str, several: bool) -> str:
    return f"broker {url}" if several else "broker"


async def check_broker(cfg: TableConfig, tls: ssl.SSLContext | None,
                       timeout: float = 5.0) -> list[Finding]:
    """Every node of ``urls`` in turn (the table fails over to any of them, so a dead
    second node is a failure waiting for the first one's), and on each that answers,
    what the table does there against the broker's ACL (check_acl)."""
    b = cfg.broker
    urls = broker_nodes(b)
    nodes = b.nodes or ((b.host, b.port),)
    found = []
    for url, (host, port) in zip(urls, nodes, strict=True):
        what = _node_name(url, len(urls) > 1)
        reached = await _check_node(what, url, host, port, cfg, tls, timeout)
        found.append(reached)
        if reached.severity == Severity.OK:
            found.append(await check_acl(f"{what} ACL", host, port, cfg, tls, timeout))
            if b.replay_username is not None:
                found.append(await check_replay_login(f"{what} replay login", host, port,
                                                      cfg, tls, timeout))
    return found


def _client(host: str, port: int, cfg: TableConfig, tls: ssl.SSLContext | None,
            timeout: float, v5: bool = False, replay: bool = False) -> aiomqtt.Client:
    b = cfg.broker
    username, password = b.replay_login if replay else (b.username, b.password)
    return aiomqtt.Client(host, port, username=username, password=password,
                          tls_context=tls,
                          identifier=f"{b.client_id}{'-replay' if replay else ''}-doctor",
                          timeout=timeout,
                          protocol=aiomqtt.ProtocolVersion.V5 if v5 else None)


async def _check_node(what: str, url: str, host: str, port: int, cfg: TableConfig,
                      tls: ssl.SSLContext | None, timeout: float) -> Finding:
    b = cfg.broker
    as_user = f" as {b.username}" if b.username else " anonymously"
    try:
        async with asyncio.timeout(timeout):
            async with _client(host, port, cfg, tls, timeout):
                pass
    except TimeoutError:
        return fail(what, f"{url} did not answer within {timeout:g} s; fix: check the "
                          "network and broker.url(s)")
    except aiomqtt.MqttCodeError as exc:
        return fail(what, f"{url} refused the connection{as_user}: {exc}; fix: check "
                          "broker.username and broker.password_file, and the broker's ACL")
    except aiomqtt.MqttError as exc:
        text = str(exc)
        if "CERTIFICATE" in text.upper() or "SSL" in text.upper():
            return fail(what, f"{url}: TLS failed: {text}; fix: broker.ca_file must name the "
                              "CA that signed the broker's certificate")
        return fail(what, f"{url}: cannot connect: {text}; fix: is the broker running, and "
                          "is broker.url right?")
    tls_text = ", TLS verified" if b.tls else ", plain MQTT"
    return ok(what, f"connected to {url}{as_user}{tls_text}")


def _acl_line(cfg: TableConfig, access: str, topic: str) -> str:
    """The Mosquitto ACL line that grants it (systemd/mosquitto/acl.example's form: a
    pattern when the table logs in with its table id as its username)."""
    b = cfg.broker
    if b.username is not None and b.username == cfg.table_id:
        head = f"{cfg.topic_prefix}/{cfg.table_id}/"
        return f"pattern {access} {cfg.topic_prefix}/%u/{topic.removeprefix(head)}"
    who = f"under 'user {b.username}'" if b.username else "before any 'user' line"
    return f"topic {access} {topic} ({who})"


async def check_acl(what: str, host: str, port: int, cfg: TableConfig,
                    tls: ssl.SSLContext | None, timeout: float = 5.0) -> Finding:
    """Each publish the table makes, and reading its status back, as the table logs in.
    A publish is one empty, non-retained message (consumers ignore empty messages, as
    they do a cleared retained topic); MQTT 5 is used for its answer: Mosquitto
    acknowledges a denied publish with "Not authorized" where 3.1.1 cannot say, and
    drops it. Reads are checked when the broker delivers, not at SUBSCRIBE (Mosquitto
    grants every subscription), so only a topic the table also writes can be read
    back: its status. Its commands and replay requests it can only read; a command sent
    and answered is their test."""
    from daemon.service import table_topics  # noqa: PLC0415

    subscribed, published_on = table_topics(cfg)
    denied: list[str] = []
    codes: list[int] = []
    try:
        async with asyncio.timeout(timeout * 3):
            async with _client(host, port, cfg, tls, timeout, v5=True) as client:
                inner: Any = client._client.on_publish  # aiomqtt's: drops the reason code

                def on_publish(c: Any, u: Any, mid: int, code: Any, props: Any) -> None:
                    codes.append(int(code.value))
                    inner(c, u, mid, code, props)

                client._client.on_publish = on_publish
                status = next(t for t in published_on if t.endswith("/status"))
                readable = [t for t in subscribed if t == status]
                for topic in readable:
                    await client.subscribe(topic, qos=1)
                for topic in published_on:
                    await client.publish(topic, b"", qos=1)
                    if codes and codes[-1] >= 0x80:
                        denied.append(_acl_line(cfg, "write", _wild(topic)))
                for topic in readable:
                    if _acl_line(cfg, "write", topic) in denied:  # not seen: say both
                        i = denied.index(_acl_line(cfg, "write", topic))
                        denied[i] = _acl_line(cfg, "readwrite", topic)
                    elif not await _echoed(client, topic, timeout):
                        denied.append(_acl_line(cfg, "read", topic))
    except TimeoutError:
        return fail(what, f"no answer within {timeout * 3:g} s while checking the ACL")
    except aiomqtt.MqttCodeError as exc:
        if "protocol" in str(exc).lower():  # NATS speaks MQTT 3.1.1 only
            return warn(what, "not checked: the broker does not speak MQTT 5, and 3.1.1 "
                              "does not tell a denied publish; see docs/operations.md")
        return fail(what, f"refused while checking the ACL: {exc}")
    except aiomqtt.MqttError as exc:
        return fail(what, f"the connection ended while checking the ACL: {exc}")
    if denied:
        return fail(what, f"the broker denies the table {len(denied)} of what it does; fix: "
                          "add to the broker's ACL: " + "; ".join(denied))
    return ok(what, f"{len(published_on)} publishes and reading its status back allowed "
                    f"(reading {', '.join(t for t in subscribed if not t.endswith('/status'))}"
                    " is checked by a command sent and answered)")


async def check_replay_login(what: str, host: str, port: int, cfg: TableConfig,
                             tls: ssl.SSLContext | None, timeout: float = 5.0) -> Finding:
    """The replay process's own broker user (broker.replay_username): it logs in, and may
    publish its answers (one empty message, as check_acl does). Reading replay requests
    it can only be granted: a replay request answered is its test."""
    user = cfg.broker.replay_username
    base = f"{cfg.topic_prefix}/{cfg.table_id}"
    answers = f"{base}/replay/to/tabled-doctor"
    codes: list[int] = []
    try:
        async with asyncio.timeout(timeout * 2):
            async with _client(host, port, cfg, tls, timeout, v5=True, replay=True) as c:
                inner: Any = c._client.on_publish

                def on_publish(cl: Any, u: Any, mid: int, code: Any, props: Any) -> None:
                    codes.append(int(code.value))
                    inner(cl, u, mid, code, props)

                c._client.on_publish = on_publish
                await c.publish(answers, b"", qos=1)
    except TimeoutError:
        return fail(what, f"no answer within {timeout * 2:g} s as {user}")
    except aiomqtt.MqttCodeError as exc:
        if "protocol" in str(exc).lower():
            return warn(what, f"{user} not checked: the broker does not speak MQTT 5")
        return fail(what, f"the broker refused {user}: {exc}; fix: broker.replay_username "
                          "and replay_password_file, and the broker's password file")
    except aiomqtt.MqttError as exc:
        return fail(what, f"as {user}: {exc}")
    if codes and codes[-1] >= 0x80:
        return fail(what, f"the broker denies {user} the replay answers; fix: add to the "
                          f"broker's ACL: user {user} / topic read {base}/replay/request / "
                          f"topic write {base}/replay/to/+")
    return ok(what, f"{user} logs in and may publish the replay answers (reading "
                    f"{base}/replay/request is checked by a replay request answered)")


def _wild(topic: str) -> str:
    """The ACL names what the table publishes one per device or requester by wildcard."""
    head = topic.rpartition("/")[0]
    return f"{head}/+" if head.endswith(("/devices", "/replay/to")) else topic


async def _echoed(client: aiomqtt.Client, topic: str, timeout: float) -> bool:
    """The empty probe published on ``topic`` came back to its subscriber."""
    try:
        async with asyncio.timeout(timeout):
            async for m in client.messages:
                if str(m.topic) == topic and not m.payload:
                    return True
    except TimeoutError:
        return False
    return False


def check_journal(path: Path) -> Finding:
    what, directory = "journal", path.parent
    if not directory.is_dir():
        return fail(what, f"{directory} does not exist; fix: systemd-tmpfiles --create "
                          "(the unit's StateDirectory= makes it), or correct journal.path")
    probe = directory / f".tabled-doctor-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            probe.unlink()
        return fail(what, f"cannot write in {directory}: {exc.strerror}; fix: make it "
                          f"writable by {SERVICE_USER} (chown {SERVICE_USER}: {directory}), "
                          "remount it read-write, or free space")
    probe.unlink()
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        return fail(what, f"{path} exists but cannot be written; fix: chown {SERVICE_USER}: "
                          f"{path}")
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    text = f"{_size(free)} free"
    if free < MIN_FREE:
        return fail(what, f"{directory}: only {text}; fix: free space (results wait in the "
                          f"journal's outbox; it needs at least {_size(MIN_FREE)})")
    if free < LOW_FREE:
        return warn(what, f"{directory}: only {text}; fix: free space soon")
    return ok(what, f"{directory} is writable, {text}")


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class _Timex(ctypes.Structure):
    # struct timex (linux/timex.h): only 'modes' is written (0: read only); room for all.
    _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_byte * 512)]


def clock_state() -> int | None:
    """adjtimex(2)'s clock state, or None where it cannot be read."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    libc = ctypes.CDLL(libc_name, use_errno=True)
    timex = _Timex()
    state = int(libc.adjtimex(ctypes.byref(timex)))
    return None if state < 0 else state


def check_clock(state: int | None) -> Finding:
    what = "clock"
    if state is None:
        return warn(what, "cannot read the kernel's clock state (adjtimex)")
    if state == TIME_ERROR:
        return warn(what, "not synchronised: result times and a command's max_age_seconds "
                          "depend on it; fix: timedatectl set-ntp true (systemd-timesyncd or "
                          "chrony), and check that an NTP server is reachable")
    return ok(what, "synchronised (the kernel's NTP state)")


def check_secret_file(what: str, path: Path) -> Finding:
    try:
        st = path.stat()
    except OSError as exc:
        return fail(what, f"{path}: {exc.strerror}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return fail(what, f"{path} has mode {mode:04o}: others can read a secret; fix: chmod "
                          f"600 {path} (or use a systemd credential)")
    return ok(what, f"{path}, mode {mode:04o}")


def check_trusted_keys(cfg: TableConfig) -> Finding:
    what = "keys"
    bad = []
    signer = published(cfg.signer.key.public_key())
    if signer is not None:
        bad.append(f"the signing key (signing.key_file) is one whose private half is "
                   f"public ({signer}): anyone can forge this table's results")
    for name, p in cfg.principals.items():
        where = published(p.key) if p.key is not None else None
        if where is not None:
            bad.append(f"commands.principals.{name} trusts a key whose private half is "
                       f"public ({where})")
    if bad:
        return fail(what, "; ".join(bad) + "; fix: tabled keys generate, and put the new "
                                           "public key in the config")
    return ok(what, f"signing key {cfg.signer.kid}; {len(cfg.principals)} principal(s); no "
                    "key from the repository is trusted")


# -- all of them ---------------------------------------------------------------------------


def config_paths(cfg: TableConfig, raw: dict[str, Any]) -> list[tuple[str, Path]]:
    """The secret files the config names: (what, path)."""
    out = []
    signing = raw.get("signing", {}).get("key_file")
    if isinstance(signing, str):
        out.append(("signing.key_file", resolve_path(signing)))
    broker = raw.get("broker", {})
    for key in ("password_file", "key_file"):
        if isinstance(broker.get(key), str):
            out.append((f"broker.{key}", resolve_path(broker[key])))
    return out


async def examine(cfg: TableConfig, raw: dict[str, Any], *, device_timeout: float = 5.0,
                  broker_timeout: float = 5.0) -> list[Finding]:
    from daemon.mqtt.client import tls_context  # noqa: PLC0415
    from daemon.service import DEVICES  # noqa: PLC0415

    found = [check_libusb(any(isinstance(u, UsbUrl) for u in cfg.devices.values()))]
    for name, url in cfg.devices.items():
        if isinstance(url, SerialUrl):
            node = check_device_node(name, url)
            found.append(node)
            if node.severity == Severity.FAIL:
                continue
        pinned = cfg.serials.get(name)  # [devices.serials]
        found.append(await check_device(name, url, *DEVICES[name], timeout=device_timeout,
                                        expected_serial=pinned))
    try:
        tls = tls_context(cfg.broker)
    except (OSError, ssl.SSLError) as exc:
        found.append(fail("broker", f"cannot load the TLS files: {exc}; fix: broker.ca_file, "
                                    "cert_file and key_file"))
    else:
        found += await check_broker(cfg, tls, broker_timeout)
    found.append(check_journal(cfg.journal_path))
    found.append(check_clock(clock_state()))
    found += [check_secret_file(what, path) for what, path in config_paths(cfg, raw)]
    found.append(check_trusted_keys(cfg))
    return found
