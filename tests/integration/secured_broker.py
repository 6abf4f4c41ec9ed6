"""A Mosquitto with TLS, passwords and per-table ACLs, as a floor runs it."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from hil.broker import Mosquitto
from tests.pki import Pki, broker_access_files

USERS = {"ts-1": "pw-ts-1", "ts-2": "pw-ts-2", "pit-supervisor-1": "pw-sup",
         "settlement": "pw-settle", "bac-07": "pw-bac-07", "bac-07-replay": "pw-replay"}


@contextlib.asynccontextmanager
async def secured_broker(work: Path, extra_conf: str = ""
                         ) -> AsyncIterator[tuple[Mosquitto, Pki, Path]]:
    # Mosquitto drops root for its own user before reading these: a readable directory.
    files = Path(tempfile.mkdtemp(prefix="tabled-pki-"))
    files.chmod(0o755)
    pki = Pki(files)
    server_cert, server_key = pki.issue("broker", server=True)
    for user in USERS:
        pki.issue(user)
    passwd, acl = broker_access_files(files, USERS)
    broker = Mosquitto(work, anonymous=False, extra_conf=(
        f"cafile {pki.ca_file}\ncertfile {server_cert}\nkeyfile {server_key}\n"
        "require_certificate true\nuse_identity_as_username false\n"
        f"password_file {passwd}\nacl_file {acl}\n{extra_conf}"))
    broker.start()
    try:
        yield broker, pki, files
    finally:
        broker.cleanup()
        shutil.rmtree(files, ignore_errors=True)
