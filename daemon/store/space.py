"""Whether a journal that cannot be opened or written is on a full disk.

A full disk is not a bad journal: once space is freed the table can start again, so
``tabled run`` waits for room (daemon/cli/main.py) instead of exiting 2, which stops the
unit for good (``RestartPreventExitStatus=2``). SQLite does not always say so: with the
disk full, opening a journal in WAL mode can fail as "disk I/O error" (it cannot grow the
shared-memory file), so the filesystem's free space decides as well.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# Less room than this on the journal's filesystem and SQLite cannot even open it.
NEARLY_FULL = 1024 * 1024


def has_room(journal: Path) -> bool:
    """At least NEARLY_FULL free on the journal's filesystem (True if it cannot be told:
    the journal's own errors say so then)."""
    try:
        st = os.statvfs(journal.parent)
    except OSError:
        return True
    return st.f_bavail * st.f_frsize >= NEARLY_FULL


def disk_full(journal: Path, exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            return True
        if isinstance(seen, sqlite3.Error) and \
                getattr(seen, "sqlite_errorname", "") == "SQLITE_FULL":
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        st = os.statvfs(journal.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < NEARLY_FULL
