"""scripts/systemd-check.sh debootstraps from the Debian archive the host's apt uses
(scripts/apt-mirror.sh), not from an address written into the repository (issue 16)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "apt-mirror.sh"
# Addresses of the reserved example domain (RFC 2606), never a real mirror's.
POLICY = """Package files:
 100 /var/lib/dpkg/status
     release a=now
 500 http://archive.example/debian-security bookworm-security/main amd64 Packages
     release v=12,o=Debian,a=stable-security,n=bookworm-security,l=Debian-Security,c=main
 500 http://archive.example/debian bookworm-updates/main amd64 Packages
     release v=12-updates,o=Debian,a=stable-updates,n=bookworm-updates,l=Debian,c=main
 500 http://other.example/apt cloud-sdk-bookworm/main amd64 Packages
 500 http://mirror.example/debian bookworm/contrib amd64 Packages
 500 http://mirror.example/debian bookworm/main amd64 Packages
     release v=12.10,o=Debian,a=stable,n=bookworm,l=Debian,c=main,b=amd64
Pinned packages:
"""


def _mirror(policy: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), "-"], input=policy, capture_output=True,
                          text=True, timeout=30, check=False, env={**os.environ, **env})


def test_the_plain_main_suite_is_taken_not_security_updates_or_others() -> None:
    proc = _mirror(POLICY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "http://mirror.example/debian"


def test_no_debian_source_is_a_clear_error_and_the_override_wins() -> None:
    proc = _mirror("Package files:\n 100 /var/lib/dpkg/status\n")
    assert proc.returncode == 1 and "TABLED_DEBIAN_MIRROR" in proc.stderr
    proc = _mirror("", TABLED_DEBIAN_MIRROR="http://local.example/debian")
    assert proc.stdout.strip() == "http://local.example/debian"


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="not a Debian host")
def test_on_this_host_it_is_a_source_of_its_apt() -> None:
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    sources = "".join(p.read_text(errors="replace") for d in ("/etc/apt",)
                      for p in Path(d).rglob("*") if p.is_file()
                      and re.search(r"\.(list|sources)$", p.name))
    assert proc.stdout.strip() in sources


def test_systemd_check_names_no_mirror() -> None:
    text = (ROOT / "scripts" / "systemd-check.sh").read_text(encoding="utf-8")
    assert "scripts/apt-mirror.sh" in text
    assert not re.search(r"https?://", text), "an address written into the script"
