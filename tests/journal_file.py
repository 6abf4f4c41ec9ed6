"""A journal file read as another process would read it: read-only, never created."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def read_only(path: Path, timeout: float = 5.0) -> Iterator[sqlite3.Connection]:
    """The journal at ``path``; sqlite3.Error if there is none yet (mode=ro never makes
    one)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
    try:
        yield db
    finally:
        db.close()


def committed_kinds(path: Path) -> list[str]:
    """The kinds of the records another process sees: committed ones only, in order."""
    with read_only(path) as db:
        return [r[0] for r in db.execute("SELECT kind FROM journal ORDER BY id")]
