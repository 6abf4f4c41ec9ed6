"""The files an operator installs: the unit verifies, its exposure is at most 1.5, the
user and directories are made, the udev rules name what the example config uses, and
scripts/install.sh lays out a release that runs."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.signing import public_key_text

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "tabled.service"
TABLED = Path(sys.executable).parent / "tabled"

needs_systemd_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                           reason="systemd-analyze is not installed")


def unit_here(tmp_path: Path) -> Path:
    # verify checks that ExecStart exists: point it at this checkout's tabled.
    text = UNIT.read_text(encoding="utf-8").replace("/opt/tabled/current/bin/tabled",
                                                    str(TABLED))
    path = tmp_path / "tabled.service"
    path.write_text(text, encoding="utf-8")
    return path


@needs_systemd_analyze
def test_unit_verifies(tmp_path: Path) -> None:
    proc = subprocess.run(["systemd-analyze", "verify", str(unit_here(tmp_path))],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "tabled.service" not in proc.stderr, proc.stderr  # no warning about our unit


@needs_systemd_analyze
def test_security_exposure_is_at_most_1_5(tmp_path: Path) -> None:
    proc = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager",
                           str(unit_here(tmp_path))], capture_output=True, text=True,
                          check=False)
    found = re.search(r"Overall exposure level for tabled.service: (\d+\.\d)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    exposure = float(found.group(1))
    print(f"systemd-analyze security: exposure {exposure}")
    assert exposure <= 1.5


def test_unit_keeps_devices_reachable_and_speaks_notify() -> None:
    text = UNIT.read_text(encoding="utf-8")
    settings = [line.split("=", 1) for line in text.splitlines() if "=" in line
                and not line.startswith("#")]
    keys = {k: v for k, v in settings}
    assert keys["Type"] == "notify" and keys["WatchdogSec"] and keys["Restart"] == "on-failure"
    assert keys["DevicePolicy"] == "closed" and "PrivateDevices" not in keys
    allowed = {v for k, v in settings if k == "DeviceAllow"}
    assert {"char-ttyUSB rw", "char-usb_device rw"} <= allowed
    creds = {v.split(":")[0] for k, v in settings if k == "LoadCredential"}
    example = (ROOT / "systemd" / "table.example.toml").read_text(encoding="utf-8")
    live = "\n".join(line.split("#")[0] for line in example.splitlines())
    used = set(re.findall(r'"credential:([\w-]+)"', live))
    assert used <= creds, f"the example config uses credentials the unit does not load: " \
                          f"{used - creds}"
    assert keys["StateDirectory"] == "tabled"
    assert tomllib.loads(example)["journal"]["path"].startswith("/var/lib/tabled/")


def test_udev_rules_name_the_devices_the_example_config_uses() -> None:
    rules = (ROOT / "systemd" / "99-tabled.rules").read_text(encoding="utf-8")
    logical = re.sub(r"\\\n\s*", "", rules)
    lines = [line for line in logical.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 3
    for line in lines:
        for part in (p.strip() for p in line.split(", ")):
            assert re.fullmatch(r'[A-Z_]+(\{\w+\})?(==|!=|\+=|-=|=)"[^"]*"', part), part
        assert 'GROUP="tabled"' in line and 'MODE="0660"' in line
    links = set(re.findall(r'SYMLINK\+="([^"]+)"', logical))
    assert links == {"tabled/shoe", "tabled/tumbler", "tabled/shuffler"}
    cfg = tomllib.loads((ROOT / "systemd" / "table.example.toml").read_text(encoding="utf-8"))
    assert cfg["devices"]["shoe"].startswith("serial:///dev/tabled/shoe")
    vid_pid, serial = re.match(r"usb://(\w+:\w+)\?serial=(\w+)", cfg["devices"]["shuffler"]
                               ).groups()  # type: ignore[union-attr]
    vid, pid = vid_pid.split(":")
    assert f'ATTR{{idVendor}}=="{vid}", ATTR{{idProduct}}=="{pid}"' in logical
    assert f'ATTR{{serial}}=="{serial}"' in logical


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("systemd-sysusers") is None,
                    reason="needs root and systemd-sysusers")
def test_install_script_lays_out_a_release(tmp_path: Path) -> None:
    root = tmp_path / "root"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "install.sh"), "--root", str(root)],
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    current = root / "opt" / "tabled" / "current"
    assert current.is_symlink() and (current / "bin" / "tabled").exists()
    assert "tabled:x:" in (root / "etc" / "passwd").read_text(encoding="utf-8")
    gid = next(int(line.split(":")[2]) for line in
               (root / "etc" / "group").read_text(encoding="utf-8").splitlines()
               if line.startswith("tabled:"))
    conf = (root / "etc" / "tabled" / "table.toml").stat()
    assert conf.st_gid == gid and stat.S_IMODE(conf.st_mode) == 0o640
    key = root / "etc" / "credstore" / "tabled" / "signing-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "etc" / "credstore" / "tabled").stat().st_mode) == 0o700
    for path in ("etc/systemd/system/tabled.service", "etc/udev/rules.d/99-tabled.rules",
                 "usr/lib/sysusers.d/tabled.conf", "usr/lib/tmpfiles.d/tabled.conf"):
        assert (root / path).is_file(), path
    # The installed release checks the installed config with the installed key, as an
    # operator would before starting the service (the file alone, --config-only: this
    # machine is not the table the tree is for). As installed it trusts no principal
    # (issue 12): the check says so and how to make one; with a real key it passes.
    installed = root / "etc/tabled/table.toml"

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(current / "bin" / "tabled"), "config", "check",
                               "--credentials", str(key.parent), "--config", str(installed),
                               "--config-only"],
                              capture_output=True, text=True, check=False)

    refused = check()
    assert refused.returncode == 2 and "tabled keys generate" in refused.stderr, refused.stderr
    supervisor = public_key_text(Ed25519PrivateKey.generate().public_key())
    installed.write_text(re.sub(r'"REPLACE-ME[^"]*"', f'"{supervisor}"',
                                installed.read_text(encoding="utf-8")), encoding="utf-8")
    ok = check()
    assert ok.returncode == 0, ok.stderr
    # Installing again keeps the config and the key, and adds a release.
    before = key.read_bytes()
    subprocess.run(["bash", str(ROOT / "scripts" / "install.sh"), "--root", str(root)],
                   check=True, capture_output=True, timeout=600)
    assert key.read_bytes() == before
    assert len(list((root / "opt" / "tabled" / "releases").iterdir())) == 2


@pytest.mark.skipif(os.environ.get("TABLED_SYSTEMD_CHECK") != "1",
                    reason="boots a Debian container with systemd as PID 1 (root, network, "
                           "minutes): TABLED_SYSTEMD_CHECK=1 to run scripts/systemd-check.sh")
def test_under_a_real_systemd() -> None:
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "systemd-check.sh")],
                          capture_output=True, text=True, timeout=1800, check=False)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    assert proc.returncode == 0
    assert "systemd-check: PASS" in proc.stdout
