"""Which journal this table has: opened, or refused, against the identity file
(daemon/store/identity.py) and against what the broker saw of it; the file kept up to
date while the table runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from daemon.config import TableConfig
from daemon.mqtt import last_seen
from daemon.mqtt.publisher import BrokerSettings
from daemon.security.signing import Keyring
from daemon.store import identity
from daemon.store.identity import Identity, JournalIdentityError
from daemon.store.journal import Journal

log = logging.getLogger(__name__)

IDENTITY_EVERY = 5.0  # s between updates of the identity file (identity.py)


class JournalIdentity:
    def __init__(self, cfg: TableConfig, clock: Any) -> None:
        self.cfg = cfg
        self.path = identity.identity_path(cfg.journal_path)
        # The announcement of a new journal, if it is one: journalled by the first start.
        self.announce: dict[str, Any] | None
        self.journal, self.announce = self._open_journal(clock)

    def _open_journal(self, clock: Any) -> tuple[Journal, dict[str, Any] | None]:
        """Open the journal this table had, or refuse (identity.py); the announcement
        of a new journal, if it is one."""
        cfg = self.cfg
        path = self.path
        known = identity.read(path)
        exists = cfg.journal_path.exists()
        accept = cfg.journal_policy.accept_new
        if known is not None and not exists and accept is None:
            raise JournalIdentityError(f"{identity.problem(known, False, None)}. "
                                       f"{identity.HOW}")
        journal = Journal(cfg.journal_path, sealer=cfg.signer.seal, clock=clock)
        found = Identity(journal.journal_id, journal.last_msg_seq(), journal.last_seq())
        why = identity.problem(known, exists, found)
        if why is not None and accept is None:
            journal.close()
            raise JournalIdentityError(f"{why}. {identity.HOW}")
        announce = None
        if why is not None:
            assert known is not None
            if known.journal_id == journal.journal_id:  # an older copy: its history broke
                journal.new_identity()
            announce = {"why": why, "accepted": accept,
                        "previous_journal_id": known.journal_id,
                        "previous_msg_seq": known.msg_seq, "previous_seq": known.seq}
        elif journal.created:
            announce = {"why": "a new journal", "accepted": None,
                        "previous_journal_id": None if known is None else known.journal_id}
        return journal, announce

    async def compare_with_broker(self, broker: BrokerSettings, topics: dict[str, str]
                                  ) -> None:
        """Before anything is published: is this journal behind what the broker saw of
        it (the table's own retained snapshot, daemon/mqtt/last_seen.py)? Refused with
        the figures unless accepted; an accepted one gets a new journal_id, announced
        with the numbers of the one it replaces."""
        snapshot = await last_seen.retained_snapshot(
            broker, topics["snapshot"], topics["status"],
            Keyring.of([self.cfg.signer.key.public_key()]))
        seen = None if snapshot is None else identity.seen_in(snapshot)
        j = self.journal
        why = identity.behind(seen, Identity(j.journal_id, j.last_msg_seq(), j.last_seq()))
        if why is None:
            return
        assert seen is not None
        accept = self.cfg.journal_policy.accept_new
        if accept is None:
            raise JournalIdentityError(f"{why}. {identity.HOW}")
        log.warning("%s; accepted: %s; it gets a new journal_id", why, accept)
        replaced = j.journal_id
        j.new_identity()
        self.announce = {"why": why, "accepted": accept, "previous_journal_id": replaced,
                         "previous_msg_seq": seen.msg_seq, "previous_seq": seen.seq}

    def save(self) -> None:
        """What the table has published from, for the next start to compare."""
        j = self.journal
        try:
            identity.write(self.path, Identity(j.journal_id, j.last_msg_seq(), j.last_seq()))
        except OSError as exc:
            log.error("cannot write %s: %s", self.path, exc)

    async def keep(self, every: float = IDENTITY_EVERY) -> None:
        while True:
            await asyncio.sleep(every)
            self.save()
