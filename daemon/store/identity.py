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

A backup restored together with this file passes these checks; ``behind`` compares the
journal with the table's retained snapshot on the broker instead
(daemon/mqtt/last_seen.py reads it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Seen:
    """What the broker last saw of a journal: the table's retained snapshot."""

    journal_id: str
    msg_seq: int  # as_of_msg_seq
    seq: int  # last_result_seq


def seen_in(snapshot: Mapping[str, Any]) -> Seen | None:
    jid, msg_seq = snapshot.get("journal_id"), snapshot.get("as_of_msg_seq")
    seq = snapshot.get("last_result_seq") or 0
    if not isinstance(jid, str) or not isinstance(msg_seq, int) or not isinstance(seq, int):
        return None
    return Seen(jid, msg_seq, seq)


def behind(seen: Seen | None, found: Identity) -> str | None:
    """Why this journal is behind what the broker saw of it, or None. Only the same
    ``journal_id`` compares: another one's numbers mean other messages."""
    if seen is None or seen.journal_id != found.journal_id:
        return None
    if found.msg_seq >= seen.msg_seq and found.seq >= seen.seq:
        return None
    return (f"the journal is behind what the broker saw of it: journal {found.journal_id} "
            f"ends at message {found.msg_seq}, result {found.seq}; the table's retained "
            f"snapshot on the broker, signed with its key, is of message {seen.msg_seq}, "
            f"result {seen.seq} (restored from a backup, with its identity file?)")
