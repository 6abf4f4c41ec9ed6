"""How to watch a table that `tabled simulate` or `tabled hil run` starts: the lines both
print, so they say it alike. Pasted into another terminal they must work: tabled by a
path that exists (set-up does not put it on PATH), and the key as text, since the run's
folder goes at the end."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from daemon.security.signing import key_id, public_key_text


def tabled_command() -> str:
    """How to run tabled from any folder: the executable this run was started as, or the
    one beside this interpreter (.venv/bin/tabled), or `tabled` when it is on PATH."""
    started = Path(sys.argv[0])
    for candidate in (started, Path(sys.executable).parent / "tabled"):
        if candidate.name == "tabled" and candidate.is_file():
            return str(candidate.absolute())
    return shutil.which("tabled") or f"{sys.executable} -m daemon"


def watch_lines(broker: tuple[str, int], table: str, public: Ed25519PublicKey) -> list[str]:
    """The table's key, and the commands that watch it."""
    host, port = broker
    key = public_key_text(public)
    return [f"the table signs with key {key_id(public)}: {key}",
            f"watch it: {tabled_command()} watch --broker mqtt://{host}:{port} "
            f"--table {table} \\",
            f"              --key {key}",
            f"      or: mosquitto_sub -h {host} -p {port} -v -t 'tables/{table}/#'"]
