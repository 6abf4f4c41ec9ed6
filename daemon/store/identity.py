"""Which journal this table had: a small file beside the journal, so a lost, replaced or
rolled-back journal is noticed at start instead of silently numbering messages and
results again from where the file it found happens to stand.

The file (``<journal>.identity``, JSON) holds the ``journal_id`` and the highest
``msg_seq`` and result ``seq`` seen. It is rewritten atomically at start, every few
seconds while the table runs, and at a clean stop; so a backup older than the last
write is recognised as older. A start is refused (exit 2, the reason said exactly)
when the file names a journal and:

- the journal file is missing;
- the journal has another ``journal_id`` (replaced by another table's or a fresh one);
- the journal is older than what was published from it (a restored backup).

unless the operator accepts it, naming why (``[journal] accept_new = "why"``). An
accepted restore gets a new ``journal_id`` (its history broke off), and every new
journal is announced on the events topic (``journal_started``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from daemon.store.journal import JournalError


class JournalIdentityError(JournalError):
    """The journal is not the one this table had; the operator must accept it."""


@dataclass(frozen=True)
class Identity:
    journal_id: str
    msg_seq: int
    seq: int


def identity_path(journal_path: Path) -> Path:
    return journal_path.with_name(journal_path.name + ".identity")


def read(path: Path) -> Identity | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Identity(str(data["journal_id"]), int(data["msg_seq"]), int(data["seq"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JournalIdentityError(f"{path} cannot be read ({exc}); it says which journal "
                                   "this table had. Restore it, or delete it and set "
                                   "[journal] accept_new to start anyway") from exc


def write(path: Path, ident: Identity) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"journal_id": ident.journal_id, "msg_seq": ident.msg_seq,
                   "seq": ident.seq}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


HOW = ('To start anyway, set [journal] accept_new = "<why>" in the config (the reason is '
       "journalled and announced); consumers then see a new journal_id.")


def problem(known: Identity | None, exists: bool, found: Identity | None) -> str | None:
    """Why this journal is not the one the table had, or None if it is (or none was)."""
    if known is None:
        return None
    had = (f"journal {known.journal_id} (at least {known.msg_seq} messages, "
           f"{known.seq} results)")
    if not exists or found is None:
        return f"the journal is missing; this table had {had}"
    if found.journal_id != known.journal_id:
        return f"the journal was replaced: it is {found.journal_id}, this table had {had}"
    if found.msg_seq < known.msg_seq or found.seq < known.seq:
        return (f"the journal is older than what was published from it: it ends at "
                f"message {found.msg_seq}, result {found.seq}; this table had {had} "
                "(restored from a backup?)")
    return None
